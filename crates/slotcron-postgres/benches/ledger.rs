//! Ledger benchmark (not a test): "the last 50 runs of job X" in a ledger of 1,000,000
//! records, and the table staying bounded under retention, on the server at
//! `DATABASE_URL` (default the local `test` database), in a schema of its own that is
//! dropped at the end.
//!
//! `cargo bench -p slotcron-postgres --bench ledger` (figures in BENCHMARKS.md).
//! `SLOTCRON_BENCH_RECORDS` changes the number of records (default 1,000,000).

use std::sync::Arc;
use std::time::{Duration, Instant};

use slotcron::jiff::Timestamp;
use slotcron::{Ledger, LedgerQuery, Outcome, Retention, RunRecord};
use slotcron_postgres::{PostgresDatabase, PostgresLedger};

const JOBS: i64 = 100;
const QUERIES: usize = 200;
const BASE: &str = "2024-05-17T00:00:00Z";

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let records: i64 =
        std::env::var("SLOTCRON_BENCH_RECORDS").ok().and_then(|n| n.parse().ok()).unwrap_or(1_000_000);
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let big = format!("slotcron_bench_{}", std::process::id());
    let bounded = format!("{big}_bounded");
    last_50_runs(&url, &client, &big, records).await;
    retention_keeps_the_table_bounded(&url, &client, &bounded).await;
    for schema in [big, bounded] {
        client.batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE")).await.unwrap();
    }
}

async fn last_50_runs(url: &str, client: &tokio_postgres::Client, schema: &str, records: i64) {
    let ledger =
        PostgresLedger::new(PostgresDatabase::open(url, schema).await.unwrap(), Retention::default());
    let started = Instant::now();
    // One statement generating the rows inside the server: JOBS jobs with a trigger a minute.
    client
        .execute(
            &format!(
                "INSERT INTO \"{schema}\".run_record
                     (job, trigger_at, instance, outcome, fencing_token, started_at, duration_us, error)
                 SELECT 'job-' || (i % $2::bigint), $3::text::timestamptz + (i / $2) * interval '1 minute',
                        'replica-' || (i % 3),
                        CASE WHEN (i / $2) % 10 = 0 THEN 'skipped-lost' ELSE 'succeeded' END, i,
                        $3::text::timestamptz + (i / $2) * interval '1 minute' + interval '1 ms', 1500, NULL
                 FROM generate_series(0, $1::bigint - 1) AS i"
            ),
            &[&records, &JOBS, &BASE],
        )
        .await
        .unwrap();
    client.batch_execute(&format!("ANALYZE \"{schema}\".run_record")).await.unwrap();
    let size: i64 = client
        .query_one(&format!("SELECT pg_total_relation_size('\"{schema}\".run_record')"), &[])
        .await
        .unwrap()
        .get(0);
    let version: String = client.query_one("SHOW server_version", &[]).await.unwrap().get(0);
    println!(
        "postgres {version}: filled {records} records ({JOBS} jobs) in {:.1?}; table + indexes {:.1} MiB",
        started.elapsed(),
        size as f64 / 1048576.0
    );

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
        "postgres: {name}: {} queries, min {:.3?}, median {:.3?}, p99 {:.3?}, max {:.3?}",
        times.len(),
        at(0.0),
        at(0.5),
        at(0.99),
        at(1.0)
    );
}

/// Appends 50,000 records of 10 jobs through the API with at most 1,000 records per job:
/// the row count stops growing, and the table's size with it once (auto)vacuum has marked
/// the pruned rows' space for reuse.
async fn retention_keeps_the_table_bounded(url: &str, client: &tokio_postgres::Client, schema: &str) {
    let retention =
        Retention { max_age: Some(Duration::from_secs(30 * 86_400)), max_records_per_job: Some(1_000) };
    let ledger = PostgresLedger::new(PostgresDatabase::open(url, schema).await.unwrap(), retention);
    let base: Timestamp = BASE.parse().unwrap();
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
            let row = client
                .query_one(
                    &format!(
                        "SELECT count(*), pg_total_relation_size('\"{schema}\".run_record') FROM \"{schema}\".run_record"
                    ),
                    &[],
                )
                .await
                .unwrap();
            let (rows, size): (i64, i64) = (row.get(0), row.get(1));
            // What autovacuum does on its own schedule (by default within a minute once
            // dead rows pass 20% of the table): mark the pruned rows' space for reuse.
            client.batch_execute(&format!("VACUUM \"{schema}\".run_record")).await.unwrap();
            println!(
                "postgres: retention 1,000/job: after {:>6} appends: {rows:>6} rows, table + indexes {:>5} KiB \
                 (then VACUUM)",
                i + 1,
                size / 1024
            );
        }
    }
    println!("postgres: 50,000 appends through the API in {:.1?}", started.elapsed());
}
