//! A fleet of three replicas against the local PostgreSQL coordinator, each replica a
//! scheduler on its own OS thread with its own tokio runtime and its own connection pool
//! (`slotcron_testkit::fleet_bench`), `allow` jobs with no-op handlers, the in-memory
//! ledger: 10,000 jobs every 10 s for 60 s.
//!
//! `cargo bench -p slotcron-postgres --bench fleet` (figures in BENCHMARKS.md), on the
//! server at `DATABASE_URL` (default the local `test` database), in a schema of its own
//! that is dropped at the end. Statements are counted at the client (one per coordinator
//! call); `SLOTCRON_BENCH_JOBS` changes the number of jobs.

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use slotcron::Coordinator;
use slotcron_postgres::{PostgresCoordinator, PostgresDatabase};
use slotcron_testkit::fleet_bench::{self, Load};

fn main() {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let jobs = std::env::var("SLOTCRON_BENCH_JOBS").ok().and_then(|n| n.parse().ok()).unwrap_or(10_000);
    let schema = format!("slotcron_bench_fleet_{}", std::process::id());
    let load = Load { replicas: 3, jobs, every: Duration::from_secs(10), window: Duration::from_secs(60) };
    let connect = |_replica: usize| {
        let (url, schema) = (url.clone(), schema.clone());
        async move {
            let database = PostgresDatabase::open(&url, &schema).await.expect("open the database");
            Arc::new(PostgresCoordinator::new(database)) as Arc<dyn Coordinator>
        }
        .boxed_local()
    };
    let report = fleet_bench::run(load, &connect, None);
    println!(
        "postgres, {} replicas, {} jobs every {:?} for {:?}: {report}",
        load.replicas, load.jobs, load.every, load.window
    );
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        client.batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE")).await.unwrap();
    });
}
