//! The SQLite store and ledger against the shared conformance suites, each case on a new
//! file.

use slotcron_sqlite::{SqliteDatabase, SqliteLedger, SqliteOutputs, SqliteStore};
use slotcron_testkit as testkit;
use tempfile::TempDir;

/// A new database in a new directory, removed when the directory is dropped.
async fn fresh(dirs: &mut Vec<TempDir>) -> SqliteDatabase {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("state.db").display());
    dirs.push(dir);
    SqliteDatabase::open(&url).await.unwrap()
}

#[tokio::test]
async fn sqlite_store_conforms() {
    let mut dirs = Vec::new();
    testkit::store_suite::run(async || SqliteStore::new(fresh(&mut dirs).await)).await;
}

#[tokio::test]
async fn sqlite_ledger_conforms() {
    let mut dirs = Vec::new();
    testkit::ledger_suite::run(async || SqliteLedger::new(fresh(&mut dirs).await, Default::default())).await;
}

#[tokio::test]
async fn sqlite_run_output_conforms() {
    let mut dirs = Vec::new();
    testkit::ledger_suite::run_output(async |retention| {
        let database = fresh(&mut dirs).await;
        (SqliteLedger::new(database.clone(), retention).prune_every(1), SqliteOutputs::new(database))
    })
    .await;
}

#[tokio::test]
async fn sqlite_ledger_retention_conforms() {
    let mut dirs = Vec::new();
    testkit::ledger_suite::run_retention(async |retention| {
        SqliteLedger::new(fresh(&mut dirs).await, retention).prune_every(1)
    })
    .await;
}
