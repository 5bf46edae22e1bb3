//! The concurrency cap: at most N runs in flight per scheduler (DESIGN.md, "Run
//! policies"). A replica at its cap does not claim a trigger it could not start: it
//! waits for a free slot up to the job's grace window, so that a replica with room wins
//! the claim; if none frees, the trigger is `skipped-concurrency` here.

use std::sync::Arc;

use jiff::Timestamp;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::clock::Clock;

/// The runs in flight on one scheduler, `on_every_replica` runs included and failure
/// hooks not.
#[derive(Debug)]
pub(crate) struct ConcurrencyCap {
    slots: Arc<Semaphore>,
    max: usize,
}

/// A slot taken for one run, given back when dropped; `None` inside when uncapped.
#[derive(Debug)]
pub(crate) struct RunSlot(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

impl ConcurrencyCap {
    /// A cap of `max` runs (at least 1).
    pub fn new(max: usize) -> Self {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        Self { slots: Arc::new(Semaphore::new(max)), max }
    }

    /// The cap.
    pub fn max(&self) -> usize {
        self.max
    }

    /// A slot for a run, waiting for one until `deadline` on `clock`; `None` if none
    /// freed by then.
    pub async fn take(cap: Option<&Self>, clock: &dyn Clock, deadline: Timestamp) -> Option<RunSlot> {
        let Some(cap) = cap else { return Some(RunSlot(None)) };
        if let Ok(permit) = cap.slots.clone().try_acquire_owned() {
            return Some(RunSlot(Some(permit)));
        }
        tokio::select! {
            biased;
            permit = cap.slots.clone().acquire_owned() => permit.ok().map(|p| RunSlot(Some(p))),
            () = clock.sleep_until(deadline) => None,
        }
    }
}
