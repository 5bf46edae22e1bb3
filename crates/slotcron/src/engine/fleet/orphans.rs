//! Orphaned claims: claims won by a replica that has gone — left the membership, or was
//! restarted as a new incarnation under the same instance id — before it marked their
//! start (docs/design.md, "Claims, start marks and takeover"). A live replica takes each over
//! with the coordinator's [`take_over`](crate::Coordinator::take_over), atomic against
//! the holder's own mark, and runs the trigger late, once, with a new fencing token; the
//! trigger's owner among the live members first, the others a takeover delay later.
//! A taken-over trigger is exempt from the misfire grace: it was due, and claimed.

use std::sync::Arc;

use jiff::Timestamp;

use super::{FleetRun, placement};
use crate::clock::later;
use crate::coordinator::{ClaimOutcome, Coordinator, TriggerRef, Unstarted};
use crate::engine::chain;
use crate::engine::claim::{settle_start, within_claim_timeout};
use crate::engine::run;
use crate::engine::table::{Action, Due};
use crate::job::Job;
use crate::key::parse_key;
use crate::ledger::Cause;

/// An orphaned claim this replica knows the job of: the job, the trigger key, and the
/// run's cause and instant as the key says.
struct Orphan {
    job: Arc<Job>,
    key: String,
    cause: Cause,
    trigger: Timestamp,
    /// Placed on labels no live member carries: taken over to be recorded
    /// `skipped-no-member`, not run ([`placement::records_for_none`]).
    record_only: bool,
}

/// Takes over the claims this instance's previous incarnation won and never started: at
/// start, before this run claims anything (its own claims would be listed under the same
/// instance id).
pub(crate) async fn adopt_own(fleet: &FleetRun) {
    let own = fleet.shared().instance.clone();
    adopt(
        fleet.clone(),
        own.clone(),
        format!("the previous incarnation of {own} (restarted before it started them)"),
    )
    .await;
}

/// The members of `before` missing from `now`: those that have left the membership.
pub(crate) fn left(before: &[Arc<str>], now: &[Arc<str>]) -> Vec<Arc<str>> {
    before.iter().filter(|member| !now.contains(member)).cloned().collect()
}

/// Takes over the unstarted claims of `from`, described in the records as `whom`: first
/// those whose job this replica owns among the live members, then, a takeover delay
/// later, the others (which their owners may have taken over meanwhile).
pub(crate) async fn adopt(fleet: FleetRun, from: Arc<str>, whom: String) {
    let shared = fleet.shared().clone();
    let Some(coordinator) = shared.coordinator.clone().filter(|c| c.keeps_start_marks()) else { return };
    let jobs = shared.table().names();
    let names: Vec<&str> = jobs.iter().map(|name| &**name).collect();
    let listed = match within_claim_timeout(&shared, coordinator.unstarted(&from, &names)).await {
        Ok(listed) => listed,
        Err(e) => {
            return tracing::warn!(
                instance = %from,
                "cannot list the claims it left unstarted ({}): {e}; they stay until its next look",
                e.kind()
            );
        }
    };
    let (mine, others): (Vec<Orphan>, Vec<Orphan>) =
        listed.into_iter().filter_map(|u| orphan(&fleet, u)).partition(|o| owns(&fleet, &o.job));
    take(&fleet, coordinator.as_ref(), &from, &whom, mine).await;
    if others.is_empty() {
        return;
    }
    let after = later(shared.clock.now(), shared.settings.takeover_delay);
    tokio::select! {
        () = fleet.scope.stopping.cancelled() => return,
        () = shared.clock.sleep_until(after) => {}
    }
    take(&fleet, coordinator.as_ref(), &from, &whom, others).await;
}

/// The orphan of `unstarted`, if this replica knows its job and its key's form.
fn orphan(fleet: &FleetRun, unstarted: Unstarted) -> Option<Orphan> {
    let job = fleet.shared().table().job(&unstarted.job);
    let Some(job) = job else {
        tracing::debug!(job = %unstarted.job, "an unstarted claim of a job this replica does not have: left to others");
        return None;
    };
    let record_only = !placement::runs_here(fleet.shared(), &job);
    if record_only && !placement::records_for_none(fleet, &job) {
        tracing::debug!(job = %job.name, "an unstarted claim of a job placed on labels this replica lacks: left to others");
        return None;
    }
    let (cause, trigger) = parse_key(&job.name, &unstarted.key)?;
    let cause = if cause == Cause::Scheduled { Cause::TakenOver } else { cause };
    let trigger = trigger.unwrap_or_else(|| fleet.shared().clock.now());
    Some(Orphan { job, key: unstarted.key, cause, trigger, record_only })
}

/// Whether this replica owns `job` among the live members (every job, without a view).
fn owns(fleet: &FleetRun, job: &Job) -> bool {
    let Some(members) = fleet.state.membership.get() else { return true };
    let (shared, labels) = (fleet.shared(), fleet.state.labels.get());
    placement::owner(shared, &labels, job, &members).is_none_or(|owner| **owner == *shared.instance)
}

/// Takes `orphans` over from `from` in one call and runs each one won, at its instant
/// (at once if it has passed).
async fn take(fleet: &FleetRun, coordinator: &dyn Coordinator, from: &str, whom: &str, orphans: Vec<Orphan>) {
    if orphans.is_empty() || fleet.scope.stopping.is_cancelled() {
        return;
    }
    let shared = fleet.shared();
    let refs: Vec<TriggerRef<'_>> =
        orphans.iter().map(|o| TriggerRef { job: &o.job.name, key: &o.key }).collect();
    let answers = coordinator.take_over(from, &shared.instance, &refs).await;
    let mut taken = 0;
    for (orphan, answer) in orphans.into_iter().zip(answers) {
        match answer {
            Ok(ClaimOutcome::Won { .. }) if orphan.record_only => {
                placement::record_taken_over(fleet, &orphan.job, orphan.trigger, &orphan.key, whom).await;
            }
            Ok(ClaimOutcome::Won { fencing_token }) => {
                taken += 1;
                let note = format!("taken over from {whom}, which had claimed it and not started it");
                fleet.scope.spawning();
                fleet.tracker.spawn(run_orphan(fleet.clone(), orphan, fencing_token, note));
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(job = %orphan.job.name, key = %orphan.key, "taking over failed: {e}"),
        }
    }
    if taken > 0 {
        tracing::warn!(instance = %from, taken, "took over claims a gone replica had not started: running them late");
    }
}

/// Runs a taken-over trigger, not before its instant.
async fn run_orphan(fleet: FleetRun, orphan: Orphan, fencing_token: u64, note: String) {
    let shared = fleet.shared();
    tokio::select! {
        () = fleet.scope.stopping.cancelled() => {}
        () = shared.clock.sleep_until(orphan.trigger) => {}
    }
    let Orphan { job, key, cause, trigger, .. } = orphan;
    if chain::skipped_before(shared, &job, trigger).await {
        tracing::info!(job = %job.name, %trigger, "taken over, but recorded skipped-parent already: not run");
        settle_start(shared, Some(&key), &job).await;
        return fleet.scope.started();
    }
    let due = Due { job, trigger, next: None, action: Action::Run, cause };
    run::execute_taken_over(fleet.scope.clone(), due, fencing_token, key.into_boxed_str(), note).await;
}
