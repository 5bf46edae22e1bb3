//! Ledger benchmark (not a test): "the last 50 runs of job X" in a ledger of 1,000,000
//! records, and the file staying bounded under retention; the common part is
//! `slotcron_testkit::ledger_bench`.
//!
//! `cargo bench -p slotcron-sqlite --bench ledger` (figures in BENCHMARKS.md).
//! `SLOTCRON_BENCH_RECORDS` changes the number of records (default 1,000,000).

use std::path::Path;
use std::time::Instant;

use slotcron::Retention;
use slotcron_sqlite::{SqliteDatabase, SqliteLedger};
use slotcron_testkit::ledger_bench::{self, BASE, JOBS, RETENTION};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    last_50_runs(&dir.path().join("big.db"), ledger_bench::records()).await;
    retention_keeps_the_file_bounded(&dir.path().join("bounded.db")).await;
}

fn url(path: &Path) -> String {
    format!("sqlite:{}", path.display())
}

async fn last_50_runs(path: &Path, records: u64) {
    drop(SqliteDatabase::open(&url(path)).await.unwrap());
    let started = Instant::now();
    // One statement generating the rows inside SQLite, as `ledger_bench` describes them.
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
            (records as i64, JOBS as i64, BASE.as_microsecond()),
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
    ledger_bench::time_queries("sqlite", &ledger).await;
}

/// The row count and the file size stop growing.
async fn retention_keeps_the_file_bounded(path: &Path) {
    let ledger = SqliteLedger::new(SqliteDatabase::open(&url(path)).await.unwrap(), RETENTION);
    ledger_bench::append_under_retention("sqlite", &ledger, async || {
        let rows: i64 = rusqlite::Connection::open(path)
            .unwrap()
            .query_row("SELECT count(*) FROM run_record", [], |row| row.get(0))
            .unwrap();
        let file = std::fs::metadata(path).unwrap().len();
        let wal = std::fs::metadata(path.with_extension("db-wal")).map_or(0, |m| m.len());
        format!("{rows:>6} rows, file {:>4} KiB, wal {:>5} KiB", file / 1024, wal / 1024)
    })
    .await;
}
