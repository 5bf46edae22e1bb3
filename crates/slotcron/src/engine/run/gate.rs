//! What comes before a claim made here: the jitter, a local pause, the concurrency cap.

use jiff::Timestamp;

use crate::clock::later;
use crate::engine::scope::RunScope;
use crate::job::Job;
use crate::ledger::{Cause, Outcome, RunRecord};
use crate::policy::{self, ConcurrencyCap, RunSlot};

/// What comes before a claim made here: the jitter (none for a `requested` run), the
/// pause of a job no coordinator claims for (a claim checks its own; a requested run
/// ignores it), and the concurrency cap's slot, taken before the claim so a replica with
/// room wins it. Else the record of the skip.
pub(super) async fn start_gate(
    scope: &RunScope,
    job: &Job,
    trigger: Timestamp,
    cause: Cause,
    requested: bool,
) -> Result<RunSlot, Box<RunRecord>> {
    let shared = &scope.shared;
    let clock = shared.clock.as_ref();
    let skipped =
        |outcome, reason: String| Box::new(shared.skipped(job, trigger, cause, outcome, Some(reason)));
    // Jitter: the start waits for the trigger's offset; the trigger stays nominal.
    let jitter = if requested { None } else { job.jitter() };
    let start = match policy::wait_for_start(&job.name, trigger, jitter, clock, &scope.stopping).await {
        Ok(start) => start,
        Err(reason) => return Err(skipped(Outcome::Missed, reason)),
    };
    if !requested && (shared.coordinator.is_none() || job.every_replica) {
        match shared.unclaimed_paused(job).await {
            Ok(None) => {}
            Ok(Some(since)) => {
                return Err(skipped(Outcome::SkippedPaused, format!("the job is paused since {since}")));
            }
            Err(e) => {
                let reason = format!("whether the job is paused is unknown: {e}");
                return Err(skipped(Outcome::SkippedBackendUnavailable, reason));
            }
        }
    }
    // A late trigger (catch-up, start-up) waits the grace window from when it came up.
    let deadline = later(start.max(clock.now()), job.grace);
    let taken =
        ConcurrencyCap::take(shared.cap.as_ref(), clock, deadline, &scope.stopping, (&job.name, trigger));
    taken.await.map_err(|reason| skipped(Outcome::SkippedConcurrency, reason))
}
