//! Job chains in the engine (docs/design.md, "Job chains"): when a run of a job ends, the
//! jobs chained after it ([`JobBuilder::run_after`](crate::JobBuilder::run_after)) get a
//! trigger each, at the parent's trigger instant, fired by the replica that ran the
//! parent. After a success each child's trigger is claimed through the ordinary claim
//! path (so it runs once across the fleet) before the parent's record is made durable, and
//! the child starts after it: a claim this replica wins and dies before starting is
//! taken over by a live member ([`orphans`](super::fleet::orphans)). A parent that succeeded runs the child; one
//! that failed or was skipped after its claim records the child's trigger
//! [`SkippedParent`](Outcome::SkippedParent), which its own children inherit ([`skip`]);
//! one a member presumed interrupted decides once its daemon is gone for good
//! ([`presumed`]).

mod presumed;
mod skip;

pub use presumed::{PRESUMED_PARENT_WAIT, PresumedSweep};
pub(crate) use skip::{skip_after_interrupted, skipped_before};

use std::sync::Arc;

use jiff::Timestamp;

use super::claim::{Claimed, claim, claim_requested};
use super::scope::RunScope;
use super::shared::Shared;
use super::table::{Action, Due, Table};
use crate::job::{Job, JobError};
use crate::key::request_key;
use crate::ledger::{Cause, Outcome, RunRecord};

/// What the end of a parent's run means for the triggers of the jobs chained after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Follow {
    /// It succeeded: each child runs.
    Run,
    /// It ran and did not succeed, or was skipped after its claim was won (an outcome
    /// that can no longer change): each child's trigger is recorded `skipped-parent`.
    Skip,
    /// This replica did not handle the trigger (another replica won it, or it was never
    /// claimed: missed, paused, an outage): no child trigger here.
    Nothing,
}

impl Follow {
    fn of(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Succeeded => Self::Run,
            Outcome::Failed
            | Outcome::TimedOut
            | Outcome::Panicked
            | Outcome::Aborted
            | Outcome::Cancelled
            | Outcome::Interrupted
            | Outcome::SkippedOverlap
            | Outcome::SkippedNoMember
            | Outcome::SkippedParent => Self::Skip,
            _ => Self::Nothing,
        }
    }
}

/// A chained job's trigger that its parent's success fires, for the run path to run:
/// with its claim's answer and trigger key when a coordinator arbitrates it (claimed
/// before the parent's end was written), else to be run as any trigger is.
pub(crate) struct ChildRun {
    pub due: Due,
    pub claimed: Option<(Claimed, Box<str>)>,
}

/// Records the end of `job`'s run (`record`, through [`Shared::finish`]) and handles the
/// triggers of the jobs chained after it that its outcome concerns ([`Follow`]): a
/// success's to run, returned for the caller to run all at once on its task (so a
/// shutdown waits for them as for the parent); a skip's recorded with it ([`skip`]).
pub(crate) async fn finish(scope: &Arc<RunScope>, job: &Arc<Job>, record: RunRecord) -> Vec<ChildRun> {
    match Follow::of(record.outcome) {
        Follow::Run => return fire(scope, job, record).await,
        Follow::Skip => skip::skip_durably(&scope.shared, job, record).await,
        Follow::Nothing => scope.shared.finish(job, record).await,
    }
    Vec::new()
}

/// The end of a successful run of `job` (`record`): each child's trigger is claimed
/// first, then the parent's end is made durable, then the children are handed over to
/// run. A replica killed in between leaves claims won and not started, which its next
/// incarnation or a live member takes over and runs: never a success whose children
/// nobody fires. A scheduler stopping meanwhile leaves them so too (without a
/// coordinator they are lost, and logged so).
async fn fire(scope: &Arc<RunScope>, job: &Arc<Job>, record: RunRecord) -> Vec<ChildRun> {
    let shared = &scope.shared;
    let children = children(shared, &job.name);
    if children.is_empty() {
        shared.finish(job, record).await;
        return Vec::new();
    }
    let parent = Parent::of(&record);
    let cause = parent.child_cause();
    let mut runs = Vec::with_capacity(children.len());
    for child in children {
        let claimed = claim_child(shared, &child, parent.trigger, cause).await;
        if let Some((Err(refused), _)) = &claimed
            && held_elsewhere(refused)
        {
            tracing::debug!(job = %child.name, trigger = %parent.trigger,
                "the trigger's claim is held already: its holder decided it (not run or recorded here)");
            continue;
        }
        let action = match cause {
            Cause::Scheduled => Action::Run,
            _ => Action::Requested { attempts_made: 0 },
        };
        let due = Due { job: child, trigger: parent.trigger, next: None, action, cause };
        runs.push(ChildRun { due, claimed });
    }
    let written = shared.finish_durably(job, record).await.await.is_ok();
    if written && !scope.stopping.is_cancelled() {
        return runs;
    }
    for run in runs {
        leave_to_others(shared, run).await;
    }
    Vec::new()
}

/// The end of a parent's run, as its children's triggers need it.
struct Parent {
    name: Arc<str>,
    trigger: Timestamp,
    cause: Cause,
    outcome: Outcome,
}

impl Parent {
    /// The end of the run that `record` records.
    fn of(record: &RunRecord) -> Self {
        Self {
            name: record.job.clone(),
            trigger: record.trigger,
            cause: record.cause,
            outcome: record.outcome,
        }
    }

    /// The cause of the children's triggers: a manual or backfilled parent's run makes
    /// theirs manual or backfilled (claimed under such a run's own key); any other is
    /// their scheduled trigger (`{child}:{trigger}`).
    fn child_cause(&self) -> Cause {
        match self.cause {
            Cause::Manual | Cause::Backfill => self.cause,
            _ => Cause::Scheduled,
        }
    }
}

/// A child's trigger fired as the scheduler stops (or before its parent's end could be
/// written): a claim won stays unstarted, so that a live member takes it over once this
/// one has left the membership, or this instance's next start does (docs/design.md,
/// "Claims, start marks and takeover"); a claim not won is recorded. Without a
/// coordinator nothing can run it later: it is lost, and logged so.
async fn leave_to_others(shared: &Shared, run: ChildRun) {
    let ChildRun { due, claimed } = run;
    let (child, trigger) = (&due.job, due.trigger);
    match claimed {
        Some((Ok(_), _)) => tracing::info!(
            job = %child.name, %trigger,
            "the scheduler is stopping: the trigger is claimed and left unstarted, for a live member or the next start to take over"
        ),
        Some((Err(record), _)) => shared.finish(child, *record).await,
        None => tracing::warn!(
            job = %child.name, %trigger,
            "the scheduler is stopping and no coordinator keeps the trigger: it does not run"
        ),
    }
}

/// The jobs chained after `parent` (not those in a cycle, which are not fired).
fn children(shared: &Shared, parent: &str) -> Vec<Arc<Job>> {
    let children = shared.table().children_of(parent);
    children.into_iter().filter(|child| !in_cycle(shared, child)).collect()
}

/// Whether a child's claim was refused because another claim of its trigger holds it
/// (not for the high-water mark, a pause or an outage): the holder decides the trigger —
/// runs it, or records it `skipped-parent` — and records it.
fn held_elsewhere(refused: &RunRecord) -> bool {
    refused.outcome == Outcome::SkippedLost && refused.error.is_none()
}

/// Claims `child`'s `trigger` (of `cause`) from the coordinator, if one arbitrates it:
/// the claim's answer and its trigger key (`None`: nothing to claim).
async fn claim_child(
    shared: &Shared,
    child: &Job,
    trigger: Timestamp,
    cause: Cause,
) -> Option<(Claimed, Box<str>)> {
    let coordinator = shared.coordinator.as_ref().filter(|_| !child.every_replica)?;
    let key = request_key(&child.name, child.kind, cause, trigger);
    let claimed = match cause {
        Cause::Scheduled => claim(shared, coordinator.as_ref(), child, trigger, None, cause, &key).await,
        _ => claim_requested(shared, coordinator.as_ref(), child, trigger, cause, &key).await,
    };
    Some((claimed, key.into_boxed_str()))
}

/// Whether `child` is its own ancestor (jobs replaced into a cycle, which
/// [`Scheduler::add`](crate::Scheduler::add) refuses): then it is not fired, and says so.
fn in_cycle(shared: &Shared, child: &Job) -> bool {
    let Err(e) = refuse_cycle(&shared.table(), child) else { return false };
    tracing::error!(job = %child.name, "not fired: {e}");
    true
}

/// [`JobError::Invalid`] (field `run_after`) if `job`, added to `table`, would be its
/// own ancestor, naming every job of the cycle.
pub(crate) fn refuse_cycle(table: &Table, job: &Job) -> Result<(), JobError> {
    let Some(mut at) = job.seldom().parent.clone() else { return Ok(()) };
    let mut path: Vec<Arc<str>> = vec![job.name.clone()];
    loop {
        if at == job.name {
            let names: Vec<&str> = path.iter().map(|name| &**name).collect();
            return Err(crate::chain::cycle_error(&job.name, &names));
        }
        // A cycle above the job, not through it: not this job's to report.
        if path.contains(&at) {
            return Ok(());
        }
        let parent = table.parent_of(&at);
        path.push(at);
        match parent {
            Some(parent) => at = parent,
            None => return Ok(()),
        }
    }
}
