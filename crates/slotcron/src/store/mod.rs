//! The store: durable per-job state and job definitions, so a process that dies does
//! not forget what it was scheduled to do.

mod definition;
mod memory;

pub use definition::{JobDefinition, ScheduleSpec};
pub use memory::MemoryStore;

use std::collections::HashMap;

use async_trait::async_trait;
use jiff::Timestamp;

use crate::control::Controls;
use crate::ledger::Outcome;

/// What the store remembers about one job (across the fleet, when the store is shared).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobState {
    /// The newest trigger handled: claimed (and run or being run), lost to another
    /// replica, or dropped by the misfire policy. After a restart the job's schedule
    /// resumes from here, so the triggers missed while down are misfires.
    pub last_trigger: Timestamp,
    /// How that trigger ended; `None` while it runs (or if the process died running it).
    pub last_outcome: Option<Outcome>,
    /// A one-shot (`at`, `after`) that was claimed: an `after` job never runs again, an
    /// `at` job not for an instant at or before `last_trigger` (moved later, it runs).
    pub one_shot_done: bool,
}

/// Durable job state and definitions.
///
/// Implementations: [`MemoryStore`] (the library's default; nothing survives the process),
/// and the SQLite and PostgreSQL stores in their own crates.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Every job's state, by job name.
    ///
    /// # Errors
    /// The backend failed.
    async fn load_states(&self) -> Result<HashMap<String, JobState>, StoreError>;

    /// Records a job's state. Never moves `last_trigger` backwards: a state older than
    /// the stored one is ignored, one for the same trigger updates the outcome (except a
    /// `skipped-lost`, which never replaces what the winner stored), and `one_shot_done`
    /// once set stays set.
    ///
    /// # Errors
    /// The backend failed.
    async fn save_state(&self, job: &str, state: &JobState) -> Result<(), StoreError>;

    /// Takes the job's next fencing token: 1 for a job's first, then one more than the
    /// last taken, kept durably so that tokens go on growing after a restart (even after
    /// `kill -9`). The scheduler takes one per run in single-replica mode and for jobs
    /// every replica runs, where no coordinator hands out tokens. Concurrent calls get
    /// distinct tokens.
    ///
    /// # Errors
    /// The backend failed.
    async fn next_fencing_token(&self, job: &str) -> Result<u64, StoreError>;

    /// Forgets a job's state, so that a job added again under this name starts from its
    /// schedule (the engine calls it when a recurring job is removed); `false` if there
    /// was none.
    ///
    /// # Errors
    /// The backend failed.
    async fn delete_state(&self, job: &str) -> Result<bool, StoreError>;

    /// Every stored job definition.
    ///
    /// # Errors
    /// The backend failed, or a stored definition cannot be read.
    async fn load_definitions(&self) -> Result<Vec<JobDefinition>, StoreError>;

    /// Stores a definition, replacing the one of the same name.
    ///
    /// # Errors
    /// The backend failed.
    async fn save_definition(&self, definition: &JobDefinition) -> Result<(), StoreError>;

    /// Deletes the definition of a job; `false` if there was none.
    ///
    /// # Errors
    /// The backend failed.
    async fn delete_definition(&self, job: &str) -> Result<bool, StoreError>;

    /// Where a scheduler without a coordinator keeps its pauses and idempotency keys, so
    /// that a pause survives a restart. `None` (the default): the store keeps none, and
    /// pausing in single-replica mode fails.
    fn controls(&self) -> Option<&dyn Controls> {
        None
    }
}

crate::error::backend_error!(
    /// A store backend failure: its [`kind`](StoreError::kind) and the backend's error.
    StoreError,
    "store"
);

/// Merges a new state into a stored one with the rules of [`Store::save_state`]; `None`
/// when the stored state must be kept as it is. For implementations.
pub fn merge_job_state(stored: Option<&JobState>, new: &JobState) -> Option<JobState> {
    let Some(stored) = stored else { return Some(new.clone()) };
    if new.last_trigger < stored.last_trigger {
        return None;
    }
    // In a shared store the replicas that lost a trigger report it too; the winner's
    // state (running, or its outcome) stands.
    if new.last_trigger == stored.last_trigger && new.last_outcome == Some(Outcome::SkippedLost) {
        return None;
    }
    let mut merged = new.clone();
    merged.one_shot_done |= stored.one_shot_done;
    if new.last_trigger == stored.last_trigger && new.last_outcome.is_none() {
        merged.last_outcome = stored.last_outcome;
    }
    (merged != *stored).then_some(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(at: &str, outcome: Option<Outcome>, done: bool) -> JobState {
        JobState { last_trigger: at.parse().unwrap(), last_outcome: outcome, one_shot_done: done }
    }

    #[test]
    fn merging_never_moves_backwards_and_keeps_done() {
        let stored = state("2024-01-01T00:01:00Z", Some(Outcome::Succeeded), true);
        assert_eq!(merge_job_state(Some(&stored), &state("2024-01-01T00:00:00Z", None, false)), None);
        assert_eq!(merge_job_state(Some(&stored), &state("2024-01-01T00:01:00Z", None, false)), None);
        assert_eq!(
            merge_job_state(Some(&stored), &state("2024-01-01T00:02:00Z", None, false)),
            Some(state("2024-01-01T00:02:00Z", None, true))
        );
        let won = state("2024-01-01T00:02:00Z", Some(Outcome::Succeeded), false);
        assert_eq!(
            merge_job_state(Some(&won), &state("2024-01-01T00:02:00Z", Some(Outcome::SkippedLost), false)),
            None
        );
        let running = state("2024-01-01T00:02:00Z", None, false);
        assert_eq!(
            merge_job_state(
                Some(&running),
                &state("2024-01-01T00:02:00Z", Some(Outcome::SkippedLost), false)
            ),
            None
        );
        assert_eq!(
            merge_job_state(Some(&running), &state("2024-01-01T00:02:00Z", Some(Outcome::Failed), false)),
            Some(state("2024-01-01T00:02:00Z", Some(Outcome::Failed), false))
        );
    }
}
