//! This replica in the fleet's membership: its heartbeat, and its view of the members
//! (described on [`Coordinator`](crate::Coordinator), "Membership").

use std::sync::{Arc, RwLock};

use jiff::Timestamp;

use super::{FleetRun, details, orphans, partition, placement};
use crate::clock::later;
use crate::engine::claim::within_claim_timeout;

/// This replica's last view of the fleet's membership, sorted; `None` until the first
/// heartbeat answers, and for a coordinator without a membership: every trigger is
/// then this replica's. Also whether the last heartbeat found the view of the one
/// before it (the view is *settled*): claims ahead are made only then, so that replicas
/// whose views differ while a member joins or leaves do not claim ahead of each other.
/// Beside it, since when (on the scheduler's clock) its heartbeats have answered without
/// a break: the view can say who is *gone* only once that is a full membership TTL.
#[derive(Default)]
pub(crate) struct View(RwLock<(Option<Members>, bool)>, RwLock<Option<Timestamp>>);

/// A membership view: the members' ids, sorted.
type Members = Arc<[Arc<str>]>;

impl View {
    pub fn get(&self) -> Option<Arc<[Arc<str>]>> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).0.clone()
    }

    /// Whether the view is settled (and not `None`).
    pub fn settled(&self) -> bool {
        self.0.read().unwrap_or_else(|p| p.into_inner()).1
    }

    /// The members, if this replica's heartbeats have answered without a break since
    /// `ttl` before `now` or earlier: every member then renewed its entry while this
    /// replica watched, so one missing from the view has left the membership (docs/design.md:
    /// a daemon that was disconnected judges others only after a full TTL connected).
    pub fn vouched(&self, now: Timestamp, ttl: std::time::Duration) -> Option<Members> {
        let since = (*self.1.read().unwrap_or_else(|p| p.into_inner()))?;
        (later(since, ttl) <= now).then(|| self.get()).flatten()
    }

    fn set(&self, members: Option<Arc<[Arc<str>]>>) {
        let mut view = self.0.write().unwrap_or_else(|p| p.into_inner());
        let settled = members.is_some() && view.0 == members;
        *view = (members, settled);
    }

    /// Notes a heartbeat's answer at `now`: the start of an unbroken run of answers, or
    /// (`false`) its end.
    fn answered(&self, now: Timestamp, answered: bool) {
        let mut since = self.1.write().unwrap_or_else(|p| p.into_inner());
        *since = if answered { Some(since.unwrap_or(now)) } else { None };
    }
}

/// Keeps this replica in the coordinator's membership: a heartbeat every third of the
/// membership TTL (on the scheduler's clock) until the scheduler starts stopping, then leaves it. Ends
/// at once, with the members gauge at 0, without a membership.
pub(crate) async fn heartbeat(fleet: FleetRun) {
    let (shared, stopping) = (fleet.shared(), &fleet.scope.stopping);
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
            Ok(None) => return shared.metrics.members(0),
            Ok(Some(mut members)) => {
                if !members.iter().any(|m| **m == *shared.instance) {
                    members.push(shared.instance.to_string());
                    members.sort();
                }
                shared.metrics.members(members.len());
                let members: Members = members.into_iter().map(Arc::from).collect();
                seen(&mut known, &members);
                fleet.state.membership.set(Some(members.clone()));
                placement::refresh(&fleet, &members).await;
            }
            Err(e) => {
                shared.health.coordinator_failed(&e, shared.clock.now());
                shared.metrics.backend_error("coordinator", e.kind().as_str());
                if !std::mem::replace(&mut failing, true) {
                    tracing::warn!(
                        coordinator = coordinator.name(),
                        "membership heartbeat failed ({}): {e}; the last view stays (the next failures \
                         are logged at debug level until one answers)",
                        e.kind()
                    );
                } else {
                    tracing::debug!(
                        coordinator = coordinator.name(),
                        "membership heartbeat failed again: {e}"
                    );
                }
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
        let next = later(shared.clock.now(), ttl / 3);
        tokio::select! {
            () = shared.clock.sleep_until(next) => {}
            () = stopping.cancelled() => break,
        }
    }
    if let Err(e) = within_claim_timeout(shared, coordinator.leave(&shared.instance)).await {
        tracing::warn!("leaving the membership failed: {e}; it lapses within {ttl:?}");
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
