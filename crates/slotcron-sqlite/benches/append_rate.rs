//! Ledger append rate under concurrent appends (not a test), before and after the SQLite
//! backend's one worker: 20,000 records appended by 500 tasks at once, the way a burst of
//! runs records them, through
//!
//! - the way of the release before (the baseline, rebuilt here): one connection behind a
//!   mutex, each append its own task on tokio's blocking pool, one autocommitted
//!   `INSERT` each;
//! - [`SqliteLedger::append`]: one worker at a time, the appends waiting together run in
//!   one transaction.
//!
//! Each prints the records per second and the most threads the process had
//! (`/proc/self/status`), sampled every millisecond.
//!
//! `cargo bench -p slotcron-sqlite --bench append_rate` (figures in BENCHMARKS.md).

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use slotcron::{Ledger, Retention, RunRecord};
use slotcron_sqlite::{SqliteDatabase, SqliteLedger};
use slotcron_testkit::fixtures::succeeded_run;

const RECORDS: usize = 20_000;
const TASKS: usize = 500;

fn records() -> Vec<RunRecord> {
    (0..RECORDS)
        .map(|i| {
            let mut record = succeeded_run(&format!("job-{}", i % TASKS), "2024-05-17T00:00:00Z");
            record.trigger += Duration::from_secs(i as u64);
            record.started = record.trigger;
            record
        })
        .collect()
}

fn threads() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|n| n.trim().parse().ok()).unwrap_or(0)
}

/// Runs `append` for every record, `TASKS` at a time; prints the rate and the most threads.
async fn measure<F, Fut>(name: &str, append: F)
where
    F: Fn(RunRecord) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let done = Arc::new(AtomicBool::new(false));
    let most = Arc::new(AtomicU32::new(0));
    let sampler = {
        let (done, most) = (done.clone(), most.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                most.fetch_max(threads(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let all = records();
    let started = Instant::now();
    for chunk in all.chunks(TASKS) {
        join_all(chunk.iter().cloned().map(&append)).await;
    }
    let took = started.elapsed();
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    println!(
        "{name}: {RECORDS} appends, {TASKS} at a time, in {took:.2?}: {:.0} records/s; at most {} threads",
        RECORDS as f64 / took.as_secs_f64(),
        most.load(Ordering::Relaxed)
    );
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    // After, first: the threads the baseline leaves idle on the blocking pool (for 10 s)
    // would count in its figure.
    let url = format!("sqlite:{}", dir.path().join("after.db").display());
    let ledger = SqliteLedger::new(SqliteDatabase::open(&url).await.unwrap(), Retention::default());
    measure("after (one worker, waiting appends in one transaction)", |record: RunRecord| {
        let ledger = &ledger;
        async move { ledger.append(&record).await.unwrap() }
    })
    .await;
    // The baseline: the release before's `call`, a blocking task per statement.
    let path = dir.path().join("baseline.db");
    drop(SqliteDatabase::open(&format!("sqlite:{}", path.display())).await.unwrap());
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection.pragma_update(None, "synchronous", "NORMAL").unwrap();
    let connection = Arc::new(Mutex::new(connection));
    measure("before (a blocking task per append)", |record: RunRecord| {
        let connection = connection.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                connection
                    .lock()
                    .unwrap()
                    .prepare_cached(
                        "INSERT INTO run_record (job, trigger_us, instance, outcome, fencing_token, started_us,
                         duration_us, error, cause, attempts) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, NULL, ?8, ?9)",
                    )
                    .unwrap()
                    .execute((
                        &*record.job,
                        record.trigger.as_microsecond(),
                        &*record.instance,
                        record.outcome.as_str(),
                        record.fencing_token.map(|t| t as i64),
                        record.started.as_microsecond(),
                        record.duration.as_micros() as i64,
                        record.cause.as_str(),
                        i64::from(record.attempts),
                    ))
                    .unwrap();
            })
            .await
            .unwrap();
        }
    })
    .await;
}
