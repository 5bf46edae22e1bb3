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
//! - A trigger that no live member can run is claimed by the job's rendezvous owner among
//!   all the live members, a takeover delay after its instant (a member that joined
//!   meanwhile claims it first), and recorded [`SkippedNoMember`](Outcome::SkippedNoMember)
//!   with the labels it needs; its claim, settled without a run, keeps any member from
//!   running it later ([`leave`]). The other replicas record nothing for it, as a
//!   non-owner records nothing for a trigger it finds claimed.
//!
//! An `on_every_replica` job runs on every member that carries its labels; the others
//! record nothing. Without a view of the membership with every member's labels read
//! (before the first heartbeat, or with `shared_work = false`) a replica that lacks a
//! job's labels neither claims nor records it: it cannot tell whether another member runs
//! it.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use jiff::Timestamp;

use super::FleetRun;
use crate::clock::later;
use crate::coordinator::{LiveMember, rendezvous};
use crate::engine::claim::{claim, key_of, settle_start, within_claim_timeout};
use crate::engine::shared::Shared;
use crate::engine::table::{Action, Due};
use crate::job::Job;
use crate::ledger::Outcome;
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

/// For the dispatch: `due` if this replica carries its job's labels (it goes on to be
/// claimed here), else `None`, after handing a scheduled trigger to [`leave`].
pub(crate) fn keep(fleet: &FleetRun, due: Due) -> Option<Due> {
    if runs_here(fleet.shared(), &due.job) {
        return Some(due);
    }
    if due.action == Action::Run && !due.job.every_replica {
        fleet.tracker.spawn(leave(fleet.clone(), due));
    }
    None
}

/// A trigger of a job whose labels this replica lacks (it came from the table a takeover
/// delay after its instant, as another member's trigger does): if no live member carries
/// them and this replica is the job's rendezvous owner among all the live members, claims
/// it and records it `skipped-no-member` (or the claim's own skip); else nothing.
async fn leave(fleet: FleetRun, due: Due) {
    let shared = fleet.shared();
    let (Some(coordinator), Some(members)) = (&shared.coordinator, fleet.state.membership.get()) else {
        return;
    };
    let Due { job, trigger, next, cause, .. } = due;
    let labels = fleet.state.labels.get();
    // Only a view with every member's labels read can tell that no member carries them:
    // a claim here could take the trigger from its carrier.
    if members.iter().any(|member| !labels.contains_key(member)) {
        return;
    }
    if owner(shared, &labels, &job, &members).is_some()
        || rendezvous::owner(&job.name, &members).is_none_or(|recorder| recorder != &*shared.instance)
    {
        return;
    }
    let key = key_of(&job, trigger);
    let record = match claim(shared, coordinator.as_ref(), &job, trigger, next, cause, &key).await {
        Ok(_) => {
            settle_start(shared, Some(&key), &job).await;
            let ids: Vec<&str> = members.iter().map(|m| &**m).collect();
            let reason = format!(
                "no live member carries the labels the job is placed on ({}); live members: {}",
                job.placement,
                ids.join(", ")
            );
            shared.skipped(&job, trigger, cause, Outcome::SkippedNoMember, Some(reason))
        }
        Err(record) => *record,
    };
    shared.finish(&job, record).await;
}
