use jiff::civil::{Date, Time};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp, ToSpan};

use super::zone::fixed_time_instant;
use super::{Schedule, ScheduleDescription, ScheduleError};

/// Every N days at a wall-clock time in a time zone (gron's `Every(N days).At("hh:mm")`).
///
/// The days are aligned: the job fires on the local dates whose day count since
/// 1970-01-01 is a multiple of N, so every replica picks the same dates. With N = 1 it is
/// the cron expression `mm hh * * *`, with the same DST rules (cronie's fixed-time jobs):
/// a time skipped by a spring-forward gap fires right after the gap, a time repeated by
/// a fall-back overlap fires once, at its first occurrence.
#[derive(Debug, Clone, PartialEq)]
pub struct EveryDays {
    days: i32,
    time: Time,
    zone: TimeZone,
}

impl EveryDays {
    /// Every `days` days at midnight UTC; set the time with [`EveryDays::at`] and the
    /// zone with [`EveryDays::in_zone`].
    ///
    /// # Errors
    /// `days` is zero or more than 100,000.
    pub fn new(days: u32) -> Result<Self, ScheduleError> {
        if !(1..=100_000).contains(&days) {
            return Err(ScheduleError::invalid(
                "every",
                format!("the day count must be 1 to 100000, got {days}"),
            ));
        }
        Ok(Self { days: days as i32, time: Time::midnight(), zone: TimeZone::UTC })
    }

    /// Fires at `hh:mm` (24-hour clock, e.g. `"09:30"`) or `hh:mm:ss`.
    ///
    /// # Errors
    /// `time` is not a valid 24-hour wall-clock time.
    pub fn at(self, time: &str) -> Result<Self, ScheduleError> {
        let parsed = parse_time(time).ok_or_else(|| {
            ScheduleError::invalid("at", format!("expected a time of day as hh:mm, got {time:?}"))
        })?;
        Ok(Self { time: parsed, ..self })
    }

    /// Evaluates the wall-clock time in `zone` instead of UTC.
    pub fn in_zone(self, zone: TimeZone) -> Self {
        Self { zone, ..self }
    }

    /// The zone the wall-clock time is read in.
    pub fn time_zone(&self) -> &TimeZone {
        &self.zone
    }

    fn is_aligned(&self, date: Date) -> bool {
        let epoch = Date::constant(1970, 1, 1);
        let days = date.duration_since(epoch).as_secs().div_euclid(86_400);
        days.rem_euclid(i64::from(self.days)) == 0
    }
}

fn parse_time(text: &str) -> Option<Time> {
    let mut parts = text.split(':');
    let mut number = |max: i8| -> Option<i8> {
        let part = parts.next()?;
        if part.is_empty() || part.len() > 2 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let value: i8 = part.parse().ok()?;
        (value <= max).then_some(value)
    };
    let (hour, minute) = (number(23)?, number(59)?);
    let second = match text.matches(':').count() {
        1 => 0,
        2 => number(59)?,
        _ => return None,
    };
    Time::new(hour, minute, second, 0).ok()
}

impl Schedule for EveryDays {
    fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        // A fire on the previous local date can land after `after` when a gap pushes it
        // forwards, so start the search one day early.
        let mut date = self.zone.to_datetime(after).date().checked_sub(1.day()).ok()?;
        while !self.is_aligned(date) {
            date = date.tomorrow().ok()?;
        }
        let step = SignedDuration::from_hours(24 * i64::from(self.days));
        loop {
            let fire = fixed_time_instant(&self.zone, date.to_datetime(self.time))?;
            if fire > after {
                return Some(fire);
            }
            date = date.checked_add(step).ok()?;
        }
    }

    fn describe(&self) -> ScheduleDescription {
        let time = self.time.strftime("%H:%M:%S").to_string();
        let time = time.strip_suffix(":00").unwrap_or(&time);
        let days = if self.days == 1 { "day".to_owned() } else { format!("{} days", self.days) };
        ScheduleDescription::new(format!("every {days} at {time}"), format!("At {time} every {days}"))
            .in_zone(&self.zone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn every_other_day_at_a_wall_time() {
        let s = EveryDays::new(2).unwrap().at("09:30").unwrap();
        // 2024-05-17 is day 19860 since the epoch: even, so aligned.
        assert_eq!(s.next_after(ts("2024-05-17T00:00:00Z")), Some(ts("2024-05-17T09:30:00Z")));
        assert_eq!(s.next_after(ts("2024-05-17T09:30:00Z")), Some(ts("2024-05-19T09:30:00Z")));
    }

    #[test]
    fn follows_the_zone_across_dst() {
        let s = EveryDays::new(1)
            .unwrap()
            .at("02:30")
            .unwrap()
            .in_zone(TimeZone::get("America/New_York").unwrap());
        assert_eq!(s.next_after(ts("2024-03-09T12:00:00-05:00")), Some(ts("2024-03-10T03:00:00-04:00")));
        assert_eq!(s.next_after(ts("2024-03-10T03:00:00-04:00")), Some(ts("2024-03-11T02:30:00-04:00")));
    }

    #[test]
    fn rejects_bad_input() {
        assert!(EveryDays::new(0).is_err());
        for bad in ["24:00", "9", "09:60", "ab:cd", "09:30:00:00", "+9:30", ""] {
            let err = EveryDays::new(1).unwrap().at(bad).unwrap_err();
            assert!(err.to_string().starts_with("at: "), "{bad}: {err}");
        }
    }
}
