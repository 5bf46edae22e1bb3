//! Steering a fleet: pause, resume, run now, backfill ([`Scheduler`]'s operations for
//! operators and the admin API).
//!
//! A pause lives where the fleet agrees ([`Controls`]): the coordinator's (whose claims
//! then refuse the job's triggers, so every replica sharing it stops), or the store's in
//! single-replica mode. Manual, backfilled and caught-up runs are queued to the running
//! engine and claimed under keys of their own ([`request_key`](crate::request_key)), so
//! each runs once across the fleet, under the job's overlap policy and the concurrency
//! cap like any other run.

use std::collections::HashMap;
use std::sync::{Arc, MutexGuard};

use jiff::{SignedDuration, Timestamp};

use super::Scheduler;
use super::fleet::placement;
use super::shared::Shared;
use super::table::{Action, Due};
use super::{claim, misfire};
use crate::control::{
    ControlError, Controls, IDEMPOTENCY_KEY_TTL, MAX_BACKFILL_COUNTED, MAX_BACKFILL_TRIGGERS,
    check_idempotency_key,
};
use crate::coordinator::CoordinatorError;
use crate::job::Job;
use crate::ledger::Cause;
use crate::schedule::ScheduleKind;

/// What [`Scheduler::trigger_now`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Triggered {
    /// The manual run's trigger: the instant it was asked for (UTC, millisecond
    /// precision), the first request's for a repeated key.
    pub trigger: Timestamp,
    /// Whether the idempotency key was given before (within
    /// [`IDEMPOTENCY_KEY_TTL`]): nothing more was queued.
    pub repeated: bool,
}

/// What [`Scheduler::trigger_now`] would do now, as [`Scheduler::trigger_dry_run`] finds
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TriggerDryRun {
    /// The trigger a manual run asked for now would get: now (UTC, millisecond precision).
    pub trigger: Timestamp,
    /// When the job was paused (UTC, millisecond precision), `None` if it is not; a
    /// manual run runs even so.
    pub paused_since: Option<Timestamp>,
}

/// What [`Scheduler::resume`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Resumed {
    /// When the job had been paused; `None` if it was not paused.
    pub paused_since: Option<Timestamp>,
    /// The paused triggers queued to run (catch-up), oldest first.
    pub caught_up: Vec<Timestamp>,
}

impl Scheduler {
    /// Pauses a job across the fleet: from within a claim on, no replica sharing the
    /// coordinator claims its triggers; each records them `skipped-paused`. Kept by the
    /// coordinator, or by the store without one, so it survives restarts. Manual runs and
    /// backfills still run. Returns when it was paused (the first instant, if it already
    /// was; to the millisecond).
    ///
    /// # Errors
    /// [`ControlError::NoSuchJob`], or [`ControlError::Backend`] if the coordinator (or
    /// store) keeps no pauses or failed.
    pub async fn pause(&self, name: &str) -> Result<Timestamp, ControlError> {
        let job = self.job_named(name)?;
        let now = self.now_ms();
        let before = self.controls()?.set_paused(&job.name, Some(now)).await.map_err(backend)?;
        let since = before.unwrap_or(now);
        if self.shared.coordinator.is_none() {
            self.shared.local_paused().insert(job.name.to_string(), since);
        }
        job.series().set_paused(true);
        tracing::info!(job = %job.name, %since, "job paused");
        Ok(since)
    }

    /// Resumes a paused job across the fleet. With `catch_up` false (what an operator
    /// usually wants) nothing runs for the paused time; with `true` the triggers that
    /// came due while it was paused are misfires under the job's misfire policy (`skip`:
    /// none runs; `run_once`: the newest; `run_all`: the newest up to its cap), queued
    /// here, oldest first, each claimed once across the fleet.
    ///
    /// # Errors
    /// As [`Scheduler::pause`]; and [`ControlError::NotRunning`] when a catch-up has
    /// runs to queue and the scheduler is not running, or
    /// [`ControlError::NotPlacedHere`] when this replica lacks the job's labels (the job
    /// is resumed then).
    pub async fn resume(&self, name: &str, catch_up: bool) -> Result<Resumed, ControlError> {
        let job = self.job_named(name)?;
        let paused_since = self.controls()?.set_paused(&job.name, None).await.map_err(backend)?;
        if self.shared.coordinator.is_none() {
            self.shared.local_paused().remove(&*job.name);
        }
        job.series().set_paused(false);
        tracing::info!(job = %job.name, catch_up, "job resumed");
        let mut caught_up = Vec::new();
        let now = self.shared.clock.now();
        let first = paused_since.filter(|_| catch_up).and_then(|since| job.schedule.next_after(since));
        if let Some(first) = first.filter(|first| *first < now) {
            caught_up = misfire::plan(job.schedule.as_ref(), job.misfire, first, now).run;
            if !caught_up.is_empty() {
                self.queue(&job, Cause::CatchUp, &caught_up)?;
            }
        }
        Ok(Resumed { paused_since, caught_up })
    }

    /// Queues one extra run of a job, now, claimed once across the fleet under a key of
    /// its own (`{job}:manual:{instant}`), recorded with cause `manual`; its trigger is
    /// the instant it was asked for. With an idempotency key, a key given again within
    /// [`IDEMPOTENCY_KEY_TTL`] (24 h) queues nothing and answers with the first run's
    /// trigger; keys are kept fleet-wide, in the coordinator (or the store without one).
    ///
    /// # Errors
    /// [`ControlError::NoSuchJob`], [`ControlError::InvalidKey`],
    /// [`ControlError::NotRunning`], [`ControlError::NotPlacedHere`] (this replica lacks
    /// the job's labels), or [`ControlError::Backend`] if the key cannot be remembered.
    pub async fn trigger_now(
        &self,
        name: &str,
        idempotency_key: Option<&str>,
    ) -> Result<Triggered, ControlError> {
        let job = self.manual_run_job(name, idempotency_key)?;
        let trigger = self.now_ms();
        if let Some(key) = idempotency_key {
            let remembered = self.controls()?.remember_request(&job.name, key, trigger, IDEMPOTENCY_KEY_TTL);
            if let Some(first) = remembered.await.map_err(backend)? {
                tracing::info!(job = %job.name, key, %first, "manual run asked for again: nothing more runs");
                return Ok(Triggered { trigger: first, repeated: true });
            }
        }
        self.queue(&job, Cause::Manual, &[trigger])?;
        tracing::info!(job = %job.name, %trigger, "manual run queued");
        Ok(Triggered { trigger, repeated: false })
    }

    /// What [`Scheduler::trigger_now`] would do now, doing nothing: the trigger a manual
    /// run would get and whether the job is paused. Checked as `trigger_now` checks its
    /// request (the same errors), but an idempotency key is not looked up nor remembered.
    ///
    /// # Errors
    /// As [`Scheduler::trigger_now`]; and [`ControlError::Backend`] if the coordinator (or
    /// store) keeping the pauses failed.
    pub async fn trigger_dry_run(
        &self,
        name: &str,
        idempotency_key: Option<&str>,
    ) -> Result<TriggerDryRun, ControlError> {
        let job = self.manual_run_job(name, idempotency_key)?;
        let trigger = self.now_ms();
        // Without controls nothing can pause the job.
        let paused_since = match self.controls() {
            Ok(controls) => controls.paused(&job.name).await.map_err(backend)?,
            Err(_) => None,
        };
        Ok(TriggerDryRun { trigger, paused_since })
    }

    /// The job of a manual run of `name`, once the request is checked: the key's form,
    /// the job, the engine running.
    fn manual_run_job(&self, name: &str, idempotency_key: Option<&str>) -> Result<Arc<Job>, ControlError> {
        if let Some(key) = idempotency_key {
            check_idempotency_key(key)?;
        }
        let job = self.job_named(name)?;
        if !self.is_running() {
            return Err(ControlError::NotRunning);
        }
        placed_here(&self.shared, &job)?;
        Ok(job)
    }

    /// Queues a run of each scheduled trigger of a job from `from` to `to` (both
    /// included, UTC), oldest first, one after the other; each is claimed once across the
    /// fleet under a key of its own (`{job}:backfill:{trigger}`) and recorded with cause
    /// `backfill`. At most [`MAX_BACKFILL_TRIGGERS`] (1,000) per request. Returns the
    /// triggers queued.
    ///
    /// # Errors
    /// [`ControlError::NoSuchJob`], [`ControlError::InvertedRange`],
    /// [`ControlError::FutureRange`], [`ControlError::TooManyTriggers`],
    /// [`ControlError::NotBackfillable`] (an `after` job), [`ControlError::ChainedJob`] (a
    /// `run_after` job: backfill its parent), or
    /// [`ControlError::NotRunning`], or [`ControlError::NotPlacedHere`]; nothing is
    /// queued then.
    pub async fn backfill(
        &self,
        name: &str,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<Vec<Timestamp>, ControlError> {
        let (job, triggers) = self.backfill_triggers(name, from, to)?;
        if !triggers.is_empty() {
            self.queue(&job, Cause::Backfill, &triggers)?;
        }
        tracing::info!(job = %job.name, %from, %to, triggers = triggers.len(), "backfill queued");
        Ok(triggers)
    }

    /// The triggers [`Scheduler::backfill`] would queue for the same request, queuing
    /// nothing: each scheduled trigger of the job from `from` to `to` (both included,
    /// UTC), oldest first. Checked as `backfill` checks its request: the same errors.
    ///
    /// # Errors
    /// As [`Scheduler::backfill`].
    pub fn backfill_dry_run(
        &self,
        name: &str,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<Vec<Timestamp>, ControlError> {
        let (_, triggers) = self.backfill_triggers(name, from, to)?;
        if !triggers.is_empty() && !self.is_running() {
            return Err(ControlError::NotRunning);
        }
        Ok(triggers)
    }

    /// The job named `name` and its scheduled triggers from `from` to `to` (both
    /// included), oldest first, once the request is checked as [`Scheduler::backfill`]
    /// documents.
    fn backfill_triggers(
        &self,
        name: &str,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<(Arc<Job>, Vec<Timestamp>), ControlError> {
        let job = self.job_named(name)?;
        let owned = || job.name.to_string();
        if from > to {
            return Err(ControlError::InvertedRange { job: owned(), from, to });
        }
        let now = self.shared.clock.now();
        if to > now {
            return Err(ControlError::FutureRange { job: owned(), to, now });
        }
        if let ScheduleKind::After(_) = job.kind {
            return Err(ControlError::NotBackfillable { job: owned() });
        }
        if let Some(parent) = job.parent() {
            return Err(ControlError::ChainedJob { job: owned(), parent: parent.to_owned() });
        }
        let mut triggers = Vec::new();
        let mut at = from.checked_sub(SignedDuration::from_nanos(1)).unwrap_or(from);
        let mut next_in_range = || {
            let next = job.schedule.next_after(at).filter(|next| *next <= to)?;
            at = next;
            Some(next)
        };
        while let Some(next) = next_in_range() {
            if triggers.len() == MAX_BACKFILL_TRIGGERS {
                // Refused: `next` and those after it counted (up to a bound) for the message.
                let bound = MAX_BACKFILL_COUNTED - MAX_BACKFILL_TRIGGERS;
                let more = std::iter::from_fn(&mut next_in_range).take(bound).count();
                let triggers = Some(MAX_BACKFILL_TRIGGERS + 1 + more).filter(|n| *n <= MAX_BACKFILL_COUNTED);
                return Err(ControlError::TooManyTriggers {
                    job: owned(),
                    triggers,
                    max: MAX_BACKFILL_TRIGGERS,
                });
            }
            triggers.push(next);
        }
        Ok((job, triggers))
    }

    /// Every paused job of the fleet (of this scheduler without a coordinator) and when
    /// it was paused.
    ///
    /// # Errors
    /// [`ControlError::Backend`] if the coordinator (or store) keeps no pauses or failed.
    pub async fn paused_jobs(&self) -> Result<HashMap<String, Timestamp>, ControlError> {
        self.controls()?.paused_jobs().await.map_err(backend)
    }

    /// The clock now, to the millisecond: the precision every backend keeps.
    fn now_ms(&self) -> Timestamp {
        let now = self.shared.clock.now();
        Timestamp::from_millisecond(now.as_millisecond()).unwrap_or(now)
    }

    pub(super) fn job_named(&self, name: &str) -> Result<Arc<Job>, ControlError> {
        self.shared.table().job(name).ok_or_else(|| ControlError::NoSuchJob { job: name.to_owned() })
    }

    /// The coordinator's controls, or the store's in single-replica mode.
    fn controls(&self) -> Result<&dyn Controls, ControlError> {
        let (controls, keeper) = match &self.shared.coordinator {
            Some(coordinator) => (coordinator.controls(), format!("the {} coordinator", coordinator.name())),
            None => (self.shared.store.controls(), "the store".to_owned()),
        };
        controls.ok_or_else(|| ControlError::Backend(format!("{keeper} keeps no pauses or idempotency keys")))
    }

    /// Queues runs of `job` for `triggers`, in order, to the running engine.
    fn queue(&self, job: &Arc<Job>, cause: Cause, triggers: &[Timestamp]) -> Result<(), ControlError> {
        if !self.is_running() {
            return Err(ControlError::NotRunning);
        }
        placed_here(&self.shared, job)?;
        let group = triggers
            .iter()
            .map(|&trigger| Due {
                job: job.clone(),
                trigger,
                next: None,
                action: Action::Requested { attempts_made: 0 },
                cause,
            })
            .collect();
        self.shared.requests().push(group);
        self.shared.wake.notify_one();
        Ok(())
    }
}

impl Shared {
    /// The pauses of single-replica mode, read from the store at restore.
    pub(crate) fn local_paused(&self) -> MutexGuard<'_, HashMap<String, Timestamp>> {
        self.local_paused.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The groups of requested runs waiting for the engine to spawn them.
    pub(crate) fn requests(&self) -> MutexGuard<'_, Vec<Vec<Due>>> {
        self.requests.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether a trigger of `job` that no coordinator claims is paused: the local pauses
    /// in single-replica mode, the coordinator's for a job every replica runs (one call,
    /// bounded by the claim timeout; none if the coordinator keeps no pauses).
    ///
    /// # Errors
    /// The coordinator's controls failed or did not answer in time: the reason.
    pub(crate) async fn unclaimed_paused(&self, job: &Job) -> Result<Option<Timestamp>, String> {
        let Some(coordinator) = &self.coordinator else {
            return Ok(self.local_paused().get(&*job.name).copied());
        };
        let Some(controls) = coordinator.controls() else { return Ok(None) };
        let asked = async { controls.paused(&job.name).await.map_err(CoordinatorError::unavailable) };
        claim::within_claim_timeout(self, asked)
            .await
            .map_err(|e| format!("{} coordinator: {e}", coordinator.name()))
    }
}

/// The steering error of a controls failure: the backend's own message.
fn backend(error: crate::control::ControlsError) -> ControlError {
    let message = std::error::Error::source(&error).map_or_else(|| error.to_string(), ToString::to_string);
    ControlError::Backend(message)
}

/// [`ControlError::NotPlacedHere`] if this replica lacks the labels `job` is placed on:
/// its runs must be asked of a replica that carries them.
fn placed_here(shared: &Shared, job: &Job) -> Result<(), ControlError> {
    if placement::runs_here(shared, job) {
        return Ok(());
    }
    let unmet: Vec<String> = job.placement.unmet(&shared.settings.labels).map(ToString::to_string).collect();
    Err(ControlError::NotPlacedHere {
        job: job.name.to_string(),
        placement: job.placement.to_string(),
        unmet: unmet.join(", "),
    })
}
