use std::fmt;
use std::path::PathBuf;

/// Why [`SqliteDatabase::open`](crate::SqliteDatabase::open) or
/// [`SqliteDatabase::open_read_only`](crate::SqliteDatabase::open_read_only) failed. Every
/// variant names the database's URL; none has written anything to an existing file.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The URL is not `sqlite:PATH`.
    #[error("{url:?}: not a SQLite URL: expected sqlite:PATH")]
    InvalidUrl {
        /// The URL as given.
        url: String,
    },
    /// The file cannot be opened, read or written: missing directory, permissions, a
    /// file that is not a database or is corrupted.
    #[error("{url}: cannot {action}: {source}{hint}")]
    Io {
        /// The URL.
        url: String,
        /// What failed: `open`, `read the database`, `write the database`.
        action: &'static str,
        /// SQLite's error.
        source: Box<rusqlite::Error>,
        /// What the file system says about the path, when that explains the error.
        hint: Hint,
    },
    /// The file exists but this user may not write it, its `-wal` or `-shm` file, or
    /// the directory to create those in (SQLite would open it read-only and fail at the
    /// first write).
    #[error("{url}: cannot write it: {source}")]
    NotWritable {
        /// The URL.
        url: String,
        /// Why, as `access(2)` says (permissions, a read-only file system), naming the
        /// `-wal` or `-shm` file or the directory when the cause is there; else what
        /// SQLite said.
        source: std::io::Error,
    },
    /// The file is a SQLite database of another application.
    #[error("{url}: not a slotcron database (application_id {found:#x}), left untouched")]
    ForeignDatabase {
        /// The URL.
        url: String,
        /// The file's `PRAGMA application_id`.
        found: i32,
    },
    /// The file was written by a newer slotcron release; this one cannot read it.
    #[error(
        "{url}: schema version {found} is newer than this release knows ({known}); \
         upgrade slotcron to use this database"
    )]
    NewerSchema {
        /// The URL.
        url: String,
        /// The file's schema version.
        found: i64,
        /// The newest version this release knows.
        known: i64,
    },
    /// Reading only: the file is an empty database, with no slotcron state yet.
    #[error("{url}: no slotcron state in it: the database is empty")]
    Empty {
        /// The URL.
        url: String,
    },
    /// Reading only: the file's schema is older than this release reads.
    #[error(
        "{url}: schema version {found} is older than this release reads ({oldest}); \
         run the daemon of this release once to migrate it"
    )]
    OlderSchema {
        /// The URL.
        url: String,
        /// The file's schema version.
        found: i64,
        /// The oldest version this release reads.
        oldest: i64,
    },
    /// Reading only: the file is a WAL database whose `-wal` and `-shm` files are absent,
    /// and this user cannot create them (SQLite needs them to read it).
    #[error(
        "{url}: cannot read it: it is a WAL database whose -wal and -shm files are absent, and this user \
         cannot create them in {dir} (a daemon of this release keeps them once it has opened the \
         database; or read it as a user who may write to {dir})",
        dir = dir.display()
    )]
    WalFilesMissing {
        /// The URL.
        url: String,
        /// The directory of the database file.
        dir: PathBuf,
    },
    /// The tokio runtime shut down while the database was being opened.
    #[error("{url}: the runtime shut down while opening the database")]
    Shutdown {
        /// The URL.
        url: String,
    },
}

/// A hint appended to an [`OpenError::Io`] message: empty, or ` (…)`.
#[derive(Debug, Default)]
pub struct Hint(pub Option<String>);

impl fmt::Display for Hint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(hint) => write!(f, " ({hint})"),
            None => Ok(()),
        }
    }
}

/// A failed operation on an open database; its message names the URL.
#[derive(Debug, thiserror::Error)]
#[error("{url}: {source}")]
pub struct DbError {
    /// The database's URL.
    pub url: String,
    /// The cause.
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}
