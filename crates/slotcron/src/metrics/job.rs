//! One job's metrics: counted next to the job by its runs, handed to the recorder at
//! each flush.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use jiff::Timestamp;
use metrics::{Counter, Gauge, Histogram, counter, gauge, histogram};

use super::histogram::{Drained, LocalHistogram};
use super::{
    JOB_LAST_SUCCESS_TIMESTAMP_SECONDS, JOB_NEXT_TRIGGER_TIMESTAMP_SECONDS, RUN_DURATION_SECONDS, RUNS_TOTAL,
    unix_seconds,
};
use crate::ledger::LastRun;
use crate::ledger::Outcome;

/// The outcomes counted without a lock: every one this release knows.
pub(crate) const OUTCOMES: usize = Outcome::ALL.len();

/// A gauge's "none yet" in the millisecond fields.
const NONE: i64 = i64::MIN;

/// One job's counts since the last flush, and the series they are flushed to
/// (registered with the recorder at the first flush); and its last run. What a run's end
/// writes comes first, on consecutive cache lines: the counts, the last run, the
/// duration histogram's first buckets.
#[repr(C, align(128))]
pub(crate) struct JobSeries {
    /// Run records by [`outcome_index`] since the last flush (a `u32` is ample between
    /// two flushes, and keeps these with the two fields below in 64 bytes).
    runs: [AtomicU32; OUTCOMES],
    /// Set by each record, cleared by the flush that takes it.
    dirty: AtomicBool,
    /// The trigger of the last successful run, Unix milliseconds, or [`NONE`].
    last_success: AtomicI64,
    /// The last trigger handled, once one is recorded (for the admin API; kept here
    /// rather than in the job, so that a run's end writes one neighbourhood).
    pub last_run: Mutex<Option<LastRun>>,
    /// How long the handler ran, per run that started.
    duration: LocalHistogram,
    /// The next queued trigger, Unix milliseconds, or [`NONE`].
    next_trigger: AtomicI64,
    name: Arc<str>,
    /// Records of outcomes this release does not know (the engine writes none).
    others: Mutex<Vec<(&'static str, u64)>>,
    /// The job's series, if they carry the `job` label (boxed: a job without them keeps
    /// one pointer).
    handles: OnceLock<Box<Handles>>,
}

impl std::fmt::Debug for JobSeries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobSeries").field("job", &self.name).finish_non_exhaustive()
    }
}

/// A job's series with the `job` label.
struct Handles {
    runs: [OnceLock<Counter>; OUTCOMES],
    duration: Histogram,
    last_success: Gauge,
    next_trigger: Gauge,
}

/// What the jobs' flushes add up when series carry no `job` label.
#[derive(Debug, Default)]
pub(crate) struct Unlabeled {
    pub runs: [u64; OUTCOMES],
    pub others: Vec<(&'static str, u64)>,
    pub duration: Drained,
}

impl JobSeries {
    pub fn new(name: &Arc<str>) -> Self {
        Self {
            name: name.clone(),
            runs: Default::default(),
            dirty: AtomicBool::new(false),
            last_success: AtomicI64::new(NONE),
            last_run: Mutex::new(None),
            next_trigger: AtomicI64::new(NONE),
            duration: LocalHistogram::default(),
            others: Mutex::new(Vec::new()),
            handles: OnceLock::new(),
        }
    }

    /// One run record, when series carry the `job` label: `duration` if the handler
    /// ran.
    pub fn record(&self, outcome: Outcome, trigger: Timestamp, duration: Option<Duration>) {
        match outcome_index(outcome) {
            Some(i) => {
                self.runs[i].fetch_add(1, Ordering::Relaxed);
            }
            None => add(&mut lock(&self.others), outcome.as_str(), 1),
        }
        if outcome == Outcome::Succeeded {
            self.last_success.store(trigger.as_millisecond(), Ordering::Relaxed);
        }
        if let Some(duration) = duration {
            self.duration.record(duration);
        }
        // Release: the flush that sees this sees the counts above.
        self.dirty.store(true, Ordering::Release);
    }

    /// One run record of an outcome of another release, when series carry no `job`
    /// label: the flush adds it to the unlabeled series.
    pub fn record_other(&self, outcome: Outcome) {
        add(&mut lock(&self.others), outcome.as_str(), 1);
        self.dirty.store(true, Ordering::Release);
    }

    /// The job's next trigger was queued (`None`: it has none, or the job was removed).
    pub fn next_trigger(&self, next: Option<Timestamp>) {
        self.next_trigger.store(next.map_or(NONE, |at| at.as_millisecond()), Ordering::Relaxed);
    }

    /// Hands the counts since the last flush to the job's series (`per_job`), or adds
    /// them to `unlabeled`.
    pub fn flush(&self, per_job: bool, unlabeled: &mut Unlabeled) {
        let handles = per_job.then(|| &**self.handles.get_or_init(|| Box::new(Handles::new(&self.name))));
        if self.dirty.swap(false, Ordering::Acquire) {
            for (i, runs) in self.runs.iter().enumerate() {
                if runs.load(Ordering::Relaxed) == 0 {
                    continue;
                }
                let n = u64::from(runs.swap(0, Ordering::Relaxed));
                match handles {
                    Some(handles) => handles.runs(i, &self.name).increment(n),
                    None => unlabeled.runs[i] += n,
                }
            }
            let others = std::mem::take(&mut *lock(&self.others));
            for (outcome, n) in others {
                match handles {
                    Some(_) => {
                        counter!(RUNS_TOTAL, "job" => self.name.clone(), "outcome" => outcome).increment(n)
                    }
                    None => add(&mut unlabeled.others, outcome, n),
                }
            }
            match handles {
                Some(handles) => {
                    let mut drained = Drained::default();
                    self.duration.drain_into(&mut drained);
                    drained.feed(&handles.duration);
                }
                None => self.duration.drain_into(&mut unlabeled.duration),
            }
        }
        let Some(handles) = handles else { return };
        handles.next_trigger.set(seconds(self.next_trigger.load(Ordering::Relaxed)).unwrap_or(0.0));
        if let Some(last) = seconds(self.last_success.load(Ordering::Relaxed)) {
            handles.last_success.set(last);
        }
    }
}

impl Handles {
    fn new(job: &Arc<str>) -> Self {
        Self {
            runs: Default::default(),
            duration: histogram!(RUN_DURATION_SECONDS, "job" => job.clone()),
            last_success: gauge!(JOB_LAST_SUCCESS_TIMESTAMP_SECONDS, "job" => job.clone()),
            next_trigger: gauge!(JOB_NEXT_TRIGGER_TIMESTAMP_SECONDS, "job" => job.clone()),
        }
    }

    /// `runs_total` of the outcome at index `i`, registered at its first record.
    fn runs(&self, i: usize, job: &Arc<str>) -> &Counter {
        self.runs[i]
            .get_or_init(|| counter!(RUNS_TOTAL, "job" => job.clone(), "outcome" => Outcome::ALL[i].as_str()))
    }
}

/// Unix milliseconds as seconds; `None` for [`NONE`].
fn seconds(millis: i64) -> Option<f64> {
    (millis != NONE).then(|| Timestamp::from_millisecond(millis).map_or(0.0, unix_seconds))
}

/// Adds `n` records of `outcome` to `counts`.
pub(crate) fn add(counts: &mut Vec<(&'static str, u64)>, outcome: &'static str, n: u64) {
    match counts.iter_mut().find(|(name, _)| *name == outcome) {
        Some((_, count)) => *count += n,
        None => counts.push((outcome, n)),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// The position of `outcome` in [`Outcome::ALL`]; `None` for another release's.
pub(crate) fn outcome_index(outcome: Outcome) -> Option<usize> {
    Some(match outcome {
        Outcome::Succeeded => 0,
        Outcome::Failed => 1,
        Outcome::TimedOut => 2,
        Outcome::Panicked => 3,
        Outcome::Aborted => 4,
        Outcome::SkippedLost => 5,
        Outcome::SkippedBackendUnavailable => 6,
        Outcome::SkippedClockSkew => 7,
        Outcome::Missed => 8,
        Outcome::SkippedOverlap => 9,
        Outcome::SkippedConcurrency => 10,
        Outcome::SkippedPaused => 11,
        Outcome::Running => 12,
        Outcome::Interrupted => 13,
        Outcome::Other(_) => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_known_outcome_has_its_own_index() {
        for (i, outcome) in Outcome::ALL.into_iter().enumerate() {
            assert_eq!(outcome_index(outcome), Some(i), "{outcome}");
        }
        assert_eq!(outcome_index(Outcome::from_name("from-a-newer-release")), None);
    }
}
