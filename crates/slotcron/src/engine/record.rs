//! Run recording: each trigger's one record (written when its run starts, completed when
//! it ends), log line and job-state update, all through the [`Outbox`](super::outbox).

use std::sync::atomic::Ordering;
use std::time::Duration;

use jiff::Timestamp;
use tokio::sync::oneshot;

use super::shared::Shared;
use crate::job::Job;
use crate::ledger::{Cause, LedgerError, LedgerQuery, LedgerWrite, Outcome, RunRecord};
use crate::store::JobState;

impl Shared {
    /// Whether the ledger holds a record of `job`'s `trigger` (of `outcome`, or any; any
    /// instance).
    ///
    /// # Errors
    /// The ledger could not be read: each caller says what that means for it.
    pub(crate) async fn recorded(
        &self,
        job: &Job,
        trigger: Timestamp,
        outcome: Option<Outcome>,
    ) -> Result<bool, LedgerError> {
        let query = LedgerQuery {
            job: Some(job.name.to_string()),
            outcome,
            since: Some(trigger),
            // The backends keep microseconds: a bound one nanosecond on would round to
            // the trigger itself and find nothing.
            until: trigger.checked_add(Duration::from_micros(1)).ok(),
            limit: 1,
            ..LedgerQuery::default()
        };
        Ok(!self.ledger.query(&query).await?.is_empty())
    }

    /// The record of a trigger that was not run (`outcome` a skip or a miss), at now.
    pub(crate) fn skipped(
        &self,
        job: &Job,
        trigger: Timestamp,
        cause: Cause,
        outcome: Outcome,
        reason: Option<String>,
    ) -> RunRecord {
        RunRecord {
            job: job.name.clone(),
            trigger,
            instance: self.instance.clone(),
            cause,
            attempts: 0,
            outcome,
            fencing_token: None,
            started: self.clock.now(),
            duration: Duration::ZERO,
            error: reason,
            process: None,
        }
    }

    /// The `running` record of a run that starts now; the caller makes it its start mark
    /// ([`mark_start`](super::claim::mark_start)).
    pub(crate) fn start_run(
        &self,
        job: &Job,
        trigger: Timestamp,
        cause: Cause,
        fencing_token: u64,
    ) -> RunRecord {
        let record = RunRecord {
            job: job.name.clone(),
            trigger,
            instance: self.instance.clone(),
            cause,
            attempts: 1,
            outcome: Outcome::Running,
            fencing_token: Some(fencing_token),
            started: self.clock.now(),
            duration: Duration::ZERO,
            error: None,
            process: None,
        };
        // The job's last run from now on, shown `running` until it ends.
        job.set_last_run(&record);
        record
    }

    /// Logs the run's one line, writes its record (completing its `running` one, if it
    /// ran) and updates the job's state (not for a backend outage: that trigger may still
    /// be re-issued).
    pub(crate) async fn finish(&self, job: &Job, record: RunRecord) {
        let write = self.ended(job, record).await;
        self.outbox.push(write);
    }

    /// [`Shared::finish`], and a receiver answered once the ledger has taken the record
    /// (never if the scheduler stopped first): for a parent whose end must be durable
    /// before its chained jobs' triggers are fired (engine/chain.rs).
    pub(crate) async fn finish_durably(&self, job: &Job, record: RunRecord) -> oneshot::Receiver<()> {
        let write = self.ended(job, record).await;
        self.outbox.push_marks(vec![write])
    }

    /// [`Shared::finish`] for each of `ends` (a job and its run's end), written in order as
    /// one group (one batch, one transaction, when the ledger takes them whole), and a
    /// receiver answered once the ledger has taken the last (never if the scheduler
    /// stopped first): a parent's end with its chained jobs' skips (engine/chain).
    pub(crate) async fn finish_group(&self, ends: Vec<(&Job, RunRecord)>) -> oneshot::Receiver<()> {
        let mut writes = Vec::with_capacity(ends.len());
        for (job, record) in ends {
            writes.push(self.ended(job, record).await);
        }
        self.outbox.push_marks(writes)
    }

    /// Everything [`Shared::finish`] does but the ledger write, which it returns.
    async fn ended(&self, job: &Job, record: RunRecord) -> LedgerWrite {
        log_run(&record);
        job.set_last_run(&record);
        super::limits::end_if_reached(job, &record);
        super::failures::count(self, job, &record).await;
        let ran = record.outcome.ran().then_some(record.duration);
        self.metrics.recorded(job.series(), record.outcome, record.trigger, ran);
        // A trigger skipped for an outage or for the clock may still be re-issued.
        if !matches!(record.outcome, Outcome::SkippedBackendUnavailable | Outcome::SkippedClockSkew)
            && record.cause.saves_state()
        {
            self.save_state(job, record.trigger, Some(record.outcome)).await;
        }
        if let Some(observer) = &self.observer {
            observer.run_ended(&record);
        }
        if record.attempts > 0 { LedgerWrite::Update(record) } else { LedgerWrite::Append(record) }
    }

    /// Records that `trigger` of `job` was handled; a failed write is kept and written
    /// when the store is back.
    pub(crate) async fn save_state(&self, job: &Job, trigger: Timestamp, outcome: Option<Outcome>) {
        let Some(state) = self.state_of(job, trigger, outcome) else { return };
        self.outbox.save_state(&job.name, state).await;
        // Removed while saving: the removal's delete may have come first, so delete again.
        if job.removed.load(Ordering::SeqCst)
            && !job.kind.is_one_shot()
            && let Err(e) = self.store.delete_state(&job.name).await
        {
            tracing::warn!(job = %job.name, "the removed job's state stays: {e}");
        }
    }

    /// [`Shared::save_state`] for a trigger another replica handled: queued for the
    /// outbox's writer rather than written here, since a non-owner notes one for each of
    /// thousands of triggers at once.
    pub(crate) fn queue_state(&self, job: &Job, trigger: Timestamp, outcome: Option<Outcome>) {
        if let Some(state) = self.state_of(job, trigger, outcome) {
            self.outbox.queue_state(&job.name, state);
        }
    }

    /// The state that says `trigger` of `job` was handled; `None` without a store to keep
    /// it in, or for a removed job.
    fn state_of(&self, job: &Job, trigger: Timestamp, outcome: Option<Outcome>) -> Option<JobState> {
        if !self.persist_state || job.removed.load(Ordering::SeqCst) {
            return None;
        }
        Some(JobState::of(trigger, outcome, job.kind.is_one_shot()))
    }
}

fn log_run(r: &RunRecord) {
    let duration_ms = r.duration.as_millis() as u64;
    let (job, trigger, instance) = (&*r.job, r.trigger, &*r.instance);
    let (outcome, cause) = (r.outcome.as_str(), r.cause.as_str());
    let (err, attempts) = (r.error.as_deref().unwrap_or(""), r.attempts);
    match r.outcome {
        Outcome::Succeeded => {
            tracing::info!(job, %trigger, instance, outcome, cause, attempts, duration_ms, "run finished")
        }
        // Losing a claim is normal; a refusal by the high-water mark (with a reason) is not.
        Outcome::SkippedLost if r.error.is_none() => {
            tracing::debug!(job, %trigger, instance, outcome, cause, duration_ms, "run finished")
        }
        // Triggers missed while this replica was down, which the fleet handled: nothing failed
        // (a replica restarted after a crash notes one per job it did not own).
        Outcome::SkippedLost if r.cause == Cause::CatchUp => {
            tracing::info!(job, %trigger, instance, outcome, cause, duration_ms, err, "run finished")
        }
        // The skew guard warns once a minute for all of them.
        Outcome::SkippedClockSkew => {
            tracing::debug!(job, %trigger, instance, outcome, cause, attempts, duration_ms, err, "run finished")
        }
        _ => {
            tracing::warn!(job, %trigger, instance, outcome, cause, attempts, duration_ms, err, "run finished")
        }
    }
}
