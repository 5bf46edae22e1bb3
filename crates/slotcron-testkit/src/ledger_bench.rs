//! The ledger benchmark's common part (not a test): the SQL ledgers' `benches/ledger.rs`
//! fill a ledger of [`records`] records with one statement of their own SQL, then call
//! [`time_queries`] ("the last 50 runs of job X") and [`append_under_retention`] (the
//! database staying bounded). Figures and commands are in BENCHMARKS.md.
//!
//! The filled ledger: [`JOBS`] jobs named `job-0`…`job-99`, record `i` of job
//! `job-{i % JOBS}` with trigger [`BASE`] + `i / JOBS` minutes, instance
//! `replica-{i % 3}`, outcome `skipped-lost` for every tenth trigger of a job and
//! `succeeded` otherwise, fencing token `i`, started 1 ms after its trigger, 1.5 ms long.

use std::sync::Arc;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use slotcron::{Cause, Ledger, LedgerQuery, Outcome, Retention, RunRecord};

/// How many jobs the filled ledger has.
pub const JOBS: u64 = 100;
/// How many times each query is timed.
pub const QUERIES: usize = 200;
/// The first trigger of every job: 2024-05-17T00:00:00Z.
pub const BASE: Timestamp = Timestamp::constant(1_715_904_000, 0);

/// How many records to fill: `SLOTCRON_BENCH_RECORDS`, default 1,000,000.
pub fn records() -> u64 {
    std::env::var("SLOTCRON_BENCH_RECORDS").ok().and_then(|n| n.parse().ok()).unwrap_or(1_000_000)
}

/// Times "the last 50 runs of job X" (`job-42`), the same with outcome `skipped-lost`,
/// and "the last 50 runs of any job" on the filled `ledger`, [`QUERIES`] times each, and
/// prints a line per query: `{backend}: {query}: … min, median, p99, max`. Panics if a
/// query fails or finds fewer than 50 records.
pub async fn time_queries(backend: &str, ledger: &dyn Ledger) {
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
        times.sort();
        let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
        println!(
            "{backend}: {name}: {} queries, min {:.3?}, median {:.3?}, p99 {:.3?}, max {:.3?}",
            times.len(),
            at(0.0),
            at(0.5),
            at(0.99),
            at(1.0)
        );
    }
}

/// The retention [`append_under_retention`] needs its ledger built with: 30 days, at most
/// 1,000 records per job.
pub const RETENTION: Retention =
    Retention { max_age: Some(Duration::from_secs(30 * 86_400)), max_records_per_job: Some(1_000) };

/// Appends 50,000 records of 10 jobs (a trigger every 10 s per job from [`BASE`]) through
/// `ledger`, built with [`RETENTION`], so that pruning keeps it at 10,000 records. After
/// every 10,000 appends it prints `{backend}: retention 1,000/job: after N appends: ` and
/// what `measure` returns (the backend's row count and sizes); at the end, how long the
/// appends took. Panics if an append fails.
pub async fn append_under_retention(
    backend: &str,
    ledger: &dyn Ledger,
    mut measure: impl AsyncFnMut() -> String,
) {
    let started = Instant::now();
    for i in 0..50_000u64 {
        let trigger = BASE + Duration::from_secs(i / 10);
        let record = RunRecord {
            job: Arc::from(format!("job-{}", i % 10).as_str()),
            trigger,
            instance: Arc::from("replica-1"),
            cause: Cause::Scheduled,
            attempts: 1,
            outcome: Outcome::Succeeded,
            fencing_token: Some(i),
            started: trigger,
            duration: Duration::from_millis(3),
            error: None,
            process: None,
        };
        ledger.append(&record).await.unwrap();
        if (i + 1) % 10_000 == 0 {
            let sizes = measure().await;
            println!("{backend}: retention 1,000/job: after {:>6} appends: {sizes}", i + 1);
        }
    }
    println!("{backend}: 50,000 appends through the API in {:.1?}", started.elapsed());
}
