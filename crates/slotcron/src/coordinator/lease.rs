//! The per-job lease beside the claim: its promises are on [`Coordinator`](super::Coordinator), "Leases".

use std::time::Duration;

/// The default lease TTL: how long a dead owner can block its job.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(15);

/// How often a lease of `ttl` is renewed: a third of its TTL, so two renewals in a row
/// may fail (a slow backend) before it expires.
pub(crate) fn heartbeat(ttl: Duration) -> Duration {
    (ttl / 3).max(Duration::from_millis(1))
}

/// One owner's lease on one job.
#[derive(Debug, Clone, Copy)]
pub struct Lease<'a> {
    /// The job's name; a backend keys the lease by it in its own namespace.
    pub job: &'a str,
    /// Who holds it: unique per run (the engine uses the instance id and the trigger
    /// key), so a later run of the same replica is another owner.
    pub owner: &'a str,
    /// How long the lease holds after being acquired or renewed.
    pub ttl: Duration,
}

/// The answer to [`acquire_lease`](super::Coordinator::acquire_lease).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseGrant {
    /// The caller holds the lease now (it was free, expired, or already the caller's).
    Acquired,
    /// Another owner holds it.
    Held,
}

/// The answer to [`renew_lease`](super::Coordinator::renew_lease).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseRenewal {
    /// Still the caller's, for another TTL.
    Renewed,
    /// Still the caller's, for another TTL, but a `replace` asked its run to stop.
    CancelRequested,
    /// No longer the caller's (expired, or deleted and taken by another owner).
    Lost,
}
