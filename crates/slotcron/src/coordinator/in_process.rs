use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::{Claim, ClaimOutcome, Coordinator, CoordinatorError};

/// The single-replica coordinator: every claim is won. Fencing tokens count the claims
/// of each job since this process started.
#[derive(Debug, Default)]
pub struct InProcessCoordinator {
    tokens: Mutex<HashMap<String, u64>>,
}

impl InProcessCoordinator {
    /// A coordinator for a scheduler that runs alone.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl Coordinator for InProcessCoordinator {
    async fn claim(&self, claim: &Claim<'_>) -> Result<ClaimOutcome, CoordinatorError> {
        let mut tokens = self.tokens.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let token = match tokens.get_mut(claim.job) {
            Some(token) => token,
            None => tokens.entry(claim.job.to_owned()).or_default(),
        };
        *token += 1;
        Ok(ClaimOutcome::Won { fencing_token: *token })
    }

    fn name(&self) -> &'static str {
        "in-process"
    }
}
