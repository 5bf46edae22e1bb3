//! The previous fire time of any schedule, found from its next fire times alone
//! ([`Schedule::prev_before`]'s default), so that it is their exact inverse, daylight
//! saving time included.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use super::Schedule;

/// The first window looked back over: a second.
const FIRST_WINDOW: Duration = Duration::from_secs(1);

/// The last fire time of `schedule` strictly before `before`, or `None` when it has none.
///
/// Looks back over windows that double from a second until one holds a fire time (its
/// start `s` has `next_after(s) < before`), down to the earliest instant jiff knows; then
/// bisects to the nanosecond between `s` and `before` for the last `lo` whose next fire
/// time is still before `before`: that fire time is the one. About 40 + 70 calls of
/// `next_after` at most; a schedule whose `next_after` is monotone (as a schedule's must
/// be) gets `next_after(prev) >= before` with nothing firing in between, by construction.
pub(super) fn prev_by_search<S: Schedule + ?Sized>(schedule: &S, before: Timestamp) -> Option<Timestamp> {
    let fires_before = |from: Timestamp| schedule.next_after(from).is_some_and(|next| next < before);
    let mut lo = None;
    let mut window = FIRST_WINDOW;
    loop {
        let start = SignedDuration::try_from(window).ok().and_then(|w| before.checked_sub(w).ok());
        let start = start.unwrap_or(Timestamp::MIN);
        if fires_before(start) {
            lo = Some(start);
            break;
        }
        if start == Timestamp::MIN {
            break;
        }
        window = window.saturating_mul(2);
    }
    let mut lo = lo?;
    // next_after(lo) < before <= next_after(hi), or hi has no next fire time.
    let mut hi = before.checked_sub(SignedDuration::from_nanos(1)).ok()?;
    loop {
        let gap = lo.duration_until(hi);
        if gap <= SignedDuration::from_nanos(1) {
            break;
        }
        let mid = lo.checked_add(gap / 2).ok()?;
        if fires_before(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    schedule.next_after(lo)
}

#[cfg(test)]
mod tests {
    use jiff::tz::TimeZone;

    use super::*;
    use crate::schedule::{At, CronSchedule, EveryDays, Interval};

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    /// Every instant from `from` in steps of `step`, `count` of them, has a previous fire
    /// time `p < t` with `next_after(p) >= t`.
    fn assert_inverse(schedule: &dyn Schedule, from: &str, step: SignedDuration, count: i32) {
        for i in 0..count {
            let t = at(from) + step * i;
            let p = schedule.prev_before(t).unwrap_or_else(|| panic!("a fire time before {t}"));
            assert!(p < t, "prev_before({t}) = {p}");
            assert!(schedule.next_after(p).unwrap() >= t, "something fires between {p} and {t}");
        }
    }

    #[test]
    fn a_weekday_cron_looks_back_over_the_weekend_and_strictly_before() {
        let cron = CronSchedule::parse("0 9 * * 1-5").unwrap();
        assert_eq!(cron.prev_before(at("2026-12-07T08:00:00Z")), Some(at("2026-12-04T09:00:00Z")));
        assert_eq!(cron.prev_before(at("2026-12-07T09:00:00Z")), Some(at("2026-12-04T09:00:00Z")));
        assert_eq!(cron.prev_before(at("2026-12-07T09:00:00.000000001Z")), Some(at("2026-12-07T09:00:00Z")));
    }

    #[test]
    fn daylight_saving_days_are_the_inverse_of_next_after_in_berlin() {
        let zone = TimeZone::get("Europe/Berlin").unwrap();
        for expression in ["30 2 * * *", "0 * * * *", "*/20 1-3 * * *"] {
            let cron = CronSchedule::parse(expression).unwrap().with_time_zone(zone.clone());
            // Spring forward (02:00 → 03:00) and fall back (03:00 → 02:00), every 7 minutes.
            assert_inverse(&cron, "2026-03-28T22:00:00Z", SignedDuration::from_mins(7), 200);
            assert_inverse(&cron, "2026-10-24T22:00:00Z", SignedDuration::from_mins(7), 200);
        }
    }

    #[test]
    fn intervals_and_days_at_a_time_look_back_one_period() {
        let every = Interval::every(Duration::from_secs(90)).unwrap();
        assert_eq!(every.prev_before(at("2026-12-06T00:00:00Z")), Some(at("2026-12-05T23:58:30Z")));
        assert_inverse(&every, "2026-12-06T00:00:00Z", SignedDuration::from_secs(37), 100);
        let days = EveryDays::new(2).unwrap().at("04:30").unwrap();
        assert_inverse(&days, "2026-12-01T00:00:00Z", SignedDuration::from_hours(5), 50);
    }

    #[test]
    fn a_one_shot_has_a_previous_fire_time_only_once_it_has_passed() {
        let once = At::new(at("2026-12-06T12:00:00Z"));
        assert_eq!(once.prev_before(at("2026-12-06T12:00:00Z")), None);
        assert_eq!(once.prev_before(at("2026-12-06T12:00:00.000000001Z")), Some(at("2026-12-06T12:00:00Z")));
        assert_eq!(once.prev_before(at("2100-01-01T00:00:00Z")), Some(at("2026-12-06T12:00:00Z")));
    }

    #[test]
    fn a_schedule_that_never_fired_before_has_none_even_from_the_earliest_instant() {
        let cron = CronSchedule::parse("0 0 1 1 *").unwrap();
        assert_eq!(cron.prev_before(Timestamp::MIN), None);
        assert!(cron.prev_before(at("2026-01-01T00:00:00.5Z")).is_some());
    }
}
