//! Trigger keys and how long claims hold: the values every replica must compute identically.

use std::time::Duration;

use jiff::Timestamp;

use crate::coordinator::Hold;
use crate::job::Job;
use crate::ledger::Cause;
use crate::schedule::ScheduleKind;

/// The trigger key `{job}:{trigger}`, the trigger in RFC 3339 UTC with millisecond
/// precision where needed (`backup:2024-05-17T10:00:00Z`, `tick:2024-05-17T10:00:00.500Z`);
/// the job name alone for an `after` job, whose instant differs per replica.
pub fn trigger_key(job: &str, kind: ScheduleKind, trigger: Timestamp) -> String {
    if let ScheduleKind::After(_) = kind {
        return job.to_owned();
    }
    if trigger.subsec_millisecond() == 0 {
        format!("{job}:{trigger:.0}")
    } else {
        format!("{job}:{trigger:.3}")
    }
}

/// The key of a run an operator asked for, distinct from every scheduled trigger's:
/// `{job}:manual:{instant}` for a manual run (the instant it was asked for),
/// `{job}:backfill:{trigger}` for a backfilled trigger, in the form of [`trigger_key`];
/// any other cause (a trigger caught up at a resume) has its scheduled [`trigger_key`].
pub fn request_key(job: &str, kind: ScheduleKind, cause: Cause, trigger: Timestamp) -> String {
    let tag = match cause {
        Cause::Manual => "manual",
        Cause::Backfill => "backfill",
        _ => return trigger_key(job, kind, trigger),
    };
    // The instant in trigger_key's form, whatever the schedule.
    let at = trigger_key("", ScheduleKind::Recurring, trigger);
    format!("{job}:{tag}{at}")
}

/// How long the claim of a requested run holds, from when it is made: the slot its
/// trigger starts (none for a manual run), or the run budget if longer, plus the slack;
/// an unbounded run holds its slot.
pub(crate) fn request_ttl(
    job: &Job,
    cause: Cause,
    trigger: Timestamp,
    kill_grace: Duration,
    slack: Duration,
) -> Duration {
    let slot = match cause {
        Cause::Manual => Duration::ZERO,
        _ => job
            .schedule
            .next_after(trigger)
            .and_then(|next| Duration::try_from(trigger.duration_until(next)).ok())
            .unwrap_or(Duration::ZERO),
    };
    let hold = Hold { slot, run_budget: job_run_budget(job, kill_grace, slack), slack };
    hold.after_trigger()
}

/// How long the claim of `trigger` holds ([`Hold`]): its slot up to `next` (zero for an
/// exhausted schedule), the run budget and the slack; `None` (never expires) for
/// one-shots.
pub(crate) fn claim_hold(
    trigger: Timestamp,
    next: Option<Timestamp>,
    one_shot: bool,
    run_budget: Option<Duration>,
    slack: Duration,
) -> Option<Hold> {
    if one_shot {
        return None;
    }
    let slot = next.map_or(Duration::ZERO, |next| {
        Duration::try_from(trigger.duration_until(next)).unwrap_or(Duration::ZERO)
    });
    Some(Hold { slot, run_budget, slack })
}

/// How long one run of `job` may take, all its attempts and backoffs included
/// ([`Job::run_budget`]), `kill_grace` for each attempt's grace after its timeout.
pub(crate) fn job_run_budget(job: &Job, kill_grace: Duration, slack: Duration) -> Option<Duration> {
    job.run_budget(kill_grace, slack)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_millisecond_precision_only_where_needed() {
        let kind = ScheduleKind::Recurring;
        assert_eq!(trigger_key("a", kind, "2024-05-17T10:00:00Z".parse().unwrap()), "a:2024-05-17T10:00:00Z");
        assert_eq!(
            trigger_key("a", kind, "2024-05-17T10:00:00.5Z".parse().unwrap()),
            "a:2024-05-17T10:00:00.500Z"
        );
        assert_eq!(trigger_key("a", ScheduleKind::After(Duration::ZERO), Timestamp::UNIX_EPOCH), "a");
    }

    #[test]
    fn requested_runs_have_keys_of_their_own() {
        let t: Timestamp = "2024-05-17T10:00:00.250Z".parse().unwrap();
        let kind = ScheduleKind::Recurring;
        assert_eq!(request_key("a", kind, Cause::Manual, t), "a:manual:2024-05-17T10:00:00.250Z");
        let whole: Timestamp = "2024-05-17T10:00:00Z".parse().unwrap();
        assert_eq!(request_key("a", kind, Cause::Backfill, whole), "a:backfill:2024-05-17T10:00:00Z");
        assert_eq!(request_key("a", kind, Cause::CatchUp, whole), trigger_key("a", kind, whole));
    }

    #[test]
    fn a_recurring_claim_holds_for_its_slot_budget_and_slack_and_a_one_shot_forever() {
        let t: Timestamp = "2024-05-17T10:00:00Z".parse().unwrap();
        let (next, slack, budget) =
            (t + Duration::from_secs(60), Duration::from_secs(5), Some(Duration::from_secs(9)));
        let hold = Hold { slot: Duration::from_secs(60), run_budget: budget, slack };
        assert_eq!(claim_hold(t, Some(next), false, budget, slack), Some(hold));
        assert_eq!(claim_hold(t, Some(next), true, budget, slack), None);
        assert_eq!(claim_hold(t, None, false, budget, slack), Some(Hold { slot: Duration::ZERO, ..hold }));
    }
}
