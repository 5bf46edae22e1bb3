//! The concurrency cap: at most N runs in flight per scheduler (docs/design.md, "Run
//! policies"). A replica at its cap does not claim a trigger it could not start: it
//! waits for a free slot up to the job's grace window, so that a replica with room wins
//! the claim; if none frees, the trigger is `skipped-concurrency` here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use jiff::Timestamp;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use tokio_util::sync::CancellationToken;

use crate::clock::Clock;

/// The runs in flight on one scheduler, `on_every_replica` runs included and failure
/// hooks not.
#[derive(Debug)]
pub(crate) struct ConcurrencyCap {
    slots: Arc<Semaphore>,
    max: usize,
    /// The triggers (job, instant) waiting for a slot now, each with how many times
    /// (a trigger run again, e.g. by hand, waits once more).
    waiting: Mutex<HashMap<(Arc<str>, Timestamp), usize>>,
}

/// A trigger's place among those waiting for a slot, left when dropped.
struct Waiting<'a>(&'a ConcurrencyCap, (Arc<str>, Timestamp));

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut waiting = self.0.waiting.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(times) = waiting.get_mut(&self.1) {
            *times -= 1;
            if *times == 0 {
                waiting.remove(&self.1);
            }
        }
    }
}

/// A slot taken for one run, given back when dropped; `None` inside when uncapped.
#[derive(Debug)]
pub(crate) struct RunSlot(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

impl ConcurrencyCap {
    /// A cap of `max` runs (at least 1).
    pub fn new(max: usize) -> Self {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        Self { slots: Arc::new(Semaphore::new(max)), max, waiting: Mutex::default() }
    }

    /// The concurrency layer: a slot for the run of `job`'s `trigger`, waiting for one
    /// until `deadline` on `clock`; the reason for `skipped-concurrency` if none freed by
    /// then, or if `stopping` fired first.
    pub async fn take(
        cap: Option<&Self>,
        clock: &dyn Clock,
        deadline: Timestamp,
        stopping: &CancellationToken,
        (job, trigger): (&Arc<str>, Timestamp),
    ) -> Result<RunSlot, String> {
        let Some(cap) = cap else { return Ok(RunSlot(None)) };
        if let Ok(permit) = cap.slots.clone().try_acquire_owned() {
            return Ok(RunSlot(Some(permit)));
        }
        *cap.waiting.lock().unwrap_or_else(|p| p.into_inner()).entry((job.clone(), trigger)).or_default() +=
            1;
        let _waiting = Waiting(cap, (job.clone(), trigger));
        let busy = format!("all {} run slots of this scheduler stayed busy", cap.max);
        tokio::select! {
            biased;
            () = stopping.cancelled() => Err(format!("{busy} until the scheduler stopped")),
            permit = cap.slots.clone().acquire_owned() => {
                permit.map(|p| RunSlot(Some(p))).map_err(|_| busy.clone())
            }
            () = clock.sleep_until(deadline) => Err(format!("{busy} for the job's grace window")),
        }
    }

    /// Whether `job`'s `trigger` waits for a slot now.
    pub fn waits(&self, job: &str, trigger: Timestamp) -> bool {
        let waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        waiting.contains_key(&(Arc::<str>::from(job), trigger))
    }
}
