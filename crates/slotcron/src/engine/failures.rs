//! Pausing a job after failures: a job with
//! [`pause_after_failures`](crate::JobBuilder::pause_after_failures) is paused across the
//! fleet once that many of its triggers in a row have failed.
//!
//! The streak lives in the fleet's [`Controls`] (the coordinator's, or the store's in
//! single-replica mode), so the triggers count whichever replica ran them; each trigger's
//! final record counts once, on the replica that ran it: `failed`, `timed-out` and
//! `panicked` add one ([`Controls::count_failure`], which pauses the job with the reason
//! when the streak reaches its limit, atomically), `succeeded` ends the streak, and any
//! other end (`interrupted`, `cancelled`, `aborted`, a skip) does neither: an interrupted
//! run says nothing of the job's command, only that its daemon went. Manual runs and
//! backfills neither count nor end the streak. Resuming the job ends its streak.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use crate::control::Controls;
use crate::coordinator::CoordinatorError;
use crate::engine::Scheduler;
use crate::engine::shared::Shared;
use crate::job::{Job, JobError};
use crate::ledger::{Outcome, RunRecord};

/// [`JobError::Invalid`] (field `pause_after_failures`) for a job with it whose streak no
/// controls here would keep: a job every replica runs, or controls that keep no streaks.
pub(crate) fn refuse_uncounted(shared: &Shared, job: &Job) -> Result<(), JobError> {
    if job.pause_after_failures().is_none() {
        return Ok(());
    }
    if controls(shared).is_some() {
        return Ok(());
    }
    let keeper = shared
        .coordinator
        .as_ref()
        .map_or("the store".to_owned(), |c| format!("the {} coordinator", c.name()));
    let reason = format!("needs controls that keep streaks of failures; {keeper} keeps none");
    Err(JobError::Invalid { job: job.name.to_string(), field: "pause_after_failures", reason })
}

/// The fleet's controls, when they keep streaks of failures.
fn controls(shared: &Shared) -> Option<&dyn Controls> {
    let controls = match &shared.coordinator {
        Some(coordinator) => coordinator.controls(),
        None => shared.store.controls(),
    };
    controls.filter(|controls| controls.counts_failures())
}

/// The reason kept with a pause after `failures` failed triggers in a row, the last at
/// `trigger`.
pub(crate) fn reason(failures: u64, trigger: jiff::Timestamp) -> String {
    match failures {
        1 => format!("paused after a failed trigger, at {trigger}"),
        _ => format!("paused after {failures} failed triggers in a row, the last at {trigger}"),
    }
}

/// Counts `record`, a final record of `job`, in the job's streak of failures, and notes
/// a pause it made; a failure of the controls is logged (the streak then misses this
/// trigger: counted or reset late, never doubly).
pub(crate) async fn count(shared: &Shared, job: &Job, record: &RunRecord) {
    let Some(pause_after) = job.pause_after_failures() else { return };
    if !record.cause.saves_state() {
        return;
    }
    let Some(controls) = controls(shared) else { return };
    let failed = matches!(record.outcome, Outcome::Failed | Outcome::TimedOut | Outcome::Panicked);
    if !failed && record.outcome != Outcome::Succeeded {
        return;
    }
    let reason = reason(pause_after, record.trigger);
    let now = shared.clock.now();
    let answer = async {
        let answer = match failed {
            true => controls.count_failure(&job.name, pause_after, now, &reason).await.map(Some),
            false => controls.reset_failures(&job.name).await.map(|()| None),
        };
        answer.map_err(|e| CoordinatorError::unavailable(e.to_string()))
    };
    match super::claim::within_claim_timeout(shared, answer).await {
        Ok(Some(streak)) if streak.paused => paused(shared, job, now, &reason),
        Ok(_) => {}
        Err(e) => tracing::warn!(job = %job.name, "the job's streak of failures was not counted: {e}"),
    }
}

/// Notes here that `job` was paused at `at` for `reason`, as a pause through the
/// scheduler does.
fn paused(shared: &Shared, job: &Job, at: jiff::Timestamp, reason: &str) {
    if shared.coordinator.is_none() {
        shared.local_paused().insert(job.name.to_string(), at);
    }
    job.series().set_paused(true);
    let removed = job.removed.load(Ordering::SeqCst);
    tracing::warn!(job = %job.name, removed, "job {reason}");
}

impl Scheduler {
    /// The reasons kept beside the pauses that have one (those
    /// [`pause_after_failures`](crate::JobBuilder::pause_after_failures) made), by job
    /// name, across the fleet (one read of the controls); empty when no controls here
    /// keep streaks of failures, or when they cannot be read (logged).
    pub async fn pause_reasons(&self) -> HashMap<String, String> {
        let Some(controls) = controls(&self.shared) else { return HashMap::new() };
        let answer = async {
            controls.pause_reasons().await.map_err(|e| CoordinatorError::unavailable(e.to_string()))
        };
        super::claim::within_claim_timeout(&self.shared, answer).await.unwrap_or_else(|e| {
            tracing::warn!("the reasons of the pauses could not be read: {e}");
            HashMap::new()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::reason;

    #[test]
    fn a_pause_after_one_failure_says_so_in_the_singular() {
        let at: jiff::Timestamp = "2024-05-17T00:02:00Z".parse().unwrap();
        assert_eq!(reason(1, at), "paused after a failed trigger, at 2024-05-17T00:02:00Z");
        assert_eq!(
            reason(3, at),
            "paused after 3 failed triggers in a row, the last at 2024-05-17T00:02:00Z"
        );
    }
}
