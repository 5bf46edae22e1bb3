//! The PostgreSQL store and ledger against the shared conformance suites, each case in a
//! new schema.

mod common;

use common::isolated;
use slotcron_postgres::{PostgresLedger, PostgresOutputs, PostgresStore};
use slotcron_testkit as testkit;

#[tokio::test]
async fn postgres_store_conforms() {
    isolated(async |schemas| {
        testkit::store_suite::run(async || PostgresStore::new(schemas.open().await)).await;
    })
    .await;
}

#[tokio::test]
async fn postgres_ledger_conforms() {
    isolated(async |schemas| {
        testkit::ledger_suite::run(async || PostgresLedger::new(schemas.open().await, Default::default()))
            .await;
    })
    .await;
}

#[tokio::test]
async fn postgres_run_output_conforms() {
    isolated(async |schemas| {
        testkit::ledger_suite::run_output(async |retention| {
            let database = schemas.open().await;
            (PostgresLedger::new(database.clone(), retention).prune_every(1), PostgresOutputs::new(database))
        })
        .await;
    })
    .await;
}

#[tokio::test]
async fn postgres_ledger_retention_conforms() {
    isolated(async |schemas| {
        testkit::ledger_suite::run_retention(async |retention| {
            PostgresLedger::new(schemas.open().await, retention).prune_every(1)
        })
        .await;
    })
    .await;
}
