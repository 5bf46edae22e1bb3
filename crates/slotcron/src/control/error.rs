use jiff::{RoundMode, Timestamp, TimestampRound, Unit};

use super::MAX_BACKFILL_COUNTED;

/// Why a pause, resume, manual run, backfill or cancel was refused. Nothing changed unless the
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
    #[error(
        "backfill of job {job:?}: to {to} is after now ({}); a backfill runs past triggers only",
        whole_seconds(*now)
    )]
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
        "backfill of job {job:?}: the range holds {} triggers; at most {max} per request, split the range",
        how_many(*triggers)
    )]
    TooManyTriggers {
        /// The job.
        job: String,
        /// How many triggers the range holds; `None` for more than 100,000, where
        /// counting stops.
        triggers: Option<usize>,
        /// The limit, [`MAX_BACKFILL_TRIGGERS`](super::MAX_BACKFILL_TRIGGERS).
        max: usize,
    },
    /// A job whose schedule has no fixed fire times to backfill (`after`).
    #[error("backfill of job {job:?}: an `after` job has no fixed fire times to backfill")]
    NotBackfillable {
        /// The job.
        job: String,
    },
    /// A job chained after another (`run_after`): its triggers are its parent's runs'
    /// ends, so the parent is what a backfill fills.
    #[error(
        "backfill of job {job:?}: it runs after {parent:?} and has no fire times of its own; \
         backfill {parent:?}: each of its backfilled runs that succeeds runs {job:?}"
    )]
    ChainedJob {
        /// The job.
        job: String,
        /// Its parent.
        parent: String,
    },
    /// A malformed idempotency key.
    #[error("idempotency key refused: {reason}")]
    InvalidKey {
        /// Why.
        reason: String,
    },
    /// The job is placed on labels ([`JobBuilder::on`](crate::JobBuilder::on)) this
    /// replica does not carry: it claims none of the job's runs. Ask a replica that
    /// carries them.
    #[error(
        "job {job:?} is placed on {placement}, and this replica does not carry {unmet}: ask one that does"
    )]
    NotPlacedHere {
        /// The job.
        job: String,
        /// The labels it is placed on, comma-separated.
        placement: String,
        /// Those this replica lacks, comma-separated.
        unmet: String,
    },
    /// No run of the job at this trigger is running that this replica knows of: none
    /// here, and none in its ledger (a replica with a ledger of its own sees only its own
    /// runs: ask the one that runs it).
    #[error("job {job:?} has no run at {trigger} going on that this replica knows of")]
    NoSuchRun {
        /// The job.
        job: String,
        /// The trigger asked for.
        trigger: Timestamp,
    },
    /// The run of the job at this trigger has ended already: nothing to cancel.
    #[error("the run of job {job:?} at {trigger} has ended already: {outcome}")]
    RunEnded {
        /// The job.
        job: String,
        /// The trigger asked for.
        trigger: Timestamp,
        /// How it ended, as its record says (`succeeded`, `cancelled`...).
        outcome: String,
    },
    /// The coordinator or store that keeps the pauses failed; the change may or may not
    /// have been made.
    #[error("{0}")]
    Backend(String),
}

/// `at` to the second before it, for a message (truncated, so that an instant shown as
/// before another still is).
fn whole_seconds(at: Timestamp) -> Timestamp {
    at.round(TimestampRound::new().smallest(Unit::Second).mode(RoundMode::Trunc)).unwrap_or(at)
}

/// A range's count of triggers, for a message.
fn how_many(triggers: Option<usize>) -> String {
    match triggers {
        Some(triggers) => triggers.to_string(),
        None => format!("more than {MAX_BACKFILL_COUNTED}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_is_said_to_the_second() {
        let error = ControlError::FutureRange {
            job: "tick".into(),
            to: "2024-05-18T00:00:00Z".parse().unwrap(),
            now: "2024-05-17T01:00:00.987654321Z".parse().unwrap(),
        };
        assert_eq!(
            error.to_string(),
            "backfill of job \"tick\": to 2024-05-18T00:00:00Z is after now (2024-05-17T01:00:00Z); \
             a backfill runs past triggers only"
        );
    }
}
