//! Run recording: each trigger's one record, log line and job-state update.

use std::sync::atomic::Ordering;
use std::time::Duration;

use jiff::Timestamp;

use super::Shared;
use crate::job::Job;
use crate::ledger::{Outcome, RunRecord};
use crate::store::JobState;

impl Shared {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn record(
        &self,
        job: &Job,
        trigger: Timestamp,
        outcome: Outcome,
        fencing_token: Option<u64>,
        started: Timestamp,
        duration: Duration,
        error: Option<String>,
    ) -> RunRecord {
        RunRecord {
            job: job.name.clone(),
            trigger,
            instance: self.instance.clone(),
            outcome,
            fencing_token,
            started,
            duration,
            error,
        }
    }

    /// Logs the run's one line, appends it to the ledger and updates the job's state
    /// (not for a backend outage: that trigger may still be re-issued).
    pub(crate) async fn finish(&self, job: &Job, record: RunRecord) {
        log_run(&record);
        // A trigger skipped for an outage or for the clock may still be re-issued.
        if !matches!(record.outcome, Outcome::SkippedBackendUnavailable | Outcome::SkippedClockSkew) {
            self.save_state(job, record.trigger, Some(record.outcome)).await;
        }
        if let Err(e) = self.ledger.append(&record).await {
            tracing::warn!(job = %record.job, trigger = %record.trigger, "{e}");
        }
    }

    /// Records that `trigger` of `job` was handled; a failure is logged, not fatal.
    pub(crate) async fn save_state(&self, job: &Job, trigger: Timestamp, outcome: Option<Outcome>) {
        if !self.persist_state || job.removed.load(Ordering::SeqCst) {
            return;
        }
        let state = JobState {
            last_trigger: trigger,
            last_outcome: outcome,
            one_shot_done: job.schedule.kind().is_one_shot(),
        };
        if let Err(e) = self.store.save_state(&job.name, &state).await {
            tracing::warn!(job = %job.name, %trigger, "{e}");
        }
        // Removed while saving: the removal's delete may have come first, so delete again.
        if job.removed.load(Ordering::SeqCst)
            && !job.schedule.kind().is_one_shot()
            && let Err(e) = self.store.delete_state(&job.name).await
        {
            tracing::warn!(job = %job.name, "the removed job's state stays: {e}");
        }
    }
}

fn log_run(r: &RunRecord) {
    let dur_ms = r.duration.as_millis() as u64;
    let (job, trigger, outcome) = (&*r.job, r.trigger, r.outcome.as_str());
    let err = r.error.as_deref().unwrap_or("");
    match r.outcome {
        Outcome::Succeeded => tracing::info!(job, %trigger, outcome, dur_ms, "run finished"),
        // Losing a claim is normal; a refusal by the high-water mark (with a reason) is not.
        Outcome::SkippedLost if r.error.is_none() => {
            tracing::debug!(job, %trigger, outcome, dur_ms, "run finished")
        }
        // The skew guard warns once a minute for all of them.
        Outcome::SkippedClockSkew => tracing::debug!(job, %trigger, outcome, dur_ms, err, "run finished"),
        _ => tracing::warn!(job, %trigger, outcome, dur_ms, err, "run finished"),
    }
}
