//! Opening a database file for reading only: what it reads, with a writer open, closed or
//! gone, and the files it refuses, all left as they were.
//!
//! These tests run as whoever runs `cargo test` (root on the project's machine, who may
//! write any file): they check that nothing is written, not that nothing could be. Reading
//! as a user who may not write the file or its directory is tested on the `slotcron
//! history` command (crates/slotcron-cli/tests/history.rs), which drops to `nobody`.

use std::path::{Path, PathBuf};

use slotcron::{JobState, Ledger, LedgerQuery, Retention, RunRecord, Store};
use slotcron_sqlite::{OpenError, SqliteDatabase, SqliteLedger, SqliteStore};
use slotcron_testkit::fixtures::{succeeded_run as record, succeeded_state as state};

fn url(path: &Path) -> String {
    format!("sqlite:{}", path.display())
}

/// `path` with `suffix` appended to its file name: `-wal`, `-shm`.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn all() -> LedgerQuery {
    LedgerQuery { limit: usize::MAX, ..LedgerQuery::default() }
}

/// A writer on a new file in `dir` that has recorded one run and one state of `tick`.
async fn written(dir: &Path) -> (PathBuf, SqliteDatabase) {
    let path = dir.join("state.db");
    let writer = SqliteDatabase::open(&url(&path)).await.unwrap();
    SqliteStore::new(writer.clone()).save_state("tick", &state("2024-05-17T00:00:01Z")).await.unwrap();
    let ledger = SqliteLedger::new(writer.clone(), Retention::default());
    ledger.append(&record("tick", "2024-05-17T00:00:01Z")).await.unwrap();
    (path, writer)
}

/// The runs and states `path` holds, read through a read-only database.
async fn read(path: &Path) -> (Vec<RunRecord>, Vec<(String, JobState)>) {
    let reader = SqliteDatabase::open_read_only(&url(path)).await.unwrap();
    let runs = SqliteLedger::new(reader.clone(), Retention::default()).query(&all()).await.unwrap();
    let mut states: Vec<_> = SqliteStore::new(reader).load_states().await.unwrap().into_iter().collect();
    states.sort_by(|a, b| a.0.cmp(&b.0));
    (runs, states)
}

/// The bytes of the file at `path`, `None` if there is none.
fn bytes(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

#[tokio::test]
async fn reads_what_an_open_writer_committed_and_commits_after() {
    let dir = tempfile::tempdir().unwrap();
    let (path, writer) = written(dir.path()).await;
    let reader = SqliteDatabase::open_read_only(&url(&path)).await.unwrap();
    let runs = SqliteLedger::new(reader.clone(), Retention::default());
    assert_eq!(runs.query(&all()).await.unwrap(), [record("tick", "2024-05-17T00:00:01Z")]);

    SqliteLedger::new(writer, Retention::default())
        .append(&record("tick", "2024-05-17T00:00:02Z"))
        .await
        .unwrap();
    let triggers: Vec<String> =
        runs.query(&all()).await.unwrap().iter().map(|r| r.trigger.to_string()).collect();
    assert_eq!(triggers, ["2024-05-17T00:00:02Z", "2024-05-17T00:00:01Z"], "each statement reads anew");
}

#[tokio::test]
async fn a_closed_writer_leaves_an_empty_wal_to_read_through_and_the_reader_changes_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let (path, writer) = written(dir.path()).await;
    drop(writer);
    // Persistent WAL: both files stay, the log empty after the closing checkpoint.
    assert_eq!(bytes(&beside(&path, "-wal")), Some(Vec::new()));
    assert!(beside(&path, "-shm").exists());
    let (database, wal) = (bytes(&path), bytes(&beside(&path, "-wal")));

    let (runs, states) = read(&path).await;
    assert_eq!(runs, [record("tick", "2024-05-17T00:00:01Z")]);
    assert_eq!(states, [("tick".to_owned(), state("2024-05-17T00:00:01Z"))]);
    assert!(bytes(&path) == database, "the database file is unchanged");
    assert!(bytes(&beside(&path, "-wal")) == wal, "the WAL file is unchanged");
}

#[tokio::test]
async fn reads_the_files_of_a_writer_that_died_with_its_last_commits_only_in_the_wal() {
    let dir = tempfile::tempdir().unwrap();
    let (path, writer) = written(dir.path()).await;
    // The three files as a killed writer leaves them: copied while it is open, so the
    // copies have no process behind them and the commits are in the WAL alone.
    let crashed = dir.path().join("crashed");
    std::fs::create_dir(&crashed).unwrap();
    for suffix in ["", "-wal", "-shm"] {
        std::fs::copy(beside(&path, suffix), beside(&crashed.join("state.db"), suffix)).unwrap();
    }
    drop(writer);
    let copy = crashed.join("state.db");
    assert!(!bytes(&beside(&copy, "-wal")).unwrap().is_empty(), "the commits are in the WAL");
    let (database, wal) = (bytes(&copy), bytes(&beside(&copy, "-wal")));

    let (runs, _) = read(&copy).await;
    assert_eq!(runs, [record("tick", "2024-05-17T00:00:01Z")]);
    assert!(bytes(&copy) == database, "not checkpointed by the reader");
    assert!(bytes(&beside(&copy, "-wal")) == wal, "the WAL file is unchanged");
}

#[tokio::test]
async fn writing_through_a_read_only_database_fails_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (path, writer) = written(dir.path()).await;
    let reader = SqliteDatabase::open_read_only(&url(&path)).await.unwrap();
    let err = SqliteStore::new(reader.clone()).save_state("tick", &state("2030-01-01T00:00:00Z")).await;
    assert!(err.unwrap_err().to_string().ends_with("attempt to write a readonly database"));
    let ledger = SqliteLedger::new(reader, Retention::default());
    assert!(ledger.append(&record("other", "2030-01-01T00:00:00Z")).await.is_err());
    drop(writer);
    let (runs, states) = read(&path).await;
    assert_eq!(runs, [record("tick", "2024-05-17T00:00:01Z")]);
    assert_eq!(states, [("tick".to_owned(), state("2024-05-17T00:00:01Z"))]);
}

/// Opens `path` read-only, expecting an error; checks that the database file and its WAL
/// file, if there was one, did not change.
async fn refused(path: &Path) -> OpenError {
    let (database, wal) = (bytes(path), bytes(&beside(path, "-wal")));
    let err = SqliteDatabase::open_read_only(&url(path)).await.unwrap_err();
    assert!(bytes(path) == database, "the database file is unchanged");
    if wal.is_some() {
        assert!(bytes(&beside(path, "-wal")) == wal, "the WAL file is unchanged");
    }
    err
}

#[tokio::test]
async fn a_missing_file_is_refused_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let err = refused(&path).await;
    assert_eq!(
        err.to_string(),
        format!(
            "{}: cannot open: unable to open database file: {} (no such file)",
            url(&path),
            path.display()
        )
    );
}

#[tokio::test]
async fn an_empty_file_holds_no_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    std::fs::write(&path, b"").unwrap();
    let err = refused(&path).await;
    assert!(matches!(err, OpenError::Empty { .. }), "{err}");
    assert_eq!(err.to_string(), format!("{}: no slotcron state in it: the database is empty", url(&path)));
}

#[tokio::test]
async fn a_file_that_is_not_a_database_or_not_slotcrons_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.db");
    std::fs::write(&notes, "somebody's notes\n".repeat(300)).unwrap();
    let err = refused(&notes).await;
    assert_eq!(err.to_string(), format!("{}: cannot read the database: file is not a database", url(&notes)));

    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other).unwrap().execute_batch("CREATE TABLE notes (body TEXT)").unwrap();
    let err = refused(&other).await;
    assert_eq!(
        err.to_string(),
        format!("{}: not a slotcron database (application_id 0x0), left untouched", url(&other))
    );
}

#[tokio::test]
async fn a_schema_newer_or_older_than_this_release_reads_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (path, writer) = written(dir.path()).await;
    drop(writer);
    let set_version = |version: i64| {
        rusqlite::Connection::open(&path).unwrap().pragma_update(None, "user_version", version).unwrap();
    };
    set_version(9);
    let err = refused(&path).await;
    assert!(matches!(err, OpenError::NewerSchema { found: 9, known: 8, .. }), "{err}");
    // No release wrote version 0 with slotcron's application id: made up to reach the rule.
    set_version(0);
    let err = refused(&path).await;
    assert_eq!(
        err.to_string(),
        format!(
            "{}: schema version 0 is older than this release reads (1); \
             run the daemon of this release once to migrate it",
            url(&path)
        )
    );
}
