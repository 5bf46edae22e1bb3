//! Job chains in the engine (docs/design.md, "Job chains"): when a run of a job ends, the
//! jobs chained after it ([`JobBuilder::run_after`](crate::JobBuilder::run_after)) get a
//! trigger each, at the parent's trigger instant, fired by the replica that ran the
//! parent. After a success each child's trigger is claimed through the ordinary claim
//! path (so it runs once across the fleet) before the parent's record is made durable, and
//! the child starts after it: a claim this replica wins and dies before starting is
//! taken over by a live member ([`orphans`](super::fleet::orphans)). A parent that succeeded runs the child; one
//! that failed or was skipped after its claim records the child's trigger
//! [`SkippedParent`](Outcome::SkippedParent), which its own children inherit.

use std::sync::Arc;

use jiff::Timestamp;

use super::claim::{Claimed, claim, claim_requested, settle_start};
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
/// shutdown waits for them as for the parent); a skip's recorded here.
pub(crate) async fn finish(scope: &Arc<RunScope>, job: &Arc<Job>, record: RunRecord) -> Vec<ChildRun> {
    if Follow::of(record.outcome) == Follow::Run {
        return fire(scope, job, record).await;
    }
    if let Some((_, children, parent)) = end(&scope.shared, job, record).await {
        skip_children(&scope.shared, children, &parent).await;
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
    let children = shared.table().children_of(&job.name);
    let children: Vec<Arc<Job>> = children.into_iter().filter(|child| !in_cycle(shared, child)).collect();
    if children.is_empty() {
        shared.finish(job, record).await;
        return Vec::new();
    }
    let parent = Parent {
        name: job.name.clone(),
        trigger: record.trigger,
        cause: record.cause,
        outcome: record.outcome,
    };
    let cause = parent.child_cause();
    let mut runs = Vec::with_capacity(children.len());
    for child in children {
        let claimed = claim_child(shared, &child, parent.trigger, cause).await;
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

/// Records each of `children`'s triggers at `parent`'s instant `skipped-parent`, naming
/// the parent's outcome: claimed first (so once across the fleet, and settled: never
/// taken over and run), then recorded; their own children's follow, in turn.
async fn skip_children(shared: &Arc<Shared>, children: Vec<Arc<Job>>, parent: &Parent) {
    let (trigger, cause) = (parent.trigger, parent.child_cause());
    for child in children {
        let record = match claim_child(shared, &child, trigger, cause).await {
            Some((Err(record), _)) => *record,
            claimed => {
                let key = claimed.map(|(_, key)| key);
                settle_start(shared, key.as_deref(), &child).await;
                let reason =
                    format!("its parent {}'s run of this trigger ended {}", parent.name, parent.outcome);
                shared.skipped(&child, trigger, cause, Outcome::SkippedParent, Some(reason))
            }
        };
        if let Some((Follow::Skip, grandchildren, next)) = end(shared, &child, record).await {
            Box::pin(skip_children(shared, grandchildren, &next)).await;
        }
    }
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
