//! The in-memory store and ledger against the shared conformance suites.
//!
//! [`MemoryLedger`] keeps a fixed number of records rather than a [`Retention`]
//! (slotcron::Retention), so only the query cases apply to it.

use slotcron::{MemoryLedger, MemoryOutputs, MemoryStore};
use slotcron_testkit as testkit;

#[tokio::test]
async fn memory_store_conforms() {
    testkit::store_suite::run(async || MemoryStore::new()).await;
}

#[tokio::test]
async fn memory_ledger_conforms() {
    testkit::ledger_suite::run(async || MemoryLedger::default()).await;
}

#[tokio::test]
async fn memory_outputs_conform() {
    testkit::ledger_suite::run_attempts(async || MemoryOutputs::default()).await;
}
