//! Exclusion calendars — Quartz's `HolidayCalendar` and `CronCalendar`, Temporal's
//! `exclude` specs: named sets of instants at which a job does not fire
//! ([`Calendar`]), and the schedule that skips them ([`Excluding`]).

use std::collections::BTreeSet;
use std::sync::Arc;

use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp, Unit};

use super::{CronSchedule, Schedule, ScheduleDescription, ScheduleError, ScheduleKind};

/// How many excluded fire times in a row [`Excluding::next_after`] skips before it
/// takes the schedule as having no more. Each skip jumps to the end of what excluded
/// the fire time: the day, the range, or the cron expression's unit — the second or
/// minute it matches, or the whole hour or day when its finer fields are all `*`
/// (`* * * 6,7 12 *` excludes two whole days in two skips, not 172,800) — so a
/// thousand years of excluded days is about 365,000 of them.
pub const MAX_EXCLUDED_IN_A_ROW: usize = 1_000_000;

/// A named exclusion calendar: whole days, half-open ranges of wall time and cron
/// expressions, all read in the calendar's zone (UTC unless [`Calendar::in_zone`]).
///
/// A 5-field cron expression excludes each whole minute it matches, a 6-field one each
/// second it matches (Quartz's `CronCalendar`).
#[derive(Debug, Clone)]
pub struct Calendar {
    name: Arc<str>,
    zone: TimeZone,
    dates: BTreeSet<Date>,
    ranges: Vec<(DateTime, DateTime)>,
    /// Each expression, with the unit a match excludes: its own (second or minute), or
    /// the hour or day when the finer fields are all `*`.
    crons: Vec<(CronSchedule, Unit)>,
}

impl Calendar {
    /// An empty calendar named `name` (it excludes nothing yet), in UTC.
    pub fn new(name: impl Into<Arc<str>>) -> Self {
        Self {
            name: name.into(),
            zone: TimeZone::UTC,
            dates: BTreeSet::new(),
            ranges: Vec::new(),
            crons: Vec::new(),
        }
    }

    /// Reads the dates, ranges and cron expressions in `zone`.
    pub fn in_zone(mut self, zone: TimeZone) -> Self {
        self.crons =
            self.crons.into_iter().map(|(cron, unit)| (cron.with_time_zone(zone.clone()), unit)).collect();
        self.zone = zone;
        self
    }

    /// Excludes the whole day `date` (midnight to midnight in the calendar's zone).
    pub fn date(mut self, date: Date) -> Self {
        self.dates.insert(date);
        self
    }

    /// Excludes the wall times from `start` (included) to `end` (excluded).
    ///
    /// # Errors
    /// `end` not later than `start` (field `ranges`).
    pub fn range(mut self, start: DateTime, end: DateTime) -> Result<Self, ScheduleError> {
        if end <= start {
            return Err(ScheduleError::invalid("ranges", format!("{end} is not later than {start}")));
        }
        self.ranges.push((start, end));
        Ok(self)
    }

    /// Excludes each minute a 5-field `expression` matches (each second, with 6 fields;
    /// a descriptor such as `@daily` is 5 fields).
    ///
    /// # Errors
    /// An invalid expression ([`ScheduleError::Cron`]); `@every`, an interval rather
    /// than a set of instants (field `cron`).
    pub fn cron(mut self, expression: &str) -> Result<Self, ScheduleError> {
        if expression.trim_start().starts_with("@every") {
            let reason = "@every is an interval, not a set of instants: write a cron expression";
            return Err(ScheduleError::invalid("cron", reason));
        }
        let cron = CronSchedule::parse(expression)?.with_time_zone(self.zone.clone());
        self.crons.push((cron, match_unit(expression)));
        Ok(self)
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether `at` is excluded.
    pub fn excludes(&self, at: Timestamp) -> bool {
        self.excluded_until(at).is_some()
    }

    /// When the exclusion that holds `at` ends (exclusive, always after `at`); `None`
    /// when `at` is not excluded.
    pub fn excluded_until(&self, at: Timestamp) -> Option<Timestamp> {
        let local = self.zone.to_datetime(at);
        let instant = |wall: DateTime| self.zone.to_ambiguous_timestamp(wall).compatible().ok();
        let after = |end: Option<Timestamp>| {
            Some(end.filter(|end| *end > at).unwrap_or(at + SignedDuration::from_nanos(1)))
        };
        if self.dates.contains(&local.date()) {
            return after(
                local
                    .date()
                    .tomorrow()
                    .ok()
                    .and_then(|day| instant(day.to_datetime(jiff::civil::Time::midnight()))),
            );
        }
        if let Some((_, end)) = self.ranges.iter().find(|(start, end)| *start <= local && local < *end) {
            return after(instant(*end));
        }
        self.crons.iter().find_map(|(cron, unit)| {
            let (start, end) = unit_around(local, *unit)?;
            let (start, end) = (instant(start)?, instant(end)?);
            let before = start.checked_sub(SignedDuration::from_nanos(1)).ok()?;
            (cron.next_after(before) == Some(start)).then(|| after(Some(end))).flatten()
        })
    }
}

/// The unit a match of `expression` excludes: a second with 6 fields, a minute with 5,
/// widened to the hour, then the day, while the finer fields are all `*`.
fn match_unit(expression: &str) -> Unit {
    let fields: Vec<&str> = expression.split_whitespace().collect();
    let (mut unit, finer) = match fields.len() {
        6 => (Unit::Second, &fields[..3]),
        5 => (Unit::Minute, &fields[..2]),
        _ => return Unit::Minute,
    };
    for field in finer {
        if *field != "*" {
            break;
        }
        unit = match unit {
            Unit::Second => Unit::Minute,
            Unit::Minute => Unit::Hour,
            _ => Unit::Day,
        };
    }
    unit
}

/// The wall-clock `unit` (second, minute, hour or day) that `local` falls in: its start
/// and its end.
fn unit_around(local: DateTime, unit: Unit) -> Option<(DateTime, DateTime)> {
    let date = local.date();
    let (start, length) = match unit {
        Unit::Day => {
            let start = date.to_datetime(jiff::civil::Time::midnight());
            return Some((start, date.tomorrow().ok()?.to_datetime(jiff::civil::Time::midnight())));
        }
        Unit::Hour => (date.at(local.hour(), 0, 0, 0), SignedDuration::from_hours(1)),
        Unit::Minute => (date.at(local.hour(), local.minute(), 0, 0), SignedDuration::from_mins(1)),
        _ => (date.at(local.hour(), local.minute(), local.second(), 0), SignedDuration::from_secs(1)),
    };
    Some((start, start.checked_add(length).ok()?))
}

/// A schedule whose fire times that a calendar excludes are not fire times at all
/// (nothing is recorded for them): [`JobBuilder::exclude`](crate::JobBuilder::exclude).
#[derive(Debug, Clone)]
pub struct Excluding {
    inner: Arc<dyn Schedule>,
    calendars: Vec<Arc<Calendar>>,
}

impl Excluding {
    /// `inner`'s fire times, less those any of `calendars` excludes.
    pub fn new(inner: Arc<dyn Schedule>, calendars: Vec<Arc<Calendar>>) -> Self {
        Self { inner, calendars }
    }

    /// The calendar that excludes `at`, if any, and until when.
    pub fn excluded_by(&self, at: Timestamp) -> Option<(&Calendar, Timestamp)> {
        self.calendars
            .iter()
            .find_map(|calendar| calendar.excluded_until(at).map(|until| (&**calendar, until)))
    }

    /// The schedule the calendars apply to.
    pub fn inner(&self) -> &Arc<dyn Schedule> {
        &self.inner
    }
}

impl Schedule for Excluding {
    /// The inner schedule's first fire time after `after` that no calendar excludes;
    /// `None` past [`MAX_EXCLUDED_IN_A_ROW`] excluded ones in a row.
    fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        let mut from = after;
        for _ in 0..MAX_EXCLUDED_IN_A_ROW {
            let next = self.inner.next_after(from)?;
            match self.excluded_by(next) {
                None => return Some(next),
                // Past the exclusion: the first fire time at or after its end.
                Some((_, until)) => from = next.max(until.checked_sub(SignedDuration::from_nanos(1)).ok()?),
            }
        }
        None
    }

    fn kind(&self) -> ScheduleKind {
        match self.inner.kind() {
            // Fire times are no longer a fixed period apart.
            ScheduleKind::Interval { .. } => ScheduleKind::Recurring,
            kind => kind,
        }
    }

    fn describe(&self) -> ScheduleDescription {
        let inner = self.inner.describe();
        let names: Vec<&str> = self.calendars.iter().map(|calendar| calendar.name()).collect();
        let except = format!(", except in {}", names.join(", "));
        inner.followed_by(&except)
    }
}

#[cfg(test)]
mod tests {
    use jiff::civil::date;

    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn holidays() -> Arc<Calendar> {
        let berlin = TimeZone::get("Europe/Berlin").unwrap();
        let calendar = Calendar::new("holidays")
            .in_zone(berlin)
            .date(date(2026, 12, 25))
            .range(date(2026, 12, 31).at(12, 0, 0, 0), date(2027, 1, 2).at(0, 0, 0, 0))
            .unwrap()
            .cron("* * * * 0,6")
            .unwrap();
        Arc::new(calendar)
    }

    #[test]
    fn dates_ranges_and_cron_minutes_are_read_in_the_calendars_zone() {
        let calendar = holidays();
        // 2026-12-25 in Berlin is 2026-12-24T23:00Z to 2026-12-25T23:00Z.
        assert!(!calendar.excludes(at("2026-12-24T22:59:59Z")));
        assert_eq!(calendar.excluded_until(at("2026-12-24T23:00:00Z")), Some(at("2026-12-25T23:00:00Z")));
        assert_eq!(calendar.excluded_until(at("2026-12-31T11:00:00Z")), Some(at("2027-01-01T23:00:00Z")));
        assert!(!calendar.excludes(at("2026-12-31T10:59:59Z")), "the range starts at noon, Berlin");
        // Saturday 2026-12-05, Berlin time: the whole day (minute and hour are `*`).
        assert_eq!(calendar.excluded_until(at("2026-12-05T10:15:30Z")), Some(at("2026-12-05T23:00:00Z")));
        assert!(!calendar.excludes(at("2026-12-04T22:59:00Z")), "Friday 23:59 in Berlin");
        assert!(calendar.excludes(at("2026-12-04T23:00:00Z")), "Saturday 00:00 in Berlin");
    }

    #[test]
    fn six_fields_exclude_seconds_and_a_range_must_end_after_it_starts() {
        let calendar = Calendar::new("odd").cron("*/2 * * * * *").unwrap();
        assert!(calendar.excludes(at("2026-12-05T10:15:30.5Z")));
        assert!(!calendar.excludes(at("2026-12-05T10:15:31Z")));
        let backwards =
            Calendar::new("x").range(date(2026, 1, 2).at(0, 0, 0, 0), date(2026, 1, 1).at(0, 0, 0, 0));
        assert!(matches!(backwards, Err(ScheduleError::Invalid { field: "ranges", .. })));
        assert!(Calendar::new("x").cron("61 * * * *").is_err());
    }

    #[test]
    fn an_excluded_instant_is_skipped_both_ways() {
        let berlin = TimeZone::get("Europe/Berlin").unwrap();
        let daily = CronSchedule::parse("0 9 * * *").unwrap().with_time_zone(berlin);
        let schedule = Excluding::new(Arc::new(daily), vec![holidays()]);
        // Thursday the 24th, then not the 25th (a holiday), 26th and 27th (a weekend).
        assert_eq!(schedule.next_after(at("2026-12-24T00:00:00Z")), Some(at("2026-12-24T08:00:00Z")));
        assert_eq!(schedule.next_after(at("2026-12-24T08:00:00Z")), Some(at("2026-12-28T08:00:00Z")));
        assert_eq!(schedule.prev_before(at("2026-12-28T08:00:00Z")), Some(at("2026-12-24T08:00:00Z")));
        // 31st 09:00 is before the range's noon; 1st is in it, 2nd is a Saturday.
        assert_eq!(schedule.next_after(at("2026-12-30T08:00:00Z")), Some(at("2026-12-31T08:00:00Z")));
        assert_eq!(schedule.next_after(at("2026-12-31T08:00:00Z")), Some(at("2027-01-04T08:00:00Z")));
        assert!(schedule.describe().text.ends_with(", except in holidays"), "{:?}", schedule.describe());
    }

    #[test]
    fn a_cron_whose_finer_fields_are_stars_excludes_whole_hours_and_days_in_one_skip() {
        // Every second of December 6 and 7: two skips, not 172,800.
        let days = Arc::new(Calendar::new("days").cron("* * * 6,7 12 *").unwrap());
        assert_eq!(days.excluded_until(at("2026-12-06T10:15:30Z")), Some(at("2026-12-07T00:00:00Z")));
        let every_second = CronSchedule::parse("* * * * * *").unwrap();
        let schedule = Excluding::new(Arc::new(every_second.clone()), vec![days]);
        assert_eq!(schedule.next_after(at("2026-12-05T23:59:59Z")), Some(at("2026-12-08T00:00:00Z")));
        // Weekends in seconds, in a zone half an hour off UTC: local days.
        let adelaide = TimeZone::get("Australia/Adelaide").unwrap();
        let weekends = Calendar::new("weekends").in_zone(adelaide).cron("* * * * * 0,6").unwrap();
        let schedule = Excluding::new(Arc::new(every_second), vec![Arc::new(weekends)]);
        // Friday 2026-12-04 23:59:59 in Adelaide (+10:30), then Monday 00:00 there.
        assert_eq!(schedule.next_after(at("2026-12-04T13:29:58Z")), Some(at("2026-12-04T13:29:59Z")));
        assert_eq!(schedule.next_after(at("2026-12-04T13:29:59Z")), Some(at("2026-12-06T13:30:00Z")));
        // An hour: `0 * ...` is not all stars below the hour, `* 3 ...` is.
        let hour = Calendar::new("three").cron("* 3 * * *").unwrap();
        assert_eq!(hour.excluded_until(at("2026-12-05T03:59:30Z")), Some(at("2026-12-05T04:00:00Z")));
        assert_eq!(hour.excluded_until(at("2026-12-05T03:00:00Z")), Some(at("2026-12-05T04:00:00Z")));
    }

    #[test]
    fn an_every_interval_is_no_calendar() {
        let every = Calendar::new("x").cron("@every 45s");
        assert!(matches!(every, Err(ScheduleError::Invalid { field: "cron", .. })), "{every:?}");
    }

    #[test]
    fn a_schedule_excluded_for_ever_has_no_fire_time() {
        let always = Arc::new(Calendar::new("always").cron("* * * * *").unwrap());
        let every_second = CronSchedule::parse("* * * * * *").unwrap();
        let schedule = Excluding::new(Arc::new(every_second), vec![always]);
        assert_eq!(schedule.next_after(at("2026-12-05T00:00:00Z")), None);
    }
}
