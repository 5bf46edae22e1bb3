//! Failure hooks: a [`RunObserver`] sees every trigger's record as it ends; a
//! [`FailureHook`] filters the failures out of them and rate-limits them per job and
//! outcome, for the outcomes every replica sees at once during an outage (docs/design.md,
//! "Run policies").

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use jiff::Timestamp;

use crate::ledger::{Outcome, RunRecord};

/// Sees every trigger's record once it has ended (after its last attempt), on the
/// replica that recorded it. Called on the run's task: an observer with slow work to do
/// spawns it.
pub trait RunObserver: Send + Sync + 'static {
    /// One trigger ended as `record` says.
    fn run_ended(&self, record: &RunRecord);
}

/// One failure a [`FailureHook`] passes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The trigger's record: job, trigger, outcome, attempts, error.
    pub record: RunRecord,
    /// How many failures of this job with this outcome the rate limit held back since
    /// the last one passed on.
    pub suppressed: u64,
}

/// A [`RunObserver`] that calls `notify` for the triggers that ended `failed`,
/// `timed-out`, `panicked`, `missed` or `skipped-backend-unavailable`
/// ([`FailureHook::is_failure`]), at most once per job per outcome per
/// [`FailureHook::DEFAULT_INTERVAL`], counting the ones held back.
pub struct FailureHook<F> {
    notify: F,
    interval: Duration,
    last: Mutex<HashMap<(String, Outcome), Window>>,
    /// Which jobs have a hook ([`FailureHook::only_for`]); `None`: every job.
    covers: Option<Covers>,
}

/// Whether a job, by name, has a hook.
type Covers = Box<dyn Fn(&str) -> bool + Send + Sync>;

#[derive(Debug, Clone, Copy)]
struct Window {
    passed: Timestamp,
    suppressed: u64,
}

impl<F: Fn(Failure) + Send + Sync + 'static> FailureHook<F> {
    /// At most one failure per job per outcome per minute is passed on.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);

    /// A hook calling `notify` (at most once per job and outcome per
    /// [`Self::DEFAULT_INTERVAL`]).
    pub fn new(notify: F) -> Self {
        Self { notify, interval: Self::DEFAULT_INTERVAL, last: Mutex::default(), covers: None }
    }

    /// Only the jobs `covers` says have a hook (asked at each failure, so the set may
    /// change) are passed on, rate-limited and counted; the others' failures are not
    /// held back, since nothing would run for them.
    #[must_use]
    pub fn only_for(mut self, covers: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        self.covers = Some(Box::new(covers));
        self
    }

    /// Whether an outcome is one the hook reports.
    pub fn is_failure(outcome: Outcome) -> bool {
        matches!(
            outcome,
            Outcome::Failed
                | Outcome::TimedOut
                | Outcome::Panicked
                | Outcome::Missed
                | Outcome::SkippedBackendUnavailable
                | Outcome::SkippedClockSkew
                | Outcome::Interrupted
        )
    }

    /// The count of the suppressed ones to pass on, or `None` if this one is held back.
    /// Windows are measured on the record's end (its start plus its duration).
    fn admit(&self, record: &RunRecord) -> Option<u64> {
        let ended = crate::clock::later(record.started, record.duration);
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let window = last
            .entry((record.job.to_string(), record.outcome))
            .or_insert(Window { passed: Timestamp::MIN, suppressed: 0 });
        if window.passed != Timestamp::MIN && ended < crate::clock::later(window.passed, self.interval) {
            window.suppressed += 1;
            // Once per window: the next failure passed on counts the others.
            if window.suppressed == 1 {
                tracing::info!(
                    job = &*record.job,
                    outcome = record.outcome.as_str(),
                    interval = ?self.interval,
                    "failure hook held back: at most one per job and outcome per interval; the next one \
                     passed on counts those held back (SLOTCRON_SUPPRESSED for a command)"
                );
            }
            return None;
        }
        let suppressed = window.suppressed;
        *window = Window { passed: ended, suppressed: 0 };
        Some(suppressed)
    }
}

impl<F: Fn(Failure) + Send + Sync + 'static> RunObserver for FailureHook<F> {
    fn run_ended(&self, record: &RunRecord) {
        let covered = self.covers.as_ref().is_none_or(|covers| covers(&record.job));
        if !Self::is_failure(record.outcome) || !covered {
            return;
        }
        if let Some(suppressed) = self.admit(record) {
            (self.notify)(Failure { record: record.clone(), suppressed });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn record(outcome: Outcome, second: i64) -> RunRecord {
        RunRecord {
            job: "backup".into(),
            trigger: Timestamp::from_second(second).unwrap(),
            instance: "a".into(),
            cause: crate::ledger::Cause::Scheduled,
            outcome,
            fencing_token: None,
            started: Timestamp::from_second(second).unwrap(),
            duration: Duration::ZERO,
            attempts: 1,
            error: Some("down".into()),
            process: None,
        }
    }

    #[test]
    fn one_failure_per_job_and_outcome_per_minute_passes_with_the_count_held_back() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let hook = FailureHook::new({
            let seen = seen.clone();
            move |f: Failure| {
                seen.lock().unwrap().push((f.record.outcome, f.record.trigger.as_second(), f.suppressed))
            }
        });
        for second in 0..130 {
            hook.run_ended(&record(Outcome::SkippedBackendUnavailable, second));
        }
        hook.run_ended(&record(Outcome::Failed, 5));
        hook.run_ended(&record(Outcome::Succeeded, 6));
        let unavailable = Outcome::SkippedBackendUnavailable;
        assert_eq!(
            *seen.lock().unwrap(),
            [(unavailable, 0, 0), (unavailable, 60, 59), (unavailable, 120, 59), (Outcome::Failed, 5, 0)]
        );
    }

    #[test]
    fn a_hook_only_for_some_jobs_neither_passes_on_nor_holds_back_the_others_failures() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let hook = FailureHook::new({
            let seen = seen.clone();
            move |f: Failure| seen.lock().unwrap().push((f.record.job.to_string(), f.suppressed))
        })
        .only_for(|job| job == "backup");
        for second in 0..3 {
            hook.run_ended(&RunRecord { job: "report".into(), ..record(Outcome::Failed, second) });
            hook.run_ended(&record(Outcome::Failed, second));
        }
        hook.run_ended(&record(Outcome::Failed, 61));
        assert_eq!(*seen.lock().unwrap(), [("backup".to_owned(), 0), ("backup".to_owned(), 2)]);
        assert!(
            !hook.last.lock().unwrap().keys().any(|(job, _)| job == "report"),
            "report's failures are not counted"
        );
    }
}
