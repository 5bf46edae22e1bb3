//! What operators steer a fleet by: which jobs are paused, the idempotency keys of the
//! manual runs they asked for, and the runs they asked to stop
//! ([`Scheduler::pause`](crate::Scheduler::pause),
//! [`Scheduler::trigger_now`](crate::Scheduler::trigger_now),
//! [`Scheduler::cancel`](crate::Scheduler::cancel)).
//!
//! A [`Controls`] lives where the fleet agrees: in its coordinator
//! ([`Coordinator::controls`](crate::Coordinator::controls)), or, in single-replica mode,
//! in the store ([`Store::controls`](crate::Store::controls)), so a pause survives a
//! restart.

mod error;
mod memory;
mod streak;

pub use error::ControlError;
pub use memory::MemoryControls;
pub use streak::FailureStreak;

crate::error::backend_error!(
    /// A failure of the backend that keeps the pauses and idempotency keys
    /// ([`Controls`]): its [`kind`](ControlsError::kind) and the backend's error.
    ControlsError,
    "controls"
);

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;

/// How long an idempotency key of a manual run is remembered: 24 h. A key given again
/// within it runs nothing more and answers with the first run.
pub const IDEMPOTENCY_KEY_TTL: Duration = Duration::from_secs(24 * 3600);

/// The most triggers one backfill request may run: 1,000. A longer range is refused,
/// nothing queued; split it.
pub const MAX_BACKFILL_TRIGGERS: usize = 1_000;

/// How many triggers of a refused backfill range are counted for its message, at most:
/// 100,000 (counting a long range of a short interval would take too long).
pub(crate) const MAX_BACKFILL_COUNTED: usize = 100 * MAX_BACKFILL_TRIGGERS;

/// How long a request to cancel a run another replica holds is kept for its holder to
/// find ([`Controls::request_cancel`]): 1 h. A holder cut off from the coordinator for
/// longer never sees it.
pub const CANCEL_REQUEST_TTL: Duration = Duration::from_secs(3600);

/// A request to cancel the run of `job` at `trigger`, kept in the fleet's [`Controls`]
/// for whichever replica holds the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelRequest {
    /// The job's name.
    pub job: String,
    /// The run's trigger (UTC), as its records name it.
    pub trigger: Timestamp,
    /// Who asked and why, for the run's record.
    pub reason: String,
}

/// The longest idempotency key, in bytes: 128.
pub const MAX_IDEMPOTENCY_KEY_LEN: usize = 128;

/// The paused jobs and remembered idempotency keys of a fleet (or of one replica).
///
/// Implementations: [`MemoryControls`] (the in-process coordinator's and the memory
/// store's), and those of the Redis, PostgreSQL and SQLite backends. Instants are UTC.
#[async_trait]
pub trait Controls: Send + Sync + 'static {
    /// Pauses `job` as of `at` (`Some`), or resumes it (`None`). Returns the instant it
    /// was paused at before this call, `None` if it was not paused; pausing a paused job
    /// keeps its first instant.
    ///
    /// # Errors
    /// The backend failed; the pause may or may not have changed then.
    async fn set_paused(&self, job: &str, at: Option<Timestamp>) -> Result<Option<Timestamp>, ControlsError>;

    /// When `job` was paused, `None` if it is not.
    ///
    /// # Errors
    /// The backend failed.
    async fn paused(&self, job: &str) -> Result<Option<Timestamp>, ControlsError>;

    /// Every paused job and when it was paused.
    ///
    /// # Errors
    /// The backend failed.
    async fn paused_jobs(&self) -> Result<HashMap<String, Timestamp>, ControlsError>;

    /// Remembers `key` for `ttl` as the idempotency key of `job`'s manual run at
    /// `trigger`, unless it is remembered already (atomically: of two concurrent calls
    /// with one key, one is first): then the trigger it was first given with.
    ///
    /// # Errors
    /// The backend failed.
    async fn remember_request(
        &self,
        job: &str,
        key: &str,
        trigger: Timestamp,
        ttl: Duration,
    ) -> Result<Option<Timestamp>, ControlsError>;

    /// Keeps `request` for `ttl` (measured on the backend's clock where it has one), for
    /// the replica holding the run to find ([`Controls::cancel_requests`]); a request for
    /// the same run replaces the one before. The default keeps none: an error, so that a
    /// cancel asked of a replica that does not hold the run fails rather than is lost.
    ///
    /// # Errors
    /// The backend failed, or keeps no cancel requests.
    async fn request_cancel(&self, request: &CancelRequest, ttl: Duration) -> Result<(), ControlsError> {
        let _ = ttl;
        Err(ControlsError::new(format!(
            "these controls keep no cancel requests (job {:?} at {})",
            request.job, request.trigger
        )))
    }

    /// Whether these controls keep streaks of failed triggers ([`Controls::count_failure`]);
    /// `false` (the default): a scheduler refuses jobs with
    /// [`pause_after_failures`](crate::JobBuilder::pause_after_failures).
    fn counts_failures(&self) -> bool {
        false
    }

    /// Adds a failed trigger of `job` to its streak of failed triggers in a row (one
    /// streak per job name for all who share these controls), and, atomically with it,
    /// pauses the job as of `at` with `reason` kept beside the pause
    /// ([`Controls::pause_reasons`]) when the streak reaches `pause_after` and the job is
    /// not paused already. Resuming the job ([`Controls::set_paused`] with `None`) ends
    /// its streak and drops the reason. The default keeps no streaks: an error.
    ///
    /// # Errors
    /// The backend failed (nothing may have been counted then), or keeps no streaks.
    async fn count_failure(
        &self,
        job: &str,
        pause_after: u64,
        at: Timestamp,
        reason: &str,
    ) -> Result<FailureStreak, ControlsError> {
        let _ = (pause_after, at, reason);
        Err(ControlsError::new(format!("these controls keep no streaks of failures (job {job:?})")))
    }

    /// Ends `job`'s streak of failed triggers (one of its triggers succeeded). The
    /// default keeps no streaks: nothing to do.
    ///
    /// # Errors
    /// The backend failed.
    async fn reset_failures(&self, job: &str) -> Result<(), ControlsError> {
        let _ = job;
        Ok(())
    }

    /// The reasons kept beside the pauses that have one (those
    /// [`Controls::count_failure`] made), by job. The default: none.
    ///
    /// # Errors
    /// The backend failed.
    async fn pause_reasons(&self) -> Result<HashMap<String, String>, ControlsError> {
        Ok(HashMap::new())
    }

    /// Every cancel request kept and not expired, in any order: each replica with runs in
    /// flight reads them about once a second and stops its own runs among them. The
    /// default: none.
    ///
    /// # Errors
    /// The backend failed.
    async fn cancel_requests(&self) -> Result<Vec<CancelRequest>, ControlsError> {
        Ok(Vec::new())
    }
}

/// Checks an idempotency key: 1 to [`MAX_IDEMPOTENCY_KEY_LEN`] bytes of ASCII letters,
/// digits, `.`, `_` and `-` (so that every backend can keep it in a key of its own).
///
/// # Errors
/// [`ControlError::InvalidKey`] with the reason.
pub fn check_idempotency_key(key: &str) -> Result<(), ControlError> {
    let reason = if key.is_empty() {
        "it is empty".to_owned()
    } else if key.len() > MAX_IDEMPOTENCY_KEY_LEN {
        format!("it is {} bytes long, more than {MAX_IDEMPOTENCY_KEY_LEN}", key.len())
    } else if let Some(c) = key.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        format!("{c:?} is not allowed: use ASCII letters, digits, '.', '_' and '-'")
    } else {
        return Ok(());
    };
    Err(ControlError::InvalidKey { reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idempotency_keys_are_short_and_plain() {
        assert!(check_idempotency_key("deploy-2024.05_17").is_ok());
        for bad in ["", "a:b", "a b", "é", &"x".repeat(129)] {
            assert!(matches!(check_idempotency_key(bad), Err(ControlError::InvalidKey { .. })), "{bad:?}");
        }
    }
}
