//! One line of English for a compiled expression, as crontab editors show it
//! ("At 09:30 on Monday through Friday", "Every 15 minutes between 09:00 and 17:59").
//!
//! The text is derived from the compiled [`Spec`], so equivalent spellings read alike
//! (`*/15` and `0,15,30,45`, `SUN` and `7`, `@daily` and `0 0 * * *`).

use std::time::Duration;

use super::spec::{DayRule, Spec};

const MONTHS: [&str; 13] = [
    "",
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const WEEKDAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

/// The shape of one field's set of values.
#[derive(Debug, PartialEq)]
enum Set {
    /// Every value of the field.
    All,
    Single(u8),
    /// Three or more consecutive values.
    Range(u8, u8),
    /// Three or more values `start, start + step, ...` up to `end`.
    Step {
        start: u8,
        step: u8,
        end: u8,
    },
    List(Vec<u8>),
}

impl Set {
    fn of(bits: u64, min: u8, max: u8) -> Self {
        let values: Vec<u8> = (min..=max).filter(|v| bits & (1 << v) != 0).collect();
        if values.is_empty() {
            return Self::List(values);
        }
        let (first, last) = (values[0], values[values.len() - 1]);
        let step = values.get(1).map_or(0, |second| second - first);
        match values.len() {
            n if n == usize::from(max - min) + 1 => Self::All,
            1 => Self::Single(first),
            n if n >= 3 && step == 1 && usize::from(last - first) + 1 == n => Self::Range(first, last),
            n if n >= 3 && values.windows(2).all(|w| w[1] - w[0] == step) => {
                Self::Step { start: first, step, end: last }
            }
            _ => Self::List(values),
        }
    }

    /// How many values the set holds.
    fn len(&self, min: u8, max: u8) -> usize {
        match self {
            Self::All => usize::from(max - min) + 1,
            Self::Single(_) => 1,
            Self::Range(a, b) => usize::from(b - a) + 1,
            Self::Step { start, step, end } => usize::from((end - start) / step) + 1,
            Self::List(values) => values.len(),
        }
    }

    fn values(&self, min: u8, max: u8) -> Vec<u8> {
        match self {
            Self::All => (min..=max).collect(),
            Self::Single(v) => vec![*v],
            Self::Range(a, b) => (*a..=*b).collect(),
            Self::Step { start, step, end } => (*start..=*end).step_by(usize::from(*step)).collect(),
            Self::List(values) => values.clone(),
        }
    }
}

/// `a`, `a and b`, `a, b and c`.
fn join(items: &[String], last: &str) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., tail] => format!("{} {last} {tail}", init.join(", ")),
    }
}

fn numbers(values: &[u8]) -> String {
    join(&values.iter().map(u8::to_string).collect::<Vec<_>>(), "and")
}

fn ordinal(n: u8) -> String {
    let suffix = match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// `first` to `fifth`, for `w#k`.
fn nth(k: u8) -> &'static str {
    ["", "first", "second", "third", "fourth", "fifth"][usize::from(k)]
}

/// The English description of `spec`.
pub(super) fn explain(spec: &Spec) -> String {
    let mut text = time_of_day(spec);
    for part in [days(spec), months(spec)] {
        if !part.is_empty() {
            text.push(' ');
            text.push_str(&part);
        }
    }
    text
}

/// The English description of `@every <period>`.
pub(crate) fn explain_every(period: Duration) -> String {
    let mut words = Vec::new();
    let mut rest = period.as_millis();
    for (unit, size) in [("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000), ("second", 1000)] {
        if rest >= size {
            words.push(format!("{} {unit}{}", rest / size, if rest / size == 1 { "" } else { "s" }));
            rest %= size;
        }
    }
    if rest > 0 {
        words.push(format!("{rest} ms"));
    }
    // "Every minute" rather than "Every 1 minute".
    let words = match words.as_slice() {
        [one] => one.strip_prefix("1 ").unwrap_or(one).to_owned(),
        _ => words.join(" "),
    };
    format!("Every {words}, anchored to the Unix epoch")
}

fn time(hour: u8, minute: u8, second: Option<u8>) -> String {
    match second {
        Some(second) => format!("{hour:02}:{minute:02}:{second:02}"),
        None => format!("{hour:02}:{minute:02}"),
    }
}

fn time_of_day(spec: &Spec) -> String {
    let seconds = Set::of(spec.seconds, 0, 59);
    let minutes = Set::of(spec.minutes, 0, 59);
    let hours = Set::of(spec.hours, 0, 23);
    // A few exact times of day: list them.
    if let Set::Single(second) = seconds
        && !matches!(minutes, Set::All)
        && !matches!(hours, Set::All)
        && minutes.len(0, 59) * hours.len(0, 23) <= 6
    {
        let second = (second != 0).then_some(second);
        let times: Vec<String> = hours
            .values(0, 23)
            .into_iter()
            .flat_map(|h| minutes.values(0, 59).into_iter().map(move |m| time(h, m, second)))
            .collect();
        return format!("At {}", join(&times, "and"));
    }
    let mut parts = Vec::new();
    let second_part = match &seconds {
        Set::Single(0) => None,
        set => Some(repeating(set, "second", 59)),
    };
    let minute_part = match (&minutes, &second_part) {
        (Set::All, Some(_)) if matches!(seconds, Set::All | Set::Step { .. }) => None,
        (Set::All, Some(_)) => Some("of every minute".to_owned()),
        (set, Some(_)) => Some(format!("of {}", repeating(set, "minute", 59).replacen("at ", "", 1))),
        (set, None) => Some(repeating(set, "minute", 59)),
    };
    parts.extend(second_part);
    parts.extend(minute_part);
    let repeats_within_the_hour = matches!(minutes, Set::All | Set::Step { .. } | Set::Range(..));
    match hours {
        Set::All if repeats_within_the_hour => {}
        Set::All => parts.push("past every hour".into()),
        Set::Single(h) => parts.push(format!("between {h:02}:00 and {h:02}:59")),
        Set::Range(a, b) => parts.push(format!("between {a:02}:00 and {b:02}:59")),
        Set::Step { start: 0, step, end } if end + step > 23 => {
            parts.push(format!("past every {} hour", ordinal(step)));
        }
        Set::Step { start, step, end } => {
            parts.push(format!("past every {} hour from {start:02}:00 through {end:02}:59", ordinal(step)));
        }
        Set::List(values) => parts.push(format!("past hours {}", numbers(&values))),
    }
    let mut text = parts.join(" ");
    if let Some(first) = text.get(..1) {
        let upper = first.to_ascii_uppercase();
        text.replace_range(..1, &upper);
    }
    text
}

/// `every 15 minutes`, `at minute 30`, `at minutes 0 and 30`, `every minute from 10
/// through 20`.
fn repeating(set: &Set, unit: &str, max: u8) -> String {
    match set {
        Set::All => format!("every {unit}"),
        Set::Single(v) => format!("at {unit} {v}"),
        Set::Range(a, b) => format!("every {unit} from {a} through {b}"),
        Set::Step { start, step, end } if *start < *step && end + step > max => {
            let from = if *start == 0 { String::new() } else { format!(" from {unit} {start}") };
            format!("every {step} {unit}s{from}")
        }
        Set::Step { start, step, end } => format!("every {step} {unit}s from {start} through {end}"),
        Set::List(values) => format!("at {unit}s {}", numbers(values)),
    }
}

fn weekday_names(set: &Set) -> String {
    match set {
        Set::Range(a, b) => format!("{} through {}", WEEKDAYS[usize::from(*a)], WEEKDAYS[usize::from(*b)]),
        set => {
            let names: Vec<String> =
                set.values(0, 6).iter().map(|&d| WEEKDAYS[usize::from(d)].into()).collect();
            join(&names, "and")
        }
    }
}

/// The day-of-month part as a noun phrase (`day 15`, `the last weekday`), or `None`
/// when it selects every day.
fn day_of_month(rule: &DayRule) -> Option<String> {
    let mut items = Vec::new();
    if rule.dom != 0 {
        match Set::of(rule.dom, 1, 31) {
            Set::All => {}
            Set::Single(d) => items.push(format!("day {d}")),
            Set::Range(a, b) => items.push(format!("days {a} through {b}")),
            Set::Step { start: 1, step, end } if end + step > 31 => {
                items.push(format!("every {} day", ordinal(step)));
            }
            Set::Step { start, step, end } if end + step > 31 => {
                items.push(format!("every {} day from day {start}", ordinal(step)));
            }
            set => items.push(format!("days {}", numbers(&set.values(1, 31)))),
        }
    }
    if rule.last_day {
        items.push("the last day".into());
    }
    if rule.last_weekday {
        items.push("the last weekday".into());
    }
    for day in (1..=31).filter(|d| rule.nearest_weekday & (1 << d) != 0) {
        items.push(format!("the weekday nearest day {day}"));
    }
    (!items.is_empty()).then(|| format!("{} of the month", join(&items, "and")))
}

/// The day-of-week part as a noun phrase (`Monday through Friday`, `the third Friday of
/// the month`), or `None` when it selects every day.
fn day_of_week(rule: &DayRule) -> Option<String> {
    let mut items = Vec::new();
    if rule.dow != 0 && rule.dow != 0x7F {
        items.push(weekday_names(&Set::of(u64::from(rule.dow), 0, 6)));
    }
    let mut special = Vec::new();
    for (weekday, name) in WEEKDAYS.iter().enumerate() {
        for k in (1..=5).filter(|k| rule.nth[weekday] & (1 << k) != 0) {
            special.push(format!("the {} {name}", nth(k)));
        }
        if rule.last_dow & (1 << weekday) != 0 {
            special.push(format!("the last {name}"));
        }
    }
    if !special.is_empty() {
        items.push(format!("{} of the month", join(&special, "and")));
    }
    (!items.is_empty()).then(|| join(&items, "and"))
}

/// `Some((day, month))` when the days are one date of one month (`0 0 29 2 *`), which
/// reads "on February 29".
fn single_date(spec: &Spec) -> Option<(u8, u8)> {
    let rule = &spec.days;
    let plain_dom = !rule.last_day && !rule.last_weekday && rule.nearest_weekday == 0;
    let every_weekday = rule.dow == 0x7F && rule.nth == [0; 7] && rule.last_dow == 0;
    match (Set::of(rule.dom, 1, 31), Set::of(spec.months, 1, 12)) {
        (Set::Single(day), Set::Single(month)) if rule.and && plain_dom && every_weekday => {
            Some((day, month))
        }
        _ => None,
    }
}

fn days(spec: &Spec) -> String {
    if let Some((day, month)) = single_date(spec) {
        return format!("on {} {day}", MONTHS[usize::from(month)]);
    }
    let rule = &spec.days;
    match (day_of_month(rule), day_of_week(rule)) {
        (None, None) => String::new(),
        (Some(dom), None) => format!("on {dom}"),
        (None, Some(dow)) => format!("on {dow}"),
        (Some(dom), Some(dow)) if rule.and => format!("on {dom} if it falls on {dow}"),
        (Some(dom), Some(dow)) => format!("on {dom} or on {dow}"),
    }
}

fn months(spec: &Spec) -> String {
    let name = |m: u8| MONTHS[usize::from(m)].to_owned();
    match Set::of(spec.months, 1, 12) {
        // Said with the day ("on February 29"), or every month.
        _ if single_date(spec).is_some() => String::new(),
        Set::All => String::new(),
        Set::Range(a, b) => format!("in {} through {}", name(a), name(b)),
        set => format!("in {}", join(&set.values(1, 12).into_iter().map(name).collect::<Vec<_>>(), "and")),
    }
}

#[cfg(test)]
mod tests {
    use crate::schedule::CronSchedule;

    fn explain(expression: &str) -> String {
        CronSchedule::parse(expression).unwrap().explain()
    }

    #[test]
    fn fixed_times_of_day() {
        assert_eq!(explain("30 9 * * MON-FRI"), "At 09:30 on Monday through Friday");
        assert_eq!(explain("30 6 * * *"), "At 06:30");
        assert_eq!(explain("0 9,17 * * *"), "At 09:00 and 17:00");
        assert_eq!(explain("0,30 9,17 * * *"), "At 09:00, 09:30, 17:00 and 17:30");
        assert_eq!(explain("*/20 2 * * *"), "At 02:00, 02:20 and 02:40");
        assert_eq!(explain("0 22 * * 1-5"), "At 22:00 on Monday through Friday");
    }

    #[test]
    fn repeating_times() {
        assert_eq!(explain("*/15 9-17 * * *"), "Every 15 minutes between 09:00 and 17:59");
        assert_eq!(explain("* * * * *"), "Every minute");
        assert_eq!(explain("* 2 * * *"), "Every minute between 02:00 and 02:59");
        assert_eq!(explain("0 * * * *"), "At minute 0 past every hour");
        assert_eq!(explain("0 */2 * * *"), "At minute 0 past every 2nd hour");
        assert_eq!(explain("0 1-23/2 * * *"), "At minute 0 past every 2nd hour from 01:00 through 23:59");
        assert_eq!(explain("0 1-21/4 * * *"), "At 01:00, 05:00, 09:00, 13:00, 17:00 and 21:00");
        assert_eq!(explain("5/15 * * * *"), "Every 15 minutes from minute 5");
        assert_eq!(explain("10-20 * * * *"), "Every minute from 10 through 20");
        assert_eq!(explain("0,10,45 * * * *"), "At minutes 0, 10 and 45 past every hour");
    }

    #[test]
    fn six_fields() {
        assert_eq!(explain("*/10 * * * * *"), "Every 10 seconds");
        assert_eq!(explain("30 15 10 * * *"), "At 10:15:30");
        assert_eq!(explain("30 6 * * * *"), "At second 30 of minute 6 past every hour");
        assert_eq!(explain("30 * * * * *"), "At second 30 of every minute");
        assert_eq!(explain("*/5 * * * * 1"), "Every 5 seconds on Monday");
    }

    #[test]
    fn special_days() {
        assert_eq!(explain("0 0 L * *"), "At 00:00 on the last day of the month");
        assert_eq!(explain("0 0 LW * *"), "At 00:00 on the last weekday of the month");
        assert_eq!(explain("0 0 15W * *"), "At 00:00 on the weekday nearest day 15 of the month");
        assert_eq!(explain("0 0 1,15,L * *"), "At 00:00 on days 1 and 15 and the last day of the month");
        assert_eq!(explain("0 12 * * FRI#3"), "At 12:00 on the third Friday of the month");
        assert_eq!(
            explain("0 12 * * 1#1,3#3"),
            "At 12:00 on the first Monday and the third Wednesday of the month"
        );
        assert_eq!(explain("0 12 * * 5L"), "At 12:00 on the last Friday of the month");
        assert_eq!(explain("0 9 * * 7L"), "At 09:00 on the last Sunday of the month");
        assert_eq!(explain("0 0 * 2 MON#5"), "At 00:00 on the fifth Monday of the month in February");
    }

    #[test]
    fn day_of_month_and_day_of_week_follow_the_vixie_rule() {
        assert_eq!(explain("0 0 1-7 * 1"), "At 00:00 on days 1 through 7 of the month or on Monday");
        assert_eq!(explain("0 0 */2 * 1"), "At 00:00 on every 2nd day of the month if it falls on Monday");
        assert_eq!(explain("0 12 * * SAT,SUN"), "At 12:00 on Sunday and Saturday");
    }

    #[test]
    fn dates_and_months() {
        assert_eq!(explain("0 0 29 2 *"), "At 00:00 on February 29");
        assert_eq!(explain("15 14 1 * *"), "At 14:15 on day 1 of the month");
        assert_eq!(explain("0 0 * 1-3 *"), "At 00:00 in January through March");
        assert_eq!(
            explain("0 0 1 1,4,7,10 *"),
            "At 00:00 on day 1 of the month in January, April, July and October"
        );
    }

    #[test]
    fn descriptors_read_as_their_expansion() {
        assert_eq!(explain("@yearly"), "At 00:00 on January 1");
        assert_eq!(explain("@monthly"), "At 00:00 on day 1 of the month");
        assert_eq!(explain("@weekly"), "At 00:00 on Sunday");
        assert_eq!(explain("@daily"), "At 00:00");
        assert_eq!(explain("@hourly"), "At minute 0 past every hour");
    }

    #[test]
    fn every_is_anchored_to_the_epoch() {
        assert_eq!(explain("@every 5m"), "Every 5 minutes, anchored to the Unix epoch");
        assert_eq!(explain("@every 1m"), "Every minute, anchored to the Unix epoch");
        assert_eq!(explain("@every 1h30m"), "Every 1 hour 30 minutes, anchored to the Unix epoch");
        assert_eq!(explain("@every 1500ms"), "Every 1 second 500 ms, anchored to the Unix epoch");
    }

    #[test]
    fn equivalent_spellings_read_alike() {
        assert_eq!(explain("0,15,30,45 * * * *"), explain("*/15 * * * *"));
        assert_eq!(explain("0 0 * * 7"), explain("@weekly"));
    }
}
