//! The cost of `overlap = "forbid"` per trigger next to `allow` on the PostgreSQL at
//! `DATABASE_URL` (default the local `test` database), in a schema of its own that is
//! dropped at the end (`slotcron_testkit::overlap_bench`): 2,000 triggers of each, one at a time.
//!
//! `cargo bench -p slotcron-postgres --bench overlap` (figures in BENCHMARKS.md).

use slotcron_postgres::{PostgresCoordinator, PostgresDatabase};
use slotcron_testkit::overlap_bench::forbid_cost;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let schema = format!("slotcron_bench_overlap_{}", std::process::id());
    let coordinator = PostgresCoordinator::new(PostgresDatabase::open(&url, &schema).await.unwrap());
    forbid_cost(&coordinator, "warm-up", 200).await;
    for round in 1..=3 {
        let (allow, forbid) = forbid_cost(&coordinator, &format!("job-{round}"), 2_000).await;
        println!(
            "round {round}: allow {} round trip(s), {:.1} µs/trigger; forbid {} round trips, {:.1} µs/trigger",
            allow.round_trips, allow.micros, forbid.round_trips, forbid.micros
        );
    }
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client.batch_execute(&format!("DROP SCHEMA {schema} CASCADE")).await.unwrap();
}
