//! Claim benchmark (not a test): `PostgresCoordinator::claim` throughput on the server at
//! `DATABASE_URL` (default the local `test` database), in a schema of its own that is
//! dropped at the end. Won claims (each on a new trigger), lost claims (each on a trigger
//! another replica holds), one at a time and 50 in flight on one replica's pool.
//!
//! `cargo bench -p slotcron-postgres --bench claims` (figures in BENCHMARKS.md).
//! `SLOTCRON_BENCH_CLAIMS` changes the number of claims per part (default 5,000).

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use futures_util::stream;
use slotcron::jiff::Timestamp;
use slotcron::{Claim, ClaimOutcome, Coordinator, Hold};
use slotcron_postgres::{PostgresCoordinator, PostgresDatabase};

const HOLD: Option<Hold> =
    Some(Hold { slot: Duration::from_secs(3_600), run_budget: None, slack: Duration::ZERO });

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let claims: i64 =
        std::env::var("SLOTCRON_BENCH_CLAIMS").ok().and_then(|n| n.parse().ok()).unwrap_or(5_000);
    let schema = format!("slotcron_bench_claims_{}", std::process::id());
    let replica = PostgresCoordinator::new(PostgresDatabase::open(&url, &schema).await.unwrap());
    let other = PostgresCoordinator::new(PostgresDatabase::open(&url, &schema).await.unwrap());
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let version: String = client.query_one("SHOW server_version", &[]).await.unwrap().get(0);
    println!("postgres {version}: {claims} claims per part");

    // Warm the statement cache of every connection the parts below use.
    run("warm-up", &replica, "warm", 0..50, 50, true).await;
    run("warm-up", &other, "warm", 0..50, 50, false).await;

    run("won, 1 in flight", &replica, "a", 0..claims, 1, true).await;
    run("lost, 1 in flight", &other, "a", 0..claims, 1, false).await;
    run("won, 50 in flight", &replica, "b", 0..claims, 50, true).await;
    run("lost, 50 in flight", &other, "b", 0..claims, 50, false).await;

    client.batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE")).await.unwrap();
}

/// Claims the triggers `seconds` of `job` with `in_flight` claims at once; every outcome
/// must be a win (`won`) or a loss.
async fn run(
    name: &str,
    coordinator: &PostgresCoordinator,
    job: &str,
    seconds: std::ops::Range<i64>,
    in_flight: usize,
    won: bool,
) {
    let count = seconds.end - seconds.start;
    let started = Instant::now();
    let outcomes: Vec<ClaimOutcome> = stream::iter(seconds)
        .map(|second| async move {
            // In 2100: ahead of the server's clock, so claims made out of order (50 in
            // flight) are decided by their rows, not by the job's high-water mark.
            let trigger = Timestamp::from_second(4_102_444_800 + second).unwrap();
            let key = format!("{job}:{trigger}");
            let claim = Claim { job, trigger, key: &key, instance: "bench", hold: HOLD };
            coordinator.claim(&claim).await.unwrap()
        })
        .buffer_unordered(in_flight)
        .collect()
        .await;
    let elapsed = started.elapsed();
    assert!(outcomes.iter().all(|outcome| matches!(outcome, ClaimOutcome::Won { .. }) == won), "{name}");
    if name != "warm-up" {
        println!(
            "postgres: {name}: {count} claims in {elapsed:.2?}: {:.0} claims/s",
            count as f64 / elapsed.as_secs_f64()
        );
    }
}
