//! What a handler learns about the run it performs.

use std::sync::Arc;

use jiff::Timestamp;
use tokio_util::sync::CancellationToken;

/// The context of one run, handed to the job's handler.
#[derive(Debug, Clone)]
pub struct JobContext {
    pub(crate) job: Arc<str>,
    pub(crate) trigger: Timestamp,
    pub(crate) trigger_key: Arc<str>,
    pub(crate) instance: Arc<str>,
    pub(crate) fencing_token: u64,
    pub(crate) cancel: CancellationToken,
    pub(crate) payload: Option<Arc<serde_json::Value>>,
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
        &self.trigger_key
    }

    /// The id of the scheduler instance running this trigger.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// The fencing token of the claim this run won: it grows with every won claim of the
    /// job across the fleet, so a store can reject writes from a run that was overtaken.
    pub fn fencing_token(&self) -> u64 {
        self.fencing_token
    }

    /// Fires when the run should stop: its timeout expired or the scheduler is shutting
    /// down. A handler that ignores it is dropped after the scheduler's cancel grace.
    pub fn cancellation_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// The job's payload (JSON), if it has one.
    pub fn payload(&self) -> Option<&serde_json::Value> {
        self.payload.as_deref()
    }

    /// Whether the run has been asked to stop.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}
