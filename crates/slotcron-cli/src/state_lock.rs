//! One daemon per SQLite state file: `slotcron run` holds an advisory lock (`flock(2)`) on
//! a lock file beside the database for as long as it runs. Readers (`slotcron history`)
//! take no lock.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// The lock a daemon holds on its SQLite state; released when dropped (or when the
/// process dies, however it dies).
#[derive(Debug)]
pub struct StateLock {
    _lock: Flock<File>,
}

/// The lock file of the database at `database`: `PATH.lock`.
pub fn lock_path(database: &Path) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

impl StateLock {
    /// Takes the lock of the SQLite state `url` (the database at `database`), creating
    /// its lock file if absent, without waiting.
    ///
    /// # Errors
    /// Another daemon holds it (the message names the file and says how to share state),
    /// or the lock file cannot be opened.
    pub fn take(url: &str, database: &Path) -> Result<Self, String> {
        let path = lock_path(database);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| format!("{url}: cannot open its lock file {}: {e}", path.display()))?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => Ok(Self { _lock: lock }),
            Err((_, Errno::EWOULDBLOCK)) => Err(format!(
                "{url} is in use by another slotcron run (it holds {}): one daemon per SQLite file; \
                 to share state between daemons, give each its own file with a shared --redis, \
                 or use a PostgreSQL state (--state postgres://...)",
                path.display()
            )),
            Err((_, e)) => Err(format!("{url}: cannot lock {}: {e}", path.display())),
        }
    }
}
