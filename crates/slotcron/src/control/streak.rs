//! Streaks of failed triggers in a row, kept for the fleet by its [`Controls`]
//! ([`Controls::count_failure`]): what pauses a job with
//! [`pause_after_failures`](crate::JobBuilder::pause_after_failures).

#[cfg(doc)]
use super::Controls;

/// How a failed trigger left its job's streak of failed triggers in a row, as
/// [`Controls::count_failure`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailureStreak {
    /// The failed triggers in a row so far, across the fleet, this one included.
    pub failures: u64,
    /// Whether this call paused the job: the streak reached the limit and the job was not
    /// paused already.
    pub paused: bool,
}
