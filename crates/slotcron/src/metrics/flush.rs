//! The flush: the counts the runs keep next to their job and in the engine's stripes go
//! to the recorder [`METRICS_FLUSH_EVERY`] after activity, at a scrape
//! ([`Scheduler::flush_metrics`](crate::Scheduler::flush_metrics)) and when
//! [`Scheduler::run`](crate::Scheduler::run) ends.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering, fence};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;
use metrics::{Counter, counter, gauge};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::engine::{ClaimResult, EngineHandles, EngineSeries};
use super::job::{JobHandles, JobSeries, OUTCOMES, Unlabeled, outcome_index};
use super::{
    BACKEND_ERRORS_TOTAL, FLEET_MEMBERS, METRICS_FLUSH_EVERY, MetricLabels, RUNS_TOTAL,
    TAKEOVER_FOUND_CLAIMED_TOTAL, TAKEOVERS_TOTAL,
};
use crate::clock::Clock;
use crate::ledger::Outcome;

/// A scheduler's metrics: its jobs' series, its own, and when to flush them.
pub(crate) struct Metrics {
    /// Off: nothing is counted or flushed.
    enabled: bool,
    labels: MetricLabels,
    engine: EngineSeries,
    registry: Mutex<Registry>,
    /// Set from the first count after a flush until the next flush: a periodic flush is
    /// on its way.
    pending: AtomicBool,
    arm: Notify,
}

/// The jobs' series a periodic flush hands to the recorder between two yields.
const FLUSH_STEP: usize = 4096;

/// Where a flush of the registry is: the next job's series, the gone jobs' series seen
/// (by address; dropped at the end), and the totals so far.
#[derive(Default)]
struct FlushPass {
    next: usize,
    gone: HashSet<usize>,
    totals: Unlabeled,
}

/// What a flush walks, under one lock: a whole [`Metrics::flush`], or one step of a
/// periodic flush (two flushes may then interleave step by step; each series hands each
/// count on once, and each pass keeps the registry's order).
#[derive(Default)]
struct Registry {
    /// In the order the jobs were added: a replacement comes after the job it replaced,
    /// so its gauges are set last. Each with its series once flushed with the `job` label.
    jobs: Vec<(Arc<JobSeries>, Option<JobHandles>)>,
    engine: Option<EngineHandles>,
    unlabeled: UnlabeledHandles,
}

/// The series without a `job` label ([`MetricLabels::per_job`] off), registered at the first flush.
#[derive(Default)]
struct UnlabeledHandles {
    runs: [Option<Counter>; OUTCOMES],
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").field("labels", &self.labels).finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new(true, MetricLabels::default())
    }
}

impl Metrics {
    pub fn new(enabled: bool, labels: MetricLabels) -> Self {
        Self {
            enabled,
            labels,
            engine: EngineSeries::default(),
            registry: Mutex::default(),
            pending: AtomicBool::new(false),
            arm: Notify::new(),
        }
    }

    /// Whether anything is counted: off, a job's series need not be made to be registered.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Flushes `series` from now on, until its job is dropped.
    pub fn register(&self, series: Arc<JobSeries>) {
        if self.enabled {
            self.lock().jobs.push((series, None));
        }
    }

    /// A run record of the job of `series`: `duration` if the handler ran. Counted with
    /// the job when series carry the `job` label, else in the calling thread's stripe
    /// (no per-job line is written then); the duration in the fleet-wide histogram, and
    /// in the job's own when it keeps one.
    pub fn recorded(
        &self,
        series: &JobSeries,
        outcome: Outcome,
        trigger: Timestamp,
        duration: Option<Duration>,
    ) {
        if !self.enabled {
            return;
        }
        match (self.labels.per_job, outcome_index(outcome)) {
            (true, _) => {
                series.record(outcome, trigger, duration.filter(|_| self.labels.per_job_histograms));
                // A claim refused as paused says it is; a run that started, that it was not.
                if outcome == Outcome::SkippedPaused || outcome.ran() {
                    series.set_paused(outcome == Outcome::SkippedPaused);
                }
            }
            (false, Some(outcome)) => self.engine.run_recorded(outcome),
            // An outcome of another release (the engine writes none): straight to the
            // recorder.
            (false, None) => counter!(RUNS_TOTAL, "outcome" => outcome.as_str()).increment(1),
        }
        if let Some(duration) = duration {
            self.engine.run_duration(duration);
        }
        self.touched();
    }

    /// A handler of the job of `series` started `lateness` after its trigger.
    pub fn run_started(&self, series: &JobSeries, lateness: Duration) {
        if !self.enabled {
            return;
        }
        self.engine.run_started(lateness);
        if self.labels.per_job && self.labels.per_job_histograms {
            series.started(lateness);
        }
        self.touched();
    }

    /// A backend failed: `backend` is `coordinator` or `state`, `kind` the error's kind
    /// (`unavailable`, `unauthorized`...). Counted straight at the recorder: errors
    /// come one per failed call, not per trigger.
    pub fn backend_error(&self, backend: &'static str, kind: &'static str) {
        if self.enabled {
            counter!(BACKEND_ERRORS_TOTAL, "backend" => backend, "kind" => kind).increment(1);
        }
    }

    /// Handlers running now on this scheduler; `None` when metrics are off (nothing is
    /// counted).
    pub fn running(&self) -> Option<u64> {
        self.enabled.then(|| self.engine.running())
    }

    /// A handler that [`Metrics::run_started`] counted has ended.
    pub fn run_ended(&self) {
        if self.enabled {
            self.engine.run_ended();
        }
    }

    /// A claim answered after `latency`.
    pub fn claim(&self, result: ClaimResult, latency: Duration) {
        if !self.enabled {
            return;
        }
        self.engine.claim(result, latency);
        self.touched();
    }

    /// After the takeover delay, `taken` triggers were found unclaimed (this scheduler
    /// claims them) and `claimed` claimed by another replica. Rare (once per takeover
    /// batch), so counted straight at the recorder.
    pub fn takeover(&self, taken: u64, claimed: u64) {
        if self.enabled {
            counter!(TAKEOVERS_TOTAL).increment(taken);
            counter!(TAKEOVER_FOUND_CLAIMED_TOTAL).increment(claimed);
        }
    }

    /// The membership view has `members` live members (set at each heartbeat).
    pub fn members(&self, members: usize) {
        if self.enabled {
            gauge!(FLEET_MEMBERS).set(members as f64);
        }
    }

    /// Arms the periodic flush if it is not on its way. Costs one load of a flag that
    /// changes once per flush: the hot path writes no shared line.
    fn touched(&self) {
        if !self.pending.load(Ordering::Relaxed) && !self.pending.swap(true, Ordering::AcqRel) {
            self.arm.notify_one();
        }
    }

    /// Hands every count since the last flush to the installed recorder, registering
    /// each series at its first flush.
    pub fn flush(&self) {
        if !self.enabled {
            return;
        }
        let mut pass = FlushPass::default();
        while !self.flush_jobs(&mut pass, usize::MAX) {}
        self.finish(pass);
    }

    /// [`Metrics::flush`], [`FLUSH_STEP`] jobs' series at a time with a yield between
    /// steps: a flush of a million jobs' series (registered at their first flush) does
    /// not hold up the scheduler's loop on the same runtime thread.
    async fn flush_in_steps(&self) {
        if !self.enabled {
            return;
        }
        let mut pass = FlushPass::default();
        while !self.flush_jobs(&mut pass, FLUSH_STEP) {
            tokio::task::yield_now().await;
        }
        self.finish(pass);
    }

    /// Flushes up to `step` jobs' series from where `pass` is; whether it reached the end.
    /// A series held by the registry alone (its job is gone) has its last flush and is
    /// noted to be dropped at the end of the pass (the others keep their order: a
    /// replacement comes after the job it replaced).
    fn flush_jobs(&self, pass: &mut FlushPass, step: usize) -> bool {
        let mut registry = self.lock();
        let jobs = &mut registry.jobs;
        let end = pass.next.saturating_add(step).min(jobs.len());
        for (series, handles) in &mut jobs[pass.next..end] {
            if Arc::strong_count(series) == 1 {
                // What the job's runs counted before it was dropped is seen below.
                fence(Ordering::Acquire);
                pass.gone.insert(Arc::as_ptr(series).addr());
            }
            series.flush(self.labels, handles, &mut pass.totals);
        }
        pass.next = end;
        end == jobs.len()
    }

    /// Ends a flush pass: drops the series of gone jobs, flushes the engine's series and
    /// the totals.
    fn finish(&self, mut pass: FlushPass) {
        let mut registry = self.lock();
        let Registry { jobs, engine, unlabeled } = &mut *registry;
        if !pass.gone.is_empty() {
            jobs.retain(|(series, _)| !pass.gone.contains(&Arc::as_ptr(series).addr()));
        }
        self.engine.flush(engine.get_or_insert_with(EngineHandles::new), &mut pass.totals);
        if !self.labels.per_job {
            unlabeled.flush(&pass.totals);
        }
    }

    /// Flushes [`METRICS_FLUSH_EVERY`] after the first count since the last flush, until `stop`.
    pub async fn flush_periodically(self: Arc<Self>, clock: Arc<dyn Clock>, stop: CancellationToken) {
        loop {
            if stop.run_until_cancelled(self.arm.notified()).await.is_none() {
                return;
            }
            let at = crate::clock::later(clock.now(), METRICS_FLUSH_EVERY);
            if stop.run_until_cancelled(clock.sleep_until(at)).await.is_none() {
                return;
            }
            // Cleared first: a count after it arms the next flush.
            self.pending.store(false, Ordering::Release);
            self.flush_in_steps().await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl UnlabeledHandles {
    fn flush(&mut self, totals: &Unlabeled) {
        for (i, &n) in totals.runs.iter().enumerate() {
            if n > 0 {
                let outcome = Outcome::ALL[i].as_str();
                self.runs[i].get_or_insert_with(|| counter!(RUNS_TOTAL, "outcome" => outcome)).increment(n);
            }
        }
    }
}
