//! Ledger benchmark (not a test): "the last 50 runs of job X" in a ledger of 1,000,000
//! records, and the file staying bounded under retention.
//!
//! `cargo bench -p slotcron-sqlite --bench ledger` (figures in BENCHMARKS.md).
//! `SLOTCRON_BENCH_RECORDS` changes the number of records (default 1,000,000).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use slotcron::jiff::Timestamp;
use slotcron::{Ledger, LedgerQuery, Outcome, Retention, RunRecord};
use slotcron_sqlite::{SqliteDatabase, SqliteLedger};

const JOBS: u64 = 100;
const QUERIES: usize = 200;
/// 2024-05-17T00:00:00Z in microseconds.
const BASE_US: i64 = 1_715_904_000_000_000;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let records: u64 =
        std::env::var("SLOTCRON_BENCH_RECORDS").ok().and_then(|n| n.parse().ok()).unwrap_or(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    last_50_runs(&dir.path().join("big.db"), records).await;
    retention_keeps_the_file_bounded(&dir.path().join("bounded.db")).await;
}

fn url(path: &Path) -> String {
    format!("sqlite:{}", path.display())
}

async fn last_50_runs(path: &Path, records: u64) {
    drop(SqliteDatabase::open(&url(path)).await.unwrap());
    let started = Instant::now();
    // One statement generating the rows inside SQLite: JOBS jobs with a trigger a minute.
    rusqlite::Connection::open(path)
        .unwrap()
        .execute(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 - 1)
             INSERT INTO run_record
                 (job, trigger_us, instance, outcome, fencing_token, started_us, duration_us, error)
             SELECT 'job-' || (i % ?2), ?3 + (i / ?2) * 60000000, 'replica-' || (i % 3),
                    CASE WHEN (i / ?2) % 10 = 0 THEN 'skipped-lost' ELSE 'succeeded' END,
                    i, ?3 + (i / ?2) * 60000000 + 1000, 1500, NULL
             FROM n",
            (records as i64, JOBS as i64, BASE_US),
        )
        .unwrap();
    let size = std::fs::metadata(path).unwrap().len();
    println!(
        "sqlite {}: filled {records} records ({JOBS} jobs) in {:.1?}; file {:.1} MiB",
        rusqlite::version(),
        started.elapsed(),
        size as f64 / 1048576.0
    );

    let ledger = SqliteLedger::new(SqliteDatabase::open(&url(path)).await.unwrap(), Retention::default());
    let job_x = LedgerQuery { job: Some("job-42".into()), limit: 50, ..LedgerQuery::default() };
    let failed_x = LedgerQuery { outcome: Some(Outcome::SkippedLost), ..job_x.clone() };
    let any_job = LedgerQuery { limit: 50, ..LedgerQuery::default() };
    for (name, query) in [
        ("last 50 runs of job X", &job_x),
        ("… with outcome skipped-lost", &failed_x),
        ("last 50 runs of any job", &any_job),
    ] {
        let mut times = Vec::with_capacity(QUERIES);
        for _ in 0..QUERIES {
            let start = Instant::now();
            let found = ledger.query(query).await.unwrap();
            times.push(start.elapsed());
            assert_eq!(found.len(), 50);
        }
        report(name, &mut times);
    }
}

fn report(name: &str, times: &mut [Duration]) {
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    println!(
        "sqlite: {name}: {} queries, min {:.3?}, median {:.3?}, p99 {:.3?}, max {:.3?}",
        times.len(),
        at(0.0),
        at(0.5),
        at(0.99),
        at(1.0)
    );
}

/// Appends 50,000 records of 10 jobs through the API with at most 1,000 records per job:
/// the row count and the file size stop growing.
async fn retention_keeps_the_file_bounded(path: &Path) {
    let retention =
        Retention { max_age: Some(Duration::from_secs(30 * 86_400)), max_records_per_job: Some(1_000) };
    let ledger = SqliteLedger::new(SqliteDatabase::open(&url(path)).await.unwrap(), retention);
    let base = Timestamp::from_microsecond(BASE_US).unwrap();
    let started = Instant::now();
    for i in 0..50_000u64 {
        let trigger = base + Duration::from_secs(i / 10);
        let record = RunRecord {
            job: Arc::from(format!("job-{}", i % 10).as_str()),
            trigger,
            instance: Arc::from("replica-1"),
            outcome: Outcome::Succeeded,
            fencing_token: Some(i),
            started: trigger,
            duration: Duration::from_millis(3),
            error: None,
        };
        ledger.append(&record).await.unwrap();
        if (i + 1) % 10_000 == 0 {
            let rows: i64 = rusqlite::Connection::open(path)
                .unwrap()
                .query_row("SELECT count(*) FROM run_record", [], |row| row.get(0))
                .unwrap();
            let file = std::fs::metadata(path).unwrap().len();
            let wal = std::fs::metadata(path.with_extension("db-wal")).map_or(0, |m| m.len());
            println!(
                "sqlite: retention 1,000/job: after {:>6} appends: {rows:>6} rows, file {:>4} KiB, wal {:>5} KiB",
                i + 1,
                file / 1024,
                wal / 1024
            );
        }
    }
    println!("sqlite: 50,000 appends through the API in {:.1?}", started.elapsed());
}
