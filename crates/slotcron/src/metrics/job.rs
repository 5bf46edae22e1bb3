//! One job's metrics: counted next to the job by its runs, handed to the recorder at
//! each flush. By default a job has its runs by outcome (a series per outcome that
//! occurred), its last success, its last failure (each once it has one) and whether it
//! is paused; with [`MetricLabels::per_job_histograms`](super::MetricLabels) also its
//! duration and lateness histograms.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use jiff::Timestamp;
use metrics::{Counter, Gauge, Histogram, counter, gauge, histogram};

use super::histogram::{Drained, LocalHistogram};
use super::{
    JOB_LAST_FAILURE_TIMESTAMP_SECONDS, JOB_LAST_SUCCESS_TIMESTAMP_SECONDS, JOB_PAUSED,
    JOB_RUN_DURATION_SECONDS, JOB_TRIGGER_LATENESS_SECONDS, MetricLabels, RUNS_TOTAL, unix_seconds,
};
use crate::ledger::LastRun;
use crate::ledger::Outcome;

/// The outcomes counted without a lock: every one this release knows.
pub(crate) const OUTCOMES: usize = Outcome::ALL.len();

/// A gauge's "none yet" in the millisecond fields.
const NONE: i64 = i64::MIN;

/// [`JobSeries::paused`] values.
const PAUSED_UNKNOWN: u8 = 0;
const PAUSED_NO: u8 = 1;
const PAUSED_YES: u8 = 2;

/// One job's counts since the last flush, and its last run. What a run's end writes
/// comes first, side by side. The series they are flushed to are the flush's
/// ([`JobHandles`]).
///
/// Every job has one, a million jobs a million: it is kept small (not aligned to a cache
/// line, which cost 64 bytes before the series in its `Arc` and a slower aligned
/// allocation; the last run boxed, made at the job's first record here).
#[repr(C)]
pub(crate) struct JobSeries {
    /// Run records by [`outcome_index`] since the last flush (a `u32` is ample between
    /// two flushes).
    runs: [AtomicU32; OUTCOMES],
    /// Set by each record, cleared by the flush that takes it.
    dirty: AtomicBool,
    /// Whether the job is paused, as last heard ([`PAUSED_UNKNOWN`]...).
    paused: AtomicU8,
    /// The trigger of the last successful run, Unix milliseconds, or [`NONE`].
    last_success: AtomicI64,
    /// The trigger of the last failed run ([`Outcome::is_failure`]), or [`NONE`].
    last_failure: AtomicI64,
    /// The last trigger handled, once one is recorded (for the admin API; kept here
    /// rather than in the job, so that a run's end writes one neighbourhood). Boxed: in a
    /// fleet most jobs are run by other replicas and have none here.
    pub last_run: Mutex<Option<Box<LastRun>>>,
    /// Runs whose handler started and has not ended ([`JobSeries::run_started`]).
    in_flight: AtomicU32,
    /// The job's duration and lateness histograms, made at the first sample when they
    /// are kept (boxed: a job without them keeps one pointer).
    histograms: OnceLock<Box<JobHistograms>>,
    name: Arc<str>,
}

impl std::fmt::Debug for JobSeries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobSeries").field("job", &self.name).finish_non_exhaustive()
    }
}

/// A job's own histograms, counted locally.
#[derive(Default)]
struct JobHistograms {
    duration: LocalHistogram,
    lateness: LocalHistogram,
}

/// A job's series with the `job` label, registered with the recorder at the job's first
/// flush, each counter and gauge at its first value: kept by the flush, which alone uses
/// them (most jobs see one or two outcomes, so only those have a counter). Every job has
/// its paused gauge; the rest is boxed, made once the job has a run to show here (in a
/// fleet, most jobs are run by other replicas).
pub(crate) struct JobHandles {
    paused: Gauge,
    recorded: Option<Box<RecordedHandles>>,
}

/// The series of a job with runs to show: see [`JobHandles`].
#[derive(Default)]
struct RecordedHandles {
    /// `runs_total` by outcome, as [`outcome_index`].
    runs: Vec<(usize, Counter)>,
    last_success: Option<Gauge>,
    last_failure: Option<Gauge>,
    histograms: Option<(Histogram, Histogram)>,
}

/// What the jobs' flushes add up when series carry no `job` label.
#[derive(Debug, Default)]
pub(crate) struct Unlabeled {
    pub runs: [u64; OUTCOMES],
}

impl JobSeries {
    pub fn new(name: &Arc<str>) -> Self {
        Self {
            name: name.clone(),
            runs: Default::default(),
            dirty: AtomicBool::new(false),
            paused: AtomicU8::new(PAUSED_UNKNOWN),
            last_success: AtomicI64::new(NONE),
            last_failure: AtomicI64::new(NONE),
            last_run: Mutex::new(None),
            in_flight: AtomicU32::new(0),
            histograms: OnceLock::new(),
        }
    }

    /// One run record, when series carry the `job` label: `duration` if the handler ran
    /// and the job keeps its own histograms.
    pub fn record(&self, outcome: Outcome, trigger: Timestamp, duration: Option<Duration>) {
        match outcome_index(outcome) {
            Some(i) => {
                self.runs[i].fetch_add(1, Ordering::Relaxed);
            }
            // An outcome of another release (the engine writes none): straight to the
            // recorder.
            None => {
                counter!(RUNS_TOTAL, "job" => self.name.clone(), "outcome" => outcome.as_str()).increment(1)
            }
        }
        self.ended(outcome, trigger);
        if let Some(duration) = duration {
            self.histograms().duration.record(duration);
        }
        // Release: the flush that sees this sees the counts above.
        self.dirty.store(true, Ordering::Release);
    }

    /// The last success or failure, if `outcome` is one (either way a trigger moves the
    /// gauge only forwards).
    fn ended(&self, outcome: Outcome, trigger: Timestamp) {
        let at = trigger.as_millisecond();
        if outcome == Outcome::Succeeded {
            self.last_success.fetch_max(at, Ordering::Relaxed);
        } else if outcome.is_failure() {
            self.last_failure.fetch_max(at, Ordering::Relaxed);
        }
    }

    /// A run's handler started: counted in [`JobSeries::runs_in_flight`] until
    /// [`JobSeries::run_ended`].
    pub fn run_started(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
    }

    /// A handler that [`JobSeries::run_started`] counted has ended.
    pub fn run_ended(&self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }

    /// How many runs of the job have a handler running now.
    pub fn runs_in_flight(&self) -> u32 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// A handler started `lateness` after its trigger, when the job keeps its own
    /// histograms.
    pub fn started(&self, lateness: Duration) {
        self.histograms().lateness.record(lateness);
        self.dirty.store(true, Ordering::Release);
    }

    fn histograms(&self) -> &JobHistograms {
        self.histograms.get_or_init(Box::default)
    }

    /// The last success and failure kept in the job's state (restored at start): the
    /// gauges start from them rather than from nothing.
    pub fn restore(&self, last_success: Option<Timestamp>, last_failure: Option<Timestamp>) {
        if let Some(at) = last_success {
            self.last_success.fetch_max(at.as_millisecond(), Ordering::Relaxed);
        }
        if let Some(at) = last_failure {
            self.last_failure.fetch_max(at.as_millisecond(), Ordering::Relaxed);
        }
    }

    /// Whether the job is paused now.
    pub fn set_paused(&self, paused: bool) {
        self.paused.store(if paused { PAUSED_YES } else { PAUSED_NO }, Ordering::Relaxed);
    }

    /// Hands the counts since the last flush to the job's series (`labels.per_job`),
    /// `handles`, registered at the first flush; or adds them to `unlabeled`.
    pub fn flush(&self, labels: MetricLabels, handles: &mut Option<JobHandles>, unlabeled: &mut Unlabeled) {
        let mut handles = labels.per_job.then(|| handles.get_or_insert_with(|| JobHandles::new(&self.name)));
        if self.dirty.swap(false, Ordering::Acquire) {
            self.flush_runs(handles.as_deref_mut(), unlabeled);
            if let (Some(handles), Some(histograms)) = (handles.as_deref_mut(), self.histograms.get()) {
                let (duration, lateness) = handles.histograms(&self.name);
                for (local, series) in [(&histograms.duration, duration), (&histograms.lateness, lateness)] {
                    let mut drained = Drained::default();
                    local.drain_into(&mut drained);
                    drained.feed(series);
                }
            }
        }
        let Some(handles) = handles else { return };
        let success = seconds(self.last_success.load(Ordering::Relaxed));
        let failure = seconds(self.last_failure.load(Ordering::Relaxed));
        if success.is_some() || failure.is_some() {
            let recorded = handles.recorded();
            let gauges = [
                (&mut recorded.last_success, success, JOB_LAST_SUCCESS_TIMESTAMP_SECONDS),
                (&mut recorded.last_failure, failure, JOB_LAST_FAILURE_TIMESTAMP_SECONDS),
            ];
            for (gauge, at, metric) in gauges {
                if let Some(at) = at {
                    gauge.get_or_insert_with(|| gauge!(metric, "job" => self.name.clone())).set(at);
                }
            }
        }
        handles.paused.set(if self.paused.load(Ordering::Relaxed) == PAUSED_YES { 1.0 } else { 0.0 });
    }

    /// The run records since the last flush: to the job's counters, or to `unlabeled`.
    fn flush_runs(&self, mut handles: Option<&mut JobHandles>, unlabeled: &mut Unlabeled) {
        for (i, runs) in self.runs.iter().enumerate() {
            if runs.load(Ordering::Relaxed) == 0 {
                continue;
            }
            let n = u64::from(runs.swap(0, Ordering::Relaxed));
            match handles.as_deref_mut() {
                Some(handles) => handles.runs(i, &self.name).increment(n),
                None => unlabeled.runs[i] += n,
            }
        }
    }
}

impl JobHandles {
    fn new(job: &Arc<str>) -> Self {
        Self { paused: gauge!(JOB_PAUSED, "job" => job.clone()), recorded: None }
    }

    /// The series of a job with runs to show, made at the first call.
    fn recorded(&mut self) -> &mut RecordedHandles {
        self.recorded.get_or_insert_with(Box::default)
    }

    /// `runs_total` of the outcome at index `i`, registered at its first record.
    fn runs(&mut self, i: usize, job: &Arc<str>) -> &Counter {
        let runs = &mut self.recorded().runs;
        let at = match runs.iter().position(|&(outcome, _)| outcome == i) {
            Some(at) => at,
            None => {
                let outcome = Outcome::ALL[i].as_str();
                // Room for this one alone (a first push would make room for four): a new
                // outcome of a job is rare.
                runs.reserve_exact(1);
                runs.push((i, counter!(RUNS_TOTAL, "job" => job.clone(), "outcome" => outcome)));
                runs.len() - 1
            }
        };
        &runs[at].1
    }

    /// The job's duration and lateness histograms, registered at their first samples.
    fn histograms(&mut self, job: &Arc<str>) -> (&Histogram, &Histogram) {
        let (duration, lateness) = self.recorded().histograms.get_or_insert_with(|| {
            (
                histogram!(JOB_RUN_DURATION_SECONDS, "job" => job.clone()),
                histogram!(JOB_TRIGGER_LATENESS_SECONDS, "job" => job.clone()),
            )
        });
        (duration, lateness)
    }
}

/// Unix milliseconds as seconds; `None` for [`NONE`].
fn seconds(millis: i64) -> Option<f64> {
    (millis != NONE).then(|| Timestamp::from_millisecond(millis).map_or(0.0, unix_seconds))
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
        Outcome::SkippedNoMember => 12,
        Outcome::Running => 13,
        Outcome::Interrupted => 14,
        Outcome::Cancelled => 15,
        Outcome::SkippedParent => 16,
        Outcome::SkippedMaxRuns => 17,
        Outcome::Other(_) => return None,
    })
}

#[cfg(test)]
mod tests {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

    use super::*;
    use crate::metrics::Metrics;

    /// `runs_total`'s series: the `job` label (empty without), the outcome and the count.
    fn runs(snapshotter: &Snapshotter) -> Vec<(String, String, u64)> {
        let mut runs: Vec<(String, String, u64)> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .filter(|(key, ..)| key.key().name() == RUNS_TOTAL)
            .filter_map(|(key, _, _, value)| {
                let DebugValue::Counter(n) = value else { return None };
                let label =
                    |name: &str| key.key().labels().find(|l| l.key() == name).map(|l| l.value().to_owned());
                Some((label("job").unwrap_or_default(), label("outcome")?, n))
            })
            .collect();
        runs.sort();
        runs
    }

    fn run(job: &str, outcome: &str, n: u64) -> (String, String, u64) {
        (job.to_owned(), outcome.to_owned(), n)
    }

    #[test]
    fn an_outcome_of_another_release_is_counted_at_the_recorder_at_once() {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let series = JobSeries::new(&Arc::from("tick"));
        let newer = Outcome::from_name("from-a-newer-release");
        let unlabeled = Metrics::new(true, MetricLabels { per_job: false, ..MetricLabels::default() });
        metrics::with_local_recorder(&recorder, || {
            Metrics::default().recorded(&series, newer, Timestamp::UNIX_EPOCH, None);
            unlabeled.recorded(&series, newer, Timestamp::UNIX_EPOCH, None);
        });
        assert_eq!(
            runs(&snapshotter),
            [run("", "from-a-newer-release", 1), run("tick", "from-a-newer-release", 1)]
        );
    }

    /// A recorder, its snapshotter and the series of job `name`, not flushed yet.
    fn fixture(name: &str) -> (DebuggingRecorder, Snapshotter, JobSeries, Option<JobHandles>) {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        (recorder, snapshotter, JobSeries::new(&Arc::from(name)), None)
    }

    #[test]
    fn each_outcome_a_job_records_has_its_own_counter_across_flushes() {
        let (recorder, snapshotter, series, mut handles) = fixture("tick");
        let labels = MetricLabels::default();
        let at = Timestamp::UNIX_EPOCH;
        metrics::with_local_recorder(&recorder, || {
            series.record(Outcome::Succeeded, at, None);
            series.record(Outcome::Failed, at, None);
            series.record(Outcome::Succeeded, at, None);
            series.flush(labels, &mut handles, &mut Unlabeled::default());
            series.record(Outcome::Failed, at, None);
            series.record(Outcome::TimedOut, at, None);
            series.flush(labels, &mut handles, &mut Unlabeled::default());
        });
        assert_eq!(
            runs(&snapshotter),
            [run("tick", "failed", 2), run("tick", "succeeded", 2), run("tick", "timed-out", 1)]
        );
        let counters = handles.and_then(|h| h.recorded).map(|r| (r.runs.len(), r.runs.capacity()));
        assert_eq!(counters, Some((3, 3)), "a counter for each outcome recorded, and room for no more");
    }

    #[test]
    fn a_job_with_no_runs_here_has_its_paused_gauge_and_nothing_more() {
        let (recorder, snapshotter, series, mut handles) = fixture("elsewhere");
        let labels = MetricLabels::default();
        metrics::with_local_recorder(&recorder, || {
            series.flush(labels, &mut handles, &mut Unlabeled::default());
            series.flush(labels, &mut handles, &mut Unlabeled::default());
        });
        let names: Vec<String> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .map(|(key, ..)| key.key().name().to_owned())
            .collect();
        assert_eq!(names, [JOB_PAUSED]);
        assert!(
            handles.is_some_and(|h| h.recorded.is_none()),
            "no series of runs made for a job without any"
        );
    }

    #[test]
    fn each_known_outcome_has_its_own_index() {
        for (i, outcome) in Outcome::ALL.into_iter().enumerate() {
            assert_eq!(outcome_index(outcome), Some(i), "{outcome}");
        }
        assert_eq!(outcome_index(Outcome::from_name("from-a-newer-release")), None);
    }
}
