//! Run limits: a job with [`max_runs`](crate::JobBuilder::max_runs) ends after that many
//! of its scheduled triggers have started across the fleet.
//!
//! The count lives in the coordinator, taken with each counted trigger's start mark
//! ([`Coordinator::mark_counted_starts`](crate::Coordinator::mark_counted_starts)), so it
//! is exact across the fleet and kept by job name across restarts and changes to the
//! job. Counted are the claims made under a scheduled trigger's key
//! ([`trigger_key`](crate::trigger_key)): on schedule, caught up, at start-up or taken
//! over. Runs an operator asked for (manual, backfill) and reruns have keys of their own
//! and are not counted; retries are attempts of one run, one mark. A counted job's
//! triggers are claimed at their instant, never ahead (`fleet/ahead.rs`), and their
//! starts are marked one run at a time, never with a batch.
//!
//! The first trigger whose mark finds the count at `max_runs` is refused: it is recorded
//! [`SkippedMaxRuns`](Outcome::SkippedMaxRuns) with the reason `max_runs reached (N)`, its
//! claim is settled (no replica takes it over), and the job has ended on this replica:
//! none of its triggers is queued any more (each replica records at most one such
//! trigger, the first it claims after the end). Its status shows `runs N of N`.
//!
//! A scheduler reads the count of its jobs with `max_runs` when it starts, and of such a
//! job added (or replaced) while it runs: one whose runs are all counted already (a
//! restarted daemon, a reloaded jobs file) has ended at once, with no refused trigger.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::coordinator::CountedAnswer;
use crate::engine::Scheduler;
use crate::engine::claim::marks::Unmarked;
use crate::engine::shared::Shared;
use crate::job::{Job, JobError};
use crate::key::parse_key;
use crate::ledger::{Cause, Outcome, RunRecord};

/// [`JobError::Invalid`] (field `max_runs`) for a job with `max_runs` that no
/// coordinator counting runs would count: in single-replica mode, for a job every
/// replica runs, or with a coordinator that counts no runs.
pub(crate) fn refuse_uncounted(shared: &Shared, job: &Job) -> Result<(), JobError> {
    if job.max_runs().is_none() {
        return Ok(());
    }
    let reason = match &shared.coordinator {
        None => "needs a coordinator that counts runs (Redis, PostgreSQL or in-process); \
                 this scheduler has none"
            .to_owned(),
        Some(coordinator) if !coordinator.counts_runs() => {
            format!("needs a coordinator that counts runs; the {} coordinator does not", coordinator.name())
        }
        Some(_) => return Ok(()),
    };
    Err(JobError::Invalid { job: job.name.to_string(), field: "max_runs", reason })
}

/// The `max_runs` a start mark of `job`'s claim under trigger key `key` counts against:
/// the job's, when it has one and `key` is a scheduled trigger's (not a manual run's,
/// a backfill's or a rerun's); `None` otherwise (a plain mark).
pub(crate) fn counted_against(job: &Job, key: &str) -> Option<u64> {
    let max_runs = job.max_runs()?;
    matches!(parse_key(&job.name, key), Some((Cause::Scheduled, _))).then_some(max_runs)
}

/// A counted mark's answer, as a run takes it: start (`Ok`), or not, with the outcome
/// and reason it is recorded with.
pub(crate) fn answer(answer: CountedAnswer, max_runs: u64) -> Result<(), Unmarked> {
    match answer {
        CountedAnswer::Marked => Ok(()),
        CountedAnswer::Lost => Err(super::claim::taken_over()),
        CountedAnswer::MaxRunsReached => Err((
            Outcome::SkippedMaxRuns,
            format!("max_runs reached ({max_runs}): the job has ended, this trigger was not run"),
        )),
    }
}

/// Ends `job` on this replica when `record` says its `max_runs` were reached: none of its
/// triggers is queued from now on (logged once).
pub(crate) fn end_if_reached(job: &Job, record: &RunRecord) {
    if record.outcome == Outcome::SkippedMaxRuns && !job.ended.swap(true, Ordering::SeqCst) {
        let max_runs = job.max_runs().unwrap_or_default();
        tracing::info!(job = %job.name, max_runs, "max_runs reached: the job has ended, no more triggers");
    }
}

/// Reads, in the background, the runs counted for `jobs` (just added to a running
/// scheduler) and ends those whose `max_runs` are counted already, as
/// [`Shared::end_reached`] does; nothing outside a tokio runtime (their first trigger's
/// start mark is then refused, as ever).
pub(crate) fn end_reached_soon(shared: &Arc<Shared>, jobs: Vec<Arc<Job>>) {
    if jobs.iter().all(|job| job.max_runs().is_none()) || !shared.running.load(Ordering::SeqCst) {
        return;
    }
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        let shared = shared.clone();
        runtime.spawn(async move { shared.end_reached(&jobs).await });
    }
}

impl Shared {
    /// The runs counted for each of `jobs` that has `max_runs`, with its job; empty
    /// without a coordinator counting runs, or when it cannot be read within the claim
    /// timeout (logged).
    pub(crate) async fn run_counts<'j>(&self, jobs: &[&'j Job]) -> Vec<(&'j Job, u64)> {
        let counted: Vec<&Job> = jobs.iter().copied().filter(|job| job.max_runs().is_some()).collect();
        let Some(coordinator) = self.coordinator.as_ref().filter(|c| c.counts_runs() && !counted.is_empty())
        else {
            return Vec::new();
        };
        let names: Vec<&str> = counted.iter().map(|job| &*job.name).collect();
        match super::claim::within_claim_timeout(self, coordinator.run_counts(&names)).await {
            Ok(counts) => counted.into_iter().zip(counts).collect(),
            Err(e) => {
                tracing::warn!("the runs counted for max_runs could not be read: {e}");
                Vec::new()
            }
        }
    }

    /// Ends each of `jobs` whose `max_runs` the coordinator has counted already (a
    /// restarted daemon, a job added again): none of its triggers is queued, and none is
    /// recorded `skipped-max-runs` again. A count that cannot be read ends nothing: the
    /// job's next start mark is refused then.
    pub(crate) async fn end_reached(&self, jobs: &[Arc<Job>]) {
        let jobs: Vec<&Job> = jobs.iter().map(|job| &**job).collect();
        for (job, count) in self.run_counts(&jobs).await {
            let max_runs = job.max_runs().unwrap_or(u64::MAX);
            if count >= max_runs && !job.ended.swap(true, Ordering::SeqCst) {
                tracing::info!(job = %job.name, max_runs, "max_runs counted already: the job has ended");
            }
        }
    }
}

impl Scheduler {
    /// The runs counted so far for each job with [`max_runs`](crate::JobBuilder::max_runs),
    /// by name, across the fleet (one coordinator round trip); empty when there is none,
    /// or when the count cannot be read (logged). A job whose count has reached its
    /// `max_runs` has ended here too from then on (another replica may have counted its
    /// last run).
    pub async fn run_counts(&self) -> HashMap<String, u64> {
        let jobs = self.shared.table().jobs();
        let jobs: Vec<&Job> = jobs.iter().map(|job| &**job).collect();
        let counts = self.shared.run_counts(&jobs).await;
        for (job, count) in &counts {
            if job.max_runs().is_some_and(|max_runs| *count >= max_runs) {
                job.ended.store(true, Ordering::SeqCst);
            }
        }
        counts.into_iter().map(|(job, count)| (job.name.to_string(), count)).collect()
    }
}
