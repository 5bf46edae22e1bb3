//! The per-job lease: the overlap guard beside the claim (DESIGN.md, "Run policies").
//!
//! A claim marks one trigger as taken and is never released; a lease marks a *job* as
//! running somewhere in the fleet, for as long as its owner renews it. The overlap
//! policies `forbid`, `buffer_one` and `replace` take the lease after winning the claim,
//! renew it by heartbeat every [`heartbeat`] while the run goes on (retries and backoffs
//! included), and release it when the run ends.
//!
//! What every [`Coordinator`](super::Coordinator) that keeps leases promises:
//! - **One owner.** While a lease is held and unexpired, every other owner's
//!   [`acquire_lease`](super::Coordinator::acquire_lease) gets [`LeaseGrant::Held`].
//! - **Renewed only by its owner**, compared atomically with the stored owner (never a
//!   blind expire): a lease that expired, or was deleted and taken by another owner, is
//!   [`LeaseRenewal::Lost`] to the first owner, who must stop its run.
//! - **Expires** [`Lease::ttl`] after its last acquisition or renewal, measured on the
//!   backend's clock, so a dead owner blocks the job for at most the TTL.
//! - **Released** only by its owner; releasing a lease one does not hold changes nothing.
//! - **Cancellation** ([`cancel_lease`](super::Coordinator::cancel_lease), for
//!   `replace`) marks the held lease so that its owner's next renewal answers
//!   [`LeaseRenewal::CancelRequested`]; the lease stays held until its owner releases
//!   it or it expires.

use std::time::Duration;

/// The default lease TTL: how long a dead owner can block its job.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(15);

/// How often a lease of `ttl` is renewed: a third of its TTL, so two renewals in a row
/// may fail (a slow backend) before it expires.
pub fn heartbeat(ttl: Duration) -> Duration {
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
