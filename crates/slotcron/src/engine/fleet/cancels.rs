//! Cancels across the fleet: a cancel asked of a replica that does not hold the run is
//! kept in the coordinator's controls ([`Controls::request_cancel`]), and every replica
//! with runs in flight reads the requests every [`LOOK_EVERY`] and stops its own runs
//! among them, so the holder's own daemon signals its process, never another's.

use std::time::Duration;

use super::FleetRun;
use crate::control::{CANCEL_REQUEST_TTL, CancelRequest, ControlError, Controls};
use crate::coordinator::CoordinatorError;
use crate::engine::claim::within_claim_timeout;
use crate::engine::shared::Shared;

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

/// Asks `holder`, the replica holding the run `request` names, to cancel it, through the
/// coordinator's controls.
///
/// # Errors
/// [`ControlError::Backend`] when the coordinator keeps no cancel requests or failed.
pub(crate) async fn relay(
    shared: &Shared,
    request: &CancelRequest,
    holder: &str,
) -> Result<(), ControlError> {
    controls(shared)?
        .request_cancel(request, CANCEL_REQUEST_TTL)
        .await
        .map_err(|e| ControlError::Backend(crate::error::error_chain(&e)))?;
    let (job, trigger, reason) = (&request.job, request.trigger, &request.reason);
    tracing::info!(job, %trigger, holder, reason, "cancel relayed to the run's holder");
    Ok(())
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
