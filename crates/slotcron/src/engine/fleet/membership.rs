//! This replica in the fleet's membership: its heartbeat, and its view of the members
//! (described on [`Coordinator`](crate::Coordinator), "Membership").

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, RwLock};

use jiff::Timestamp;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{FleetRun, details, orphans, partition, placement};
use crate::clock::later;
use crate::coordinator::{CoordinatorError, MEMBERSHIP_JOIN_LOOK};
use crate::engine::claim::within_claim_timeout;
use crate::engine::shared::Shared;

/// This replica's last view of the fleet's membership, sorted; `None` until the first
/// heartbeat answers, and for a coordinator without a membership: every trigger is
/// then this replica's. Also whether the last heartbeat found the view of the one
/// before it (the view is *settled*): claims ahead are made only then, so that replicas
/// whose views differ while a member joins or leaves do not claim ahead of each other.
/// Beside it, since when (on the scheduler's clock) its heartbeats have answered without
/// a break: the view can say who is *gone* only once that is a full membership TTL. And
/// a signal that the view is out of date ([`View::stale`]).
#[derive(Default)]
pub(crate) struct View {
    members: RwLock<(Option<Members>, bool)>,
    /// Bumped whenever the members change: what a job's noted owner was reckoned in.
    generation: AtomicU32,
    answered_since: RwLock<Option<Timestamp>>,
    stale: Arc<Notify>,
    /// Fired once the first heartbeat of this run has had its answer (or failed): a
    /// latch that [`View::first_heartbeat`] waits on.
    first: CancellationToken,
}

/// A membership view: the members' ids, sorted.
type Members = Arc<[Arc<str>]>;

impl View {
    pub fn get(&self) -> Option<Arc<[Arc<str>]>> {
        self.members.read().unwrap_or_else(|p| p.into_inner()).0.clone()
    }

    /// Waits until the first heartbeat of this run has been answered or has failed (it
    /// is bounded by the claim timeout): before it this replica knows no members, and
    /// would claim every trigger as if it were alone — replicas started together would
    /// all claim their first instants and all but one lose each claim.
    pub async fn first_heartbeat(&self) {
        self.first.cancelled().await;
    }

    /// Notes that the first heartbeat has had its answer (or failed).
    fn first_heartbeat_done(&self) {
        self.first.cancel();
    }

    /// Whether the view is settled (and not `None`).
    pub fn settled(&self) -> bool {
        self.members.read().unwrap_or_else(|p| p.into_inner()).1
    }

    /// What tells the heartbeat that this view is out of date: another replica won a
    /// claim of a trigger this view made this replica the owner of, so the two see
    /// different members. The heartbeat then looks at the membership again at once (no
    /// sooner than [`quick_pause`] after its last look), instead of up to a third of the
    /// membership TTL later.
    pub fn stale(&self) -> Arc<Notify> {
        self.stale.clone()
    }

    /// The members, if this replica's heartbeats have answered without a break since
    /// `ttl` before `now` or earlier: every member then renewed its entry while this
    /// replica watched, so one missing from the view has left the membership (docs/design.md:
    /// a daemon that was disconnected judges others only after a full TTL connected).
    pub fn vouched(&self, now: Timestamp, ttl: std::time::Duration) -> Option<Members> {
        let since = (*self.answered_since.read().unwrap_or_else(|p| p.into_inner()))?;
        (later(since, ttl) <= now).then(|| self.get()).flatten()
    }

    /// The members and the generation of the view they are in.
    pub fn get_with_generation(&self) -> (Option<Members>, u32) {
        let view = self.members.read().unwrap_or_else(|p| p.into_inner());
        (view.0.clone(), self.generation.load(Ordering::Acquire))
    }

    /// Sets the view to `members`; whether it has settled just now (it was not before).
    fn set(&self, members: Option<Arc<[Arc<str>]>>) -> bool {
        let mut view = self.members.write().unwrap_or_else(|p| p.into_inner());
        let settled = members.is_some() && view.0 == members;
        if view.0 != members {
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
        let was = std::mem::replace(&mut *view, (members, settled)).1;
        settled && !was
    }

    /// Notes a heartbeat's answer at `now`: the start of an unbroken run of answers, or
    /// (`false`) its end.
    fn answered(&self, now: Timestamp, answered: bool) {
        let mut since = self.answered_since.write().unwrap_or_else(|p| p.into_inner());
        *since = if answered { Some(since.unwrap_or(now)) } else { None };
    }
}

/// Keeps this replica in the coordinator's membership: a heartbeat every third of the
/// membership TTL (on the scheduler's clock) until the scheduler starts stopping, then leaves it. Ends
/// at once, with the members gauge at 0, without a membership. While the view has not
/// settled (a member joined or left: at this replica's own start, every member's view
/// changes), and when a lost claim says it is [stale](View::stale), the next heartbeat
/// comes after [`quick_pause`] instead: replicas that start together agree on their owners
/// within a few of those, not after two thirds of a TTL of triggers claimed twice. The
/// second comes [`MEMBERSHIP_JOIN_LOOK`] after the first: replicas started within that of
/// each other agree before their first instants.
pub(crate) async fn heartbeat(fleet: FleetRun) {
    let shared = fleet.shared();
    let Some(coordinator) = shared.coordinator.clone().filter(|_| shared.settings.shared_work) else {
        shared.metrics.members(0);
        return;
    };
    let ttl = shared.settings.membership_ttl;
    // The members of the last view this replica could vouch for, and every member seen
    // since (while it could not vouch: its first TTL connected, or after a break): one
    // missing from the next vouched view has left, and its unstarted claims are taken
    // over — also one that joined and died before this replica could vouch for any view.
    let mut known: Vec<Arc<str>> = Vec::new();
    // When the last heartbeat that answered was sent.
    let mut last_ok = shared.clock.now();
    // Whether the heartbeats fail now: the first failure of a spell is a warning, the
    // others are counted and summed up once a minute (`Health::coordinator_failed`).
    let mut failing = false;
    // Its details as last published.
    let published = details::Published::default();
    let mut first = true;
    loop {
        let asked = shared.clock.now();
        let answer = within_claim_timeout(shared, coordinator.heartbeat(&shared.instance, ttl)).await;
        fleet.state.membership.answered(asked, answer.is_ok());
        partition::note_heartbeat(shared, last_ok, shared.clock.now(), answer.is_ok());
        let answer_ok = answer.is_ok();
        if answer_ok {
            last_ok = asked;
        }
        match answer {
            // No membership: the gauge says so (0), as without a coordinator.
            Ok(None) => {
                fleet.state.membership.first_heartbeat_done();
                return shared.metrics.members(0);
            }
            Ok(Some(mut members)) => {
                if !members.iter().any(|m| **m == *shared.instance) {
                    members.push(shared.instance.to_string());
                    members.sort();
                }
                shared.metrics.members(members.len());
                let members: Members = members.into_iter().map(Arc::from).collect();
                seen(&mut known, &members);
                if fleet.state.membership.set(Some(members.clone())) {
                    // Claims ahead are made in a settled view only: the engine's loop,
                    // asleep until its next instant, looks for them now.
                    shared.wake.notify_one();
                }
                fleet.state.membership.first_heartbeat_done();
                placement::refresh(&fleet, &members).await;
            }
            Err(e) => {
                fleet.state.membership.first_heartbeat_done();
                failed(shared, coordinator.name(), &e, std::mem::replace(&mut failing, true));
            }
        }
        if answer_ok {
            details::publish_changes(&fleet, &published);
        } else {
            published.forget();
        }
        if answer_ok && !fleet.state.membership.settled() {
            details::recheck(&fleet).await;
        }
        if answer_ok && std::mem::take(&mut failing) {
            tracing::info!(coordinator = coordinator.name(), "membership heartbeat answers again");
        }
        known = watch_leavers(&fleet, known);
        let every = if std::mem::take(&mut first) {
            MEMBERSHIP_JOIN_LOOK.min(quick_pause(shared))
        } else if answer_ok && !fleet.state.membership.settled() {
            quick_pause(shared)
        } else {
            ttl / 3
        };
        if !pause(&fleet, asked, every).await {
            break;
        }
    }
    if let Err(e) = within_claim_timeout(shared, coordinator.leave(&shared.instance)).await {
        tracing::warn!("leaving the membership failed: {e}; it lapses within {ttl:?}");
    }
}

/// Notes a heartbeat that failed with `e` (health, metrics); the first failure of a
/// spell (`again` false) is a warning, the others are logged at debug level.
fn failed(shared: &Shared, coordinator: &str, e: &CoordinatorError, again: bool) {
    shared.health.coordinator_failed(e, shared.clock.now());
    shared.metrics.backend_error("coordinator", e.kind().as_str());
    if again {
        tracing::debug!(coordinator, "membership heartbeat failed again: {e}");
    } else {
        tracing::warn!(
            coordinator,
            "membership heartbeat failed ({}): {e}; the last view stays (the next failures are logged at \
             debug level until one answers)",
            e.kind()
        );
    }
}

/// The pause between two heartbeats while a view settles, or after a stale one: the
/// takeover delay (a third of the membership TTL if that is shorter), so that replicas
/// agree on owners before they would take over each other's triggers.
pub(crate) fn quick_pause(shared: &Shared) -> std::time::Duration {
    shared.settings.takeover_delay.min(shared.settings.membership_ttl / 3)
}

/// Waits for the next heartbeat after the one sent at `asked`: `every` from now, or
/// [`quick_pause`] after `asked` once the view is said to be stale. `false` once the
/// scheduler starts stopping.
async fn pause(fleet: &FleetRun, asked: Timestamp, every: std::time::Duration) -> bool {
    let (shared, stopping) = (fleet.shared(), &fleet.scope.stopping);
    let soon = later(asked, quick_pause(shared));
    let next = later(shared.clock.now(), every);
    let stale = fleet.state.membership.stale();
    tokio::select! {
        () = shared.clock.sleep_until(next) => true,
        () = async {
            stale.notified().await;
            shared.clock.sleep_until(soon).await;
        } => true,
        () = stopping.cancelled() => false,
    }
}

/// Adds the members of `view` missing from `known`.
fn seen(known: &mut Vec<Arc<str>>, view: &[Arc<str>]) {
    for member in view {
        if !known.contains(member) {
            known.push(member.clone());
        }
    }
}

/// Takes over the unstarted claims of each member of `known` (the last view vouched for,
/// and every member seen since) missing from the view vouched for now, if this replica
/// can vouch for one now; the members to compare the next one with.
fn watch_leavers(fleet: &FleetRun, known: Vec<Arc<str>>) -> Vec<Arc<str>> {
    let shared = fleet.shared();
    let Some(now) = fleet.state.membership.vouched(shared.clock.now(), shared.settings.membership_ttl) else {
        return known;
    };
    for gone in orphans::left(&known, &now) {
        let whom = format!("{gone}, which left the fleet's membership");
        fleet.tracker.spawn(orphans::adopt(fleet.clone(), gone, whom));
    }
    now.to_vec()
}
