//! Trigger keys: the names every replica must compute identically for one trigger.

use std::cell::RefCell;
use std::fmt::Write;

use jiff::Timestamp;

use crate::ledger::Cause;
use crate::schedule::ScheduleKind;

/// The trigger key `{job}:{trigger}`, the trigger in RFC 3339 UTC with millisecond
/// precision where needed (`backup:2024-05-17T10:00:00Z`, `tick:2024-05-17T10:00:00.500Z`);
/// the job name alone for an `after` job, whose instant differs per replica.
pub fn trigger_key(job: &str, kind: ScheduleKind, trigger: Timestamp) -> String {
    if let ScheduleKind::After(_) = kind {
        return job.to_owned();
    }
    INSTANT_TEXT.with_borrow_mut(|(last, text)| {
        if *last != Some(trigger) {
            text.clear();
            let _ = if trigger.subsec_millisecond() == 0 {
                write!(text, "{trigger:.0}")
            } else {
                write!(text, "{trigger:.3}")
            };
            *last = Some(trigger);
        }
        let mut key = String::with_capacity(job.len() + 1 + text.len());
        key.push_str(job);
        key.push(':');
        key.push_str(text);
        key
    })
}

thread_local! {
    /// The last instant [`trigger_key`] wrote on this thread, and its text: the triggers of
    /// a burst share their instant, which is then formatted once, not once per key.
    static INSTANT_TEXT: RefCell<(Option<Timestamp>, String)> = const { RefCell::new((None, String::new())) };
}

/// The key of a run an operator asked for, distinct from every scheduled trigger's:
/// `{job}:manual:{instant}` for a manual run (the instant it was asked for),
/// `{job}:backfill:{trigger}` for a backfilled trigger, `{job}:recovered:{trigger}` for
/// the rerun of an interrupted trigger, in the form of [`trigger_key`];
/// any other cause (a trigger caught up at a resume) has its scheduled [`trigger_key`].
pub fn request_key(job: &str, kind: ScheduleKind, cause: Cause, trigger: Timestamp) -> String {
    let tag = match cause {
        Cause::Manual => "manual",
        Cause::Backfill => "backfill",
        Cause::Recovered => "recovered",
        _ => return trigger_key(job, kind, trigger),
    };
    // The instant in trigger_key's form, whatever the schedule.
    let at = trigger_key("", ScheduleKind::Recurring, trigger);
    format!("{job}:{tag}{at}")
}

/// What a trigger key of `job` ([`trigger_key`], [`request_key`]) says of its run: the
/// cause of a requested run (`Manual`, `Backfill`; [`Cause::Scheduled`] for a scheduled
/// trigger) and its instant (`None` for an `after` job's key, the job name alone). `None`
/// for a key not of `job`'s forms.
pub(crate) fn parse_key(job: &str, key: &str) -> Option<(Cause, Option<Timestamp>)> {
    let rest = key.strip_prefix(job)?;
    if rest.is_empty() {
        return Some((Cause::Scheduled, None));
    }
    let rest = rest.strip_prefix(':')?;
    let tagged = [Cause::Manual, Cause::Backfill, Cause::Recovered]
        .into_iter()
        .find_map(|cause| Some((cause, rest.strip_prefix(cause.as_str())?.strip_prefix(':')?)));
    let (cause, at) = tagged.unwrap_or((Cause::Scheduled, rest));
    Some((cause, Some(at.parse().ok()?)))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

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
    fn keys_of_instants_in_turn_each_have_their_own_instant() {
        let kind = ScheduleKind::Recurring;
        let (t1, t2): (Timestamp, Timestamp) =
            ("2024-05-17T10:00:00Z".parse().unwrap(), "2024-05-17T10:00:00.001Z".parse().unwrap());
        for _ in 0..2 {
            assert_eq!(trigger_key("a", kind, t1), "a:2024-05-17T10:00:00Z");
            assert_eq!(trigger_key("bb", kind, t1), "bb:2024-05-17T10:00:00Z");
            assert_eq!(trigger_key("a", kind, t2), "a:2024-05-17T10:00:00.001Z");
        }
    }

    #[test]
    fn keys_parse_back_to_their_cause_and_instant() {
        let t: Timestamp = "2024-05-17T10:00:00.250Z".parse().unwrap();
        let kind = ScheduleKind::Recurring;
        for cause in [Cause::Scheduled, Cause::Manual, Cause::Backfill, Cause::Recovered] {
            assert_eq!(parse_key("a", &request_key("a", kind, cause, t)), Some((cause, Some(t))));
        }
        assert_eq!(parse_key("a", "a"), Some((Cause::Scheduled, None)));
        assert_eq!(parse_key("a", "ab:2024-05-17T10:00:00Z"), None);
        assert_eq!(parse_key("a", "a:not-an-instant"), None);
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
}
