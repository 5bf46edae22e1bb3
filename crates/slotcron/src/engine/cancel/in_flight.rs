//! The runs in flight on this replica, by job and trigger, each with the token that stops
//! it ([`InFlight`]): what the engine registers a run in from its claim to its record, and
//! what a cancel ([`Scheduler::cancel`](crate::Scheduler::cancel)) fires.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use jiff::Timestamp;
use tokio_util::sync::CancellationToken;

use crate::control::CancelRequest;

/// The cancel of one run in flight: fired at most once, with who asked.
#[derive(Debug, Default)]
pub(crate) struct RunCancel {
    token: CancellationToken,
    reason: OnceLock<String>,
}

impl RunCancel {
    /// Asks the run to stop, for `reason` (who asked); a second call keeps the first
    /// reason.
    pub fn fire(&self, reason: String) {
        let _ = self.reason.set(reason);
        self.token.cancel();
    }

    /// Fires when the run is cancelled.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// Who asked, once the run is cancelled.
    pub fn reason(&self) -> Option<&str> {
        self.reason.get().map(String::as_str)
    }
}

/// Runs by job, then by trigger. foldhash: a map entry per run started, and the names
/// are the scheduler's own jobs'.
type Runs = HashMap<Arc<str>, HashMap<Timestamp, Arc<RunCancel>, Hasher>, Hasher>;

/// The hasher of [`Runs`], seeded once per process.
type Hasher = foldhash::fast::RandomState;

/// The runs in flight on this replica, by job and trigger.
#[derive(Debug, Default)]
pub(crate) struct InFlight(Mutex<Runs>);

impl InFlight {
    fn lock(&self) -> MutexGuard<'_, Runs> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers the run of `job` at `trigger` until the guard is dropped.
    pub fn register(&self, job: &Arc<str>, trigger: Timestamp) -> Registered<'_> {
        let cancel = Arc::new(RunCancel::default());
        self.lock().entry(job.clone()).or_default().insert(trigger, cancel.clone());
        Registered { in_flight: self, job: job.clone(), trigger, cancel }
    }

    /// The run of `job` at `trigger`, if it is in flight here.
    pub fn get(&self, job: &str, trigger: Timestamp) -> Option<Arc<RunCancel>> {
        self.lock().get(job).and_then(|runs| runs.get(&trigger)).cloned()
    }

    /// Whether no run is in flight here.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Fires each run in flight here that one of `requests` names, not fired before:
    /// how many.
    pub fn fire_requested(&self, requests: &[CancelRequest]) -> usize {
        let named = requests.iter().filter_map(|request| {
            let run = self.get(&request.job, request.trigger).filter(|run| run.reason().is_none())?;
            Some((request, run))
        });
        let mut fired = 0;
        for (request, run) in named.collect::<Vec<_>>() {
            tracing::info!(job = %request.job, trigger = %request.trigger, reason = %request.reason,
                "run cancelled as asked through the coordinator");
            run.fire(request.reason.clone());
            fired += 1;
        }
        fired
    }
}

/// A run registered in [`InFlight`], removed when dropped.
pub(crate) struct Registered<'a> {
    in_flight: &'a InFlight,
    job: Arc<str>,
    trigger: Timestamp,
    pub cancel: Arc<RunCancel>,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        let mut runs = self.in_flight.lock();
        if let Some(triggers) = runs.get_mut(&self.job) {
            // A run of the same trigger registered since (a rerun) stays.
            if triggers.get(&self.trigger).is_some_and(|run| Arc::ptr_eq(run, &self.cancel)) {
                triggers.remove(&self.trigger);
            }
            if triggers.is_empty() {
                runs.remove(&self.job);
            }
        }
    }
}
