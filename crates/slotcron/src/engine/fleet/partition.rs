//! A partitioned replica knows it (docs/design.md, "Claims, start marks and takeover"): cut
//! off from the coordinator for longer than its own lapse — shorter than the membership
//! TTL the other members wait before they call it gone, by the cancel grace and one
//! heartbeat — it has left the fleet as far as the others can tell. It starts nothing new
//! (its start marks cannot be made), and it stops its own runs of jobs with
//! [`OnInterrupt::Rerun`](crate::OnInterrupt::Rerun), so that the rerun a live member
//! starts never overlaps them. A job that only records its interruption runs on.

use std::time::Duration;

use jiff::Timestamp;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use crate::clock::later;
use crate::engine::shared::Shared;
use crate::policy::RunStop;

/// This replica's own lapse: the membership TTL less the cancel grace and one heartbeat
/// (a third of the TTL), at least one heartbeat.
pub(crate) fn own_lapse(shared: &Shared) -> Duration {
    let ttl = shared.settings.membership_ttl;
    ttl.saturating_sub(shared.settings.cancel_grace).saturating_sub(ttl / 3).max(ttl / 3)
}

/// Notes a heartbeat's answer (`answered`) at `now`, given the last answer before it at
/// `last_ok`: the replica is cut off once `now` is past its own lapse after `last_ok`.
pub(crate) fn note_heartbeat(shared: &Shared, last_ok: Timestamp, now: Timestamp, answered: bool) {
    if answered {
        shared.cut_off.heal();
    } else if now >= later(last_ok, own_lapse(shared)) {
        shared.cut_off.fire(last_ok, own_lapse(shared));
    }
}

/// A run of a rerun job watching for the cut-off: while it lives, fires the run's stop
/// when this replica finds itself cut off.
pub(crate) struct Watch {
    cut_off: CancellationToken,
    _task: AbortOnDropHandle<()>,
}

impl Watch {
    pub fn new(shared: &Shared, stop: &RunStop) -> Self {
        let cut_off = shared.cut_off.current();
        let (watched, stop) = (cut_off.clone(), stop.clone());
        let task = tokio::spawn(async move {
            watched.cancelled().await;
            stop.fire();
        });
        Self { cut_off, _task: AbortOnDropHandle::new(task) }
    }

    /// Why the run was stopped, if the cut-off stopped it.
    pub fn note(&self) -> Option<String> {
        self.cut_off.is_cancelled().then(|| {
            "stopped: this daemon was cut off from the coordinator longer than its own lapse \
             (on_interrupt = \"rerun\": a live member reruns the trigger)"
                .to_owned()
        })
    }
}
