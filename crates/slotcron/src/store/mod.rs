//! The store: durable per-job state and job definitions, so a process that dies does
//! not forget what it was scheduled to do.

mod change;
mod definition;
mod memory;

pub use change::{DEFINITION_CHANGES_KEPT, DefinitionChange};
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
    /// The trigger of the job's newest successful run; `None`: none stored. Never moves
    /// backwards, and a state saved for an older trigger still updates it (a long run
    /// may end after a later trigger's state was saved).
    pub last_success: Option<Timestamp>,
    /// The trigger of the job's newest failed run ([`Outcome::is_failure`]); `None`:
    /// none stored. Kept as [`JobState::last_success`] is.
    pub last_failure: Option<Timestamp>,
}

impl JobState {
    /// The state of a job whose newest trigger handled is `last_trigger`, which ended
    /// as `last_outcome` (`None`: running): its last success or failure is that trigger
    /// when the outcome is one.
    pub fn of(last_trigger: Timestamp, last_outcome: Option<Outcome>, one_shot_done: bool) -> Self {
        let when = |yes: bool| yes.then_some(last_trigger);
        Self {
            last_trigger,
            last_outcome,
            one_shot_done,
            last_success: when(last_outcome == Some(Outcome::Succeeded)),
            last_failure: when(last_outcome.is_some_and(Outcome::is_failure)),
        }
    }
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
    /// the stored one leaves it and the outcome as they are, one for the same trigger
    /// updates the outcome (except a `skipped-lost`, which never replaces what the winner
    /// stored), and `one_shot_done` once set stays set. `last_success` and
    /// `last_failure` each keep the later of the stored and the new one, whatever the
    /// trigger.
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

    /// Stores `change.new` as the definition of `change.job` (`None`: deletes it) and
    /// keeps the change, its `old` set to the definition it replaced, among the job's
    /// changes — both or neither, in one transaction. Keeps the job's newest
    /// [`DEFINITION_CHANGES_KEPT`] changes. Returns the change as kept; `None`, changing
    /// nothing, for the deletion of a job that has no definition.
    ///
    /// # Errors
    /// The backend failed (nothing changed), or the store keeps no changes (the
    /// default).
    async fn change_definition(
        &self,
        change: DefinitionChange,
    ) -> Result<Option<DefinitionChange>, StoreError> {
        Err(StoreError::new(format!("this store keeps no record of changes (job {:?})", change.job)))
    }

    /// The changes [`Store::change_definition`] kept, newest first, at most `limit`: of
    /// the job `job`, or of every job when `None`. A job deleted keeps its changes.
    ///
    /// # Errors
    /// The backend failed, a change cannot be read, or the store keeps no changes (the
    /// default).
    async fn definition_changes(
        &self,
        job: Option<&str>,
        limit: usize,
    ) -> Result<Vec<DefinitionChange>, StoreError> {
        _ = (job, limit);
        Err(StoreError::new("this store keeps no record of changes"))
    }

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
    let mut merged = stored.clone();
    merged.last_success = stored.last_success.max(new.last_success);
    merged.last_failure = stored.last_failure.max(new.last_failure);
    // In a shared store the replicas that lost a trigger report it too; the winner's
    // state (running, or its outcome) stands.
    let same = new.last_trigger == stored.last_trigger;
    let takes_trigger =
        new.last_trigger > stored.last_trigger || (same && new.last_outcome != Some(Outcome::SkippedLost));
    if new.last_trigger >= stored.last_trigger {
        merged.one_shot_done |= new.one_shot_done;
    }
    if takes_trigger {
        merged.last_trigger = new.last_trigger;
        if !same || new.last_outcome.is_some() {
            merged.last_outcome = new.last_outcome;
        }
    }
    (merged != *stored).then_some(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(at: &str, outcome: Option<Outcome>, done: bool) -> JobState {
        JobState {
            last_success: None,
            last_failure: None,
            ..JobState::of(at.parse().unwrap(), outcome, done)
        }
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

    #[test]
    fn the_last_success_and_failure_never_move_backwards_whatever_the_trigger() {
        let at = |t: &str| t.parse::<Timestamp>().unwrap();
        let stored = JobState::of(at("2024-01-01T00:02:00Z"), None, false);
        // A long run of an older trigger ends after the newer trigger started.
        let old_success = JobState::of(at("2024-01-01T00:01:00Z"), Some(Outcome::Succeeded), false);
        let merged = merge_job_state(Some(&stored), &old_success).unwrap();
        assert_eq!((merged.last_trigger, merged.last_outcome), (stored.last_trigger, None));
        assert_eq!(merged.last_success, Some(at("2024-01-01T00:01:00Z")));
        let failed = JobState::of(at("2024-01-01T00:02:00Z"), Some(Outcome::TimedOut), false);
        let merged = merge_job_state(Some(&merged), &failed).unwrap();
        assert_eq!(merged.last_outcome, Some(Outcome::TimedOut));
        assert_eq!(merged.last_success, Some(at("2024-01-01T00:01:00Z")), "kept");
        assert_eq!(merged.last_failure, Some(at("2024-01-01T00:02:00Z")));
        assert_eq!(merge_job_state(Some(&merged), &old_success), None, "nothing newer");
    }
}
