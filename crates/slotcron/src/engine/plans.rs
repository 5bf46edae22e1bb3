//! Applying a desired set of plans to a scheduler: [`Scheduler::reconcile`] and its loop.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::Scheduler;
use super::reconcile::{self, Desired, Diff, Ids, Step};
use super::shared::Shared;
use super::table::Table;
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
    /// Works whether or not the scheduler runs. The plans are compared with the jobs a
    /// few thousand at a time, each under a short hold of the job table's lock (the
    /// engine's triggers go on between two; should the jobs change meanwhile, they are
    /// compared again under one); those added or changed are built and put in under one
    /// hold, the others left untouched. Serialize calls (one loop, e.g.
    /// [`Scheduler::reconcile_every`]): concurrent calls are safe but converge in no
    /// particular order.
    ///
    /// # Errors
    /// See above; on [`ReconcileError::DuplicateId`] and [`ReconcileError::EmptyId`]
    /// nothing was changed.
    pub fn reconcile(&self, plans: Vec<Plan>) -> Result<ReconcileReport, ReconcileError> {
        // Each plan applied is taken out; the others are dropped once the lock is released.
        let mut plans: Vec<Option<Plan>> = plans.into_iter().map(Some).collect();
        let fingerprints: Vec<Result<String, String>> =
            plans.iter_mut().flatten().map(Plan::take_resolved_fingerprint).collect();
        let desired: Vec<Desired<'_>> = plans
            .iter()
            .flatten()
            .zip(&fingerprints)
            .map(|(plan, fingerprint)| Desired { id: plan.id(), enabled: plan.is_enabled(), fingerprint })
            .collect();
        let ids = reconcile::ids(&desired)?;
        let shared = &self.shared;
        let chunked = diff_in_chunks(shared, &desired, &ids);
        let mut table = shared.table();
        let diff = match chunked {
            Some((diff, version)) if version == table.version() => diff,
            // The jobs changed meanwhile: compared again, all at once.
            _ => reconcile::diff(&desired, table.name_refs(), |id| table.fingerprint(id))?,
        };
        drop((ids, desired));
        let Applied { report, retired, upserted, wake } =
            apply(shared, &mut table, &mut plans, &fingerprints, diff);
        drop(table);
        drop((plans, fingerprints));
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

/// How many plans a reconcile compares with the job table per hold of its lock: between
/// two holds the engine takes its due triggers (a million plans are compared in about
/// 250 holds of a millisecond or two each, not in one of a second).
const DIFF_CHUNK: usize = 4096;

/// The diff of `desired` (whose ids are `ids`) against the job table, compared
/// [`DIFF_CHUNK`] plans at a time, each chunk under its own hold of the table's lock;
/// with the table's version it holds for. `None` if the jobs changed between two holds.
fn diff_in_chunks(shared: &Shared, desired: &[Desired<'_>], ids: &Ids<'_>) -> Option<(Diff, u64)> {
    let mut version = None;
    let mut steps = Vec::with_capacity(desired.len());
    // The current jobs that a plan names.
    let mut named = 0;
    for chunk in desired.chunks(DIFF_CHUNK) {
        let table = shared.table();
        if *version.get_or_insert(table.version()) != table.version() {
            return None;
        }
        for plan in chunk {
            let current = table.fingerprint(plan.id);
            named += usize::from(current.is_some());
            steps.push(reconcile::step(plan, current));
        }
    }
    let mut missing = Vec::new();
    let mut start = 0;
    loop {
        let table = shared.table();
        let version = *version.get_or_insert(table.version());
        if table.version() != version {
            return None;
        }
        // When plans name every current job (the usual reload), none is missing: the
        // table is not looked through.
        if named == table.job_count() || start >= table.slot_count() {
            return Some((Diff { steps, missing }, version));
        }
        missing.extend(reconcile::missing(table.names_in(start..start + DIFF_CHUNK), ids));
        start += DIFF_CHUNK;
    }
}

/// What applying a diff did, and what is left to do once the table's lock is released.
struct Applied {
    report: ReconcileReport,
    /// The jobs removed, to retire.
    retired: Vec<Arc<Job>>,
    /// The jobs added or replaced.
    upserted: Vec<Arc<Job>>,
    /// Whether the engine must wake (the earliest trigger changed).
    wake: bool,
}

/// Applies `diff` (a step per plan) to `table`: builds and puts in the jobs of the plans
/// added or changed (each taken out of `plans`), removes the others.
fn apply(
    shared: &Shared,
    table: &mut Table,
    plans: &mut [Option<Plan>],
    fingerprints: &[Result<String, String>],
    diff: Diff,
) -> Applied {
    let adds = diff.steps.iter().filter(|step| **step == Step::Add).count();
    table.reserve(adds);
    let mut applied = Applied {
        report: ReconcileReport::default(),
        retired: Vec::new(),
        upserted: Vec::with_capacity(adds),
        wake: false,
    };
    applied.report.added.reserve(adds);
    let now = shared.clock.now();
    let id = |plan: &Option<Plan>| plan.as_ref().map(|plan| plan.id().to_owned()).unwrap_or_default();
    for ((plan, fingerprint), step) in plans.iter_mut().zip(fingerprints).zip(diff.steps) {
        match step {
            Step::Unchanged => applied.report.unchanged += 1,
            Step::Absent => {}
            Step::Remove => {
                let id = id(plan);
                applied.retired.extend(table.remove(&id));
                applied.report.removed.push(id);
            }
            Step::Fail(reason) => applied.report.failures.push(PlanError {
                id: id(plan),
                kind: PlanErrorKind::NoFingerprint,
                reason,
            }),
            Step::Add | Step::Change => {
                if let Some(plan) = plan.take() {
                    put(shared, table, plan, fingerprint, step == Step::Add, now, &mut applied);
                }
            }
        }
    }
    for name in diff.missing {
        applied.retired.extend(table.remove(&name));
        applied.report.removed.push(name);
    }
    applied
}

/// Builds the job of `plan` and adds it (`added`: the diff found no job of its id) or
/// replaces the job of its id; or reports why not.
fn put(
    shared: &Shared,
    table: &mut Table,
    mut plan: Plan,
    fingerprint: &Result<String, String>,
    added: bool,
    now: jiff::Timestamp,
    applied: &mut Applied,
) {
    let id = plan.take_id();
    let report = &mut applied.report;
    match (build(shared, plan), fingerprint) {
        (Ok(job), Ok(fingerprint)) => {
            let fingerprint = Arc::from(fingerprint.as_str());
            let (wakes, job) = match added {
                true => table.add_planned(job, fingerprint, now),
                false => table.upsert(job, fingerprint, now),
            };
            applied.wake |= wakes;
            applied.upserted.push(job);
            if added { report.added.push(id) } else { report.changed.push(id) }
        }
        (Err(e), _) => {
            report.failures.push(PlanError { id, kind: PlanErrorKind::InvalidJob, reason: e.to_string() })
        }
        (_, Err(reason)) => {
            report.failures.push(PlanError { id, kind: PlanErrorKind::NoFingerprint, reason: reason.clone() })
        }
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
