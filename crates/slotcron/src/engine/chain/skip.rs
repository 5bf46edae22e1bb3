//! The triggers of the jobs chained after a parent run that did not succeed: recorded
//! [`SkippedParent`](Outcome::SkippedParent), naming the parent and its outcome, and
//! their own children in turn — each trigger decided once, with one record.
//!
//! The daemon that ran the parent ([`skip_durably`]) writes the whole cascade of skips in
//! one group with the parent's end, the skips first: a daemon killed before the group is
//! in the ledger leaves the parent `running` (its next incarnation's sweep records it
//! interrupted and decides the children, [`skip_after_interrupted`]), one killed after
//! leaves every record. Only then are the children's triggers claimed and settled (the
//! fleet's high-water mark; never taken over). A run whose end was found later
//! ([`decide`]: the stale sweep, a parent presumed interrupted) claims each child's
//! trigger first, so once across the fleet, and records it only if no record of it is
//! in the ledger.

use std::sync::Arc;

use jiff::Timestamp;

use super::{Parent, children, claim_child, held_elsewhere};
use crate::engine::claim::settle_start;
use crate::engine::shared::Shared;
use crate::job::Job;
use crate::ledger::{Outcome, RunRecord};

/// Records `record`, the end of `job`'s run that its children skip ([`Follow::Skip`](super::Follow::Skip)),
/// with the `skipped-parent` records of its children, grandchildren…, as one group, the
/// skips first; once the ledger has taken them, claims and settles each skipped trigger.
pub(super) async fn skip_durably(shared: &Arc<Shared>, job: &Arc<Job>, record: RunRecord) {
    let skips = cascade(shared, &Parent::of(&record), None);
    if skips.is_empty() {
        return shared.finish(job, record).await;
    }
    let (name, trigger) = (job.name.clone(), record.trigger);
    let mut ends: Vec<(&Job, RunRecord)> =
        skips.iter().map(|(child, skip)| (&**child, skip.clone())).collect();
    ends.push((job, record));
    if shared.finish_group(ends).await.await.is_err() {
        return tracing::warn!(job = %name, %trigger,
            "the scheduler stopped before the run's end was written: its chained jobs' triggers are not claimed");
    }
    for (child, skip) in &skips {
        settle_skipped(shared, child, skip).await;
    }
}

/// The `skipped-parent` records of the jobs chained after `parent` (`note` added to their
/// reasons), and after them in turn, each naming its own parent and, from the
/// grandchildren on, the run where the chain stopped ([`origin`]): parents before their
/// children.
fn cascade(shared: &Shared, parent: &Parent, note: Option<&str>) -> Vec<(Arc<Job>, RunRecord)> {
    let mut skips = Vec::new();
    let origin = origin(parent, note);
    for child in children(shared, &parent.name) {
        let skip = skipped_parent(shared, &child, parent, note);
        let next = Parent::of(&skip);
        skips.push((child, skip));
        skips.extend(cascade(shared, &next, origin.as_deref()));
    }
    skips
}

/// The note of the skips of `parent`'s grandchildren, further down the chain: where the
/// chain stopped — the note `parent`'s own children got if `parent` was skipped itself,
/// else `parent`'s run and its outcome.
fn origin(parent: &Parent, note: Option<&str>) -> Option<String> {
    match parent.outcome {
        Outcome::SkippedParent => note.map(str::to_owned),
        outcome => Some(format!("the chain stopped at {}'s run, which ended {outcome}", parent.name)),
    }
}

/// The record of `child`'s trigger skipped for `parent`'s outcome, its reason ending with
/// `note`, if any.
fn skipped_parent(shared: &Shared, child: &Job, parent: &Parent, note: Option<&str>) -> RunRecord {
    let mut reason = format!("its parent {}'s run of this trigger ended {}", parent.name, parent.outcome);
    if let Some(note) = note {
        reason.push_str("; ");
        reason.push_str(note);
    }
    let cause = parent.child_cause();
    shared.skipped(child, parent.trigger, cause, Outcome::SkippedParent, Some(reason))
}

/// Claims and settles the trigger `skip` recorded skipped, so that it is never claimed,
/// taken over or run later; a claim refused writes nothing more (the trigger has its
/// record).
async fn settle_skipped(shared: &Arc<Shared>, child: &Job, skip: &RunRecord) {
    match claim_child(shared, child, skip.trigger, skip.cause).await {
        Some((Ok(_), key)) => settle_start(shared, Some(&key), child).await,
        Some((Err(refused), _)) => tracing::debug!(job = %child.name, trigger = %skip.trigger,
            outcome = %refused.outcome, "the skipped trigger's claim was refused: it is recorded already"),
        None => {}
    }
}

/// Records the children's triggers of a run that the stale sweep recorded `interrupted`
/// (`record`, as it was found) `skipped-parent`: only for a run of this instance's own
/// previous incarnation, which is gone for good (a run a member presumed interrupted may
/// still end: its daemon, cut off, writes its real end when it is back, and fires its
/// children then; see [`presumed`](super::presumed)).
pub(crate) async fn skip_after_interrupted(shared: &Arc<Shared>, record: &RunRecord) {
    if record.instance != shared.instance {
        return;
    }
    let mut parent = Parent::of(record);
    parent.outcome = Outcome::Interrupted;
    decide(shared, &parent, None, false).await;
}

/// Decides each trigger of the jobs chained after `parent` (`note` added to their
/// reasons) that has no record yet: claims it (once across the fleet), settles it and
/// records it `skipped-parent`, then its own children in turn (their reasons naming
/// where the chain stopped, [`origin`]). A claim another holds is
/// its holder's to decide, and one without an answer the next sweep's: nothing is written
/// here. A claim refused for good (a late decision behind the child's high-water mark,
/// or a paused child) is recorded `skipped-parent` all the same: nobody claims the
/// trigger again. With `durable` (the scheduler runs: its ledger's writer too), each
/// record is made durable before the next trigger is looked at, so that the ledger tells
/// the next sweep it is decided; without (a sweep at the start, before the writer runs,
/// looks once), it is queued. Returns how many were recorded.
pub(super) async fn decide(
    shared: &Arc<Shared>,
    parent: &Parent,
    note: Option<&str>,
    durable: bool,
) -> usize {
    let mut recorded = 0;
    let origin = origin(parent, note);
    for child in children(shared, &parent.name) {
        if has_record(shared, &child, parent).await {
            continue;
        }
        match claim_child(shared, &child, parent.trigger, parent.child_cause()).await {
            // Its holder decides it; without an answer, the next sweep does.
            Some((Err(refused), _)) if held_elsewhere(&refused) || !refused_for_good(&refused) => continue,
            Some((Ok(_), key)) => settle_start(shared, Some(&key), &child).await,
            // Refused for good (behind the job's high-water mark, paused) or nothing to
            // claim: it never runs, and is recorded as its parent's outcome has it.
            _ => {}
        }
        let record = skipped_parent(shared, &child, parent, note);
        let next = Parent::of(&record);
        if durable {
            // The record is what tells the next sweep the trigger is decided when a refused
            // claim cannot (a late one, behind the high-water mark).
            if shared.finish_durably(&child, record).await.await.is_err() {
                tracing::warn!(job = %child.name, trigger = %parent.trigger,
                    "the scheduler stopped before the skip was written: decided again at the next sweep");
                return recorded;
            }
        } else {
            shared.finish(&child, record).await;
        }
        recorded += 1 + Box::pin(decide(shared, &next, origin.as_deref(), durable)).await;
    }
    recorded
}

/// Whether a child's claim refused (`refused`, not held elsewhere) is final: the
/// trigger is behind the job's high-water mark or the job is paused, not an outage.
fn refused_for_good(refused: &RunRecord) -> bool {
    matches!(refused.outcome, Outcome::SkippedLost | Outcome::SkippedPaused)
}

/// Whether the ledger holds a record of `child`'s trigger at `parent`'s instant; one that
/// cannot be read counts as recorded (logged): nothing is decided twice.
async fn has_record(shared: &Shared, child: &Job, parent: &Parent) -> bool {
    shared.recorded(child, parent.trigger, None).await.unwrap_or_else(|e| {
        tracing::warn!(job = %child.name, trigger = %parent.trigger,
            "cannot read whether the trigger is recorded ({e}): left undecided");
        true
    })
}

/// Whether `job`, chained, has its `trigger` recorded `skipped-parent` already: its
/// parent did not succeed and the skip was written with the parent's end, then claimed by
/// a daemon that died before it settled the claim — so a takeover of that claim must
/// settle it, not run it. Any other record (a start never marked, `skipped-lost`, whose
/// trigger is to run once, there) does not count. `false` for a job not chained, or a
/// ledger that cannot be read (logged: the takeover runs it, as any other).
pub(crate) async fn skipped_before(shared: &Shared, job: &Job, trigger: Timestamp) -> bool {
    if job.seldom().parent.is_none() {
        return false;
    }
    shared.recorded(job, trigger, Some(Outcome::SkippedParent)).await.unwrap_or_else(|e| {
        tracing::warn!(job = %job.name, %trigger, "cannot read whether the chained trigger is recorded ({e}): run");
        false
    })
}
