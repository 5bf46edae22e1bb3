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

use std::collections::HashMap;
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
    if job.max_runs.is_none() {
        return Ok(());
    }
    let reason = match &shared.coordinator {
        None => "needs a coordinator that counts runs (Redis, PostgreSQL or in-process); \
                 this scheduler has none"
            .to_owned(),
        Some(_) if job.every_replica => "cannot be counted for a job every replica runs".to_owned(),
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
    let max_runs = job.max_runs?;
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
        let max_runs = job.max_runs.unwrap_or_default();
        tracing::info!(job = %job.name, max_runs, "max_runs reached: the job has ended, no more triggers");
    }
}

impl Shared {
    /// The runs counted for each of `jobs` that has `max_runs`, by name; empty without a
    /// coordinator counting runs, or when it cannot be read (logged).
    pub(crate) async fn run_counts(&self, jobs: &[&Job]) -> Vec<(String, u64)> {
        let counted: Vec<&str> =
            jobs.iter().filter(|job| job.max_runs.is_some()).map(|job| &*job.name).collect();
        let Some(coordinator) = self.coordinator.as_ref().filter(|c| c.counts_runs() && !counted.is_empty())
        else {
            return Vec::new();
        };
        match super::claim::within_claim_timeout(self, coordinator.run_counts(&counted)).await {
            Ok(counts) => counted.iter().map(|job| (*job).to_owned()).zip(counts).collect(),
            Err(e) => {
                tracing::warn!("the runs counted for max_runs could not be read: {e}");
                Vec::new()
            }
        }
    }
}

impl Scheduler {
    /// The runs counted so far for each job with [`max_runs`](crate::JobBuilder::max_runs),
    /// by name, across the fleet (one coordinator round trip); empty when there is none,
    /// or when the count cannot be read (logged).
    pub async fn run_counts(&self) -> HashMap<String, u64> {
        let jobs = self.shared.table().jobs();
        let jobs: Vec<&Job> = jobs.iter().map(|job| &**job).collect();
        self.shared.run_counts(&jobs).await.into_iter().collect()
    }
}
