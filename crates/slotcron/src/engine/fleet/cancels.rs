//! Cancels across the fleet: a cancel asked of a replica that does not hold the run is
//! kept in the coordinator's controls ([`Controls::request_cancel`]), and every replica
//! with runs in flight reads the requests every [`LOOK_EVERY`] and stops its own runs
//! among them, so the holder's own daemon signals its process, never another's.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use super::FleetRun;
use crate::control::{CANCEL_REQUEST_TTL, CancelRequest, ControlError, Controls};
use crate::coordinator::CoordinatorError;
use crate::engine::claim::within_claim_timeout;
use crate::engine::shared::Shared;
use crate::ledger::{LedgerQuery, Outcome};

/// How often a replica with runs in flight reads the fleet's cancel requests: 1 s, so
/// that a relayed cancel stops its run within about a second (plus the kill grace for a
/// command that ignores SIGTERM).
pub(crate) const LOOK_EVERY: Duration = Duration::from_secs(1);

/// The controls the fleet keeps its cancel requests in, or why there are none.
fn controls(shared: &Shared) -> Result<&dyn Controls, ControlError> {
    let coordinator = shared.coordinator.as_ref().ok_or_else(|| no_requests("no"))?;
    coordinator.controls().ok_or_else(|| no_requests(coordinator.name()))
}

fn no_requests(coordinator: &str) -> ControlError {
    ControlError::Backend(format!("the {coordinator} coordinator keeps no cancel requests"))
}

/// Asks the replica holding the run of `job` at `trigger` (a `running` record in this
/// replica's ledger names it) to cancel it for `reason`, through the coordinator's
/// controls: that replica's instance id.
///
/// # Errors
/// [`ControlError::NoSuchRun`] when no other replica's record of the run is `running`
/// and none has ended; [`ControlError::RunEnded`] when its records say it ended;
/// [`ControlError::Backend`] when the ledger or the controls fail.
pub(crate) async fn relay(
    shared: &Shared,
    job: &str,
    trigger: Timestamp,
    reason: String,
) -> Result<String, ControlError> {
    let query = LedgerQuery {
        job: Some(job.to_owned()),
        since: Some(trigger),
        // A durable ledger keeps microseconds.
        until: trigger.checked_add(SignedDuration::from_micros(1)).ok(),
        limit: usize::MAX,
        ..LedgerQuery::default()
    };
    let records = shared
        .ledger
        .query(&query)
        .await
        .map_err(|e| ControlError::Backend(format!("cannot read the run history: {e}")))?;
    let records: Vec<_> = records.into_iter().filter(|record| record.trigger == trigger).collect();
    // This replica's own `running` record of a run no longer in flight here is one that
    // has just ended (its end not written yet) or a dead process's (to be swept).
    let holder = records.iter().find(|r| r.outcome == Outcome::Running && *r.instance != *shared.instance);
    let Some(holder) = holder else {
        let ended = records.iter().filter(|r| r.outcome.ran() && r.outcome != Outcome::Running).last();
        return Err(match ended {
            Some(ended) => {
                ControlError::RunEnded { job: job.to_owned(), trigger, outcome: ended.outcome.to_string() }
            }
            None => ControlError::NoSuchRun { job: job.to_owned(), trigger },
        });
    };
    let holder = holder.instance.to_string();
    let request = CancelRequest { job: job.to_owned(), trigger, reason };
    let asked = async {
        controls(shared)?
            .request_cancel(&request, CANCEL_REQUEST_TTL)
            .await
            .map_err(|e| ControlError::Backend(crate::error::error_chain(&e)))
    };
    asked.await?;
    tracing::info!(job, %trigger, holder, reason = %request.reason, "cancel relayed to the run's holder");
    Ok(holder)
}

/// Reads the fleet's cancel requests every [`LOOK_EVERY`] while this replica has runs in
/// flight, and stops those of its runs they name, until the scheduler starts stopping.
/// Ends at once when the coordinator keeps no controls.
pub(crate) async fn watch(fleet: FleetRun) {
    let (shared, stopping) = (fleet.shared(), &fleet.scope.stopping);
    let Ok(controls) = controls(shared) else { return };
    let mut failing = false;
    loop {
        tokio::select! {
            () = shared.clock.sleep_until(crate::clock::later(shared.clock.now(), LOOK_EVERY)) => {}
            () = stopping.cancelled() => return,
        }
        if shared.in_flight.is_empty() {
            continue;
        }
        let asked = async { controls.cancel_requests().await.map_err(CoordinatorError::unavailable) };
        match within_claim_timeout(shared, asked).await {
            Ok(requests) => {
                failing = false;
                shared.in_flight.fire_requested(&requests);
            }
            Err(e) if !std::mem::replace(&mut failing, true) => {
                tracing::warn!("cannot read the fleet's cancel requests: {e}; retrying every {LOOK_EVERY:?}");
            }
            Err(e) => tracing::debug!("cannot read the fleet's cancel requests again: {e}"),
        }
    }
}
