use std::sync::{Arc, OnceLock};
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime};
use tokio_postgres::Row;
use tokio_postgres::error::Severity;
use tokio_postgres::types::ToSql;

use crate::error::{DbError, OpenError};
use crate::migrations;
use crate::tls::Tls;
use slotcron::error_chain;

/// A connection pool to one PostgreSQL database and one schema in it, holding a slotcron
/// store, ledger and claims. Clone it to share it between a
/// [`PostgresStore`](crate::PostgresStore), a [`PostgresLedger`](crate::PostgresLedger)
/// and a [`PostgresCoordinator`](crate::PostgresCoordinator).
///
/// Connections are TCP, with TLS as the URL's `sslmode` asks (libpq's meaning: see
/// [`PostgresDatabase::open`]), or Unix sockets, made on demand up to
/// [`PostgresDatabase::POOL_SIZE`]; a connection that broke is replaced on next use.
#[derive(Clone)]
pub struct PostgresDatabase {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    /// The URL without its password.
    url: String,
    /// The schema name, double-quoted for statements.
    quoted_schema: String,
    /// The schema's version, once migrated or checked.
    version: OnceLock<i32>,
    /// The URL's TLS, which words a refused server certificate.
    tls: Tls,
}

impl std::fmt::Debug for PostgresDatabase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresDatabase")
            .field("url", &self.inner.url)
            .field("schema", &self.inner.quoted_schema)
            .finish_non_exhaustive()
    }
}

impl PostgresDatabase {
    /// The schema slotcron uses unless told otherwise.
    pub const DEFAULT_SCHEMA: &str = "slotcron";
    /// How long connecting may take, unless the URL sets `connect_timeout`; also the
    /// longest wait for a free connection of the pool.
    pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
    /// The most connections open at once.
    pub const POOL_SIZE: usize = 8;

    /// Connects to `url` (`postgres://user[:password]@host[:port]/database[?…]`, or a
    /// libpq `key=value` string), creates `schema` if it is absent and migrates it to this
    /// release's version. Replicas may open the same schema at once: migrations take an
    /// advisory lock.
    ///
    /// `schema` is 1 to 63 of `a-z`, `0-9` and `_`, not starting with a digit (tests use
    /// one schema each to stay apart).
    ///
    /// TLS (rustls, `ring` provider), as libpq's `sslmode` parameter means it:
    /// `disable` (plain), `prefer` (the default: TLS if the server offers it, the
    /// certificate unchecked), `require` (TLS; the certificate unchecked, or checked
    /// against `sslrootcert` when given), `verify-ca` (the certificate chains to a
    /// trusted root) and `verify-full` (and names the host). The trusted roots are the
    /// PEM file `sslrootcert=PATH`, else the system's root certificates. (`allow`, and
    /// libpq's default `~/.postgresql/root.crt`, are not supported.)
    ///
    /// A self-signed server certificate that is itself in `sslrootcert` (byte for byte) is
    /// trusted, as libpq trusts it — the setup of the PostgreSQL manual's "Creating
    /// Certificates", whose `server.crt` is copied to the client as its root certificate —
    /// with its validity period checked, and under `verify-full` the host against its
    /// subject alternative names (not its common name, which libpq falls back to when
    /// there is no DNS name among them).
    ///
    /// # Errors
    /// [`OpenError`]: a malformed URL or schema name, an unknown `sslmode`, an unreadable
    /// `sslrootcert`, an unreachable server, a certificate that does not verify (the
    /// reason follows the URL: not signed by, nor one of, the certificates of the
    /// `sslrootcert` named; not naming the host named; expired), a refused login, or a
    /// schema written by a newer release (left untouched). Messages name the URL without
    /// its password.
    pub async fn open(url: &str, schema: &str) -> Result<Self, OpenError> {
        let (database, mut client) = Self::connect(url, schema, false).await?;
        migrations::migrate(&mut client, &database, schema).await?;
        let _ = database.inner.version.set(migrations::VERSION);
        Ok(database)
    }

    /// Connects to `url` (as [`PostgresDatabase::open`] does) to read the slotcron state
    /// in the existing `schema`: the store and the ledger. Nothing is created or migrated,
    /// and its sessions are read-only (`default_transaction_read_only`): a statement that
    /// writes fails with the server's "cannot execute … in a read-only transaction".
    ///
    /// It reads a schema at this release's version, or at an older one whose store and
    /// ledger tables are this release's (every version so far: only the claims changed).
    ///
    /// # Errors
    /// As [`PostgresDatabase::open`], and: the schema does not exist or holds no slotcron
    /// state ([`OpenError::NoState`]), or its version is one this release does not read
    /// ([`OpenError::NewerSchema`], [`OpenError::OlderSchema`]).
    pub async fn open_read_only(url: &str, schema: &str) -> Result<Self, OpenError> {
        let (database, client) = Self::connect(url, schema, true).await?;
        let version = migrations::check_readable(&client, &database, schema).await?;
        let _ = database.inner.version.set(version);
        Ok(database)
    }

    /// A pool for `url` and `schema`, with one connection made (so an unreachable server
    /// or a refused login is an error here); `read_only`: its sessions cannot write.
    async fn connect(url: &str, schema: &str, read_only: bool) -> Result<(Self, Object), OpenError> {
        let redacted = slotcron::redact(url);
        let invalid = |cause| OpenError::InvalidUrl { url: redacted.clone(), cause };
        let (url, tls) = Tls::take_from(url).map_err(invalid)?;
        let mut config: tokio_postgres::Config =
            url.parse().map_err(|e: tokio_postgres::Error| invalid(error_chain(&e)))?;
        let connector = tls.connector().map_err(invalid)?;
        if !valid_schema(schema) {
            return Err(OpenError::InvalidSchema { url: redacted, schema: schema.to_owned() });
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Self::CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("slotcron");
        }
        if read_only {
            let options = match config.get_options() {
                Some(given) => format!("{given} {READ_ONLY_OPTION}"),
                None => READ_ONLY_OPTION.to_owned(),
            };
            config.options(options);
        }
        let manager = Manager::from_config(
            config,
            connector,
            ManagerConfig { recycling_method: RecyclingMethod::Fast },
        );
        let pool = Pool::builder(manager)
            .max_size(Self::POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(Self::CONNECT_TIMEOUT))
            .create_timeout(Some(Self::CONNECT_TIMEOUT))
            .recycle_timeout(Some(Self::CONNECT_TIMEOUT))
            .build()
            .map_err(|e| OpenError::InvalidUrl { url: redacted.clone(), cause: e.to_string() })?;
        let client = pool.get().await.map_err(|e| OpenError::Server {
            url: redacted.clone(),
            action: "connect".to_owned(),
            cause: pool_error(&e, &tls),
        })?;
        let database = Self {
            inner: Arc::new(Inner {
                pool,
                url: redacted,
                quoted_schema: format!("\"{schema}\""),
                version: OnceLock::new(),
                tls,
            }),
        };
        Ok((database, client))
    }

    /// The schema's version: this release's after [`PostgresDatabase::open`], possibly an
    /// older one after [`PostgresDatabase::open_read_only`].
    pub(crate) fn version(&self) -> i32 {
        self.inner.version.get().copied().unwrap_or(migrations::VERSION)
    }

    /// The URL it was opened with, without the password.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// `template` with `{schema}` replaced by the quoted schema name.
    pub(crate) fn sql(&self, template: &str) -> String {
        template.replace("{schema}", &self.inner.quoted_schema)
    }

    /// Runs `sql` (a prepared statement cached per connection: one round trip once
    /// prepared) and returns its rows.
    pub(crate) async fn query(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, DbError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(sql).await.map_err(|e| self.error(&e))?;
        client.query(&statement, params).await.map_err(|e| self.error(&e))
    }

    /// Runs `sql` (cached as [`Self::query`] does) and returns the number of rows changed.
    pub(crate) async fn execute(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, DbError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(sql).await.map_err(|e| self.error(&e))?;
        client.execute(&statement, params).await.map_err(|e| self.error(&e))
    }

    /// Runs `sql` (cached as [`Self::query`] does) and, when it fails, tells whether it
    /// can have changed anything. With `timeout`, preparing it and waiting for its reply
    /// each stop after that long.
    ///
    /// A failure that leaves the outcome unknown — the connection closed or broke, the
    /// reply was garbled, the server ended the session (`FATAL`), or no reply came within
    /// `timeout` — also removes the connection from the pool, so the next statement runs
    /// on another one.
    pub(crate) async fn query_within(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
        timeout: Option<Duration>,
    ) -> Result<Vec<Row>, QueryError> {
        let client = self.client().await.map_err(QueryError::NotApplied)?;
        let statement = match within(timeout, client.prepare_cached(sql)).await {
            Ok(Ok(statement)) => statement,
            Ok(Err(e)) => return Err(QueryError::NotApplied(self.error(&e))),
            Err(elapsed) => {
                drop(Object::take(client));
                return Err(QueryError::NotApplied(self.no_reply(elapsed)));
            }
        };
        match within(timeout, client.query(&statement, params)).await {
            Ok(Ok(rows)) => Ok(rows),
            Ok(Err(e)) if rolled_back(&e) => Err(QueryError::NotApplied(self.error(&e))),
            Ok(Err(e)) => {
                drop(Object::take(client));
                Err(QueryError::OutcomeUnknown(self.error(&e)))
            }
            Err(elapsed) => {
                drop(Object::take(client));
                Err(QueryError::OutcomeUnknown(self.no_reply(elapsed)))
            }
        }
    }

    /// A connection of the pool, for a transaction of several statements.
    pub(crate) async fn client(&self) -> Result<Object, DbError> {
        self.inner.pool.get().await.map_err(|e| DbError {
            url: self.inner.url.clone(),
            cause: pool_error(&e, &self.inner.tls),
            refused: matches!(&e, PoolError::Backend(e) if DbError::refuses(e)),
        })
    }

    /// `error` of a statement, with this database's URL.
    pub(crate) fn error(&self, error: &tokio_postgres::Error) -> DbError {
        DbError { url: self.inner.url.clone(), cause: error_chain(error), refused: DbError::refuses(error) }
    }

    fn no_reply(&self, timeout: Duration) -> DbError {
        DbError { url: self.inner.url.clone(), cause: format!("no reply within {timeout:?}"), refused: false }
    }
}

/// How a statement run by [`PostgresDatabase::query_within`] failed.
#[derive(Debug)]
pub(crate) enum QueryError {
    /// It changed nothing: no connection, a failure before it was sent, or an error
    /// reported by the server (which rolls the statement's transaction back).
    NotApplied(DbError),
    /// It was sent but its reply was lost: it may have committed.
    OutcomeUnknown(DbError),
}

impl QueryError {
    /// The failure, whichever it was.
    pub(crate) fn into_cause(self) -> DbError {
        match self {
            Self::NotApplied(e) | Self::OutcomeUnknown(e) => e,
        }
    }
}

/// `future`'s output, or the `timeout` that passed first.
async fn within<F: Future>(timeout: Option<Duration>, future: F) -> Result<F::Output, Duration> {
    match timeout {
        Some(timeout) => tokio::time::timeout(timeout, future).await.map_err(|_| timeout),
        None => Ok(future.await),
    }
}

/// Whether the server answered with an error (severity `ERROR`): the statement failed and
/// its transaction (here, the statement's own) rolled back. A `FATAL` or `PANIC` ends the
/// session and can come after the commit; any other failure is taken as unknown too (most
/// mean that the reply never arrived whole).
fn rolled_back(error: &tokio_postgres::Error) -> bool {
    error.as_db_error().is_some_and(|e| matches!(e.parsed_severity(), Some(Severity::Error)))
}

/// The server option that makes every transaction of a session read-only (given after
/// any `options` of the URL, so it wins).
const READ_ONLY_OPTION: &str = "-c default_transaction_read_only=on";

fn valid_schema(name: &str) -> bool {
    (1..=63).contains(&name.len())
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Why no connection could be had; a refused server certificate in the words of `tls`.
fn pool_error(error: &PoolError, tls: &Tls) -> String {
    match error {
        PoolError::Backend(e) => tls.explain(e).unwrap_or_else(|| error_chain(e)),
        PoolError::Timeout(_) => {
            format!("no connection within {:?}", PostgresDatabase::CONNECT_TIMEOUT)
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::valid_schema;

    #[test]
    fn schema_names_are_plain_identifiers() {
        for good in ["slotcron", "t_1", "_x", &"a".repeat(63)] {
            assert!(valid_schema(good), "{good}");
        }
        for bad in ["", "1x", "Slotcron", "a-b", "a\"b", "a b", &"a".repeat(64)] {
            assert!(!valid_schema(bad), "{bad}");
        }
    }
}
