//! How long claims hold: the values every replica must compute identically.

use std::time::Duration;

use jiff::Timestamp;

use crate::coordinator::Hold;
use crate::job::Job;
use crate::ledger::Cause;

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
