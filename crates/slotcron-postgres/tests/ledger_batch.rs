//! `PostgresLedger::write_batch` on the real server, beyond the shared ledger suite: the
//! order rows are stored in, a batch far past a statement's parameter limit, several
//! writers at once, one record per run, and a failed batch writing nothing.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{connect, database_url, isolated};
use futures_util::future::join_all;
use slotcron::{Ledger, LedgerQuery, LedgerWrite, Outcome, Retention, RunRecord};
use slotcron_postgres::{PostgresDatabase, PostgresLedger};
use slotcron_testkit::fixtures::succeeded_run;

/// No pruning: these tests count every record.
const KEEP_ALL: Retention = Retention { max_age: None, max_records_per_job: None };

/// A `running` record of `job`'s trigger `seconds` after 2024-05-17T00:00:00Z, instance
/// `instance`.
fn running(job: &str, seconds: u64, instance: &str) -> RunRecord {
    let mut record = succeeded_run(job, "2024-05-17T00:00:00Z");
    record.trigger += Duration::from_secs(seconds);
    record.started = record.trigger;
    record.instance = Arc::from(instance);
    record.outcome = Outcome::Running;
    record
}

fn ended(mut record: RunRecord, outcome: Outcome) -> RunRecord {
    record.outcome = outcome;
    record
}

/// `job:outcome` of every stored record, in the order stored (by id).
async fn stored(schema: &str) -> Vec<String> {
    let sql = format!("SELECT job || ':' || outcome FROM \"{schema}\".run_record ORDER BY id");
    connect().await.query(&sql, &[]).await.unwrap().iter().map(|row| row.get(0)).collect()
}

async fn ledger(schema: &str) -> PostgresLedger {
    let database = PostgresDatabase::open(&database_url(), schema).await.unwrap();
    PostgresLedger::new(database, KEEP_ALL)
}

#[tokio::test]
async fn runs_are_stored_in_the_order_of_their_first_write() {
    isolated(async |schemas| {
        let schema = schemas.name();
        let ledger = ledger(&schema).await;
        let (a, b, c) = (running("a", 0, "r1"), running("b", 0, "r1"), running("c", 0, "r1"));
        let writes = [
            LedgerWrite::Append(b.clone()),
            LedgerWrite::Update(ended(a.clone(), Outcome::Failed)),
            LedgerWrite::Append(c.clone()),
            LedgerWrite::Update(ended(b.clone(), Outcome::Succeeded)),
            LedgerWrite::Append(a.clone()),
            LedgerWrite::Update(ended(c.clone(), Outcome::Missed)),
            LedgerWrite::Update(ended(c, Outcome::Succeeded)),
        ];
        ledger.write_batch(&writes).await.unwrap();
        assert_eq!(stored(&schema).await, ["b:succeeded", "a:failed", "c:succeeded"]);
    })
    .await;
}

#[tokio::test]
async fn a_batch_past_the_parameter_limit_is_one_statement() {
    isolated(async |schemas| {
        let schema = schemas.name();
        let ledger = ledger(&schema).await;
        // 65,535 parameters would be 5,041 rows of 13 columns; the arrays have no limit.
        let runs: Vec<_> = (0..12_000).map(|i| running(&format!("job-{}", i % 100), i, "r1")).collect();
        let mut writes: Vec<_> = runs.iter().cloned().map(LedgerWrite::Append).collect();
        writes.extend(
            runs.iter().step_by(2).map(|run| LedgerWrite::Update(ended(run.clone(), Outcome::Succeeded))),
        );
        ledger.write_batch(&writes).await.unwrap();
        let counts = format!(
            "SELECT count(*) FILTER (WHERE outcome = 'running'), count(*) FILTER (WHERE outcome = 'succeeded')
             FROM \"{schema}\".run_record"
        );
        let row = connect().await.query_one(&counts, &[]).await.unwrap();
        assert_eq!((row.get::<_, i64>(0), row.get::<_, i64>(1)), (6_000, 6_000));
    })
    .await;
}

#[tokio::test]
async fn writers_at_once_each_store_every_run() {
    isolated(async |schemas| {
        let schema = schemas.name();
        let ledgers = join_all((0..3).map(|_| ledger(&schema))).await;
        let writer = async |ledger: &PostgresLedger, instance: &str| {
            let runs: Vec<_> =
                (0..600).map(|i| running(&format!("job-{}", i % 50), i / 50, instance)).collect();
            for chunk in runs.chunks(128) {
                let appends = chunk.iter().cloned().map(LedgerWrite::Append);
                let ends =
                    chunk.iter().map(|run| LedgerWrite::Update(ended(run.clone(), Outcome::Succeeded)));
                ledger.write_batch(&appends.chain(ends).collect::<Vec<_>>()).await.unwrap();
            }
        };
        join_all(ledgers.iter().zip(["r1", "r2", "r3"]).map(|(ledger, instance)| writer(ledger, instance)))
            .await;
        let all = ledgers[0].query(&LedgerQuery::new().limit(usize::MAX)).await.unwrap();
        assert_eq!(all.len(), 1_800);
        assert!(all.iter().all(|record| record.outcome == Outcome::Succeeded));
    })
    .await;
}

#[tokio::test]
async fn new_runs_of_appends_and_of_updates_are_stored_in_one_order() {
    isolated(async |schemas| {
        let schema = schemas.name();
        let ledger = ledger(&schema).await;
        ledger.append(&running("stored", 0, "r1")).await.unwrap();
        // Runs only appended and runs updated (the stored one, and new ones), interleaved.
        let writes = [
            LedgerWrite::Append(running("a", 0, "r1")),
            LedgerWrite::Update(ended(running("b", 0, "r1"), Outcome::Succeeded)),
            LedgerWrite::Update(ended(running("stored", 0, "r1"), Outcome::Failed)),
            LedgerWrite::Append(running("c", 0, "r1")),
            LedgerWrite::Update(ended(running("d", 0, "r1"), Outcome::Missed)),
            LedgerWrite::Append(running("stored", 0, "r1")),
        ];
        ledger.write_batch(&writes).await.unwrap();
        assert_eq!(
            stored(&schema).await,
            ["stored:failed", "a:running", "b:succeeded", "c:running", "d:missed"]
        );
    })
    .await;
}

#[tokio::test]
async fn a_run_has_one_record() {
    isolated(async |schemas| {
        let schema = schemas.name();
        let ledger = ledger(&schema).await;
        let run = running("tick", 0, "r1");
        ledger.append(&run).await.unwrap();
        // A second record of the run, as an older release racing on it would insert.
        let duplicate = format!(
            "INSERT INTO \"{schema}\".run_record (job, trigger_at, instance, outcome, started_at, duration_us)
             SELECT job, trigger_at, instance, 'missed', started_at, duration_us FROM \"{schema}\".run_record"
        );
        let error = connect().await.execute(&duplicate, &[]).await.unwrap_err();
        assert_eq!(error.code(), Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION), "{error}");
        ledger.write_batch(&[LedgerWrite::Update(ended(run, Outcome::Succeeded))]).await.unwrap();
        assert_eq!(stored(&schema).await, ["tick:succeeded"]);
    })
    .await;
}

#[tokio::test]
async fn a_failed_batch_writes_nothing() {
    isolated(async |schemas| {
        let schema = schemas.name();
        let ledger = ledger(&schema).await;
        // The server refuses a NUL in text: the third write fails the statement.
        let writes = [
            LedgerWrite::Append(running("a", 0, "r1")),
            LedgerWrite::Update(ended(running("a", 0, "r1"), Outcome::Succeeded)),
            LedgerWrite::Append(running("nul\0", 0, "r1")),
        ];
        let error = ledger.write_batch(&writes).await.unwrap_err();
        assert_eq!(error.written, 0, "{error}");
        assert_eq!(stored(&schema).await, Vec::<String>::new());
    })
    .await;
}
