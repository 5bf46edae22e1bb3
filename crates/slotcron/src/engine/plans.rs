//! Applying a desired set of plans to a scheduler: [`Scheduler::reconcile`] and its loop.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::Scheduler;
use super::reconcile::{self, Desired, Step};
use super::shared::Shared;
use crate::clock::later;
use crate::error::BoxError;
use crate::job::{Job, JobError};
use crate::plan::Plan;
use crate::{PlanError, PlanErrorKind, ReconcileError, ReconcileReport};

impl Scheduler {
    /// Converges the scheduler's jobs to a desired set of plans, compared by
    /// [fingerprint](Plan):
    ///
    /// - a plan whose fingerprint equals its job's is a no-op: the job is not replaced, its
    ///   next trigger and an interval's phase are unchanged, a run in flight is untouched;
    /// - a plan whose fingerprint differs replaces its job from its next trigger on (the
    ///   first fire time after now; no start-up run, no catch-up; a one-shot whose instant
    ///   the old job already took does not fire again); a run of the old job in flight
    ///   goes on and is recorded;
    /// - a plan for a job that does not exist adds it (as [`Scheduler::add`]);
    /// - a job that no plan names, or whose plan is disabled, is removed (as
    ///   [`Scheduler::remove`]: its runs in flight finish, its state is cleared). This
    ///   includes jobs added with [`Scheduler::add`] or restored from the store: the set
    ///   is the whole of the scheduler's jobs;
    /// - a duplicate or empty id rejects the whole set: nothing changes, and the error
    ///   names the id ([`ReconcileError::DuplicateId`], [`ReconcileError::EmptyId`]);
    /// - a plan that cannot be built (a bad expression, an unregistered handler) or has no
    ///   fingerprint (a closure handler without [`Plan::fingerprint`] or
    ///   [`Plan::handler_name`]) does not block the others: the job it would have
    ///   replaced keeps running as it was, the rest is applied, and
    ///   [`ReconcileError::Plans`] returns every failure, each naming its plan and reason,
    ///   with the report of what was applied.
    ///
    /// Works whether or not the scheduler runs. Plans are built under the job table's
    /// lock, only those added or changed. Serialize calls (one loop, e.g.
    /// [`Scheduler::reconcile_every`]): concurrent calls are safe but converge in no
    /// particular order.
    ///
    /// # Errors
    /// See above; on [`ReconcileError::DuplicateId`] and [`ReconcileError::EmptyId`]
    /// nothing was changed.
    pub fn reconcile(&self, mut plans: Vec<Plan>) -> Result<ReconcileReport, ReconcileError> {
        let fingerprints: Vec<Result<String, String>> =
            plans.iter_mut().map(Plan::take_resolved_fingerprint).collect();
        let desired: Vec<Desired<'_>> = plans
            .iter()
            .zip(&fingerprints)
            .map(|(plan, fingerprint)| Desired { id: plan.id(), enabled: plan.is_enabled(), fingerprint })
            .collect();
        let shared = &self.shared;
        let mut table = shared.table();
        let diff = reconcile::diff(&desired, table.name_refs(), |id| table.fingerprint(id))?;
        drop(desired);
        let adds = diff.steps.iter().filter(|step| **step == Step::Add).count();
        table.reserve(adds);
        let mut report = ReconcileReport::default();
        report.added.reserve(adds);
        let mut retired = Vec::new();
        let mut wake = false;
        let mut upserted = Vec::with_capacity(adds);
        let now = shared.clock.now();
        for ((mut plan, fingerprint), step) in plans.into_iter().zip(fingerprints).zip(diff.steps) {
            match step {
                Step::Unchanged => report.unchanged += 1,
                Step::Absent => {}
                Step::Remove => {
                    let id = plan.id().to_owned();
                    retired.extend(table.remove(&id));
                    report.removed.push(id);
                }
                Step::Fail(reason) => report.failures.push(PlanError {
                    id: plan.id().to_owned(),
                    kind: PlanErrorKind::NoFingerprint,
                    reason,
                }),
                Step::Add | Step::Change => {
                    let id = plan.take_id();
                    match (build(shared, plan), fingerprint) {
                        (Ok(job), Ok(fingerprint)) => {
                            let fingerprint = Arc::from(fingerprint);
                            let (wakes, job) = match step {
                                Step::Add => table.add_planned(job, fingerprint, now),
                                _ => table.upsert(job, fingerprint, now),
                            };
                            wake |= wakes;
                            upserted.push(job);
                            if step == Step::Add { report.added.push(id) } else { report.changed.push(id) }
                        }
                        (Err(e), _) => report.failures.push(PlanError {
                            id,
                            kind: PlanErrorKind::InvalidJob,
                            reason: e.to_string(),
                        }),
                        (_, Err(reason)) => {
                            report.failures.push(PlanError { id, kind: PlanErrorKind::NoFingerprint, reason })
                        }
                    }
                }
            }
        }
        for name in diff.missing {
            retired.extend(table.remove(&name));
            report.removed.push(name);
        }
        drop(table);
        for job in &retired {
            shared.retire(job, false);
        }
        super::limits::end_reached_soon(shared, upserted);
        if wake {
            shared.wake.notify_one();
        }
        if report.failures.is_empty() { Ok(report) } else { Err(ReconcileError::Plans(report)) }
    }

    /// Reconciles with what `list` returns, at once and then every `interval` (on the
    /// scheduler's clock), until [`Scheduler::run`] returns (at once if a run has already
    /// ended). An error from `list` keeps the current set and is logged; so is every plan
    /// failure (see [`Scheduler::reconcile`]). Each reconcile that changes something logs
    /// one line with its counts.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use slotcron::{Plan, Scheduler, BoxError};
    /// # async fn plans_from_db() -> Result<Vec<Plan>, BoxError> { Ok(vec![]) }
    /// # async fn example(scheduler: Scheduler) {
    /// tokio::spawn({
    ///     let scheduler = scheduler.clone();
    ///     async move { scheduler.reconcile_every(Duration::from_secs(30), plans_from_db).await }
    /// });
    /// # }
    /// ```
    pub async fn reconcile_every<F, Fut>(&self, interval: Duration, mut list: F)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Vec<Plan>, BoxError>>,
    {
        let shared = &self.shared;
        loop {
            let listed = tokio::select! {
                biased;
                () = shared.stopped.cancelled() => return,
                listed = list() => listed,
            };
            match listed {
                Err(e) => tracing::error!("listing the plans failed: {e}; the jobs stay as they are"),
                Ok(plans) => match self.reconcile(plans) {
                    Ok(report) => log_report(&report),
                    Err(ReconcileError::Plans(report)) => {
                        log_report(&report);
                        for failure in &report.failures {
                            tracing::error!("{failure}; its job stays as it was");
                        }
                    }
                    Err(e) => tracing::error!("{e}"),
                },
            }
            let next = later(shared.clock.now(), interval);
            tokio::select! {
                biased;
                () = shared.stopped.cancelled() => return,
                () = shared.clock.sleep_until(next) => {}
            }
        }
    }
}

fn log_report(report: &ReconcileReport) {
    if report.added.is_empty() && report.changed.is_empty() && report.removed.is_empty() {
        tracing::debug!("plans reconciled: {report}");
    } else {
        tracing::info!("plans reconciled: {report}");
    }
}

/// `plan`'s job, as [`Scheduler::add`] would take it.
fn build(shared: &Shared, plan: Plan) -> Result<Job, JobError> {
    let job = plan.build(&shared.handlers)?;
    super::refuse_alone(shared, &job)?;
    super::limits::refuse_uncounted(shared, &job)?;
    super::failures::refuse_uncounted(shared, &job)?;
    Ok(job)
}
