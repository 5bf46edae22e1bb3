//! The search for the next matching wall-clock time, field by field on bit sets.

use jiff::civil::DateTime;

use super::calendar::YearKind;
use super::spec::Spec;

/// The Gregorian calendar repeats every 400 years (146,097 days, a whole number of
/// weeks), so a day rule that matches nothing in 400 years never matches. Real gaps reach
/// 40 years (`0 0 29 2 */7`: 2088 -> 2128).
pub(crate) const HORIZON_YEARS: i16 = 400;

/// The latest year jiff represents.
const MAX_YEAR: i16 = 9999;

/// A wall-clock time as plain numbers. Fields may overflow by one (second 60, minute
/// 60, hour 24, day 32, month 13): the search carries them into the next unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Wall {
    pub year: i16,
    pub month: i8,
    pub day: i8,
    pub hour: i8,
    pub minute: i8,
    pub second: i8,
}

impl Wall {
    pub fn from_datetime(dt: DateTime) -> Self {
        Self {
            year: dt.year(),
            month: dt.month(),
            day: dt.day(),
            hour: dt.hour(),
            minute: dt.minute(),
            second: dt.second(),
        }
    }

    /// `None` for a wall time with overflowing fields; the search never returns one.
    pub fn to_datetime(self) -> Option<DateTime> {
        DateTime::new(self.year, self.month, self.day, self.hour, self.minute, self.second, 0).ok()
    }

    /// One second later (possibly overflowing, see [`Wall`]).
    pub fn next_second(self) -> Self {
        Self { second: self.second + 1, ..self }
    }

    /// The last year a search starting here looks at.
    pub fn horizon(self) -> i16 {
        self.year.saturating_add(HORIZON_YEARS).min(MAX_YEAR)
    }
}

impl Spec {
    /// The first wall time at or after `from` that the expression matches, looking no
    /// further than the end of year `last_year`.
    pub(crate) fn next_match(&self, from: Wall, last_year: i16) -> Option<Wall> {
        let Wall { mut year, mut month, mut day, mut hour, mut minute, mut second } = from;
        let mut kind = YearKind::of(i32::from(year));
        loop {
            if year > last_year {
                return None;
            }
            // Only months with a matching day count; years without any are skipped.
            let months = u64::from(self.table.months(kind)) >> month;
            if months == 0 {
                (kind, year) = (kind.next(i32::from(year)), year + 1);
                while self.table.months(kind) == 0 && year <= last_year {
                    (kind, year) = (kind.next(i32::from(year)), year + 1);
                }
                (month, day, hour, minute, second) = (1, 1, 0, 0, 0);
                continue;
            }
            let skip = months.trailing_zeros() as i8;
            if skip > 0 {
                (month, day, hour, minute, second) = (month + skip, 1, 0, 0, 0);
            }

            let days = u64::from(self.table.days(kind, month)) >> day;
            if days == 0 {
                (month, day, hour, minute, second) = (month + 1, 1, 0, 0, 0);
                continue;
            }
            let skip = days.trailing_zeros() as i8;
            if skip > 0 {
                (day, hour, minute, second) = (day + skip, 0, 0, 0);
            }

            let hours = self.hours >> hour;
            if hours == 0 {
                (day, hour, minute, second) = (day + 1, 0, 0, 0);
                continue;
            }
            let skip = hours.trailing_zeros() as i8;
            if skip > 0 {
                (hour, minute, second) = (hour + skip, 0, 0);
            }

            let minutes = self.minutes >> minute;
            if minutes == 0 {
                (hour, minute, second) = (hour + 1, 0, 0);
                continue;
            }
            let skip = minutes.trailing_zeros() as i8;
            if skip > 0 {
                (minute, second) = (minute + skip, 0);
            }

            let seconds = self.seconds >> second;
            if seconds == 0 {
                (minute, second) = (minute + 1, 0);
                continue;
            }
            second += seconds.trailing_zeros() as i8;
            return Some(Wall { year, month, day, hour, minute, second });
        }
    }
}
