//! Ledger benchmark (not a test): "the last 50 runs of job X" in a ledger of 1,000,000
//! records, and the table staying bounded under retention, on the server at
//! `DATABASE_URL` (default the local `test` database), in a schema of its own that is
//! dropped at the end; the common part is `slotcron_testkit::ledger_bench`.
//!
//! `cargo bench -p slotcron-postgres --bench ledger` (figures in BENCHMARKS.md).
//! `SLOTCRON_BENCH_RECORDS` changes the number of records (default 1,000,000).

use std::time::Instant;

use slotcron::Retention;
use slotcron_postgres::{PostgresDatabase, PostgresLedger};
use slotcron_testkit::ledger_bench::{self, BASE, JOBS, RETENTION};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let big = format!("slotcron_bench_{}", std::process::id());
    let bounded = format!("{big}_bounded");
    last_50_runs(&url, &client, &big, ledger_bench::records()).await;
    retention_keeps_the_table_bounded(&url, &client, &bounded).await;
    for schema in [big, bounded] {
        client.batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE")).await.unwrap();
    }
}

async fn last_50_runs(url: &str, client: &tokio_postgres::Client, schema: &str, records: u64) {
    let ledger =
        PostgresLedger::new(PostgresDatabase::open(url, schema).await.unwrap(), Retention::default());
    let started = Instant::now();
    // One statement generating the rows inside the server, as `ledger_bench` describes them.
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
            &[&(records as i64), &(JOBS as i64), &BASE.to_string()],
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
    ledger_bench::time_queries("postgres", &ledger).await;
}

/// The row count stops growing, and the table's size with it once (auto)vacuum has
/// marked the pruned rows' space for reuse.
async fn retention_keeps_the_table_bounded(url: &str, client: &tokio_postgres::Client, schema: &str) {
    let ledger = PostgresLedger::new(PostgresDatabase::open(url, schema).await.unwrap(), RETENTION);
    ledger_bench::append_under_retention("postgres", &ledger, async || {
        let sql = format!(
            "SELECT count(*), pg_total_relation_size('\"{schema}\".run_record') FROM \"{schema}\".run_record"
        );
        let row = client.query_one(&sql, &[]).await.unwrap();
        let (rows, size): (i64, i64) = (row.get(0), row.get(1));
        // What autovacuum does on its own schedule (by default within a minute once
        // dead rows pass 20% of the table): mark the pruned rows' space for reuse.
        client.batch_execute(&format!("VACUUM \"{schema}\".run_record")).await.unwrap();
        format!("{rows:>6} rows, table + indexes {:>5} KiB (then VACUUM)", size / 1024)
    })
    .await;
}
