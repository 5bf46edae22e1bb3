//! Small values the backend crates' tests store and read back.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use slotcron::{AttemptEnd, AttemptOutput, Cause, JobState, Outcome, OutputStream, RunOutput, RunRecord};

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

/// Attempt number `attempt` of a command, started at `started` and taking 1.500001 s,
/// that wrote `out` to standard output, then `err` to standard error, and ended as `end`.
pub fn attempt_output(
    attempt: u32,
    started: Timestamp,
    out: &[u8],
    err: &[u8],
    end: AttemptEnd,
) -> AttemptOutput {
    let mut kept = AttemptOutput::new(attempt, Some(started));
    kept.duration = Some(Duration::from_micros(1_500_001));
    kept.end = end;
    kept.push(OutputStream::Stdout, out);
    kept.push(OutputStream::Stderr, err);
    kept
}

/// The output of `job`'s run at `trigger` on `instance`: `attempts`.
pub fn run_output(job: &str, trigger: Timestamp, instance: &str, attempts: Vec<AttemptOutput>) -> RunOutput {
    RunOutput { job: Arc::from(job), trigger, instance: Arc::from(instance), attempts }
}
