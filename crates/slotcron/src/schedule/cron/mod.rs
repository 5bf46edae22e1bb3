//! Cron expressions: parsing, evaluation in an IANA time zone, and DST handling.

mod calendar;
mod error;
pub(crate) mod explain;
mod parse;
mod search;
mod shared;
mod spec;

pub use error::{CronError, CronErrorKind, CronField};

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use jiff::tz::{Offset, TimeZone};
use std::time::Duration;

use jiff::Timestamp;

use super::zone::{fixed_offset, fixed_time_instant};
use super::{Interval, Schedule, ScheduleDescription, ScheduleKind};
use parse::Parsed;
use search::Wall;
use spec::Spec;

/// A cron expression evaluated on the wall clock of a time zone (UTC unless set).
///
/// The syntax and semantics are those of `conformance/README.md` (Debian's Vixie cron,
/// as cronsim models it, plus common extensions); where peers disagree,
/// `docs/design.md` ("Schedules") decides:
///
/// - 5 fields `minute hour day-of-month month day-of-week`, or 6 with seconds first;
/// - names (`JAN`, `mon`), ranges, steps, lists, `?`, `L`, `LW`, `nW`, `nL`, `n#k`;
/// - the descriptors `@yearly @annually @monthly @weekly @daily @midnight @hourly`, and
///   `@every <duration>`, an interval anchored to the Unix epoch (the duration as
///   [`parse_duration`](crate::parse_duration) reads it: a day is 24 hours);
/// - day-of-month and day-of-week are ANDed when either starts with `*` (or is `?`),
///   ORed otherwise (Vixie cron).
///
/// DST follows cronie (Vixie cron with Red Hat's changes):
///
/// - A **fixed-time** job — one whose minute and hour fields (and seconds, with six
///   fields) do not start with `*` — fires once at the first instant after a
///   spring-forward gap for wall times inside it, and once, at the first occurrence, for
///   wall times that a fall-back overlap repeats.
/// - Every other job fires at each real instant whose wall time matches: nothing inside a
///   gap, both passes of an overlap.
///
/// ```
/// use slotcron::{CronSchedule, Schedule};
/// use jiff::{Timestamp, tz::TimeZone};
///
/// let cron = CronSchedule::parse("30 2 * * *")?
///     .with_time_zone(TimeZone::get("America/New_York")?);
/// let from: Timestamp = "2024-03-09T12:00:00-05:00".parse()?;
/// // 02:30 does not exist on 2024-03-10: the job runs right after the jump.
/// assert_eq!(cron.next_after(from), Some("2024-03-10T03:00:00-04:00".parse()?));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq)]
pub struct CronSchedule {
    expression: Box<str>,
    repr: Repr,
    zone: TimeZone,
    /// The zone's offset when it never changes (UTC, fixed offsets).
    fixed_offset: Option<Offset>,
}

#[derive(Clone, PartialEq)]
enum Repr {
    /// Shared by the schedules of the same compiled expression (`shared.rs`).
    Fields(Arc<Spec>),
    Every(Interval),
}

impl CronSchedule {
    /// Parses `expression`, evaluated in UTC until [`CronSchedule::with_time_zone`].
    ///
    /// # Errors
    /// A [`CronError`] naming the field, the offending text, its column and the reason.
    pub fn parse(expression: &str) -> Result<Self, CronError> {
        let repr = match parse::parse(expression)? {
            Parsed::Fields(spec) => Repr::Fields(shared::shared(spec)),
            Parsed::Every(period) => Repr::Every(period),
        };
        let expression = expression.trim().into();
        Ok(Self { expression, repr, zone: TimeZone::UTC, fixed_offset: Some(Offset::UTC) })
    }

    /// Evaluates the expression on the wall clock of `zone`.
    pub fn with_time_zone(self, zone: TimeZone) -> Self {
        Self { fixed_offset: fixed_offset(&zone), zone, ..self }
    }

    /// The expression as given (without surrounding white space).
    pub fn expression(&self) -> &str {
        &self.expression
    }

    /// The time zone whose wall clock the expression is matched against.
    pub fn time_zone(&self) -> &TimeZone {
        &self.zone
    }

    /// Whether this is a fixed-time job in cronie's sense (see [`CronSchedule`]).
    pub fn is_fixed_time(&self) -> bool {
        matches!(&self.repr, Repr::Fields(spec) if spec.fixed_time)
    }

    /// Fixed-time jobs: walk the wall clock from the second after `after`'s wall time;
    /// each matching wall time fires at the instant cronie gives it, the first one after
    /// `after` wins. (Starting from `after`'s own wall time, not that of the next whole
    /// second, keeps the wall times of a gap that begins right after `after`.)
    fn next_fixed_time(&self, spec: &Spec, after: Timestamp, floor: Timestamp) -> Option<Timestamp> {
        let mut from = Wall::from_datetime(self.zone.to_datetime(floor)).next_second();
        let horizon = from.horizon();
        loop {
            let wall = spec.next_match(from, horizon)?;
            let fire = fixed_time_instant(&self.zone, wall.to_datetime()?)?;
            // A wall time of a fall-back overlap whose first occurrence is already past.
            if fire > after {
                return Some(fire);
            }
            from = wall.next_second();
        }
    }

    /// Other jobs: walk the spans of constant UTC offset; within each, wall time and
    /// instant map one to one, so every matching instant is found exactly once.
    fn next_wildcard(&self, spec: &Spec, start: Timestamp) -> Option<Timestamp> {
        let mut span_start = start;
        let first = Wall::from_datetime(self.zone.to_datetime(start));
        let horizon = first.horizon();
        // The earliest match at or after `searched_from`, reused while spans move forward.
        let mut found: Option<(Wall, Wall)> = None;
        loop {
            let offset = self.zone.to_offset(span_start);
            let span_end = self.zone.following(span_start).next().map(|t| t.timestamp());
            let from = Wall::from_datetime(offset.to_datetime(span_start));
            let wall = match found {
                Some((searched_from, wall)) if searched_from <= from && from <= wall => wall,
                _ => spec.next_match(from, horizon)?,
            };
            found = Some((from, wall));
            let fire = offset.to_timestamp(wall.to_datetime()?).ok()?;
            match span_end {
                Some(end) if fire >= end => span_start = end,
                _ => return Some(fire),
            }
        }
    }
}

impl Schedule for CronSchedule {
    fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        let spec = match &self.repr {
            Repr::Every(interval) => return interval.next_after(after),
            Repr::Fields(spec) if spec.never => return None,
            Repr::Fields(spec) => spec,
        };
        // Fire times are whole seconds: search from the first whole second after `after`.
        let floor_second = after.as_second() - i64::from(after.subsec_nanosecond() < 0);
        let floor = Timestamp::from_second(floor_second).ok()?;
        let start = Timestamp::from_second(floor_second.checked_add(1)?).ok()?;
        if let Some(offset) = self.fixed_offset {
            let from = Wall::from_datetime(offset.to_datetime(start));
            let wall = spec.next_match(from, from.horizon())?;
            return offset.to_timestamp(wall.to_datetime()?).ok();
        }
        if spec.fixed_time {
            self.next_fixed_time(spec, after, floor)
        } else {
            self.next_wildcard(spec, start)
        }
    }

    fn kind(&self) -> ScheduleKind {
        match &self.repr {
            Repr::Every(interval) => interval.kind(),
            Repr::Fields(_) => ScheduleKind::Recurring,
        }
    }

    fn describe(&self) -> ScheduleDescription {
        let english = self.explain();
        match &self.repr {
            Repr::Every(_) => ScheduleDescription::new(&*self.expression, english),
            Repr::Fields(_) => ScheduleDescription::new(&*self.expression, english).in_zone(&self.zone),
        }
    }
}

impl FromStr for CronSchedule {
    type Err = CronError;

    fn from_str(expression: &str) -> Result<Self, CronError> {
        Self::parse(expression)
    }
}

impl fmt::Display for CronSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.expression)
    }
}

impl fmt::Debug for CronSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let zone = self.zone.iana_name().unwrap_or("fixed offset");
        write!(f, "CronSchedule({:?} in {zone})", self.expression)
    }
}

impl CronSchedule {
    /// One line of English describing when the schedule fires, as crontab editors show
    /// it: "At 09:30 on Monday through Friday", "Every 15 minutes between 09:00 and
    /// 17:59", "Every 5 minutes, anchored to the Unix epoch". Times are wall-clock times
    /// in the schedule's time zone, which the text does not name. Equivalent spellings
    /// read alike (`*/15` and `0,15,30,45`; `@daily` and `0 0 * * *`).
    pub fn explain(&self) -> String {
        match &self.repr {
            Repr::Fields(spec) => explain::explain(spec),
            Repr::Every(interval) => interval.explain(),
        }
    }

    /// The period of an `@every` expression, if it is one.
    pub fn every_period(&self) -> Option<Duration> {
        match &self.repr {
            Repr::Every(interval) => Some(interval.period()),
            Repr::Fields(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The engine keeps one schedule per job; its budget is 1 KB per job in all.
    #[test]
    fn a_schedule_stays_small() {
        let size = size_of::<CronSchedule>() + size_of::<Spec>();
        assert!(size <= 384, "{size} bytes");
    }
}
