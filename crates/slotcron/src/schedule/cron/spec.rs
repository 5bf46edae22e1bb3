//! The compiled form of a cron expression: one bit set per field, plus the day rules.

use super::calendar::YearKind;

/// Bits 1..=31 of a day mask.
const ALL_DAYS: u64 = 0xFFFF_FFFE;

/// Bit 0 of each of five weeks: multiplying a week's seven bits by it repeats them.
const EVERY_WEEK: u64 = 1 | 1 << 7 | 1 << 14 | 1 << 21 | 1 << 28;

/// `MONTH_SHAPES[kind][month]`: the [`DayTable::shape`] of `month` (1-12) in a year of
/// kind `kind` ([`YearKind::index`]).
const MONTH_SHAPES: [[u8; 13]; YearKind::COUNT] = {
    let mut table = [[0; 13]; YearKind::COUNT];
    let mut kind = 0;
    while kind < YearKind::COUNT {
        let year = YearKind::from_index(kind);
        let mut month = 1;
        while month <= 12 {
            let shape = DayTable::shape(year.days_in_month(month), year.first_weekday(month));
            table[kind][month as usize] = shape as u8;
            month += 1;
        }
        kind += 1;
    }
    table
};

/// A compiled cron expression (not `@every`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Spec {
    /// Bit s for second s (0..=59).
    pub seconds: u64,
    /// Bit m for minute m (0..=59).
    pub minutes: u64,
    /// Bit h for hour h (0..=23).
    pub hours: u64,
    /// Bit m for month m (1..=12).
    pub months: u64,
    /// The day rule as written, for [`super::CronSchedule::explain`].
    pub days: DayRule,
    /// The day rule evaluated for every kind of month and year.
    pub table: DayTable,
    /// A fixed-time job in cronie's sense: the seconds (6 fields), minute and hour fields
    /// do not start with `*`. Decides the DST behaviour.
    pub fixed_time: bool,
    /// No selected month of any year has a matching day (`0 0 */31 * MON#5`).
    pub never: bool,
}

impl Spec {
    /// Compiles the fields; `days` is evaluated here once for every month shape.
    pub fn new(seconds: u64, minutes: u64, hours: u64, months: u64, days: DayRule, fixed_time: bool) -> Self {
        let table = DayTable::new(&days, months);
        let never = table.is_empty();
        Self { seconds, minutes, hours, months, days, table, fixed_time, never }
    }
}

/// The day rule evaluated ahead for the search. The matching days of a month depend
/// only on its length (28 to 31 days) and on the weekday of its 1st: 28 shapes, each
/// evaluated once at parse time, so the search pays a table look-up per month instead of
/// the rule. Likewise the selected months that have a matching day depend only on the
/// kind of year (14 kinds), which lets the search skip a year in one step.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct DayTable {
    /// Bit d for each matching day d, by [`DayTable::shape`].
    by_shape: [u32; 28],
    /// Bit m for each selected month m with a matching day, by [`YearKind::index`].
    months_by_year: [u16; YearKind::COUNT],
}

impl DayTable {
    fn new(rule: &DayRule, months: u64) -> Self {
        let mut by_shape = [0; 28];
        for length in 28..=31 {
            for first_weekday in 0..7 {
                by_shape[Self::shape(length, first_weekday)] =
                    rule.mask(u32::from(length), first_weekday) as u32;
            }
        }
        // Bit s for each shape s with a matching day.
        let shapes =
            by_shape.iter().enumerate().fold(0u32, |bits, (s, &days)| bits | u32::from(days != 0) << s);
        let mut months_by_year = [0; YearKind::COUNT];
        for (kind, months_of_kind) in months_by_year.iter_mut().enumerate() {
            *months_of_kind = (1..=12)
                .filter(|&m| months & (1 << m) != 0 && shapes & (1 << MONTH_SHAPES[kind][m]) != 0)
                .fold(0, |bits, m| bits | 1 << m);
        }
        Self { by_shape, months_by_year }
    }

    const fn shape(length: u8, first_weekday: u8) -> usize {
        (length as usize - 28) * 7 + first_weekday as usize
    }

    /// Bit m for each selected month m that has a matching day in a year of `kind`.
    pub fn months(&self, kind: YearKind) -> u16 {
        self.months_by_year[kind.index()]
    }

    /// Bit d for each matching day d of `month` in a year of `kind`.
    pub fn days(&self, kind: YearKind, month: i8) -> u32 {
        self.by_shape[usize::from(MONTH_SHAPES[kind.index()][month as usize])]
    }

    /// Whether no year has a matching day: every kind of year occurs in each 400-year
    /// cycle of the Gregorian calendar, so the expression never fires
    /// (`0 0 */31 * MON#5`).
    fn is_empty(&self) -> bool {
        self.months_by_year.iter().all(|&months| months == 0)
    }
}

/// Which days of a month match: day-of-month and day-of-week with the Vixie rule.
#[derive(Debug, Clone, PartialEq, Eq, Default, Hash)]
pub(crate) struct DayRule {
    /// Bit d for day d (1..=31).
    pub dom: u64,
    /// `L`: the last day of the month.
    pub last_day: bool,
    /// `LW`: the last weekday (Monday to Friday) of the month.
    pub last_weekday: bool,
    /// `nW`: bit n for the weekday nearest day n.
    pub nearest_weekday: u64,
    /// Bit w for weekday w (0 = Sunday..6).
    pub dow: u8,
    /// `w#k`: bit k (1..=5) of `nth[w]` for the k-th weekday w of the month.
    pub nth: [u8; 7],
    /// `wL`: bit w for the last weekday w of the month.
    pub last_dow: u8,
    /// Vixie cron: when either field starts with `*` (or is `?`) the two are ANDed,
    /// otherwise a day matching either fires.
    pub and: bool,
}

impl DayRule {
    /// The matching days of a month of `last` days whose 1st falls on `first_weekday`
    /// (0 = Sunday), as a bit set (bit d for day d).
    fn mask(&self, last: u32, first_weekday: u8) -> u64 {
        let valid = ALL_DAYS & ((1u64 << (last + 1)) - 1);
        let first_weekday = usize::from(first_weekday);
        let dom = self.dom_mask(last, first_weekday) & valid;
        let dow = self.dow_mask(last, first_weekday) & valid;
        if self.and { dom & dow } else { dom | dow }
    }

    fn dom_mask(&self, last: u32, first_weekday: usize) -> u64 {
        let mut mask = self.dom;
        if self.last_day {
            mask |= 1 << last;
        }
        let weekday_of = |day: u32| (first_weekday + day as usize - 1) % 7;
        if self.last_weekday {
            let day = match weekday_of(last) {
                0 => last - 2,
                6 => last - 1,
                _ => last,
            };
            mask |= 1 << day;
        }
        let mut nearest = self.nearest_weekday;
        while nearest != 0 {
            let day = nearest.trailing_zeros();
            nearest &= nearest - 1;
            if day <= last {
                mask |= 1 << nearest_weekday(day, last, weekday_of(day));
            }
        }
        mask
    }

    fn dow_mask(&self, last: u32, first_weekday: usize) -> u64 {
        // Day d falls on weekday (first_weekday + d - 1) % 7: rotate the weekday bits so
        // that bit d - 1 stands for day d of the first week, then repeat that week.
        let dow = u64::from(self.dow);
        let week = ((dow >> first_weekday) | (dow << (7 - first_weekday))) & 0x7F;
        let mut mask = (week * EVERY_WEEK) << 1;
        if self.last_dow == 0 && self.nth == [0; 7] {
            return mask;
        }
        for weekday in 0..7 {
            // The first day of the month that falls on `weekday`.
            let first = 1 + ((weekday + 7 - first_weekday) % 7) as u32;
            let mut nth = self.nth[weekday];
            while nth != 0 {
                let k = nth.trailing_zeros();
                nth &= nth - 1;
                mask |= 1 << (first + 7 * (k - 1));
            }
            if self.last_dow & (1 << weekday) != 0 {
                mask |= 1 << (first + 7 * ((last - first) / 7));
            }
        }
        mask
    }
}

/// Quartz's `nW`: the weekday nearest `day` within the same month. Saturday moves to
/// Friday and Sunday to Monday, except that a Saturday 1st moves to Monday the 3rd and a
/// Sunday last day moves to Friday.
fn nearest_weekday(day: u32, last: u32, weekday: usize) -> u32 {
    match weekday {
        6 if day == 1 => 3,
        6 => day - 1,
        0 if day == last => day - 2,
        0 => day + 1,
        _ => day,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The matching days of `month` in `year`.
    fn days(rule: &DayRule, year: i32, month: i8) -> Vec<u32> {
        let mask = DayTable::new(rule, 0x1FFE).days(YearKind::of(year), month);
        (1..=31).filter(|d| mask & (1 << d) != 0).collect()
    }

    #[test]
    fn nth_and_last_weekday_of_a_month() {
        // May 2024 starts on a Wednesday.
        let mut rule = DayRule { and: true, dom: ALL_DAYS, ..DayRule::default() };
        rule.nth[1] = 1 << 1; // first Monday
        rule.last_dow = 1 << 5; // last Friday
        assert_eq!(days(&rule, 2024, 5), vec![6, 31]);
    }

    #[test]
    fn last_weekday_and_nearest_weekday() {
        let rule = DayRule {
            and: true,
            last_weekday: true,
            nearest_weekday: 1 << 1,
            dow: 0x7F,
            ..DayRule::default()
        };
        // June 2024: the 1st is a Saturday (-> Monday 3rd), the 30th a Sunday (-> 28th).
        assert_eq!(days(&rule, 2024, 6), vec![3, 28]);
    }

    #[test]
    fn or_rule_when_both_fields_are_restricted() {
        let rule = DayRule { and: false, dom: 1 << 15, dow: 1 << 1, ..DayRule::default() };
        // May 2024: Mondays are 6, 13, 20, 27.
        assert_eq!(days(&rule, 2024, 5), vec![6, 13, 15, 20, 27]);
    }
}
