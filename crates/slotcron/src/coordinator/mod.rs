//! Coordinators arbitrate claims: for each trigger, exactly one replica wins.

mod in_process;
pub mod lease;
pub mod read_back;

pub use in_process::InProcessCoordinator;
pub use lease::{Lease, LeaseGrant, LeaseRenewal};

use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;

use crate::job::BoxError;

/// One claim on one trigger.
#[derive(Debug, Clone, Copy)]
pub struct Claim<'a> {
    /// The job's name.
    pub job: &'a str,
    /// The scheduled instant (UTC).
    pub trigger: Timestamp,
    /// The trigger key, `{job}:{trigger}` (the job name alone for `after` jobs); a
    /// backend prefixes it with its own namespace.
    pub key: &'a str,
    /// The claimant's instance id.
    pub instance: &'a str,
    /// How long the claim must hold: the slot length plus the clock-skew slack, or
    /// `None` for one-shots, whose claims never expire (unless the backend is configured
    /// with a retention).
    pub ttl: Option<Duration>,
}

/// The result of a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// This replica holds the trigger and must run it.
    Won {
        /// Grows with every won claim of the job across the fleet.
        fencing_token: u64,
    },
    /// Another replica holds the trigger.
    Lost,
}

/// Arbitrates claims between replicas.
///
/// Implementations: [`InProcessCoordinator`] (single replica), and the Redis and
/// PostgreSQL coordinators in their own crates. Each claim must be one round trip to the
/// backend, must never be released when the run ends (it marks the slot as taken), and
/// must report an error rather than guess when the outcome is unknown: the engine then
/// skips the trigger (fail closed). A networked backend whose reply can be lost reads the
/// claim back with [`read_back::claim_with_read_back`].
#[async_trait]
pub trait Coordinator: Send + Sync + 'static {
    /// Tries to claim a trigger.
    ///
    /// # Errors
    /// The backend is unreachable or the outcome is unknown.
    async fn claim(&self, claim: &Claim<'_>) -> Result<ClaimOutcome, CoordinatorError>;

    /// Takes the job's lease for `lease.owner`, or finds it held; see [`lease`] for what
    /// a lease promises. The default keeps no leases: an error, so that the overlap
    /// policies fail closed on a coordinator without them.
    ///
    /// # Errors
    /// The backend is unreachable, the outcome is unknown, or leases are not supported.
    async fn acquire_lease(&self, lease: &Lease<'_>) -> Result<LeaseGrant, CoordinatorError> {
        Err(no_leases(self.name(), lease.job))
    }

    /// Extends the caller's lease by its TTL, if it is still the caller's.
    ///
    /// # Errors
    /// As [`Coordinator::acquire_lease`]; the caller keeps renewing until its lease's TTL
    /// since the last renewal has passed, then treats it as lost.
    async fn renew_lease(&self, lease: &Lease<'_>) -> Result<LeaseRenewal, CoordinatorError> {
        Err(no_leases(self.name(), lease.job))
    }

    /// Releases the caller's lease; nothing if another owner holds it.
    ///
    /// # Errors
    /// As [`Coordinator::acquire_lease`]; the lease then expires within its TTL.
    async fn release_lease(&self, lease: &Lease<'_>) -> Result<(), CoordinatorError> {
        Err(no_leases(self.name(), lease.job))
    }

    /// Asks the holder of `job`'s lease to stop its run: its next renewal answers
    /// [`LeaseRenewal::CancelRequested`]. `false` if nobody holds the lease.
    ///
    /// # Errors
    /// As [`Coordinator::acquire_lease`].
    async fn cancel_lease(&self, job: &str) -> Result<bool, CoordinatorError> {
        Err(no_leases(self.name(), job))
    }

    /// A short name for logs: `in-process`, `redis`, `postgres`.
    fn name(&self) -> &'static str;
}

fn no_leases(coordinator: &str, job: &str) -> CoordinatorError {
    CoordinatorError::new(format!(
        "the {coordinator} coordinator keeps no leases, which job {job:?}'s overlap policy needs"
    ))
}

/// A coordinator backend failure: the claim's outcome is unknown.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CoordinatorError(#[source] pub BoxError);

impl CoordinatorError {
    /// Wraps any error.
    pub fn new(error: impl Into<BoxError>) -> Self {
        Self(error.into())
    }
}
