use jiff::Timestamp;

/// Why a pause, resume, manual run or backfill was refused. Nothing changed unless the
/// variant says otherwise.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    /// The scheduler has no job of this name.
    #[error("no job named {job:?}")]
    NoSuchJob {
        /// The name asked for.
        job: String,
    },
    /// Runs are queued by a running [`Scheduler::run`](crate::Scheduler::run) only.
    #[error("the scheduler is not running: no run can be queued")]
    NotRunning,
    /// A backfill range whose start is after its end.
    #[error("backfill of job {job:?}: from {from} is after to {to}")]
    InvertedRange {
        /// The job.
        job: String,
        /// The range's start.
        from: Timestamp,
        /// The range's end.
        to: Timestamp,
    },
    /// A backfill range that reaches into the future.
    #[error("backfill of job {job:?}: to {to} is after now ({now}); a backfill runs past triggers only")]
    FutureRange {
        /// The job.
        job: String,
        /// The range's end.
        to: Timestamp,
        /// The scheduler's clock when asked.
        now: Timestamp,
    },
    /// A backfill range holding more triggers than one request may run.
    #[error(
        "backfill of job {job:?}: the range holds more than {max} triggers; at most {max} per request, \
         split the range"
    )]
    TooManyTriggers {
        /// The job.
        job: String,
        /// The limit, [`MAX_BACKFILL_TRIGGERS`](super::MAX_BACKFILL_TRIGGERS).
        max: usize,
    },
    /// A job whose schedule has no fixed fire times to backfill (`after`).
    #[error("backfill of job {job:?}: an `after` job has no fixed fire times to backfill")]
    NotBackfillable {
        /// The job.
        job: String,
    },
    /// A malformed idempotency key.
    #[error("idempotency key refused: {reason}")]
    InvalidKey {
        /// Why.
        reason: String,
    },
    /// The coordinator or store that keeps the pauses failed; the change may or may not
    /// have been made.
    #[error("{0}")]
    Backend(String),
}
