//! Proleptic Gregorian calendar arithmetic for the search's inner loop, where going
//! through `jiff::civil::Date` (validation, then conversion) costs more than the rest
//! of a search step. The results are those of jiff's `Date::days_in_month` and
//! `Date::weekday`; the tests check them against jiff.

/// Whether `year` has a February 29th.
fn is_leap_year(year: i32) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// What the day rules need to know about a year: its length and the weekday of its
/// January 1st. Fourteen kinds of year exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct YearKind {
    pub leap: bool,
    /// 0 for Sunday to 6 for Saturday.
    pub jan_1: u8,
}

/// Days in the months of a common year before each month (index 1 for January).
const DAYS_BEFORE: [u16; 13] = [0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];

impl YearKind {
    /// The number of kinds: 2 lengths by 7 weekdays.
    pub const COUNT: usize = 14;

    pub fn of(year: i32) -> Self {
        Self { leap: is_leap_year(year), jan_1: weekday(year, 1, 1) }
    }

    /// The kind of the year after a year of this kind, which is `year`.
    pub fn next(self, year: i32) -> Self {
        Self { leap: is_leap_year(year + 1), jan_1: (self.jan_1 + 1 + u8::from(self.leap)) % 7 }
    }

    /// A dense index in `0..COUNT`.
    pub const fn index(self) -> usize {
        self.leap as usize * 7 + self.jan_1 as usize
    }

    /// The kind whose [`YearKind::index`] is `index`.
    pub const fn from_index(index: usize) -> Self {
        Self { leap: index >= 7, jan_1: (index % 7) as u8 }
    }

    /// Days in `month` (1-12).
    pub const fn days_in_month(self, month: i8) -> u8 {
        match month {
            2 => 28 + self.leap as u8,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        }
    }

    /// The weekday of the 1st of `month` (1-12), 0 for Sunday.
    pub const fn first_weekday(self, month: i8) -> u8 {
        let before = DAYS_BEFORE[month as usize] + (self.leap && month > 2) as u16;
        ((self.jan_1 as u16 + before) % 7) as u8
    }
}

/// Days from 1970-01-01 to `year`-`month`-`day` (Howard Hinnant's `days_from_civil`).
pub(crate) fn days_from_civil(year: i32, month: i8, day: i8) -> i32 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month = i32::from(month);
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + i32::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The weekday of `year`-`month`-`day`, 0 for Sunday to 6 for Saturday.
fn weekday(year: i32, month: i8, day: i8) -> u8 {
    // 1970-01-01 was a Thursday.
    (days_from_civil(year, month, day) + 4).rem_euclid(7) as u8
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::Date;

    #[test]
    fn agrees_with_jiff_on_every_first_of_month_over_two_cycles() {
        let epoch = Date::new(1970, 1, 1).unwrap();
        for year in (-400..=2400).chain([-9999, 9999]) {
            for month in 1..=12 {
                let date = Date::new(year as i16, month, 1).unwrap();
                let kind = YearKind::of(year);
                let weekday = date.weekday().to_sunday_zero_offset() as u8;
                assert_eq!(kind.days_in_month(month), date.days_in_month() as u8, "{date}");
                assert_eq!(kind.first_weekday(month), weekday, "{date}");
                let days = (date - epoch).get_days();
                assert_eq!(days_from_civil(year, month, 1), days, "{date}");
                assert_eq!(YearKind::of(year - 1).next(year - 1), kind, "{date}");
                assert_eq!(YearKind::from_index(kind.index()), kind, "{date}");
            }
        }
    }
}
