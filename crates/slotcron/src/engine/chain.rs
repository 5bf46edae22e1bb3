//! Job chains in the engine (docs/design.md, "Job chains"): when a run of a job ends, the
//! jobs chained after it ([`JobBuilder::run_after`](crate::JobBuilder::run_after)) get a
//! trigger each, at the parent's trigger instant, fired by the replica that ran the
//! parent. The parent's record is durable in the ledger first; then each child's trigger
//! is claimed through the ordinary claim path, so it runs once across the fleet, and a
//! claim this replica wins and dies before starting is taken over by a live member
//! ([`orphans`](super::fleet::orphans)). A parent that succeeded runs the child; one
//! that failed or was skipped after its claim records the child's trigger
//! [`SkippedParent`](Outcome::SkippedParent), which its own children inherit.

use std::sync::Arc;

use jiff::Timestamp;

use super::claim::{claim, claim_requested, settle_start};
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

/// Records the end of `job`'s run (`record`, through [`Shared::finish`]); then, if jobs
/// are chained after it and the outcome concerns them ([`Follow`]), handles each child's
/// trigger once the ledger has taken the record: the triggers to run, which the caller
/// runs all at once on its task (so a shutdown waits for them as for the parent); a
/// skip's are recorded here.
pub(crate) async fn finish(scope: &Arc<RunScope>, job: &Arc<Job>, record: RunRecord) -> Vec<Due> {
    let Some((follow, children, parent)) = end(&scope.shared, job, record).await else { return Vec::new() };
    match follow {
        Follow::Run => {
            let mut due = Vec::with_capacity(children.len());
            for child in children {
                due.extend(child_due(scope, child, &parent).await);
            }
            due
        }
        Follow::Skip | Follow::Nothing => {
            skip_children(&scope.shared, children, &parent).await;
            Vec::new()
        }
    }
}

/// Records the children's triggers of a run that the stale sweep recorded `interrupted`
/// (`record`, as it was found) `skipped-parent`: only for a run of this instance's own
/// previous incarnation, which is gone for good (a run a member presumed interrupted may
/// still end: its daemon, cut off, writes its real end when it is back, and fires its
/// children then), and of a job that does not rerun it.
pub(crate) async fn skip_after_interrupted(shared: &Arc<Shared>, record: &RunRecord) {
    if record.instance != shared.instance {
        return;
    }
    let children = shared.table().children_of(&record.job);
    let parent = Parent {
        name: record.job.clone(),
        trigger: record.trigger,
        cause: record.cause,
        outcome: Outcome::Interrupted,
    };
    skip_children(shared, children, &parent).await;
}

/// Records `record`, the end of `job`'s run; if jobs are chained after it and its outcome
/// concerns them, returns what follows, the children and the parent as they need it —
/// for a success, once the ledger has taken the record (so the parent's success is
/// durable before the children's triggers are). A skip fires nothing to run: its
/// children's skips follow at once (also in the stale sweep at start, before the ledger's
/// writer runs).
async fn end(shared: &Shared, job: &Job, record: RunRecord) -> Option<(Follow, Vec<Arc<Job>>, Parent)> {
    let follow = Follow::of(record.outcome);
    let children = match follow {
        Follow::Nothing => Vec::new(),
        Follow::Run | Follow::Skip => shared.table().children_of(&job.name),
    };
    let parent = Parent {
        name: job.name.clone(),
        trigger: record.trigger,
        cause: record.cause,
        outcome: record.outcome,
    };
    if children.is_empty() || follow != Follow::Run {
        shared.finish(job, record).await;
    } else if shared.finish_durably(job, record).await.await.is_err() {
        tracing::warn!(
            job = %parent.name, trigger = %parent.trigger,
            "the scheduler stopped before the run's end was written: the jobs chained after it are not fired"
        );
        return None;
    }
    let children: Vec<Arc<Job>> = children.into_iter().filter(|child| !in_cycle(shared, child)).collect();
    (!children.is_empty()).then_some((follow, children, parent))
}

/// The end of a parent's run, as its children's triggers need it.
struct Parent {
    name: Arc<str>,
    trigger: Timestamp,
    cause: Cause,
    outcome: Outcome,
}

impl Parent {
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

/// `child`'s trigger at `parent`'s instant, to be claimed, marked and run as any trigger
/// is, its end followed by its own children's. A scheduler already stopping starts no
/// run: it claims the trigger and leaves it unstarted, for takeover ([`leave_to_others`]).
async fn child_due(scope: &Arc<RunScope>, child: Arc<Job>, parent: &Parent) -> Option<Due> {
    let cause = parent.child_cause();
    if scope.stopping.is_cancelled() {
        leave_to_others(&scope.shared, &child, parent.trigger, cause).await;
        return None;
    }
    let action = match cause {
        Cause::Scheduled => Action::Run,
        _ => Action::Requested { attempts_made: 0 },
    };
    Some(Due { job: child, trigger: parent.trigger, next: None, action, cause })
}

/// The trigger of `child` at `trigger` (of `cause`), fired while the scheduler stops:
/// claimed and not started, so that a live member takes it over once this one has left
/// the membership, or this instance's next start does (docs/design.md, "Claims, start
/// marks and takeover"). Without a coordinator nothing can: it is lost, and logged so.
async fn leave_to_others(shared: &Shared, child: &Job, trigger: Timestamp, cause: Cause) {
    match claim_child(shared, child, trigger, cause).await {
        Ok(Some(_)) => tracing::info!(
            job = %child.name, %trigger,
            "the scheduler is stopping: the trigger is claimed and left unstarted, for a live member or the next start to take over"
        ),
        Ok(None) => tracing::warn!(
            job = %child.name, %trigger,
            "the scheduler is stopping and no coordinator keeps the trigger: it does not run"
        ),
        Err(record) => shared.finish(child, *record).await,
    }
}

/// Records each of `children`'s triggers at `parent`'s instant `skipped-parent`, naming
/// the parent's outcome: claimed first (so once across the fleet, and settled: never
/// taken over and run), then recorded; their own children's follow, in turn.
async fn skip_children(shared: &Arc<Shared>, children: Vec<Arc<Job>>, parent: &Parent) {
    let (trigger, cause) = (parent.trigger, parent.child_cause());
    for child in children {
        let record = match claim_child(shared, &child, trigger, cause).await {
            Ok(key) => {
                settle_start(shared, key.as_deref(), &child).await;
                let reason =
                    format!("its parent {}'s run of this trigger ended {}", parent.name, parent.outcome);
                shared.skipped(&child, trigger, cause, Outcome::SkippedParent, Some(reason))
            }
            Err(record) => *record,
        };
        if let Some((Follow::Skip, grandchildren, next)) = end(shared, &child, record).await {
            Box::pin(skip_children(shared, grandchildren, &next)).await;
        }
    }
}

/// Claims `child`'s `trigger` (of `cause`) from the coordinator, if one arbitrates it:
/// the key of the claim won (`None`: nothing to claim), else the record of the skip.
async fn claim_child(
    shared: &Shared,
    child: &Job,
    trigger: Timestamp,
    cause: Cause,
) -> Result<Option<Box<str>>, Box<RunRecord>> {
    let Some(coordinator) = shared.coordinator.as_ref().filter(|_| !child.every_replica) else {
        return Ok(None);
    };
    let key = request_key(&child.name, child.kind, cause, trigger);
    let claimed = match cause {
        Cause::Scheduled => claim(shared, coordinator.as_ref(), child, trigger, None, cause, &key).await,
        _ => claim_requested(shared, coordinator.as_ref(), child, trigger, cause, &key).await,
    };
    claimed.map(|_| Some(key.into_boxed_str()))
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
    let Some(mut at) = job.parent.clone() else { return Ok(()) };
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
