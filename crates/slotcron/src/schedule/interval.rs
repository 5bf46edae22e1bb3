use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use super::describe::Compact;
use super::{MAX_DURATION, Schedule, ScheduleDescription, ScheduleError, ScheduleKind};

/// A fixed period, anchored to the Unix epoch plus an optional offset.
///
/// Fire times are `1970-01-01T00:00:00Z + offset + k × period` for every integer `k`,
/// so every replica computes the same instants whatever its start time. With a one-hour
/// period and a 15-minute offset the job fires at :15 past every hour (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    period_ns: i128,
    offset_ns: i128,
}

impl Interval {
    /// The shortest period accepted: trigger keys have millisecond precision.
    pub const MIN_PERIOD: Duration = Duration::from_millis(1);

    /// The longest period accepted: [`MAX_DURATION`], 100 years.
    pub const MAX_PERIOD: Duration = MAX_DURATION;

    /// Fires every `period`, at multiples of it since the Unix epoch.
    ///
    /// # Errors
    /// `period` is shorter than [`Interval::MIN_PERIOD`] (one millisecond), longer than
    /// [`Interval::MAX_PERIOD`] (100 years), or not a whole number of milliseconds.
    pub fn every(period: Duration) -> Result<Self, ScheduleError> {
        if period > Self::MAX_PERIOD {
            return Err(ScheduleError::invalid(
                "every",
                format!("the period must be at most 100 years; got {}", shown(period)),
            ));
        }
        if period < Self::MIN_PERIOD || !period.subsec_nanos().is_multiple_of(1_000_000) {
            let reason = format!(
                "the period must be a whole number of milliseconds, at least 1ms; got {}",
                shown(period)
            );
            return Err(ScheduleError::invalid("every", reason));
        }
        Ok(Self { period_ns: period.as_nanos() as i128, offset_ns: 0 })
    }

    /// Shifts the anchor by `offset`; only `offset` modulo the period matters, and a
    /// negative offset counts backwards.
    ///
    /// # Errors
    /// `offset` is not a whole number of milliseconds.
    pub fn with_offset(self, offset: SignedDuration) -> Result<Self, ScheduleError> {
        if offset.subsec_nanos() % 1_000_000 != 0 {
            let reason = format!("the offset must be a whole number of milliseconds, got {offset:#}");
            return Err(ScheduleError::invalid("offset", reason));
        }
        Ok(Self { offset_ns: offset.as_nanos().rem_euclid(self.period_ns), ..self })
    }

    /// The period between fire times.
    pub fn period(&self) -> Duration {
        Duration::from_nanos(self.period_ns as u64)
    }

    /// One line of English, e.g. "Every 5 minutes, anchored to the Unix epoch".
    pub fn explain(&self) -> String {
        super::cron::explain::explain_every(self.period())
    }

    /// The latest fire time at or before `at`: the start of the slot `at` falls in.
    pub fn slot_start(&self, at: Timestamp) -> Option<Timestamp> {
        let since_anchor = at.as_nanosecond() - self.offset_ns;
        // In 64 bits when the operands fit (every instant of this era does): the same
        // result, without a 128-bit division per trigger.
        let slots = match (i64::try_from(since_anchor), i64::try_from(self.period_ns)) {
            (Ok(since), Ok(period)) => i128::from(since.div_euclid(period)),
            _ => since_anchor.div_euclid(self.period_ns),
        };
        let start = slots * self.period_ns + self.offset_ns;
        Timestamp::from_nanosecond(start).ok()
    }
}

impl Schedule for Interval {
    fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        let start = self.slot_start(after)?;
        Timestamp::from_nanosecond(start.as_nanosecond() + self.period_ns).ok()
    }

    /// The start of the slot of the nanosecond before `before`: one division, where the
    /// trait's default searches.
    fn prev_before(&self, before: Timestamp) -> Option<Timestamp> {
        self.slot_start(Timestamp::from_nanosecond(before.as_nanosecond() - 1).ok()?)
    }

    fn kind(&self) -> ScheduleKind {
        ScheduleKind::Interval { period: self.period() }
    }

    fn describe(&self) -> ScheduleDescription {
        ScheduleDescription::new(format!("every {}", Compact(self.period())), self.explain())
    }
}

/// `period` as a jobs file writes it (`0s`, `1ms 500µs`), not as `Debug` does (`0ns`).
fn shown(period: Duration) -> String {
    SignedDuration::try_from(period).map_or_else(|_| format!("{period:?}"), |d| format!("{d:#}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn every(secs: u64) -> Interval {
        Interval::every(Duration::from_secs(secs)).unwrap()
    }

    #[test]
    fn fire_times_are_anchored_to_the_epoch() {
        let every = every(90);
        assert_eq!(every.next_after(ts("2024-05-17T10:07:13Z")), Some(ts("2024-05-17T10:07:30Z")));
        assert_eq!(every.next_after(ts("2024-05-17T10:07:30Z")), Some(ts("2024-05-17T10:09:00Z")));
    }

    #[test]
    fn offset_shifts_the_anchor() {
        let quarter_past = every(3600).with_offset(SignedDuration::from_mins(15)).unwrap();
        assert_eq!(quarter_past.next_after(ts("2024-05-17T10:15:00Z")), Some(ts("2024-05-17T11:15:00Z")));
        let quarter_to = every(3600).with_offset(SignedDuration::from_mins(-15)).unwrap();
        assert_eq!(quarter_to.next_after(ts("2024-05-17T10:00:00Z")), Some(ts("2024-05-17T10:45:00Z")));
    }

    #[test]
    fn the_previous_fire_time_is_the_search_s_without_the_search() {
        let schedules = [
            every(90),
            every(3600).with_offset(SignedDuration::from_mins(-15)).unwrap(),
            Interval::every(Duration::from_millis(250)).unwrap(),
        ];
        for schedule in &schedules {
            for t in ["2024-05-17T10:07:30Z", "2024-05-17T10:07:30.000000001Z", "1969-12-31T23:59:50Z"] {
                let t = ts(t);
                for step in 0..40 {
                    let at = t + SignedDuration::from_millis(step * 137);
                    let searched = super::super::prev::prev_by_search(schedule, at);
                    assert_eq!(schedule.prev_before(at), searched, "{schedule:?} before {at}");
                }
            }
        }
    }

    #[test]
    fn before_the_epoch_still_aligns() {
        assert_eq!(every(7).next_after(ts("1969-12-31T23:59:50Z")), Some(ts("1969-12-31T23:59:53Z")));
    }

    #[test]
    fn rejects_zero_sub_millisecond_and_huge_periods() {
        for bad in [Duration::ZERO, Duration::from_micros(999), Duration::from_micros(1500), Duration::MAX] {
            let err = Interval::every(bad).unwrap_err();
            assert!(err.to_string().starts_with("every: "), "{err}");
        }
    }

    #[test]
    fn last_representable_instant_has_no_next() {
        assert_eq!(every(1).next_after(Timestamp::MAX), None);
    }
}
