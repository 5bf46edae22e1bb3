//! Restarts on a real SQLite file: a scheduler on a manual clock is stopped and dropped,
//! and a new one opens the same file, as a process started again would. Mirrors the
//! core's `tests/restart.rs` (which uses a shared in-memory store); both run
//! `slotcron_testkit::restart_after_downtime`. The manual-clock harness settles on tokio's
//! paused time: SQLite statements run on tokio's blocking pool, which holds paused time
//! still until they finish.

use std::path::Path;
use std::sync::Arc;

use slotcron::{Job, Misfire, Outcome, Retention, RunRecord};
use slotcron_sqlite::{SqliteDatabase, SqliteLedger, SqliteStore};
use slotcron_testkit as testkit;
use slotcron_testkit::harness::{Harness, ok, ts};

/// A scheduler starting at `start` on the store and ledger in `path`.
async fn on(path: &Path, start: &str) -> Harness {
    let database = SqliteDatabase::open(&format!("sqlite:{}", path.display())).await.unwrap();
    let store = Arc::new(SqliteStore::new(database.clone()));
    let ledger = Arc::new(SqliteLedger::new(database, Retention::default()));
    Harness::with(start, move |b| b.store(store).ledger(ledger))
}

/// `(trigger, outcome)` of every record of `job` in the file's ledger, oldest first.
async fn history(h: &Harness, job: &str) -> Vec<(slotcron::jiff::Timestamp, Outcome)> {
    let mut records: Vec<RunRecord> = h.history(job).await;
    records.reverse();
    records.into_iter().map(|r| (r.trigger, r.outcome)).collect()
}

/// [`testkit::restart_after_downtime`] on a file of a new directory; the restarted
/// harness and the directory.
async fn restart_after_downtime(misfire: Option<Misfire>) -> (Harness, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let second = testkit::restart_after_downtime(async |start| on(&path, start).await, misfire).await;
    (second, dir)
}

/// The records the restarted scheduler added after the first run's five.
async fn after_restart(h: &Harness) -> Vec<(slotcron::jiff::Timestamp, Outcome)> {
    history(h, "tick").await.split_off(5)
}

#[tokio::test(start_paused = true)]
async fn skip_drops_the_triggers_missed_while_down() {
    let (mut h, _dir) = restart_after_downtime(None).await;
    assert_eq!(after_restart(&h).await, [(ts("2024-05-17T00:00:20Z"), Outcome::Missed)]);
    h.advance_to(ts("2024-05-17T00:00:22Z")).await;
    assert_eq!(
        after_restart(&h).await,
        [(ts("2024-05-17T00:00:20Z"), Outcome::Missed), (ts("2024-05-17T00:00:22Z"), Outcome::Succeeded)]
    );
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn run_once_coalesces_the_missed_triggers_into_one_run() {
    let (mut h, _dir) = restart_after_downtime(Some(Misfire::RunOnce)).await;
    assert_eq!(after_restart(&h).await, [(ts("2024-05-17T00:00:20Z"), Outcome::Succeeded)]);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn run_all_runs_up_to_the_cap_and_records_the_rest_as_missed() {
    let (mut h, _dir) = restart_after_downtime(Some(Misfire::RunAll { cap: 3 })).await;
    assert_eq!(
        after_restart(&h).await,
        [
            (ts("2024-05-17T00:00:14Z"), Outcome::Missed),
            (ts("2024-05-17T00:00:16Z"), Outcome::Succeeded),
            (ts("2024-05-17T00:00:18Z"), Outcome::Succeeded),
            (ts("2024-05-17T00:00:20Z"), Outcome::Succeeded),
        ]
    );
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_at_job_that_ran_never_runs_again_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let job = || Job::builder("migrate").at(ts("2024-05-17T00:00:05Z")).handler(ok).build().unwrap();
    let mut first = on(&path, "2024-05-17T00:00:00Z").await;
    first.add(job());
    first.start().await;
    first.advance_to(ts("2024-05-17T00:00:06Z")).await;
    first.stop().await;
    drop(first);

    let mut second = on(&path, "2024-05-17T00:00:07Z").await;
    second.add(job());
    second.start().await;
    second.advance_to(ts("2024-05-18T00:00:00Z")).await;
    second.stop().await;
    assert_eq!(history(&second, "migrate").await, [(ts("2024-05-17T00:00:05Z"), Outcome::Succeeded)]);
}
