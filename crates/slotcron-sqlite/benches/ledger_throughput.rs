//! Ledger throughput (not a test): one writer, as one daemon, writes 60,000 runs (a
//! `running` append and the update ending it: two writes, one record) in batches of up
//! to 256 into a `SqliteLedger`, through the one-at-a-time path (the baseline) and
//! through `write_batch`, each in a file of its own in a temporary directory. The common
//! part is `slotcron_testkit::ledger_throughput`.
//!
//! `cargo bench -p slotcron-sqlite --bench ledger_throughput` (figures in BENCHMARKS.md).
//! `SLOTCRON_BENCH_RUNS` changes the number of runs.

use std::sync::Arc;

use slotcron::{Ledger, Retention};
use slotcron_sqlite::{SqliteDatabase, SqliteLedger};
use slotcron_testkit::ledger_throughput::{self, OneAtATime};

/// A ledger in a new file `name` in `dir`, with the default retention (as a daemon has).
async fn ledger(dir: &tempfile::TempDir, name: &str) -> SqliteLedger {
    let url = format!("sqlite:{}", dir.path().join(name).display());
    SqliteLedger::new(SqliteDatabase::open(&url).await.unwrap(), Retention::default())
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let runs = ledger_throughput::runs();
    let one_at_a_time: Arc<dyn Ledger> = Arc::new(OneAtATime(ledger(&dir, "before.db").await));
    let before =
        ledger_throughput::measure("sqlite before (one write at a time)", vec![one_at_a_time], runs).await;
    let batched: Arc<dyn Ledger> = Arc::new(ledger(&dir, "after.db").await);
    let after = ledger_throughput::measure("sqlite after (write_batch)", vec![batched], runs).await;
    println!("sqlite: 1 writer: {before:.0} -> {after:.0} records/s");
}
