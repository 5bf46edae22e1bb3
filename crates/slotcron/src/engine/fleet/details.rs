//! What this replica publishes of itself in the membership ([`MemberDetails`]), and the
//! check at join that its fleet settings agree with the live members'.

use super::FleetRun;
use crate::coordinator::{CoordinatorError, MemberDetails};
use crate::engine::Scheduler;
use crate::engine::claim::within_claim_timeout;
use crate::engine::shared::Shared;

/// Why [`Scheduler::check_join`] refused this replica, as a kind a caller can match on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JoinError {
    /// A live member gives one of this replica's
    /// [fleet settings](crate::SchedulerBuilder::fleet_setting) another value: the
    /// sentence names the setting, both values and the member.
    #[error("refused to join the fleet: {0}")]
    Disagrees(String),
    /// The coordinator could not be asked for its members' details.
    #[error("could not read the fleet's members: {0}")]
    Coordinator(#[from] CoordinatorError),
}

impl Scheduler {
    /// Checks, before [`Scheduler::run`], that every live member of the fleet shares
    /// this replica's [fleet settings](crate::SchedulerBuilder::fleet_setting), then
    /// publishes its [details](MemberDetails) (`run` publishes them again with its
    /// first heartbeat). A member of the same instance id (this replica's previous
    /// process) is not compared. Without a coordinator, or without settings, `Ok` at
    /// once. Two replicas that start at the same moment may both pass: the check is as
    /// good as the membership each one reads.
    ///
    /// # Errors
    /// [`JoinError::Disagrees`] (fail closed: do not run), or
    /// [`JoinError::Coordinator`] when the members cannot be read or the details not
    /// published.
    pub async fn check_join(&self) -> Result<(), JoinError> {
        let shared = &self.shared;
        let Some(coordinator) = shared.coordinator.as_ref().filter(|_| shared.settings.shared_work) else {
            return Ok(());
        };
        let ours = &shared.settings.details;
        if !ours.settings.is_empty() {
            let members = within_claim_timeout(shared, coordinator.member_details()).await?;
            let theirs = members.iter().filter(|(member, _)| **member != *shared.instance);
            if let Some(disagreement) =
                theirs.into_iter().find_map(|(member, d)| ours.disagreement(member, d))
            {
                return Err(JoinError::Disagrees(disagreement));
            }
        }
        publish(shared).await.map_err(JoinError::from)
    }
}

/// Publishes this replica's details, if it has any.
pub(super) async fn publish(shared: &Shared) -> Result<(), CoordinatorError> {
    let (Some(coordinator), details) = (&shared.coordinator, &shared.settings.details) else { return Ok(()) };
    if *details == MemberDetails::default() {
        return Ok(());
    }
    within_claim_timeout(shared, coordinator.publish_details(&shared.instance, details)).await
}

/// [`publish`] for the heartbeat: a failure is logged, and tried again with the next
/// heartbeat that answers after a failed one.
pub(super) async fn publish_from(fleet: &FleetRun) -> bool {
    match publish(fleet.shared()).await {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!("publishing this replica's details in the membership failed: {e}");
            false
        }
    }
}
