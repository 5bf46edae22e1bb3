//! Trigger keys and claim TTLs: the values every replica must compute identically.

use std::time::Duration;

use jiff::Timestamp;

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

/// How long a claim must hold: until the next trigger plus `slack` (so a replica whose
/// clock is late by less than the slack still finds the claim), or `None` (never
/// expires) for one-shots and exhausted schedules.
pub fn claim_ttl(
    trigger: Timestamp,
    next: Option<Timestamp>,
    one_shot: bool,
    slack: Duration,
) -> Option<Duration> {
    if one_shot {
        return None;
    }
    let slot = Duration::try_from(trigger.duration_until(next?)).unwrap_or(Duration::ZERO);
    Some(slot + slack)
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
    fn ttl_covers_the_slot_and_the_slack() {
        let t: Timestamp = "2024-05-17T10:00:00Z".parse().unwrap();
        let next = t + Duration::from_secs(60);
        assert_eq!(claim_ttl(t, Some(next), false, Duration::from_secs(5)), Some(Duration::from_secs(65)));
        assert_eq!(claim_ttl(t, Some(next), true, Duration::from_secs(5)), None);
        assert_eq!(claim_ttl(t, None, false, Duration::from_secs(5)), None);
    }
}
