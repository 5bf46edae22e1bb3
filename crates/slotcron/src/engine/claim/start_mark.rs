//! The start mark: a claim is provisional until the run's `running` record is durable
//! (DESIGN.md, "Claims, start marks and takeover"). The run starts only once the ledger
//! has taken it; the marks of a burst go to the ledger together, in the outbox's
//! batches.

use crate::clock::later;
use crate::engine::shared::Shared;
use crate::ledger::{LedgerWrite, RunRecord};

/// Queues `record` (a run's `running` record) and waits until the ledger has taken it,
/// for at most the start-mark timeout. `Err` with the reason when it was not taken in
/// time: the run must not start (fail closed).
pub(crate) async fn mark_start(shared: &Shared, record: RunRecord) -> Result<(), String> {
    let taken = shared.outbox.push_mark(LedgerWrite::Append(record));
    let timeout = shared.settings.start_mark_timeout;
    let deadline = later(shared.clock.now(), timeout);
    let clock = shared.clock.as_ref();
    let marked = tokio::select! {
        biased;
        taken = taken => taken.is_ok(),
        () = clock.sleep_until(deadline) => false,
    };
    if marked {
        return Ok(());
    }
    Err(format!(
        "the run's start mark (its `running` record) was not in the ledger within {timeout:?}: \
         not started, since a run whose start is not durable could be lost without a record"
    ))
}
