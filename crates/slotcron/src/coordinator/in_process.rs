use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use jiff::Timestamp;

use super::{Claim, ClaimOutcome, Coordinator, CoordinatorError};
use crate::clock::{Clock, SystemClock};

/// The coordinator of the schedulers of one process: claims, their expiry and each
/// job's high-water mark (see [`Hold`](super::Hold)) kept in memory, on its own clock.
/// A scheduler alone wins every trigger once; schedulers sharing one (a clone shares
/// its claims) arbitrate between them as a networked fleet would. Fencing tokens count
/// each job's won claims since this coordinator was made.
#[derive(Clone)]
pub struct InProcessCoordinator {
    clock: Arc<dyn Clock>,
    claims: Arc<Mutex<Claims>>,
}

#[derive(Default)]
struct Claims {
    /// Trigger key → expiry (`None`: never).
    held: HashMap<String, Option<Timestamp>>,
    /// Job → (last fencing token, high-water mark).
    jobs: HashMap<String, (u64, Option<Timestamp>)>,
    /// Claims since expired ones were last removed.
    since_sweep: usize,
}

impl Claims {
    /// Expired claims are removed every this many claims, so memory stays bounded.
    const SWEEP_EVERY: usize = 1024;
}

impl std::fmt::Debug for InProcessCoordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcessCoordinator").finish_non_exhaustive()
    }
}

impl Default for InProcessCoordinator {
    fn default() -> Self {
        Self::new()
    }
}

impl InProcessCoordinator {
    /// A coordinator on the [`SystemClock`].
    pub fn new() -> Self {
        Self::with_clock(SystemClock)
    }

    /// A coordinator on `clock`: the "coordinator's clock" that claims expire on and
    /// that schedulers measure their skew against.
    pub fn with_clock(clock: impl Clock) -> Self {
        Self { clock: Arc::new(clock), claims: Arc::default() }
    }
}

#[async_trait]
impl Coordinator for InProcessCoordinator {
    async fn claim(&self, claim: &Claim<'_>) -> Result<ClaimOutcome, CoordinatorError> {
        let now = self.clock.now();
        let mut claims = self.claims.lock().unwrap_or_else(|p| p.into_inner());
        claims.since_sweep += 1;
        if claims.since_sweep >= Claims::SWEEP_EVERY {
            claims.since_sweep = 0;
            claims.held.retain(|_, expiry| expiry.is_none_or(|at| at > now));
        }
        if claims.held.get(claim.key).is_some_and(|expiry| expiry.is_none_or(|at| at > now)) {
            return Ok(ClaimOutcome::Lost);
        }
        let (fencing, mark) = claims.jobs.get(claim.job).copied().unwrap_or_default();
        let expiry = match claim.hold {
            Some(hold) if hold.refused_by_mark(mark, claim.trigger, now) => {
                return Ok(ClaimOutcome::BehindMark);
            }
            Some(hold) => Some(hold.expires_at(claim.trigger, now)),
            None => None,
        };
        let mark = match claim.hold {
            Some(_) => mark.max(Some(claim.trigger)),
            None => mark,
        };
        claims.held.insert(claim.key.to_owned(), expiry);
        claims.jobs.insert(claim.job.to_owned(), (fencing + 1, mark));
        Ok(ClaimOutcome::Won { fencing_token: fencing + 1 })
    }

    async fn time(&self) -> Result<Option<Timestamp>, CoordinatorError> {
        Ok(Some(self.clock.now()))
    }

    fn name(&self) -> &'static str {
        "in-process"
    }
}
