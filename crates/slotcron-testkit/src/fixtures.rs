//! Small values the backend crates' tests store and read back.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use slotcron::{Cause, JobState, Outcome, RunRecord};

/// A succeeded scheduled run of `job` for `trigger` (RFC 3339): instance `test`, one
/// attempt, fencing token 1, started at the trigger, 5 ms long.
///
/// # Panics
/// `trigger` is not an RFC 3339 instant.
pub fn succeeded_run(job: &str, trigger: &str) -> RunRecord {
    let trigger: Timestamp = trigger.parse().expect("an RFC 3339 test instant");
    RunRecord {
        job: Arc::from(job),
        trigger,
        instance: Arc::from("test"),
        cause: Cause::Scheduled,
        attempts: 1,
        outcome: Outcome::Succeeded,
        fencing_token: Some(1),
        started: trigger,
        duration: Duration::from_millis(5),
        error: None,
        process: None,
    }
}

/// The state of a recurring job whose last trigger, `trigger` (RFC 3339), succeeded.
///
/// # Panics
/// `trigger` is not an RFC 3339 instant.
pub fn succeeded_state(trigger: &str) -> JobState {
    JobState::of(trigger.parse().expect("an RFC 3339 test instant"), Some(Outcome::Succeeded), false)
}
