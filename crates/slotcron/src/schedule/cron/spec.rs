//! The compiled form of a cron expression: one bit set per field, plus the day rules.

use jiff::civil::Date;

/// Bits 1..=31 of a day mask.
const ALL_DAYS: u64 = 0xFFFF_FFFE;

/// `WEEK_DAYS[k]`: the days d of a month with `(d - 1) % 7 == k`, i.e. the days that
/// fall `k` days of the week after the 1st.
const WEEK_DAYS: [u64; 7] = {
    let mut table = [0u64; 7];
    let mut day = 1;
    while day <= 31 {
        table[(day - 1) % 7] |= 1 << day;
        day += 1;
    }
    table
};

/// A compiled cron expression (not `@every`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Spec {
    /// Bit s for second s (0..=59).
    pub seconds: u64,
    /// Bit m for minute m (0..=59).
    pub minutes: u64,
    /// Bit h for hour h (0..=23).
    pub hours: u64,
    /// Bit m for month m (1..=12).
    pub months: u64,
    pub days: DayRule,
    /// A fixed-time job in cronie's sense: the seconds (6 fields), minute and hour fields
    /// do not start with `*`. Decides the DST behaviour.
    pub fixed_time: bool,
}

/// Which days of a month match: day-of-month and day-of-week with the Vixie rule.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
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
    fn dom_is_all(&self) -> bool {
        self.dom & ALL_DAYS == ALL_DAYS
    }

    fn dow_is_all(&self) -> bool {
        self.dow == 0x7F
    }

    /// Whether every day of every month matches, so no calendar work is needed.
    fn is_every_day(&self) -> bool {
        self.and && self.dom_is_all() && self.dow_is_all()
    }

    /// The matching days of `month` in `year` as a bit set (bit d for day d).
    pub fn mask(&self, year: i16, month: i8) -> u64 {
        let Ok(first) = Date::new(year, month, 1) else {
            return 0;
        };
        let last = first.days_in_month() as u32;
        let valid = ALL_DAYS & ((1u64 << (last + 1)) - 1);
        if self.is_every_day() {
            return valid;
        }
        let first_weekday = first.weekday().to_sunday_zero_offset() as usize;
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
        let mut mask = 0;
        for weekday in 0..7 {
            // The first day of the month that falls on `weekday`, minus one.
            let shift = (weekday + 7 - first_weekday) % 7;
            if self.dow & (1 << weekday) != 0 {
                mask |= WEEK_DAYS[shift];
            }
            let mut nth = self.nth[weekday];
            while nth != 0 {
                let k = nth.trailing_zeros() as usize;
                nth &= nth - 1;
                mask |= 1 << (1 + shift + 7 * (k - 1));
            }
            if self.last_dow & (1 << weekday) != 0 {
                let first = 1 + shift as u32;
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

    fn days(mask: u64) -> Vec<u32> {
        (1..=31).filter(|d| mask & (1 << d) != 0).collect()
    }

    #[test]
    fn nth_and_last_weekday_of_a_month() {
        // May 2024 starts on a Wednesday.
        let mut rule = DayRule { and: true, dom: ALL_DAYS, ..DayRule::default() };
        rule.nth[1] = 1 << 1; // first Monday
        rule.last_dow = 1 << 5; // last Friday
        assert_eq!(days(rule.mask(2024, 5)), vec![6, 31]);
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
        assert_eq!(days(rule.mask(2024, 6)), vec![3, 28]);
    }

    #[test]
    fn or_rule_when_both_fields_are_restricted() {
        let rule = DayRule { and: false, dom: 1 << 15, dow: 1 << 1, ..DayRule::default() };
        // May 2024: Mondays are 6, 13, 20, 27.
        assert_eq!(days(rule.mask(2024, 5)), vec![6, 13, 15, 20, 27]);
    }
}
