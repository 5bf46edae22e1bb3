use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::error::{DbError, Hint, OpenError};
use crate::migrations;

use crate::codec::BoxError;

/// One SQLite database file holding a slotcron store and ledger, behind one connection:
/// the process's only writer. Clone it to share it between a
/// [`SqliteStore`](crate::SqliteStore) and a [`SqliteLedger`](crate::SqliteLedger).
///
/// Settings: WAL journal (readers never block the writer), `synchronous=NORMAL` (a
/// committed transaction survives a process crash; a power loss may lose the last ones,
/// never the file), a busy timeout of [`SqliteDatabase::BUSY_TIMEOUT`] when another
/// process holds the write lock. Statements run on tokio's blocking pool.
#[derive(Clone)]
pub struct SqliteDatabase {
    inner: Arc<Inner>,
}

struct Inner {
    url: String,
    connection: Mutex<Connection>,
}

impl std::fmt::Debug for SqliteDatabase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteDatabase").field("url", &self.inner.url).finish_non_exhaustive()
    }
}

impl SqliteDatabase {
    /// How long a statement waits for another process's write lock before failing.
    pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

    /// Opens (creating it if absent) the database at `url`, `sqlite:PATH` (also
    /// `sqlite://PATH`; `sqlite:///abs/path` is absolute), and migrates its schema to
    /// this release's version.
    ///
    /// An existing file is never recreated or truncated: it is read first, and refused
    /// untouched if it is not a database, is corrupted, belongs to another application or
    /// has a newer schema version than this release knows.
    ///
    /// # Errors
    /// [`OpenError`], naming the URL and the cause.
    pub async fn open(url: &str) -> Result<Self, OpenError> {
        let path = parse_url(url).ok_or_else(|| OpenError::InvalidUrl { url: url.to_owned() })?;
        let owned = url.to_owned();
        let connection =
            tokio::task::spawn_blocking(move || open_file(&owned, &path)).await.map_err(|e| {
                match e.try_into_panic() {
                    Ok(panic) => std::panic::resume_unwind(panic),
                    Err(_) => OpenError::Shutdown { url: url.to_owned() },
                }
            })??;
        Ok(Self { inner: Arc::new(Inner { url: url.to_owned(), connection: Mutex::new(connection) }) })
    }

    /// The URL it was opened with.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// Runs `f` on the connection on tokio's blocking pool.
    pub(crate) async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, BoxError> + Send + 'static,
    ) -> Result<T, DbError> {
        let inner = self.inner.clone();
        let result = tokio::task::spawn_blocking(move || {
            let mut connection = inner.connection.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            f(&mut connection)
        })
        .await;
        let error = |source: BoxError| DbError { url: self.inner.url.clone(), source };
        match result {
            Ok(result) => result.map_err(error),
            Err(e) => match e.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(_) => Err(error("the runtime is shutting down".into())),
            },
        }
    }
}

/// `sqlite:PATH` or `sqlite://PATH` to PATH.
fn parse_url(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite:")?;
    let path = rest.strip_prefix("//").unwrap_or(rest);
    (!path.is_empty()).then(|| PathBuf::from(path))
}

fn open_file(url: &str, path: &Path) -> Result<Connection, OpenError> {
    let io = |action| {
        move |source| OpenError::Io {
            url: url.to_owned(),
            action,
            source: Box::new(source),
            hint: hint(path),
        }
    };
    // No SQLITE_OPEN_URI: the path is a file name, whatever it looks like.
    let flags =
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut connection = Connection::open_with_flags(path, flags).map_err(io("open"))?;
    connection.busy_timeout(SqliteDatabase::BUSY_TIMEOUT).map_err(io("open"))?;
    // Read before writing anything: a file that is not ours stays as it is.
    let found = migrations::read_header(&connection).map_err(io("read the database"))?;
    migrations::check(url, &found)?;
    let mode: String =
        connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)).map_err(io("set up WAL"))?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(url, mode, "SQLite did not switch to WAL mode");
    }
    connection.pragma_update(None, "synchronous", "NORMAL").map_err(io("set up the database"))?;
    migrations::migrate(url, &mut connection).map_err(|e| match e {
        migrations::MigrateError::Sqlite(source) => io("write the database")(source),
        migrations::MigrateError::Refused(e) => e,
    })?;
    Ok(connection)
}

/// What the file system says about `path`, when an open failed.
fn hint(path: &Path) -> Hint {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    Hint(match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Some("it is a directory".to_owned()),
        Ok(_) => None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match std::fs::metadata(parent) {
            Ok(meta) if meta.is_dir() => None,
            Ok(_) => Some(format!("{} is not a directory", parent.display())),
            Err(e) => Some(format!("{}: {e}", parent.display())),
        },
        Err(e) => Some(e.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_path() {
        assert_eq!(parse_url("sqlite:slotcron.db"), Some(PathBuf::from("slotcron.db")));
        assert_eq!(parse_url("sqlite:/var/lib/s.db"), Some(PathBuf::from("/var/lib/s.db")));
        assert_eq!(parse_url("sqlite://data/s.db"), Some(PathBuf::from("data/s.db")));
        assert_eq!(parse_url("sqlite:///var/lib/s.db"), Some(PathBuf::from("/var/lib/s.db")));
        assert_eq!(parse_url("sqlite:"), None);
        assert_eq!(parse_url("postgres://x"), None);
        assert_eq!(parse_url("slotcron.db"), None);
    }

    #[tokio::test]
    async fn the_connection_syncs_normally_and_waits_for_locks() {
        let dir = tempfile::tempdir().unwrap();
        let database =
            SqliteDatabase::open(&format!("sqlite:{}", dir.path().join("s.db").display())).await.unwrap();
        let (synchronous, busy_timeout) = database
            .call(|c| {
                let synchronous: i64 = c.pragma_query_value(None, "synchronous", |row| row.get(0))?;
                let busy_timeout: i64 = c.pragma_query_value(None, "busy_timeout", |row| row.get(0))?;
                Ok((synchronous, busy_timeout))
            })
            .await
            .unwrap();
        assert_eq!(synchronous, 1, "NORMAL");
        assert_eq!(busy_timeout, SqliteDatabase::BUSY_TIMEOUT.as_millis() as i64);
    }
}
