use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;

use super::{Claim, ClaimOutcome, Coordinator, CoordinatorError};

/// The single-replica coordinator: every claim is won. Fencing tokens count the claims
/// of each job since this process started.
#[derive(Debug, Default)]
pub struct InProcessCoordinator {
    /// Per-job counters; the write lock is taken only for a job's first claim.
    tokens: RwLock<HashMap<String, AtomicU64>>,
}

impl InProcessCoordinator {
    /// A coordinator for a scheduler that runs alone.
    pub fn new() -> Self {
        Self::default()
    }

    fn next_token(&self, job: &str) -> u64 {
        if let Some(counter) = self.tokens.read().unwrap_or_else(|p| p.into_inner()).get(job) {
            return counter.fetch_add(1, Ordering::Relaxed) + 1;
        }
        let mut tokens = self.tokens.write().unwrap_or_else(|p| p.into_inner());
        tokens.entry(job.to_owned()).or_default().fetch_add(1, Ordering::Relaxed) + 1
    }
}

#[async_trait]
impl Coordinator for InProcessCoordinator {
    async fn claim(&self, claim: &Claim<'_>) -> Result<ClaimOutcome, CoordinatorError> {
        Ok(ClaimOutcome::Won { fencing_token: self.next_token(claim.job) })
    }

    fn name(&self) -> &'static str {
        "in-process"
    }
}
