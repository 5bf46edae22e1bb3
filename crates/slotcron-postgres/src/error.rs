/// Why [`PostgresDatabase::open`](crate::PostgresDatabase::open) or
/// [`PostgresDatabase::open_read_only`](crate::PostgresDatabase::open_read_only) failed.
/// Every message names the connection URL without its password.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The connection string cannot be parsed.
    #[error("{url}: invalid PostgreSQL URL: {cause}")]
    InvalidUrl {
        /// The URL without its password.
        url: String,
        /// Why.
        cause: String,
    },
    /// The schema name is not a plain lower-case identifier.
    #[error(
        "{url}: invalid schema name {schema:?}: expected 1 to 63 of a-z, 0-9 and _, not starting with a digit"
    )]
    InvalidSchema {
        /// The URL without its password.
        url: String,
        /// The name as given.
        schema: String,
    },
    /// The server cannot be reached, refused the login, or failed a statement.
    #[error("{url}: cannot {action}: {cause}")]
    Server {
        /// The URL without its password.
        url: String,
        /// What failed: `connect`, `migrate schema "…"`.
        action: String,
        /// The error and its causes.
        cause: String,
    },
    /// Reading only: the schema does not exist, or holds no slotcron state.
    #[error("{url}: no slotcron state in schema {schema:?}: {reason}")]
    NoState {
        /// The URL without its password.
        url: String,
        /// The schema.
        schema: String,
        /// What was found instead: `the schema does not exist`, ….
        reason: &'static str,
    },
    /// Reading only: the schema's version is older than this release reads.
    #[error(
        "{url}: schema {schema:?} is at version {found}, older than this release reads ({oldest}); \
         run the daemon of this release once to migrate it"
    )]
    OlderSchema {
        /// The URL without its password.
        url: String,
        /// The schema.
        schema: String,
        /// Its version.
        found: i32,
        /// The oldest version this release reads.
        oldest: i32,
    },
    /// The schema was written by a newer slotcron release; this one cannot use it.
    #[error(
        "{url}: schema {schema:?} is at version {found}, newer than this release knows ({known}); \
         upgrade slotcron to use it"
    )]
    NewerSchema {
        /// The URL without its password.
        url: String,
        /// The schema.
        schema: String,
        /// Its version.
        found: i32,
        /// The newest version this release knows.
        known: i32,
    },
}

/// A failed operation on an open database; its message names the URL (without password)
/// and the cause.
#[derive(Debug, thiserror::Error)]
#[error("{url}: {cause}")]
pub struct DbError {
    /// The URL without its password.
    pub url: String,
    /// The error and its causes.
    pub cause: String,
    /// The server refused the role: its credentials or its login (SQLSTATE class 28,
    /// `invalid_authorization_specification`, `invalid_password`), or a right it lacks
    /// (42501, `insufficient_privilege`); see the PostgreSQL manual's appendix A, "Error
    /// Codes". Asking again does not help until the configuration is fixed.
    pub refused: bool,
}

impl DbError {
    /// Whether `error` is the server refusing the role ([`DbError::refused`]).
    pub(crate) fn refuses(error: &tokio_postgres::Error) -> bool {
        error.code().is_some_and(|code| {
            code.code().starts_with("28") || *code == tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE
        })
    }
}
