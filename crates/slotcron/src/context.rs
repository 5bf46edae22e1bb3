//! What a handler learns about the run it performs.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use jiff::Timestamp;
use tokio_util::sync::CancellationToken;

use crate::key::trigger_key;
use crate::ledger::{Cause, RunProcess, RunRecord, lock};
use crate::schedule::ScheduleKind;

/// What a run's context may reach of the scheduler that runs it: the instance id, the
/// scheduler's stop signal and where the run's record updates go. One per
/// [`Scheduler::run`](crate::Scheduler::run), shared by its runs' contexts.
pub(crate) struct RunHandle {
    /// The scheduler's instance id.
    pub instance: Arc<str>,
    /// Fires when the scheduler starts stopping.
    pub stopping: CancellationToken,
    /// Takes the run's record as it changes.
    pub records: Arc<dyn RecordSink>,
}

/// Where a run's record goes when it changes while the run goes on (the engine's
/// outbox, which writes it to the ledger in the background).
pub(crate) trait RecordSink: Send + Sync {
    /// Queues `record`, a newer version of a run's record, to be written.
    fn update(&self, record: RunRecord);
}

/// The context of one run, handed to the job's handler.
#[derive(Clone)]
pub struct JobContext {
    pub(crate) job: Arc<str>,
    pub(crate) trigger: Timestamp,
    pub(crate) kind: ScheduleKind,
    /// Formatted when a claim needed it, or on the first call to `trigger_key`.
    pub(crate) trigger_key: OnceLock<Box<str>>,
    pub(crate) fencing_token: u64,
    pub(crate) attempt: u32,
    pub(crate) handle: Arc<RunHandle>,
    /// The run's own token: a child of the scheduler's shutdown token, fired also by the
    /// run's timeout and by its job's removal with cancellation.
    pub(crate) own_cancel: CancellationToken,
    /// Fired when an operator cancels the run ([`Scheduler::cancel`](crate::Scheduler::cancel)).
    pub(crate) operator_cancel: CancellationToken,
    pub(crate) payload: Option<Arc<serde_json::Value>>,
    /// The run's record, `running` until the run ends.
    pub(crate) record: Arc<Mutex<RunRecord>>,
}

impl fmt::Debug for JobContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobContext")
            .field("job", &self.job)
            .field("trigger", &self.trigger)
            .field("instance", &self.instance())
            .field("fencing_token", &self.fencing_token)
            .field("attempt", &self.attempt)
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl JobContext {
    /// The job's name.
    pub fn job(&self) -> &str {
        &self.job
    }

    /// The scheduled instant this run stands for (UTC), not the moment it started.
    pub fn trigger(&self) -> Timestamp {
        self.trigger
    }

    /// The trigger key, `{job}:{trigger}` with the trigger in RFC 3339 UTC (just the job
    /// name for an `after` job): identical on every replica, so it doubles as the run's
    /// idempotency key.
    pub fn trigger_key(&self) -> &str {
        self.trigger_key.get_or_init(|| trigger_key(&self.job, self.kind, self.trigger).into_boxed_str())
    }

    /// The id of the scheduler instance running this trigger.
    pub fn instance(&self) -> &str {
        &self.handle.instance
    }

    /// The fencing token of the claim this run won: it grows with every won claim of the
    /// job across the fleet, so a store can reject writes from a run that was overtaken.
    /// In single-replica mode (no coordinator) it counts the job's runs since the
    /// scheduler was built.
    pub fn fencing_token(&self) -> u64 {
        self.fencing_token
    }

    /// Which attempt this is, counting from 1: retries (the job's
    /// [`attempts`](crate::JobBuilder::attempts)) run under the same trigger, key and
    /// fencing token, with the next number.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Fires when the run should stop: its timeout expired, the scheduler is shutting
    /// down, its job was removed with
    /// [`Scheduler::remove_and_cancel`](crate::Scheduler::remove_and_cancel), its job's
    /// lease was lost, or an `overlap = replace` trigger replaces it. A handler that
    /// ignores it is dropped after the scheduler's cancel grace.
    pub fn cancellation_token(&self) -> &CancellationToken {
        &self.own_cancel
    }

    /// The job's payload (JSON), if it has one.
    pub fn payload(&self) -> Option<&serde_json::Value> {
        self.payload.as_deref()
    }

    /// Whether the scheduler is shutting down (so a cancellation is the shutdown's, not
    /// the run's own timeout or overlap policy).
    pub fn is_scheduler_stopping(&self) -> bool {
        self.handle.stopping.is_cancelled()
    }

    /// Whether the run has been asked to stop.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation_token().is_cancelled()
    }

    /// Whether an operator cancelled the run
    /// ([`Scheduler::cancel`](crate::Scheduler::cancel)): its token fires for that then,
    /// and the run is recorded [`Cancelled`](crate::Outcome::Cancelled) unless it
    /// succeeds first.
    pub fn is_cancelled_by_operator(&self) -> bool {
        self.operator_cancel.is_cancelled()
    }

    /// Why the trigger is run: on schedule, caught up after a misfire, at start-up...
    pub fn cause(&self) -> Cause {
        lock(&self.record).cause
    }

    /// Tells the scheduler the process this run started (the daemon: its command's
    /// process group leader). It goes into the run's `running` record (written
    /// asynchronously, as every ledger write), so that if this scheduler dies before the
    /// run ends, the next start can stop the process and record the run
    /// [`Outcome::Interrupted`](crate::Outcome::Interrupted).
    pub fn started_process(&self, process: RunProcess) {
        let record = {
            let mut record = lock(&self.record);
            record.process = Some(process);
            record.clone()
        };
        self.handle.records.update(record);
    }
}
