//! What this replica publishes of itself in the membership ([`MemberDetails`]), the check
//! at join that its fleet settings agree with the live members', and the fleet as the
//! membership shows it ([`Scheduler::fleet`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;

use super::{FleetRun, placement};
use crate::clock::{earlier, later};
use crate::coordinator::{Coordinator, CoordinatorError, LiveMember, MemberDetails};
use crate::engine::Scheduler;
use crate::engine::claim::within_claim_timeout;
use crate::engine::shared::Shared;

/// The [`MemberDetails::about`] entry that holds a member's runs in flight, as published
/// with its last heartbeat (when it counts metrics).
pub const RUNS_IN_FLIGHT: &str = "runs_in_flight";

/// Why [`Scheduler::check_join`] refused this replica, as a kind a caller can match on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JoinError {
    /// A live member gives one of this replica's
    /// [fleet settings](crate::SchedulerBuilder::fleet_setting) another value: the
    /// sentence names the setting, both values and the member.
    #[error("refused to join the fleet: {0}")]
    Disagrees(String),
    /// Another process is a live member under this replica's instance id: it heartbeated
    /// again while this one waited (two processes under one id would take each other's
    /// claims for their own previous process's). The sentence names the id and what the
    /// other published of itself.
    #[error("refused to join the fleet: {0}")]
    Duplicate(String),
    /// The coordinator could not be asked for its members' details.
    #[error("could not read the fleet's members: {0}")]
    Coordinator(#[from] CoordinatorError),
}

/// A member of the fleet, as [`Scheduler::fleet`] shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetMember {
    /// Its instance id.
    pub instance: String,
    /// Its last heartbeat, on the coordinator's clock (its lapse minus this scheduler's
    /// membership TTL, which every member of a fleet is meant to share).
    pub last_heartbeat: Timestamp,
    /// What it published: its settings and what it says of itself (host, version,
    /// started, admin address, [`RUNS_IN_FLIGHT`]...).
    pub details: MemberDetails,
    /// How many of this scheduler's jobs it owns (claims first) by the rendezvous order
    /// over the live members (those that carry a placed job's labels).
    pub owned_jobs: usize,
}

impl Scheduler {
    /// Checks, before [`Scheduler::run`], that every live member of the fleet shares
    /// this replica's [fleet settings](crate::SchedulerBuilder::fleet_setting), then
    /// publishes its [details](MemberDetails) (`run` publishes them again with its
    /// heartbeats). A member of the same instance id is not compared: it is this
    /// replica's previous process, which died, unless it heartbeats again within half a
    /// membership TTL of its last heartbeat, which this check then waits for (another
    /// process under the same id: refused). Without a coordinator, `Ok` at once. Two
    /// replicas that start at the same moment may both pass: the check is as good as the
    /// membership each one reads.
    ///
    /// # Errors
    /// [`JoinError::Disagrees`] or [`JoinError::Duplicate`] (fail closed: do not run),
    /// or [`JoinError::Coordinator`] when the members cannot be read or the details not
    /// published.
    pub async fn check_join(&self) -> Result<(), JoinError> {
        let shared = &self.shared;
        let Some(coordinator) = shared.coordinator.as_ref().filter(|_| shared.settings.shared_work) else {
            return Ok(());
        };
        let members = within_claim_timeout(shared, coordinator.members()).await?;
        refuse_a_duplicate(shared, coordinator.as_ref(), &members).await?;
        let ours = &shared.settings.details;
        if !ours.settings.is_empty() {
            let theirs = members.iter().filter(|member| *member.instance != *shared.instance);
            if let Some(disagreement) =
                theirs.into_iter().find_map(|m| ours.disagreement(&m.instance, &m.details))
            {
                return Err(JoinError::Disagrees(disagreement));
            }
        }
        publish(shared, &details_now(shared)).await.map_err(JoinError::from)
    }

    /// The fleet's live members as the coordinator keeps them, sorted by instance id, or
    /// `None` without a coordinator that keeps a membership (or without shared work).
    /// Each member's owned jobs are counted over this scheduler's jobs.
    ///
    /// # Errors
    /// The coordinator cannot be read.
    pub async fn fleet(&self) -> Result<Option<Vec<FleetMember>>, CoordinatorError> {
        let shared = &self.shared;
        let Some(members) = self.live_members().await? else { return Ok(None) };
        let ids: Vec<Arc<str>> = members.iter().map(|member| Arc::from(member.instance.as_str())).collect();
        let labels = placement::labels_of(&members);
        let mut owned = vec![0usize; ids.len()];
        let jobs = shared.table().jobs();
        for job in jobs {
            if let Some(owner) = placement::owner(shared, &labels, &job, &ids) {
                owned[ids.iter().position(|id| id == owner).unwrap_or_default()] += 1;
            }
        }
        let ttl = shared.settings.membership_ttl;
        Ok(Some(members.into_iter().zip(owned).map(|(member, owned)| shown(member, owned, ttl)).collect()))
    }

    /// What each live member of the fleet published ([`MemberDetails`]), by instance id:
    /// [`Scheduler::fleet`] without counting the jobs each owns, so its cost does not grow
    /// with the number of jobs. `None` as for [`Scheduler::fleet`].
    ///
    /// # Errors
    /// The coordinator cannot be read.
    pub async fn member_details(&self) -> Result<Option<BTreeMap<String, MemberDetails>>, CoordinatorError> {
        let members = self.live_members().await?;
        Ok(members.map(|members| members.into_iter().map(|m| (m.instance, m.details)).collect()))
    }

    /// The live members, or `None` as for [`Scheduler::fleet`].
    async fn live_members(&self) -> Result<Option<Vec<LiveMember>>, CoordinatorError> {
        let shared = &self.shared;
        let Some(coordinator) = shared.coordinator.as_ref().filter(|_| shared.settings.shared_work) else {
            return Ok(None);
        };
        let members = within_claim_timeout(shared, coordinator.members()).await?;
        Ok((!members.is_empty()).then_some(members))
    }
}

/// [`JoinError::Duplicate`] when `members` list this replica's instance id and that
/// member heartbeats again (its lapse moves) within half a membership TTL of its last
/// heartbeat (a third of a TTL apart, as every member's are; its last is read from its
/// lapse, this replica's TTL assumed and never later than now). Logged while it waits.
async fn refuse_a_duplicate(
    shared: &Shared,
    coordinator: &dyn Coordinator,
    members: &[LiveMember],
) -> Result<(), JoinError> {
    let Some(same) = members.iter().find(|member| *member.instance == *shared.instance) else {
        return Ok(());
    };
    let (ttl, now) = (shared.settings.membership_ttl, shared.clock.now());
    let by = later(earlier(same.lapses_at, ttl).min(now), ttl / 2);
    if by <= now {
        return Ok(());
    }
    tracing::info!(
        instance = %same.instance,
        "this instance id is a live member of the fleet: waiting until {by} to tell this replica's previous \
         process, which died, from another process under the same id"
    );
    shared.clock.sleep_until(by).await;
    let again = within_claim_timeout(shared, coordinator.members()).await?;
    match again.iter().find(|member| member.instance == same.instance) {
        Some(member) if member.lapses_at > same.lapses_at => Err(JoinError::Duplicate(format!(
            "instance {:?} is a live member of the fleet, and it heartbeated again while this process waited{}: \
             another process runs under the same instance id (two would take each other's claims for their \
             own previous process's); give each its own --instance",
            member.instance,
            about(&member.details)
        ))),
        _ => Ok(()),
    }
}

/// What `details` say of their member's host and start, for a message: ` (host H,
/// started S)`, or nothing.
fn about(details: &MemberDetails) -> String {
    let said: Vec<String> = ["host", "started"]
        .iter()
        .filter_map(|key| details.about.get(*key).map(|value| format!("{key} {value}")))
        .collect();
    if said.is_empty() { String::new() } else { format!(" ({})", said.join(", ")) }
}

/// `member` as [`Scheduler::fleet`] shows it.
fn shown(member: LiveMember, owned_jobs: usize, ttl: Duration) -> FleetMember {
    let LiveMember { instance, lapses_at, details } = member;
    FleetMember { instance, last_heartbeat: earlier(lapses_at, ttl), details, owned_jobs }
}

/// After the membership changed: logs, as an error, each live member whose fleet
/// settings differ from this replica's (one that joined while the coordinator had lost
/// the membership, e.g. a restarted Redis, passed no check at join).
pub(super) async fn recheck(fleet: &FleetRun) {
    let shared = fleet.shared();
    let (Some(coordinator), ours) = (&shared.coordinator, &shared.settings.details) else { return };
    if ours.settings.is_empty() {
        return;
    }
    let Ok(members) = within_claim_timeout(shared, coordinator.members()).await else { return };
    for member in members.iter().filter(|member| *member.instance != *shared.instance) {
        if let Some(disagreement) = ours.disagreement(&member.instance, &member.details) {
            tracing::error!(
                member = %member.instance,
                "{disagreement}: the two compute different instants for the same jobs; stop one of them"
            );
        }
    }
}

/// This replica's details now: its own, and its runs in flight.
fn details_now(shared: &Shared) -> MemberDetails {
    let mut details = shared.settings.details.clone();
    if let Some(running) = shared.metrics.running() {
        details.about.insert(RUNS_IN_FLIGHT.to_owned(), running.to_string());
    }
    details
}

/// Publishes `details`, if there is anything to say.
async fn publish(shared: &Shared, details: &MemberDetails) -> Result<(), CoordinatorError> {
    let Some(coordinator) = &shared.coordinator else { return Ok(()) };
    if *details == MemberDetails::default() {
        return Ok(());
    }
    within_claim_timeout(shared, coordinator.publish_details(&shared.instance, details)).await
}

/// What the heartbeat last published, shared with the task that publishes: the details
/// (`None` before the first, and after a failure or a heartbeat that failed) and whether
/// a publication is on its way.
#[derive(Clone, Default)]
pub(super) struct Published(Arc<Mutex<(Option<MemberDetails>, bool)>>);

impl Published {
    fn lock(&self) -> std::sync::MutexGuard<'_, (Option<MemberDetails>, bool)> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A heartbeat failed: the next one that answers publishes again.
    pub(super) fn forget(&self) {
        self.lock().0 = None;
    }
}

/// For the heartbeat: publishes this replica's details if they changed since the last
/// publication, on a task of its own, so that the heartbeat never waits for it (one at a
/// time); a failure is logged, and tried again with the next heartbeat.
pub(super) fn publish_changes(fleet: &FleetRun, published: &Published) {
    let now = details_now(fleet.shared());
    {
        let mut state = published.lock();
        if state.1 || state.0.as_ref() == Some(&now) {
            return;
        }
        state.1 = true;
    }
    let (publishing, published) = (fleet.clone(), published.clone());
    fleet.tracker.spawn(async move {
        let result = publish(publishing.shared(), &now).await;
        let mut state = published.lock();
        state.1 = false;
        state.0 = match result {
            Ok(()) => Some(now),
            Err(e) => {
                tracing::warn!("publishing this replica's details in the membership failed: {e}");
                None
            }
        };
    });
}
