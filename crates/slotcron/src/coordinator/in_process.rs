use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use async_trait::async_trait;
use jiff::Timestamp;

use super::{Claim, ClaimOutcome, Coordinator, CoordinatorError, Lease, LeaseGrant, LeaseRenewal};
use crate::clock::{Clock, SystemClock};

/// The single-replica coordinator: every claim is won. Fencing tokens count the claims
/// of each job since this process started. Leases live in memory and expire on its
/// clock (default the system clock).
pub struct InProcessCoordinator {
    /// Per-job counters; the write lock is taken only for a job's first claim.
    tokens: RwLock<HashMap<String, AtomicU64>>,
    leases: Mutex<HashMap<String, HeldLease>>,
    clock: Arc<dyn Clock>,
}

struct HeldLease {
    owner: String,
    expires: Timestamp,
    cancel: bool,
}

impl fmt::Debug for InProcessCoordinator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InProcessCoordinator").finish_non_exhaustive()
    }
}

impl Default for InProcessCoordinator {
    fn default() -> Self {
        Self::with_clock(Arc::new(SystemClock))
    }
}

impl InProcessCoordinator {
    /// A coordinator for a scheduler that runs alone.
    pub fn new() -> Self {
        Self::default()
    }

    /// A coordinator whose leases expire on `clock` (a manual clock in tests).
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self { tokens: RwLock::default(), leases: Mutex::default(), clock }
    }

    fn next_token(&self, job: &str) -> u64 {
        if let Some(counter) = self.tokens.read().unwrap_or_else(|p| p.into_inner()).get(job) {
            return counter.fetch_add(1, Ordering::Relaxed) + 1;
        }
        let mut tokens = self.tokens.write().unwrap_or_else(|p| p.into_inner());
        tokens.entry(job.to_owned()).or_default().fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The job's unexpired lease, under the lock.
    fn with_lease<T>(&self, job: &str, f: impl FnOnce(&mut Option<HeldLease>, Timestamp) -> T) -> T {
        let now = self.clock.now();
        let mut leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
        let mut held = leases.remove(job).filter(|held| held.expires > now);
        let answer = f(&mut held, now);
        if let Some(held) = held {
            leases.insert(job.to_owned(), held);
        }
        answer
    }
}

#[async_trait]
impl Coordinator for InProcessCoordinator {
    async fn claim(&self, claim: &Claim<'_>) -> Result<ClaimOutcome, CoordinatorError> {
        Ok(ClaimOutcome::Won { fencing_token: self.next_token(claim.job) })
    }

    async fn acquire_lease(&self, lease: &Lease<'_>) -> Result<LeaseGrant, CoordinatorError> {
        Ok(self.with_lease(lease.job, |held, now| {
            let expires = crate::engine::later(now, lease.ttl);
            match held {
                Some(held) if held.owner != lease.owner => LeaseGrant::Held,
                Some(held) => {
                    held.expires = expires;
                    LeaseGrant::Acquired
                }
                None => {
                    *held = Some(HeldLease { owner: lease.owner.to_owned(), expires, cancel: false });
                    LeaseGrant::Acquired
                }
            }
        }))
    }

    async fn renew_lease(&self, lease: &Lease<'_>) -> Result<LeaseRenewal, CoordinatorError> {
        Ok(self.with_lease(lease.job, |held, now| match held {
            Some(held) if held.owner == lease.owner => {
                held.expires = crate::engine::later(now, lease.ttl);
                if held.cancel { LeaseRenewal::CancelRequested } else { LeaseRenewal::Renewed }
            }
            _ => LeaseRenewal::Lost,
        }))
    }

    async fn release_lease(&self, lease: &Lease<'_>) -> Result<(), CoordinatorError> {
        self.with_lease(lease.job, |held, _| {
            if held.as_ref().is_some_and(|held| held.owner == lease.owner) {
                *held = None;
            }
        });
        Ok(())
    }

    async fn cancel_lease(&self, job: &str) -> Result<bool, CoordinatorError> {
        Ok(self.with_lease(job, |held, _| match held {
            Some(held) => {
                held.cancel = true;
                true
            }
            None => false,
        }))
    }

    fn name(&self) -> &'static str {
        "in-process"
    }
}
