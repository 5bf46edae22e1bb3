//! Placement in the fleet: a job placed on labels ([`JobBuilder::on`](crate::JobBuilder::on))
//! is owned, claimed and run only by the members that carry them.
//!
//! - This replica knows its own labels: it never claims a trigger of a job whose labels
//!   it lacks — not on schedule, not ahead, not in a takeover ([`runs_here`]).
//! - It learns the other members' labels from their details in the membership (one read
//!   of [`Coordinator::members`](crate::Coordinator::members) when the membership changes,
//!   and at least once a membership TTL, only while a job is placed: [`refresh`]). A
//!   job's owner is the rendezvous owner among the live members that carry its labels
//!   ([`owner`]), so every replica with the same view computes the same owner; a stale
//!   view costs a late run (the claim still decides), never a double one.
//! - A trigger that no member runs is claimed by the job's rendezvous owner among the live
//!   members that lack its labels (the recorder) and recorded
//!   [`SkippedNoMember`](Outcome::SkippedNoMember) with the labels it needs; its claim,
//!   settled without a run, keeps any member from running it later ([`leave`]): two
//!   takeover delays after its instant (after the carriers' own takeover, and the claim
//!   of a carrier that has just joined), when a read finds it still unclaimed — no live
//!   member carries the labels, or those in the membership did not claim it (the only
//!   one died, its entry not lapsed yet). The other replicas record nothing for it, as a
//!   non-owner records nothing for a trigger it finds claimed. The claims a gone carrier
//!   won and never started are taken over and recorded the same way when no live member
//!   carries the labels ([`records_for_none`]).
//!
//! An `on_every_replica` job runs on every member that carries its labels; the others
//! record nothing. Without a view of the membership with every member's labels read
//! (before the first heartbeat, or with `shared_work = false`) a replica that lacks a
//! job's labels neither claims nor records it: it cannot tell whether another member runs
//! it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use jiff::Timestamp;

use super::FleetRun;
use crate::clock::later;
use crate::coordinator::{LiveMember, TriggerRef, rendezvous};
use crate::engine::chain;
use crate::engine::claim::{claim, key_of, settle_start, within_claim_timeout};
use crate::engine::shared::Shared;
use crate::engine::table::{Action, Due};
use crate::job::Job;
use crate::ledger::{Cause, Outcome};
use crate::placement::Labels;

/// The labels of the other members as last read from their details, by instance id.
pub(crate) type LabelsOf = Arc<HashMap<Arc<str>, Labels>>;

/// What this replica last read of the members' labels ([`Read`]), if anything.
#[derive(Default)]
pub(crate) struct MemberLabels(RwLock<Option<Read>>);

/// One read of the members' labels: the labels, the view of the membership it was made
/// for, and when (on the scheduler's clock).
struct Read(LabelsOf, Arc<[Arc<str>]>, Timestamp);

impl MemberLabels {
    /// The labels last read (none before the first read).
    pub fn get(&self) -> LabelsOf {
        self.0
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|read| read.0.clone())
            .unwrap_or_default()
    }

    /// Whether the labels must be read again at `now` for the view `members`: never read,
    /// read for another membership, or read a membership TTL ago.
    fn stale(&self, members: &[Arc<str>], now: Timestamp, ttl: std::time::Duration) -> bool {
        match &*self.0.read().unwrap_or_else(|p| p.into_inner()) {
            None => true,
            Some(Read(_, read_for, at)) => **read_for != *members || later(*at, ttl) <= now,
        }
    }
}

/// Whether this replica carries `job`'s labels.
pub(crate) fn runs_here(shared: &Shared, job: &Job) -> bool {
    job.placement.is_met_by(&shared.settings.labels)
}

/// Whether `member` carries `job`'s labels: this replica by its own labels, another by
/// those last read (none if unread).
fn carries(shared: &Shared, labels: &LabelsOf, job: &Job, member: &str) -> bool {
    if member == &*shared.instance {
        return runs_here(shared, job);
    }
    labels.get(member).is_some_and(|carried| job.placement.is_met_by(carried))
}

/// The owner of `job`'s triggers among `members`: the rendezvous owner among those that
/// carry its labels; `None` if none does (or `members` is empty).
pub(crate) fn owner<'a>(
    shared: &Shared,
    labels: &LabelsOf,
    job: &Job,
    members: &'a [Arc<str>],
) -> Option<&'a Arc<str>> {
    let find = |owner: &str| members.iter().find(|member| ***member == *owner);
    if job.placement.is_anywhere() {
        return rendezvous::owner(&job.name, members).and_then(find);
    }
    let placed: Vec<&str> =
        members.iter().map(|m| &**m).filter(|m| carries(shared, labels, job, m)).collect();
    rendezvous::owner(&job.name, &placed).and_then(find)
}

/// The labels `live` members published, by instance id (a label this release cannot read
/// makes its member carry none).
pub(crate) fn labels_of(live: &[LiveMember]) -> LabelsOf {
    let read = |member: &LiveMember| Labels::parse(&member.details.labels).unwrap_or_default();
    Arc::new(live.iter().map(|member| (Arc::from(member.instance.as_str()), read(member))).collect())
}

/// After a heartbeat that answered with the view `members`: reads the members' labels
/// if a job is placed and what was read is stale. A read that fails keeps the last one
/// (logged at debug level; the next heartbeat reads again).
pub(super) async fn refresh(fleet: &FleetRun, members: &[Arc<str>]) {
    let shared = fleet.shared();
    let (Some(coordinator), now) = (&shared.coordinator, shared.clock.now()) else { return };
    let known = &fleet.state.labels;
    if !known.stale(members, now, shared.settings.membership_ttl) || !shared.table().any_placed() {
        return;
    }
    match within_claim_timeout(shared, coordinator.members()).await {
        Ok(live) => {
            *known.0.write().unwrap_or_else(|p| p.into_inner()) =
                Some(Read(labels_of(&live), members.into(), now));
        }
        Err(e) => tracing::debug!("reading the members' labels failed: {e}; the last ones stay"),
    }
}

/// The looks of this replica as a recorder: when it reads again whether a trigger its
/// carriers left is still unclaimed, by job and trigger (for the testkit's fleet, which
/// waits for a look it knows of, through the probe).
#[derive(Default)]
pub(crate) struct RecorderLooks(Mutex<HashMap<(Arc<str>, Timestamp), Timestamp>>);

impl RecorderLooks {
    /// When this replica looks next at `job`'s `trigger`, while it waits for that look.
    pub fn next_look(&self, job: &str, trigger: Timestamp) -> Option<Timestamp> {
        let looks = self.0.lock().unwrap_or_else(|p| p.into_inner());
        looks.iter().find(|((j, t), _)| **j == *job && *t == trigger).map(|(_, look)| *look)
    }

    fn set(&self, job: &Arc<str>, trigger: Timestamp, look: Option<Timestamp>) {
        let mut looks = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match look {
            Some(look) => looks.insert((job.clone(), trigger), look),
            None => looks.remove(&(job.clone(), trigger)),
        };
    }
}

/// For the dispatch: `due` if this replica carries its job's labels (it goes on to be
/// claimed here), else `None`, after handing a scheduled trigger this replica records
/// to [`leave`].
pub(crate) fn keep(fleet: &FleetRun, due: Due) -> Option<Due> {
    if runs_here(fleet.shared(), &due.job) {
        return Some(due);
    }
    if due.action != Action::Run || due.job.every_replica {
        return None;
    }
    let mut left = recording(fleet, &due.job)?;
    let shared = fleet.shared();
    // One more takeover delay, for the carriers' own takeover, and for a carrier this
    // replica's view does not show yet (one that has just joined) to claim it first.
    left.look = later(shared.clock.now(), shared.settings.takeover_delay);
    fleet.state.recorder_looks.set(&due.job.name, due.trigger, Some(left.look));
    fleet.tracker.spawn(leave(fleet.clone(), due, left));
    None
}

/// A trigger this replica records for the members that did not run it.
struct Left {
    /// The live members that carry the job's labels (none: no live member can run it).
    carriers: Vec<Arc<str>>,
    members: Arc<[Arc<str>]>,
    /// When to read whether a carrier claimed it.
    look: Timestamp,
}

/// The carriers of `job` and the members (the look: now), if this replica records its
/// triggers that no member runs: the job's rendezvous owner among the live members that lack its labels,
/// on a view with every member's labels read (a claim made on a partial view could take
/// the trigger from its carrier).
fn recording(fleet: &FleetRun, job: &Job) -> Option<Left> {
    let shared = fleet.shared();
    shared.coordinator.as_ref()?;
    let members = fleet.state.membership.get()?;
    let labels = fleet.state.labels.get();
    if members.iter().any(|member| !labels.contains_key(member)) {
        return None;
    }
    let (carriers, others): (Vec<Arc<str>>, Vec<Arc<str>>) =
        members.iter().cloned().partition(|m| carries(shared, &labels, job, m));
    let recorder = rendezvous::owner(&job.name, &others)?;
    (recorder == &*shared.instance).then_some(Left { carriers, members, look: shared.clock.now() })
}

/// Records a trigger no member ran ([`keep`] found this replica its recorder): at the
/// look, if a read then finds it unclaimed (else a carrier has it, and this replica
/// records nothing, as a non-owner does), claims it and records it `skipped-no-member`
/// (or the claim's own skip).
async fn leave(fleet: FleetRun, due: Due, left: Left) {
    let shared = fleet.shared();
    let Some(coordinator) = &shared.coordinator else { return };
    let Due { job, trigger, next, cause, .. } = due;
    let key = key_of(&job, trigger);
    let unclaimed = unclaimed_at(&fleet, &job, &key, left.look).await;
    fleet.state.recorder_looks.set(&job.name, trigger, None);
    if !unclaimed {
        return;
    }
    let record = match claim(shared, coordinator.as_ref(), &job, trigger, next, cause, &key).await {
        Ok(_) => {
            settle_start(shared, Some(&key), &job).await;
            let reason = no_member(&job, &left.carriers, &left.members);
            shared.skipped(&job, trigger, cause, Outcome::SkippedNoMember, Some(reason))
        }
        Err(record) => *record,
    };
    chain::finish(&fleet.scope, &job, record).await;
}

/// Whether this replica records, without running them, the unstarted claims of `job`
/// that a gone member left ([`super::orphans`]): it is the job's recorder and no live
/// member carries the job's labels, so no member can take them over to run them.
pub(crate) fn records_for_none(fleet: &FleetRun, job: &Job) -> bool {
    recording(fleet, job).is_some_and(|left| left.carriers.is_empty())
}

/// Records `job`'s `trigger` `skipped-no-member` after this replica took over its claim
/// from `whom` ([`records_for_none`]): the claim settled, nothing run.
pub(crate) async fn record_taken_over(
    fleet: &FleetRun,
    job: &Arc<Job>,
    trigger: Timestamp,
    key: &str,
    whom: &str,
) {
    let shared = fleet.shared();
    settle_start(shared, Some(key), job).await;
    let reason = format!(
        "taken over from {whom}, which had claimed it and not started it; no live member carries the labels \
         the job is placed on ({})",
        job.placement
    );
    let record = shared.skipped(job, trigger, Cause::TakenOver, Outcome::SkippedNoMember, Some(reason));
    chain::finish(&fleet.scope, job, record).await;
}

/// Whether the trigger of `job` keyed `key` is still unclaimed at `look`: one read, no
/// claim. `false` if the scheduler stops meanwhile or the read fails (a carrier may hold
/// it: nothing is taken from it).
async fn unclaimed_at(fleet: &FleetRun, job: &Job, key: &str, look: Timestamp) -> bool {
    let shared = fleet.shared();
    let Some(coordinator) = &shared.coordinator else { return false };
    tokio::select! {
        () = fleet.scope.stopping.cancelled() => return false,
        () = shared.clock.sleep_until(look) => {}
    }
    let trigger = [TriggerRef { job: &job.name, key }];
    match within_claim_timeout(shared, coordinator.unclaimed(&trigger)).await {
        Ok(answers) => answers.first().copied().unwrap_or(false),
        Err(e) => {
            tracing::debug!(job = %job.name, "cannot read whether a carrier claimed {key}: {e}; left to the carriers");
            false
        }
    }
}

/// Why no member ran a trigger of `job`: no live member carries its labels, or those
/// that do (`carriers`) did not claim it.
fn no_member(job: &Job, carriers: &[Arc<str>], members: &[Arc<str>]) -> String {
    let names = |ids: &[Arc<str>]| ids.iter().map(|m| &**m).collect::<Vec<_>>().join(", ");
    if carriers.is_empty() {
        return format!(
            "no live member carries the labels the job is placed on ({}); live members: {}",
            job.placement,
            names(members)
        );
    }
    format!(
        "no member carrying the labels the job is placed on ({}) claimed it within two takeover delays \
         of its instant; the members carrying them ({}) may have died, their entries not lapsed yet",
        job.placement,
        names(carriers)
    )
}
