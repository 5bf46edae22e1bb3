//! What the runs of one [`Scheduler::run`](crate::Scheduler::run) share: [`RunScope`].

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use jiff::Timestamp;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::shared::Shared;
use crate::context::RunHandle;

/// How many claim batches of one scheduler are in flight at once: one on the wire while
/// the previous one's runs start.
pub(crate) const BATCHES_IN_FLIGHT: usize = 2;

/// What the runs started by one [`Scheduler::run`](crate::Scheduler::run) share: the
/// scheduler and its stop signals, behind one reference count, so a burst of runs
/// touches one shared counter per run rather than one per field.
pub(crate) struct RunScope {
    pub shared: Arc<Shared>,
    /// Cooperative stop: every run's cancellation token is this one or its child.
    pub shutdown: CancellationToken,
    /// Hard stop: runs drop their handler's future and record `aborted`.
    pub abort: CancellationToken,
    /// Fires when the scheduler starts stopping (also when it drains): no retry, no
    /// jittered or buffered trigger starts after it.
    pub stopping: CancellationToken,
    /// Runs spawned but not yet started.
    waiting: AtomicUsize,
    /// Notified when `waiting` falls to [`RunScope::RESUME_AT`].
    drained: Notify,
    /// What the runs' contexts see of the scheduler.
    pub handle: Arc<RunHandle>,
}

impl RunScope {
    /// The engine stops spawning once this many runs wait to start...
    const PAUSE_ABOVE: usize = 128;
    /// ...and goes on once they are down to this many. A burst of thousands of triggers
    /// thus never queues more than a few hundred tasks: memory stays bounded, and the
    /// first runs are not held up behind the spawning of the last.
    const RESUME_AT: usize = 32;

    pub fn new(shared: Arc<Shared>) -> Self {
        let stopping = CancellationToken::new();
        let handle = Arc::new(RunHandle {
            instance: shared.instance.clone(),
            stopping: stopping.clone(),
            records: shared.outbox.clone(),
        });
        Self {
            shared,
            shutdown: CancellationToken::new(),
            abort: CancellationToken::new(),
            stopping,
            waiting: AtomicUsize::new(0),
            drained: Notify::new(),
            handle,
        }
    }

    /// Counts a run about to be spawned.
    pub fn spawning(&self) {
        self.waiting.fetch_add(1, Ordering::Relaxed);
    }

    pub fn started(&self) {
        if self.waiting.fetch_sub(1, Ordering::AcqRel) == Self::RESUME_AT + 1 {
            self.drained.notify_waiters();
        }
    }

    /// Waits while too many spawned runs have not started yet.
    pub async fn pace(&self) {
        loop {
            let drained = self.drained.notified();
            let mut drained = std::pin::pin!(drained);
            drained.as_mut().enable();
            if self.waiting.load(Ordering::Acquire) <= Self::PAUSE_ABOVE {
                return;
            }
            drained.await;
        }
    }
}

/// What one pass of the loop leaves to do.
pub(crate) enum Next {
    /// More is due now: take it (the pass has paced itself).
    Take,
    /// Nothing more is due: sleep until this instant (`None`: until woken).
    Sleep(Option<Timestamp>),
}
