use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, FileControl, MAIN_DB, OpenFlags};
use tokio::sync::oneshot;

use crate::error::{DbError, Hint, OpenError};
use crate::migrations;

use slotcron::BoxError;

/// One SQLite database file holding a slotcron store and ledger, behind one connection:
/// the process's only writer ([`SqliteDatabase::open`]) or a reader
/// ([`SqliteDatabase::open_read_only`]). Clone it to share it between a
/// [`SqliteStore`](crate::SqliteStore) and a [`SqliteLedger`](crate::SqliteLedger).
///
/// Settings of a writer: WAL journal (readers never block the writer), persistent WAL
/// (see [`SqliteDatabase::open`]), `synchronous=NORMAL` (a committed transaction survives
/// a process crash; a power loss may lose the last ones, never the file). Both kinds wait
/// up to [`SqliteDatabase::BUSY_TIMEOUT`] when another process holds a lock they need.
/// Statements run on one worker at a time (a task on tokio's blocking pool, while there is
/// work): the calls that arrive while it is busy wait in a queue, and a writer's worker
/// runs the waiting ones together in one transaction (each in a savepoint of its own, so
/// one failing leaves the others), up to [`SqliteDatabase::MAX_BATCH`] at a time. However
/// many calls are in flight, a database uses one thread.
#[derive(Clone)]
pub struct SqliteDatabase {
    inner: Arc<Inner>,
}

struct Inner {
    url: String,
    /// The schema version of the file (a reader may open an older one).
    version: i64,
    /// Whether the connection may write (batches run in a transaction).
    writer: bool,
    connection: Mutex<Connection>,
    queue: Mutex<Queue>,
}

/// What a job answers once its batch has committed (or failed to: the error).
type Reply = Box<dyn FnOnce(Option<&str>) + Send>;
/// One call: runs on the connection, says whether it succeeded, and replies later.
type Job = Box<dyn FnOnce(&mut Connection) -> (bool, Reply) + Send>;

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    /// Whether a worker is draining `jobs`.
    working: bool,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl std::fmt::Debug for SqliteDatabase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteDatabase").field("url", &self.inner.url).finish_non_exhaustive()
    }
}

impl SqliteDatabase {
    /// The most calls one transaction carries.
    pub const MAX_BATCH: usize = 256;

    /// How long a statement waits for another process's write lock before failing.
    pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

    /// The most bytes a writer's WAL file keeps after a checkpoint has emptied it (about
    /// one automatic checkpoint's worth of pages); a writer closing last truncates it to
    /// zero bytes.
    pub const WAL_SIZE_LIMIT: i64 = 4 << 20;

    /// Opens (creating it if absent) the database at `url`, `sqlite:PATH` (also
    /// `sqlite://PATH`; `sqlite:///abs/path` is absolute), and migrates its schema to
    /// this release's version.
    ///
    /// An existing file is never recreated or truncated: it is read first, and refused
    /// untouched if it is not a database, is corrupted, belongs to another application or
    /// has a newer schema version than this release knows.
    ///
    /// The WAL is persistent (`SQLITE_FCNTL_PERSIST_WAL`): the `-wal` and `-shm` files stay
    /// next to the database when the last connection closes (the `-wal` file truncated to
    /// zero bytes after the closing checkpoint), so that a user who may read the database
    /// but not write to its directory can read it with [`SqliteDatabase::open_read_only`]
    /// (SQLite needs both files to read a WAL database and cannot create them then:
    /// <https://sqlite.org/wal.html>, "Read-Only Databases").
    ///
    /// # Errors
    /// [`OpenError`], naming the URL and the cause.
    pub async fn open(url: &str) -> Result<Self, OpenError> {
        Self::open_with(url, open_writer).await
    }

    /// Opens the existing database at `url` (as [`SqliteDatabase::open`] reads it) for
    /// reading only (`SQLITE_OPEN_READONLY`): nothing is created, migrated or written, the
    /// journal mode is left as it is. A daemon may be writing it meanwhile: each statement
    /// reads a consistent snapshot.
    ///
    /// A WAL database is read through its `-wal` and `-shm` files (a writer of this
    /// release keeps them), which SQLite creates if they are absent and the directory
    /// allows it: empty, with the database file's permissions (and, when run by root, its
    /// owner). The database file is never changed. Statements that write fail with
    /// SQLite's "attempt to write a readonly database".
    ///
    /// # Errors
    /// [`OpenError`], naming the URL and the cause: the file is missing or unreadable,
    /// is not a database or not slotcron's ([`OpenError::ForeignDatabase`]), holds no
    /// slotcron state ([`OpenError::Empty`]), has a schema this release does not read
    /// ([`OpenError::NewerSchema`], [`OpenError::OlderSchema`]), or is a WAL database whose
    /// `-wal` and `-shm` files are absent and cannot be created by this user
    /// ([`OpenError::WalFilesMissing`]).
    pub async fn open_read_only(url: &str) -> Result<Self, OpenError> {
        Self::open_with(url, open_reader).await
    }

    /// Parses `url` and runs `open` on tokio's blocking pool.
    async fn open_with(
        url: &str,
        open: fn(&str, &Path) -> Result<Opened, OpenError>,
    ) -> Result<Self, OpenError> {
        let path = parse_url(url).ok_or_else(|| OpenError::InvalidUrl { url: url.to_owned() })?;
        let owned = url.to_owned();
        let (connection, version) =
            tokio::task::spawn_blocking(move || open(&owned, &path)).await.map_err(|e| {
                match e.try_into_panic() {
                    Ok(panic) => std::panic::resume_unwind(panic),
                    Err(_) => OpenError::Shutdown { url: url.to_owned() },
                }
            })??;
        let writer = !connection.is_readonly(MAIN_DB).unwrap_or(true);
        Ok(Self {
            inner: Arc::new(Inner {
                url: url.to_owned(),
                version,
                writer,
                connection: Mutex::new(connection),
                queue: Mutex::default(),
            }),
        })
    }

    /// The schema version of the file: this release's after [`SqliteDatabase::open`],
    /// possibly an older one after [`SqliteDatabase::open_read_only`].
    pub(crate) fn version(&self) -> i64 {
        self.inner.version
    }

    /// The URL it was opened with.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// Runs `f` on the connection, in the queue of calls (see [`SqliteDatabase`]).
    pub(crate) async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, BoxError> + Send + 'static,
    ) -> Result<T, DbError> {
        let (send, receive) = oneshot::channel();
        let job: Job = Box::new(move |connection| {
            let result = f(connection);
            let ok = result.is_ok();
            let reply: Reply = Box::new(move |commit_failed| {
                let result = match (result, commit_failed) {
                    (Ok(_), Some(e)) => Err(format!("commit: {e}").into()),
                    (result, _) => result,
                };
                let _ = send.send(result);
            });
            (ok, reply)
        });
        let start = {
            let mut queue = lock(&self.inner.queue);
            queue.jobs.push_back(job);
            !std::mem::replace(&mut queue.working, true)
        };
        if start {
            let inner = self.inner.clone();
            // The worker's own JoinHandle is not needed: each call has its reply.
            drop(tokio::task::spawn_blocking(move || work(inner)));
        }
        let error = |source: BoxError| DbError { url: self.inner.url.clone(), source };
        match receive.await {
            Ok(result) => result.map_err(error),
            Err(_) => Err(error("the call panicked, or the runtime is shutting down".into())),
        }
    }
}

/// Drains the queue of calls, a batch at a time, until it is empty. The replies to the
/// last batch are sent once the worker has let go of the database, so that a caller who
/// drops it after its reply closes the connection (and truncates the WAL) at once.
fn work(inner: Arc<Inner>) {
    loop {
        let (replies, done) = {
            let mut connection = lock(&inner.connection);
            let batch: Vec<Job> = {
                let mut queue = lock(&inner.queue);
                let n = queue.jobs.len().min(SqliteDatabase::MAX_BATCH);
                queue.jobs.drain(..n).collect()
            };
            let replies = run_batch(&mut connection, batch, inner.writer);
            let mut queue = lock(&inner.queue);
            let done = queue.jobs.is_empty();
            if done {
                queue.working = false;
            }
            (replies, done)
        };
        if done {
            drop(inner);
            replies.send();
            return;
        }
        replies.send();
    }
}

/// Runs `batch`: in one transaction when there are several calls on a writer, each in a
/// savepoint. Returns what sends the replies, which follow the commit.
fn run_batch(connection: &mut Connection, batch: Vec<Job>, writer: bool) -> Replies {
    let run = |connection: &mut Connection, job: Job| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(connection))).ok()
    };
    let mut replies = Vec::with_capacity(batch.len());
    if batch.len() == 1 || !writer || connection.execute_batch("BEGIN IMMEDIATE").is_err() {
        replies.extend(batch.into_iter().filter_map(|job| run(connection, job)).map(|(_, reply)| reply));
        return Replies { replies, failed: None };
    }
    for job in batch {
        // A savepoint that cannot be made leaves the call to fail on its own.
        let saved = connection.execute_batch("SAVEPOINT call").is_ok();
        let Some((ok, reply)) = run(connection, job) else { continue };
        if saved {
            let undo = if ok { "RELEASE call" } else { "ROLLBACK TO call; RELEASE call" };
            if let Err(e) = connection.execute_batch(undo) {
                tracing::warn!("SQLite savepoint: {e}");
            }
        }
        replies.push(reply);
    }
    let commit = connection.execute_batch("COMMIT").map_err(|e| e.to_string());
    if commit.is_err() && !connection.is_autocommit() {
        let _ = connection.execute_batch("ROLLBACK");
    }
    let failed = commit.err();
    Replies { replies, failed }
}

/// The replies of a batch, and why its commit failed, if it did.
struct Replies {
    replies: Vec<Reply>,
    failed: Option<String>,
}

impl Replies {
    fn send(self) {
        for reply in self.replies {
            reply(self.failed.as_deref());
        }
    }
}

/// An open connection and the schema version of its file.
type Opened = (Connection, i64);

/// `sqlite:PATH` or `sqlite://PATH` to PATH.
fn parse_url(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite:")?;
    let path = rest.strip_prefix("//").unwrap_or(rest);
    (!path.is_empty()).then(|| PathBuf::from(path))
}

/// The error of a failed `action` on `path`; `creating`: the open may create the file.
fn io_error(
    url: &str,
    path: &Path,
    creating: bool,
    action: &'static str,
) -> impl Fn(rusqlite::Error) -> OpenError {
    move |source| OpenError::Io {
        url: url.to_owned(),
        action,
        source: Box::new(source),
        hint: hint(path, creating),
    }
}

fn open_writer(url: &str, path: &Path) -> Result<Opened, OpenError> {
    // A write SQLite refused (`SQLITE_READONLY`: e.g. a `-wal` or `-shm` file, or their
    // directory, this user may not write) is `NotWritable`; any other error is `Io`.
    let io = |action| {
        move |source: rusqlite::Error| match source.sqlite_error_code() {
            Some(rusqlite::ErrorCode::ReadOnly) => not_writable(url, path, &source.to_string()),
            _ => io_error(url, path, true, action)(source),
        }
    };
    // No SQLITE_OPEN_URI: the path is a file name, whatever it looks like.
    let flags =
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut connection = Connection::open_with_flags(path, flags).map_err(io("open"))?;
    // SQLite opens a file this user may not write read-only, without an error.
    if connection.is_readonly(MAIN_DB).map_err(io("open"))? {
        return Err(not_writable(url, path, "SQLite opened it read-only"));
    }
    connection.busy_timeout(SqliteDatabase::BUSY_TIMEOUT).map_err(io("open"))?;
    // Read before writing anything: a file that is not ours stays as it is.
    let found = migrations::read_header(&connection).map_err(io("read the database"))?;
    migrations::check(url, &found)?;
    let mode: String =
        connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)).map_err(io("set up WAL"))?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(url, mode, "SQLite did not switch to WAL mode");
    }
    connection.file_control(Some(MAIN_DB), FileControl::PersistWal(&mut 1)).map_err(io("set up WAL"))?;
    // With a persistent WAL, a size limit also makes the last close truncate the file.
    connection
        .pragma_update(None, "journal_size_limit", SqliteDatabase::WAL_SIZE_LIMIT)
        .map_err(io("set up WAL"))?;
    connection.pragma_update(None, "synchronous", "NORMAL").map_err(io("set up the database"))?;
    // SQLite reads a WAL database whose `-wal` or `-shm` file this user may not write,
    // and refuses only its writes: take the write lock once, writing nothing, so that the
    // daemon stops here rather than failing at every trigger.
    connection.execute_batch("BEGIN IMMEDIATE; ROLLBACK").map_err(io("write the database"))?;
    migrations::migrate(url, &mut connection).map_err(|e| match e {
        migrations::MigrateError::Sqlite(source) => io("write the database")(source),
        migrations::MigrateError::Refused(e) => e,
    })?;
    Ok((connection, migrations::VERSION))
}

fn open_reader(url: &str, path: &Path) -> Result<Opened, OpenError> {
    let io = |action| io_error(url, path, false, action);
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let connection = Connection::open_with_flags(path, flags).map_err(io("open"))?;
    connection.busy_timeout(SqliteDatabase::BUSY_TIMEOUT).map_err(io("open"))?;
    let found = migrations::read_header(&connection).map_err(|e| {
        if e.sqlite_extended_error_code() == Some(rusqlite::ffi::SQLITE_READONLY_DIRECTORY) {
            let dir = directory(path);
            let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
            OpenError::WalFilesMissing { url: url.to_owned(), dir }
        } else {
            io("read the database")(e)
        }
    })?;
    migrations::check_readable(url, &found)?;
    Ok((connection, found.version()))
}

/// The directory of the file `path`.
fn directory(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// What the file system says about `path`, when an open failed; `creating`: the open
/// may create the file, so a missing file is not the cause.
fn hint(path: &Path, creating: bool) -> Hint {
    let parent = directory(path);
    Hint(match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Some("it is a directory".to_owned()),
        Ok(_) => std::fs::File::open(path).err().map(|e| e.to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match std::fs::metadata(parent) {
            Ok(meta) if meta.is_dir() && creating => cannot_create_files_in(parent),
            Ok(meta) if meta.is_dir() => Some("no such file".to_owned()),
            Ok(_) => Some(format!("{} is not a directory", parent.display())),
            Err(e) => Some(format!("{}: {e}", parent.display())),
        },
        Err(e) => Some(e.to_string()),
    })
}

/// [`OpenError::NotWritable`] for the database at `path`: the first of it, its `-wal`
/// and `-shm` files and (when one of those is absent) their directory that this user may
/// not write, or else `fallback` (what SQLite said).
fn not_writable(url: &str, path: &Path, fallback: &str) -> OpenError {
    let companion = |suffix: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    };
    let companions = [companion("-wal"), companion("-shm")];
    let source = cannot_write(path)
        .or_else(|| {
            companions.iter().filter(|file| file.exists()).find_map(|file| {
                cannot_write(file).map(|e| std::io::Error::new(e.kind(), format!("{}: {e}", file.display())))
            })
        })
        .or_else(|| {
            let missing = companions.iter().any(|file| !file.exists());
            missing.then(|| cannot_create_files_in(directory(path))).flatten().map(std::io::Error::other)
        })
        .unwrap_or_else(|| std::io::Error::other(fallback.to_owned()));
    OpenError::NotWritable { url: url.to_owned(), source }
}

/// `cannot create files in DIR: CAUSE` (`dir` made absolute), if this user may not.
fn cannot_create_files_in(dir: &Path) -> Option<String> {
    let cause = cannot_write(dir)?;
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
    Some(format!("cannot create files in {}: {cause}", dir.display()))
}

/// Why this user may not write `path` (a file, or a directory to create files in), if
/// so: `access(2)` with `W_OK` (permissions, a read-only file system).
fn cannot_write(path: &Path) -> Option<std::io::Error> {
    let denied = nix::unistd::access(path, nix::unistd::AccessFlags::W_OK).err()?;
    Some(std::io::Error::from_raw_os_error(denied as i32))
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
