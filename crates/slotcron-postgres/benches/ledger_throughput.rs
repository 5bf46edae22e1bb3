//! Ledger throughput (not a test): three writers, each a `PostgresLedger` with a pool of
//! its own, as three daemons sharing one ledger, write 60,000 runs (a `running` append
//! and the update ending it: two writes, one record) in batches of up to 256, through
//! the one-at-a-time path (the baseline) and through `write_batch`, each in a schema of
//! its own on the server at `DATABASE_URL` (default the local `test` database), dropped
//! at the end. The common part is `slotcron_testkit::ledger_throughput`.
//!
//! `cargo bench -p slotcron-postgres --bench ledger_throughput` (figures in
//! BENCHMARKS.md). `SLOTCRON_BENCH_RUNS` changes the number of runs.

use std::sync::Arc;

use slotcron::Retention;
use slotcron_postgres::{PostgresDatabase, PostgresLedger};
use slotcron_testkit::ledger_throughput::{self, OneAtATime};

const WRITERS: usize = 3;

/// `WRITERS` ledgers on `schema`, each with a pool of its own, with the default retention
/// (as a daemon has).
async fn ledgers(url: &str, schema: &str) -> Vec<PostgresLedger> {
    let mut ledgers = Vec::new();
    for _ in 0..WRITERS {
        let database = PostgresDatabase::open(url, schema).await.unwrap();
        ledgers.push(PostgresLedger::new(database, Retention::default()));
    }
    ledgers
}

#[tokio::main]
async fn main() {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let runs = ledger_throughput::runs();
    let before = format!("slotcron_bench_{}_before", std::process::id());
    let after = format!("slotcron_bench_{}_after", std::process::id());
    let one_at_a_time =
        ledgers(&url, &before).await.into_iter().map(|ledger| Arc::new(OneAtATime(ledger)) as _);
    let before_rate =
        ledger_throughput::measure("postgres before (one write at a time)", one_at_a_time.collect(), runs)
            .await;
    let batched = ledgers(&url, &after).await.into_iter().map(|ledger| Arc::new(ledger) as _);
    let after_rate =
        ledger_throughput::measure("postgres after (write_batch)", batched.collect(), runs).await;
    println!("postgres: {WRITERS} writers: {before_rate:.0} -> {after_rate:.0} records/s");
    for schema in [before, after] {
        client.batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE")).await.unwrap();
    }
}
