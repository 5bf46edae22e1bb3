//! Triggers that come due together are claimed together: one
//! [`Coordinator::claim_batch`] per batch (one round trip for up to
//! [`MAX_CLAIMS_PER_ROUND_TRIP`] claims in the Redis and PostgreSQL coordinators) instead
//! of one claim per trigger, one after another.
//!
//! Each trigger of a batch is decided as a claim of its own would be (docs/design.md's
//! "Exactly once across replicas"): won, it runs with its fencing token; lost, refused
//! by the high-water mark, skipped for clock skew or without an answer, it ends in the
//! same skip record. The claim timeout bounds the batch's one round trip: at most
//! [`BATCHES_IN_FLIGHT`](crate::engine::scope::BATCHES_IN_FLIGHT) batches of a scheduler are in flight at once, and a batch waits
//! for its turn before its claims go out, not on the timeout, so a trigger is never
//! skipped because other triggers were claimed before it. Under a load the backend
//! cannot keep up with, triggers wait in line for their batch's turn (late, never
//! dropped for it).

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;

use super::tally::{Tally, mark_claiming};
use super::{Fleet, FleetRun};
use crate::coordinator::{Claim, ClaimOutcome, Coordinator, CoordinatorError, MAX_CLAIMS_PER_ROUND_TRIP};
use crate::engine::claim::{self, Claimed};
use crate::engine::run;
use crate::engine::shared::Shared;
use crate::engine::table::{Action, Due};
use crate::job::Job;

/// How many due triggers the engine takes into one batch at most: one round trip.
pub(crate) const MAX_BATCH: usize = MAX_CLAIMS_PER_ROUND_TRIP;

/// A due trigger for a batch, with its instant's tally if this replica owns it.
pub(crate) type Item = (Due, Option<Arc<Tally>>);

/// Whether `due` is claimed in a batch: a trigger to run that the coordinator arbitrates
/// and whose claim nothing holds up — no jitter to wait out, no concurrency cap to take
/// a slot of first (a replica at its cap lets another claim), and not one of a job's
/// catch-up group (claimed one after the other, each after the previous run ended).
pub(crate) fn batchable(shared: &Shared, due: &Due) -> bool {
    due.action == Action::Run && batchable_job(shared, &due.job)
}

/// Whether `job`'s triggers to run are claimed in batches: see [`batchable`].
pub(crate) fn batchable_job(shared: &Shared, job: &Job) -> bool {
    shared.coordinator.is_some() && shared.cap.is_none() && !job.every_replica && job.jitter().is_none()
}

/// How a batch's claims are made.
#[derive(Clone, Copy)]
pub(super) enum Mode<'a> {
    /// As their triggers come due; the tallies of the instants this replica owns among
    /// them are [marked](super::tally::mark_claiming) as their claims go out.
    Due { tallies: &'a [Arc<Tally>] },
    /// Ahead of their instant `at`, by its owner ([`Coordinator::claim_batch_ahead`]),
    /// which may start or void them until `until`.
    Ahead { at: Timestamp, until: Timestamp },
}

/// Claims the batchable triggers `due` in batches of at most [`MAX_BATCH`]: one result
/// per trigger, in order, each with the trigger's key.
///
/// The clock-skew guard is asked once per batch; beyond the slack every trigger of the
/// batch is skipped (`skipped-clock-skew`). A batch without an answer within the claim
/// timeout skips all its triggers (`skipped-backend-unavailable`, fail closed): none runs.
pub(super) async fn claim(
    shared: &Shared,
    fleet: &Fleet,
    coordinator: &dyn Coordinator,
    due: &[Due],
    mode: Mode<'_>,
) -> Vec<(Claimed, Box<str>)> {
    let mut claimed = Vec::with_capacity(due.len());
    for chunk in due.chunks(MAX_BATCH) {
        claimed.extend(claim_chunk(shared, fleet, coordinator, chunk, mode).await);
    }
    claimed
}

async fn claim_chunk(
    shared: &Shared,
    fleet: &Fleet,
    coordinator: &dyn Coordinator,
    due: &[Due],
    mode: Mode<'_>,
) -> Vec<(Claimed, Box<str>)> {
    let keys: Vec<Box<str>> = due.iter().map(|d| claim::key_of(&d.job, d.trigger)).collect();
    let decided: Vec<Claimed> = match claim::skew_gate(shared, coordinator).await {
        Err(skip) => due
            .iter()
            .map(|d| Err(Box::new(skip.record(shared, coordinator, &d.job, d.trigger, d.cause))))
            .collect(),
        Ok(()) => {
            let claims: Vec<Claim<'_>> = due
                .iter()
                .zip(&keys)
                .map(|(d, key)| claim::claim_of(shared, &d.job, d.trigger, d.next, key))
                .collect();
            if let Mode::Due { tallies } = mode {
                mark_claiming(shared, fleet, tallies, claims.len());
            }
            let asked = shared.clock.now();
            let answers = claim::within_claim_timeout(shared, async {
                Ok(match mode {
                    Mode::Due { .. } => coordinator.claim_batch(&claims).await,
                    Mode::Ahead { at, until } => {
                        coordinator.claim_batch_ahead(&shared.instance, at, &claims, until).await
                    }
                })
            })
            .await;
            let latency = Duration::try_from(asked.duration_until(shared.clock.now())).unwrap_or_default();
            fleet.ahead.measured(due.len(), latency);
            let answers: Vec<Result<ClaimOutcome, CoordinatorError>> = match answers {
                Ok(answers) if answers.len() == due.len() => answers,
                Ok(answers) => {
                    let reason =
                        format!("the coordinator answered {} claims of {}", answers.len(), due.len());
                    due.iter().map(|_| Err(CoordinatorError::outcome_unknown(reason.clone()))).collect()
                }
                Err(e) => due.iter().map(|_| Err(CoordinatorError::new(e.kind(), e.to_string()))).collect(),
            };
            due.iter()
                .zip(answers)
                .map(|(d, answer)| {
                    claim::decide(shared, coordinator, &d.job, d.trigger, d.cause, answer, latency)
                })
                .collect()
        }
    };
    decided.into_iter().zip(keys).collect()
}

/// Claims `due` (batchable, as one batch) and starts each trigger's run or records its
/// skip, as [`run::execute`] does for one trigger. The batch waits for its turn among the
/// [`BATCHES_IN_FLIGHT`](crate::engine::scope::BATCHES_IN_FLIGHT) (in the order the batches came due) before its claims go out,
/// and keeps it until most of its runs have started; the engine's loop meanwhile goes on taking
/// due triggers, so none waits in the engine's queue past its grace window because
/// other triggers' claims went first. A trigger this replica owns comes with its instant's
/// [`Tally`], which learns its claim's answer.
pub(crate) async fn execute(fleet: FleetRun, due: Vec<Item>) {
    let (shared, scope) = (fleet.shared(), &fleet.scope);
    let Some(coordinator) = shared.coordinator.clone() else { return };
    // Never closed: the scope owns it.
    let Ok(turn) = fleet.state.batches.clone().acquire_owned().await else { return };
    // A job removed before its trigger was claimed does not run (no claim, no record).
    let (due, tallies): (Vec<Due>, Vec<Option<Arc<Tally>>>) =
        due.into_iter().filter(|(d, _)| !run::removed(&d.job, d.trigger)).unzip();
    // This replica's tallies of the batch's instants, each once.
    let mut owned: Vec<Arc<Tally>> = Vec::new();
    for tally in tallies.iter().flatten() {
        if !owned.iter().any(|o| Arc::ptr_eq(o, tally)) {
            owned.push(tally.clone());
        }
    }
    let claimed =
        claim(shared, &fleet.state, coordinator.as_ref(), &due, Mode::Due { tallies: &owned }).await;
    drop(owned);
    // The last reference to a tally, dropped here, writes it.
    for ((claimed, key), tally) in claimed.iter().zip(tallies) {
        if let Some(tally) = tally {
            claim::ClaimNote::note(tally.as_ref(), key, claimed);
        }
    }
    let runs = due.into_iter().zip(claimed).map(|(due, (claimed, key))| (due, claimed, key)).collect();
    start(&fleet, runs).await;
    // The next batch's claims go out once most of these runs have started.
    scope.pace().await;
    drop(turn);
}

/// Starts the runs of triggers claimed together (at most [`MAX_BATCH`]), each ending in
/// its record as [`run::execute_claimed`] says. The won claims whose first attempt waits
/// for nothing ([`run::marks_with_batch`]) have their starts marked as one group
/// ([`claim::mark_group`]: one ledger group, one coordinator call) before their runs are
/// spawned, each run then starting at once on the group's answer; the others are spawned
/// first, and mark their own starts when their first attempt begins.
pub(super) async fn start(fleet: &FleetRun, runs: Vec<(Due, Claimed, Box<str>)>) {
    let (shared, scope, tracker) = (fleet.shared(), &fleet.scope, &fleet.tracker);
    let mut grouped = Vec::with_capacity(runs.len());
    for (due, claimed, key) in runs {
        match claimed {
            Ok(token) if run::marks_with_batch(&due.job) => {
                let record = shared.start_run(&due.job, due.trigger, due.cause, token);
                grouped.push((due, token, key, record));
            }
            claimed => {
                scope.spawning();
                tracker.spawn(run::execute_claimed(scope.clone(), due, claimed, key, None));
            }
        }
    }
    if grouped.is_empty() {
        return;
    }
    let starts = grouped.iter().map(|(_, _, key, record)| (record.clone(), key.clone())).collect();
    let answers = claim::mark_group(shared, starts).await;
    for ((due, token, key, record), answer) in grouped.into_iter().zip(answers) {
        scope.spawning();
        let marked = run::Marked { record, answer };
        tracker.spawn(run::execute_claimed(scope.clone(), due, Ok(token), key, Some(marked)));
    }
}
