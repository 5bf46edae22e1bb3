//! Text to [`Spec`]: the cron syntax of `conformance/README.md` (Vixie cron plus the
//! Quartz day forms `L`, `LW`, `nW`, `nL`, `n#k`, and the descriptors).

use std::ops::Range;

use super::error::{CronError, CronErrorKind, CronField};
use super::spec::{DayRule, Spec};
use crate::schedule::{Interval, ScheduleError, parse_duration};

/// A parsed expression: fields, or `@every <duration>`.
#[derive(Debug)]
pub(super) enum Parsed {
    Fields(Spec),
    Every(Interval),
}

const MONTHS: [&str; 12] =
    ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
const DAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// Days in each month, counting February as 29 (for the impossible-day check).
const MAX_DAYS: [u8; 13] = [0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

pub(super) fn parse(expression: &str) -> Result<Parsed, CronError> {
    Parser { expression }.parse()
}

struct Parser<'a> {
    expression: &'a str,
}

/// One field's text and where it starts in the expression.
#[derive(Clone, Copy)]
struct Text<'a> {
    field: CronField,
    text: &'a str,
    at: usize,
}

impl<'a> Text<'a> {
    fn span(&self) -> Range<usize> {
        self.at..self.at + self.text.len()
    }

    fn starts_with_star(&self) -> bool {
        self.text.starts_with('*') || self.text == "?"
    }
}

/// The fields of an expression, split at runs of white space, with their byte offsets;
/// the count goes on past the seven kept.
struct Tokens<'a> {
    kept: [(&'a str, usize); 7],
    count: usize,
}

impl<'a> Tokens<'a> {
    fn split(expression: &'a str) -> Self {
        let mut tokens = Self { kept: [("", 0); 7], count: 0 };
        let mut start = None;
        for (i, c) in expression.char_indices().chain([(expression.len(), ' ')]) {
            let separator = matches!(c, ' ' | '\t' | '\n' | '\r');
            match (separator, start) {
                (true, Some(s)) => {
                    if let Some(slot) = tokens.kept.get_mut(tokens.count) {
                        *slot = (&expression[s..i], s);
                    }
                    tokens.count += 1;
                    start = None;
                }
                (false, None) => start = Some(i),
                _ => {}
            }
        }
        tokens
    }

    /// The kept tokens.
    fn kept(&self) -> &[(&'a str, usize)] {
        &self.kept[..self.count.min(self.kept.len())]
    }
}

impl<'a> Parser<'a> {
    fn error(&self, field: Option<CronField>, span: Range<usize>, kind: CronErrorKind) -> CronError {
        CronError::new(field, self.expression, span, kind)
    }

    fn parse(&self) -> Result<Parsed, CronError> {
        let tokens = Tokens::split(self.expression);
        let Some(&(first, first_at)) = tokens.kept().first() else {
            return Err(self.error(None, 0..0, CronErrorKind::Empty));
        };
        if first.starts_with('@') {
            return self.descriptor(first, first_at, &tokens);
        }
        let text = |field, (text, at): (&'a str, usize)| Text { field, text, at };
        let (second, rest) = match (tokens.count, tokens.kept()) {
            (6, [second, rest @ ..]) => (Some(text(CronField::Second, *second)), rest),
            (_, rest) => (None, rest),
        };
        let &[minute, hour, dom, month, dow] = rest else {
            // Point at the first field too many, or at the whole expression.
            let end = self.expression.trim_end().len();
            let span = match tokens.count {
                7.. => tokens.kept[6].1..end,
                _ => 0..end,
            };
            return Err(self.error(None, span, CronErrorKind::FieldCount(tokens.count)));
        };
        let fields = [
            text(CronField::Minute, minute),
            text(CronField::Hour, hour),
            text(CronField::DayOfMonth, dom),
            text(CronField::Month, month),
            text(CronField::DayOfWeek, dow),
        ];
        self.fields(second, fields).map(Parsed::Fields)
    }

    fn descriptor(&self, name: &str, at: usize, tokens: &Tokens<'_>) -> Result<Parsed, CronError> {
        let span = at..at + name.len();
        let lower = name.to_ascii_lowercase();
        if lower == "@every" {
            return self.every(tokens.kept(), span);
        }
        let expansion = match lower.as_str() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            "@reboot" => return Err(self.error(None, span, CronErrorKind::Reboot)),
            _ => {
                return Err(self.error(None, span, CronErrorKind::UnknownDescriptor(name.to_owned())));
            }
        };
        if let Some(&(_, extra_at)) = tokens.kept().get(1) {
            let span = extra_at..self.expression.trim_end().len();
            return Err(self.error(None, span, CronErrorKind::AfterDescriptor(lower)));
        }
        Parser { expression: expansion }.parse()
    }

    fn every(&self, tokens: &[(&str, usize)], span: Range<usize>) -> Result<Parsed, CronError> {
        let rest = match tokens.get(1) {
            Some(&(_, at)) => self.expression[at..].trim_end(),
            None => "",
        };
        let bad = |reason: String| {
            self.error(None, span.start..self.expression.len(), CronErrorKind::BadEvery(reason))
        };
        if rest.is_empty() {
            return Err(bad("none given (e.g. `@every 90s`)".into()));
        }
        let period = parse_duration(rest).map_err(|e| bad(e.to_string()))?;
        let interval = Interval::every(period).map_err(|e| match e {
            ScheduleError::Invalid { reason, .. } => bad(format!("{rest:?}: {reason}")),
            other => bad(other.to_string()),
        })?;
        Ok(Parsed::Every(interval))
    }

    /// The five (or, with `second`, six) fields, checked from left to right.
    fn fields(&self, second: Option<Text<'_>>, texts: [Text<'_>; 5]) -> Result<Spec, CronError> {
        let [minute, hour, dom, month, dow] = texts;
        let seconds = match &second {
            Some(second) => self.plain(second)?,
            None => 1,
        };
        let minutes = self.plain(&minute)?;
        let hours = self.plain(&hour)?;
        let mut days =
            DayRule { and: dom.starts_with_star() || dow.starts_with_star(), ..DayRule::default() };
        self.day_of_month(&mut days, &dom)?;
        let months = self.plain(&month)?;
        self.day_of_week(&mut days, &dow)?;
        self.check_possible_day(&days, months, &dom)?;
        let fixed_time = second.iter().chain([&minute, &hour]).all(|t| !t.starts_with_star());
        Ok(Spec::new(seconds, minutes, hours, months, days, fixed_time))
    }

    /// A field without special forms: a list of values, ranges and steps.
    fn plain(&self, text: &Text<'_>) -> Result<u64, CronError> {
        let mut bits = 0;
        for item in self.items(text) {
            let (item, at) = item?;
            if text.field != CronField::DayOfWeek && item.contains('#')
                || text.field <= CronField::Hour && item.contains(['L', 'l', 'W', 'w'])
            {
                let kind = CronErrorKind::BadSpecial("L, W and # are allowed only in the day fields");
                return Err(self.error(Some(text.field), at..at + item.len(), kind));
            }
            bits |= self.range_item(text.field, item, at)?;
        }
        Ok(bits)
    }

    /// The comma-separated items of a field with their offsets; empty items and `?`
    /// are errors.
    fn items<'t>(&self, text: &Text<'t>) -> impl Iterator<Item = Result<(&'t str, usize), CronError>> {
        let mut at = text.at;
        let field = Some(text.field);
        text.text.split(',').map(move |item| {
            let span = at..at + item.len();
            at = span.end + 1;
            if item.is_empty() {
                // Point at the comma (or at the field when it is empty).
                let comma = span.start.saturating_sub(1).max(text.at)..span.start.max(text.at + 1);
                return Err(self.error(field, comma, CronErrorKind::EmptyItem));
            }
            if item.contains('?') {
                return Err(self.error(field, span, CronErrorKind::MisplacedQuestionMark));
            }
            Ok((item, span.start))
        })
    }

    /// `*`, `a`, `a-b`, each optionally with `/n`, as a bit set of raw values.
    fn range_item(&self, field: CronField, item: &str, at: usize) -> Result<u64, CronError> {
        let (min, max) = field.range();
        let (base, step) = match item.split_once('/') {
            Some((base, step)) => (base, Some(step)),
            None => (item, None),
        };
        let (start, end) = if base == "*" {
            (min, max)
        } else if let Some((a, b)) = base.split_once('-') {
            if a.is_empty() || b.is_empty() || b.contains('-') {
                return Err(self.error(Some(field), at..at + base.len(), CronErrorKind::BadRange));
            }
            let start = self.value(field, a, at)?;
            let end = self.value(field, b, at + a.len() + 1)?;
            if start > end {
                let kind = CronErrorKind::ReversedRange { start, end, min, max };
                return Err(self.error(Some(field), at..at + base.len(), kind));
            }
            (start, end)
        } else {
            let value = self.value(field, base, at)?;
            // `a/n` means `a-max/n`.
            (value, if step.is_some() { max } else { value })
        };
        let step = match step {
            None => 1,
            Some(step) => {
                let span = at + base.len() + 1..at + item.len();
                if step.is_empty() || !step.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(self.error(Some(field), span, CronErrorKind::BadStep));
                }
                match saturating_number(step) {
                    0 => return Err(self.error(Some(field), span, CronErrorKind::StepZero)),
                    n => n as usize,
                }
            }
        };
        Ok((start..=end).step_by(step).fold(0, |bits, v| bits | 1 << v))
    }

    /// A number or a name, checked against the field's range.
    fn value(&self, field: CronField, text: &str, at: usize) -> Result<u8, CronError> {
        let error = |kind| self.error(Some(field), at..at + text.len(), kind);
        let (min, max) = field.range();
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            let value = saturating_number(text);
            return u8::try_from(value)
                .ok()
                .filter(|v| (min..=max).contains(v))
                .ok_or_else(|| error(CronErrorKind::OutOfRange { value, min, max }));
        }
        let names: &[&str] = match field {
            CronField::Month => &MONTHS,
            CronField::DayOfWeek => &DAYS,
            _ => &[],
        };
        if let Some(i) = names.iter().position(|name| name.eq_ignore_ascii_case(text)) {
            // Months count from 1, days from 0 (SUN).
            return Ok(i as u8 + min);
        }
        if MONTHS.iter().chain(&DAYS).any(|name| name.eq_ignore_ascii_case(text)) {
            return Err(error(CronErrorKind::NameInWrongField(text.to_ascii_uppercase())));
        }
        if !names.is_empty() && !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(error(CronErrorKind::UnknownName(text.to_owned())));
        }
        let names = match field {
            CronField::Month => ", or a name (JAN-DEC)",
            CronField::DayOfWeek => ", or a name (SUN-SAT)",
            _ => "",
        };
        Err(error(CronErrorKind::NotANumber { names }))
    }

    fn day_of_month(&self, rule: &mut DayRule, dom: &Text<'_>) -> Result<(), CronError> {
        if dom.text == "?" {
            rule.dom = self.range_item(CronField::DayOfMonth, "*", dom.at)?;
            return Ok(());
        }
        for item in self.items(dom) {
            let (item, at) = item?;
            self.dom_item(rule, item, at)?;
        }
        Ok(())
    }

    fn day_of_week(&self, rule: &mut DayRule, dow: &Text<'_>) -> Result<(), CronError> {
        if dow.text == "?" {
            rule.dow = 0x7F;
            return Ok(());
        }
        for item in self.items(dow) {
            let (item, at) = item?;
            self.dow_item(rule, item, at)?;
        }
        Ok(())
    }

    fn dom_item(&self, rule: &mut DayRule, item: &str, at: usize) -> Result<(), CronError> {
        let special = |message| {
            self.error(Some(CronField::DayOfMonth), at..at + item.len(), CronErrorKind::BadSpecial(message))
        };
        if item.eq_ignore_ascii_case("L") {
            rule.last_day = true;
        } else if item.eq_ignore_ascii_case("LW") {
            rule.last_weekday = true;
        } else if item.starts_with(['L', 'l']) {
            return Err(special(
                "only L (last day) and LW (last weekday) start with L; offsets such as L-2 are not supported",
            ));
        } else if let Some(day) = item.strip_suffix(['W', 'w']) {
            if day.is_empty() || !day.bytes().all(|b| b.is_ascii_digit()) {
                return Err(special(
                    "W follows a single day number (nW, e.g. 15W); ranges, steps and lists within W are not supported",
                ));
            }
            let day = self.value(CronField::DayOfMonth, day, at)?;
            rule.nearest_weekday |= 1 << day;
        } else {
            rule.dom |= self.range_item(CronField::DayOfMonth, item, at)?;
        }
        Ok(())
    }

    fn dow_item(&self, rule: &mut DayRule, item: &str, at: usize) -> Result<(), CronError> {
        let special = |message| {
            self.error(Some(CronField::DayOfWeek), at..at + item.len(), CronErrorKind::BadSpecial(message))
        };
        if let Some((weekday, nth)) = item.split_once('#') {
            let weekday = self.value(CronField::DayOfWeek, weekday, at)? % 7;
            let k = match nth.as_bytes() {
                [k @ b'1'..=b'5'] => k - b'0',
                _ => {
                    let span = at + item.len() - nth.len()..at + item.len();
                    let kind = CronErrorKind::BadSpecial("in w#k, k counts the weeks of the month: 1 to 5");
                    return Err(self.error(Some(CronField::DayOfWeek), span, kind));
                }
            };
            rule.nth[usize::from(weekday)] |= 1 << k;
            return Ok(());
        }
        if let Some(weekday) = item.strip_suffix(['L', 'l']) {
            if weekday.is_empty() {
                return Err(special(
                    "L alone is not valid in day-of-week; write nL (e.g. 5L) for the last weekday n",
                ));
            }
            if !weekday.bytes().all(|b| b.is_ascii_digit()) {
                return Err(special("nL takes a day number 0-7 (e.g. 5L for the last Friday)"));
            }
            let weekday = self.value(CronField::DayOfWeek, weekday, at)? % 7;
            rule.last_dow |= 1 << weekday;
            return Ok(());
        }
        let bits = self.range_item(CronField::DayOfWeek, item, at)?;
        // 7 is Sunday, like 0.
        rule.dow |= ((bits | bits >> 7) & 0x7F) as u8;
        Ok(())
    }

    /// Under the AND rule, a day-of-month that none of the selected months has is an
    /// error rather than an expression that never fires.
    fn check_possible_day(&self, days: &DayRule, months: u64, dom: &Text<'_>) -> Result<(), CronError> {
        if !days.and || dom.starts_with_star() || days.last_day || days.last_weekday {
            return Ok(());
        }
        let plain = days.dom | days.nearest_weekday;
        let longest = (1..=12).filter(|m| months & (1 << m) != 0).map(|m| MAX_DAYS[m]).max().unwrap_or(31);
        let smallest = plain.trailing_zeros() as u8;
        if plain != 0 && smallest > longest {
            let kind = CronErrorKind::ImpossibleDay { day: smallest };
            return Err(self.error(Some(CronField::DayOfMonth), dom.span(), kind));
        }
        Ok(())
    }
}

/// A run of ASCII digits as a number, saturating at 9999.
fn saturating_number(digits: &str) -> u32 {
    digits.bytes().fold(0u32, |n, b| (n * 10 + u32::from(b - b'0')).min(9999))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::error::{CronError, CronErrorKind, CronField};
    use super::parse;

    fn error(expression: &str) -> CronError {
        match parse(expression) {
            Ok(parsed) => panic!("{expression:?} was accepted: {parsed:?}"),
            Err(error) => error,
        }
    }

    /// The field, the offending text, its column and the reason.
    fn rejects(expression: &str, field: Option<CronField>, token: &str, column: usize, kind: CronErrorKind) {
        let error = error(expression);
        assert_eq!(
            (error.field(), error.token(), error.column(), error.kind()),
            (field, token, column, &kind),
            "{expression:?}: {error}"
        );
    }

    #[test]
    fn out_of_range_names_field_value_range_and_column() {
        let error = error("0 24 * * *");
        assert_eq!(error.to_string(), r#"hour field "24" (column 3): 24 is out of range 0-23"#);
        let huge = super::tests::error("0 99999999999999999999 * * *").to_string();
        assert_eq!(huge, r#"hour field "99999999999999999999" (column 3): the value is out of range 0-23"#);
        rejects(
            "0 0 1 13 *",
            Some(CronField::Month),
            "13",
            7,
            CronErrorKind::OutOfRange { value: 13, min: 1, max: 12 },
        );
        rejects(
            "60 * * * * *",
            Some(CronField::Second),
            "60",
            1,
            CronErrorKind::OutOfRange { value: 60, min: 0, max: 59 },
        );
        rejects(
            "0 0 1-32 * *",
            Some(CronField::DayOfMonth),
            "32",
            7,
            CronErrorKind::OutOfRange { value: 32, min: 1, max: 31 },
        );
        rejects(
            "0 0 * * 8",
            Some(CronField::DayOfWeek),
            "8",
            9,
            CronErrorKind::OutOfRange { value: 8, min: 0, max: 7 },
        );
        rejects(
            "0 0 0 * *",
            Some(CronField::DayOfMonth),
            "0",
            5,
            CronErrorKind::OutOfRange { value: 0, min: 1, max: 31 },
        );
    }

    #[test]
    fn ranges_do_not_wrap_around() {
        rejects(
            "0 22-2 * * *",
            Some(CronField::Hour),
            "22-2",
            3,
            CronErrorKind::ReversedRange { start: 22, end: 2, min: 0, max: 23 },
        );
        rejects(
            "0 0 * * SAT-SUN",
            Some(CronField::DayOfWeek),
            "SAT-SUN",
            9,
            CronErrorKind::ReversedRange { start: 6, end: 0, min: 0, max: 7 },
        );
        let message = error("59-0 * * * *").to_string();
        assert!(message.ends_with("(write 59,0)"), "{message}");
        let message = error("0 0 * * MON-SUN").to_string();
        assert!(message.ends_with("(write 1-7)"), "{message}");
        let message = error("0 22-2 * * *").to_string();
        assert!(message.ends_with("(write 22-23,0-2)"), "{message}");
        rejects("0 1- * * *", Some(CronField::Hour), "1-", 3, CronErrorKind::BadRange);
        rejects("0 1-2-3 * * *", Some(CronField::Hour), "1-2-3", 3, CronErrorKind::BadRange);
    }

    #[test]
    fn steps_point_at_the_step() {
        rejects("*/0 * * * *", Some(CronField::Minute), "0", 3, CronErrorKind::StepZero);
        rejects("0 1-5/x * * *", Some(CronField::Hour), "x", 7, CronErrorKind::BadStep);
        rejects("*/ * * * *", Some(CronField::Minute), "", 3, CronErrorKind::BadStep);
    }

    #[test]
    fn names_only_in_their_own_field() {
        rejects(
            "* * * * JAN",
            Some(CronField::DayOfWeek),
            "JAN",
            9,
            CronErrorKind::NameInWrongField("JAN".into()),
        );
        rejects(
            "* * * mon *",
            Some(CronField::Month),
            "mon",
            7,
            CronErrorKind::NameInWrongField("MON".into()),
        );
        rejects(
            "* * * * MONDAY",
            Some(CronField::DayOfWeek),
            "MONDAY",
            9,
            CronErrorKind::UnknownName("MONDAY".into()),
        );
        rejects("0 noon * * *", Some(CronField::Hour), "noon", 3, CronErrorKind::NotANumber { names: "" });
    }

    #[test]
    fn a_day_no_selected_month_has() {
        rejects("0 0 30 2 *", Some(CronField::DayOfMonth), "30", 5, CronErrorKind::ImpossibleDay { day: 30 });
        rejects(
            "0 0 31 2,4,6,9,11 *",
            Some(CronField::DayOfMonth),
            "31",
            5,
            CronErrorKind::ImpossibleDay { day: 31 },
        );
        rejects(
            "0 0 30-31 2 *",
            Some(CronField::DayOfMonth),
            "30-31",
            5,
            CronErrorKind::ImpossibleDay { day: 30 },
        );
        // Under the OR rule the weekday can still match.
        assert!(parse("0 0 30 2 1").is_ok());
        assert!(parse("0 0 29 2 *").is_ok());
    }

    #[test]
    fn field_counts() {
        rejects("0 0 * * * * 2024", None, "2024", 13, CronErrorKind::FieldCount(7));
        rejects("0 0 * *", None, "0 0 * *", 1, CronErrorKind::FieldCount(4));
        rejects("   ", None, "", 1, CronErrorKind::Empty);
    }

    #[test]
    fn special_forms_out_of_place() {
        for (expression, field, token, column) in [
            ("L * * * *", CronField::Minute, "L", 1),
            ("0 0 * 1#2 *", CronField::Month, "1#2", 7),
            ("0 0 L-2 * *", CronField::DayOfMonth, "L-2", 5),
            ("0 0 1-5W * *", CronField::DayOfMonth, "1-5W", 5),
            ("0 0 * * L", CronField::DayOfWeek, "L", 9),
            ("0 0 * * MONL", CronField::DayOfWeek, "MONL", 9),
            ("0 0 * * 1#0", CronField::DayOfWeek, "0", 11),
            ("0 0 * * 1#6", CronField::DayOfWeek, "6", 11),
        ] {
            let e = error(expression);
            assert!(matches!(e.kind(), CronErrorKind::BadSpecial(_)), "{expression:?}: {e}");
            assert_eq!(
                (e.field(), e.token(), e.column()),
                (Some(field), token, column),
                "{expression:?}: {e}"
            );
        }
        rejects(
            "0 0 * * 8#1",
            Some(CronField::DayOfWeek),
            "8",
            9,
            CronErrorKind::OutOfRange { value: 8, min: 0, max: 7 },
        );
        rejects("0 0 ? * ?,1", Some(CronField::DayOfWeek), "?", 9, CronErrorKind::MisplacedQuestionMark);
        rejects("0 ? * * *", Some(CronField::Hour), "?", 3, CronErrorKind::MisplacedQuestionMark);
        rejects("0 1,,2 * * *", Some(CronField::Hour), ",", 4, CronErrorKind::EmptyItem);
    }

    #[test]
    fn descriptors() {
        rejects("@daily 5", None, "5", 8, CronErrorKind::AfterDescriptor("@daily".into()));
        rejects("@sometimes", None, "@sometimes", 1, CronErrorKind::UnknownDescriptor("@sometimes".into()));
        rejects("@reboot", None, "@reboot", 1, CronErrorKind::Reboot);
        assert!(matches!(error("@every 0s").kind(), CronErrorKind::BadEvery(_)));
        assert!(matches!(error("@every").kind(), CronErrorKind::BadEvery(_)));
        assert!(matches!(error("@every soon").kind(), CronErrorKind::BadEvery(_)));
    }

    #[test]
    fn every_takes_days_and_weeks_as_24_and_168_hours() {
        let period = |expression: &str| match parse(expression) {
            Ok(super::Parsed::Every(interval)) => interval.period(),
            other => panic!("{expression:?}: {other:?}"),
        };
        assert_eq!(period("@every 1d"), Duration::from_secs(86_400));
        assert_eq!(period("@every 1d12h"), Duration::from_secs(36 * 3600));
        assert_eq!(period("@every 2w"), Duration::from_secs(14 * 86_400));
        assert_eq!(period("@every 1h 30m"), Duration::from_secs(5400));
    }

    #[test]
    fn every_refuses_months_years_and_too_long_periods_with_the_reason() {
        let reason = |expression: &str| match error(expression).kind() {
            CronErrorKind::BadEvery(reason) => reason.clone(),
            other => panic!("{expression:?}: {other:?}"),
        };
        assert_eq!(
            reason("@every 1mo"),
            r#""1mo" is in months or years, whose lengths vary: write days ("30d") or less"#
        );
        assert!(reason("@every 2y").contains("months or years"), "{}", reason("@every 2y"));
        assert!(reason("@every 99999d").contains("at most 100 years"), "{}", reason("@every 99999d"));
        assert!(reason("@every 1500us").contains("whole number of milliseconds"));
    }

    #[test]
    fn errors_are_checked_from_left_to_right() {
        assert_eq!(error("0 24 32 13 *").field(), Some(CronField::Hour));
        assert_eq!(error("0 0 32 13 *").field(), Some(CronField::DayOfMonth));
        assert_eq!(error("0 0 1 13 8").field(), Some(CronField::Month));
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        rejects(
            "0 0 * * é",
            Some(CronField::DayOfWeek),
            "é",
            9,
            CronErrorKind::NotANumber { names: ", or a name (SUN-SAT)" },
        );
        rejects(
            "\u{e9} 0 * * *",
            Some(CronField::Minute),
            "\u{e9}",
            1,
            CronErrorKind::NotANumber { names: "" },
        );
        let month = CronErrorKind::NotANumber { names: ", or a name (JAN-DEC)" };
        rejects("0 0 * *\t\u{e9}\u{e9} 1", Some(CronField::Month), "\u{e9}\u{e9}", 9, month);
    }
}
