//! Text to [`Spec`]: the cron syntax of `conformance/README.md` (Vixie cron plus the
//! Quartz day forms `L`, `LW`, `nW`, `nL`, `n#k`, and the descriptors).

use std::ops::Range;

use std::time::Duration;

use jiff::SignedDuration;

use super::error::{CronError, CronErrorKind, Field};
use super::spec::{DayRule, Spec};
use crate::schedule::Interval;

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

const FIVE: [Field; 5] = [Field::Minute, Field::Hour, Field::DayOfMonth, Field::Month, Field::DayOfWeek];
const SIX: [Field; 6] =
    [Field::Second, Field::Minute, Field::Hour, Field::DayOfMonth, Field::Month, Field::DayOfWeek];

pub(super) fn parse(expression: &str) -> Result<Parsed, CronError> {
    Parser { expression }.parse()
}

struct Parser<'a> {
    expression: &'a str,
}

/// One field's text and where it starts in the expression.
#[derive(Clone, Copy)]
struct Text<'a> {
    field: Field,
    text: &'a str,
    at: usize,
}

impl Text<'_> {
    fn span(&self) -> Range<usize> {
        self.at..self.at + self.text.len()
    }

    fn starts_with_star(&self) -> bool {
        self.text.starts_with('*') || self.text == "?"
    }
}

impl<'a> Parser<'a> {
    fn error(&self, field: Option<Field>, span: Range<usize>, kind: CronErrorKind) -> CronError {
        CronError::new(field, self.expression, span, kind)
    }

    fn parse(&self) -> Result<Parsed, CronError> {
        let tokens = self.tokens();
        let Some(&(first, first_at)) = tokens.first() else {
            return Err(self.error(None, 0..0, CronErrorKind::Empty));
        };
        if first.starts_with('@') {
            return self.descriptor(first, first_at, &tokens);
        }
        let fields: &[Field] = match tokens.len() {
            5 => &FIVE,
            6 => &SIX,
            n => {
                return Err(self.error(None, 0..self.expression.len(), CronErrorKind::FieldCount(n)));
            }
        };
        let texts: Vec<Text<'_>> =
            fields.iter().zip(&tokens).map(|(&field, &(text, at))| Text { field, text, at }).collect();
        self.fields(&texts).map(Parsed::Fields)
    }

    /// The fields, split at runs of spaces and tabs, with their byte offsets.
    fn tokens(&self) -> Vec<(&'a str, usize)> {
        let mut tokens = Vec::with_capacity(6);
        let mut start = None;
        for (i, c) in self.expression.char_indices() {
            let separator = c == ' ' || c == '\t' || c == '\n' || c == '\r';
            match (separator, start) {
                (true, Some(s)) => {
                    tokens.push((&self.expression[s..i], s));
                    start = None;
                }
                (false, None) => start = Some(i),
                _ => {}
            }
        }
        if let Some(s) = start {
            tokens.push((&self.expression[s..], s));
        }
        tokens
    }

    fn descriptor(&self, name: &str, at: usize, tokens: &[(&str, usize)]) -> Result<Parsed, CronError> {
        let span = at..at + name.len();
        let lower = name.to_ascii_lowercase();
        if lower == "@every" {
            return self.every(tokens, span);
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
        if let Some(&(extra, extra_at)) = tokens.get(1) {
            let span = extra_at..extra_at + extra.len();
            return Err(self.error(None, span, CronErrorKind::FieldCount(tokens.len())));
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
            return Err(bad("no duration given".into()));
        }
        let period: SignedDuration = rest.parse().map_err(|e: jiff::Error| bad(format!("{rest:?}: {e}")))?;
        let interval = Duration::try_from(period)
            .ok()
            .and_then(|period| Interval::every(period).ok())
            .ok_or_else(|| bad(format!("{rest:?} is not a positive whole number of milliseconds")))?;
        Ok(Parsed::Every(interval))
    }

    fn fields(&self, texts: &[Text<'_>]) -> Result<Spec, CronError> {
        let [.., minute, hour, dom, month, dow] = texts else { unreachable!("5 or 6 fields") };
        let seconds = match texts.len() {
            6 => self.plain(&texts[0])?,
            _ => 1,
        };
        let days = self.days(dom, dow)?;
        let spec = Spec {
            seconds,
            minutes: self.plain(minute)?,
            hours: self.plain(hour)?,
            months: self.plain(month)?,
            days,
            fixed_time: texts[..texts.len() - 3].iter().all(|t| !t.starts_with_star()),
        };
        self.check_possible_day(&spec, dom)?;
        Ok(spec)
    }

    /// A field without special forms: a list of values, ranges and steps.
    fn plain(&self, text: &Text<'_>) -> Result<u64, CronError> {
        let mut bits = 0;
        for (item, at) in self.items(text)? {
            if text.field <= Field::Hour && item.contains(['L', 'l', 'W', 'w', '#']) {
                let kind = CronErrorKind::BadSpecial("L, W and # are allowed only in the day fields");
                return Err(self.error(Some(text.field), at..at + item.len(), kind));
            }
            bits |= self.range_item(text.field, item, at)?;
        }
        Ok(bits)
    }

    /// The comma-separated items of a field with their offsets; `?` checked here.
    fn items<'t>(&self, text: &Text<'t>) -> Result<Vec<(&'t str, usize)>, CronError> {
        let mut items = Vec::new();
        let mut at = text.at;
        for item in text.text.split(',') {
            let span = at..at + item.len();
            if item.is_empty() {
                return Err(self.error(Some(text.field), text.span(), CronErrorKind::EmptyItem));
            }
            if item.contains('?') {
                return Err(self.error(Some(text.field), span, CronErrorKind::MisplacedQuestionMark));
            }
            items.push((item, at));
            at = span.end + 1;
        }
        Ok(items)
    }

    /// `*`, `a`, `a-b`, each optionally with `/n`, as a bit set of raw values.
    fn range_item(&self, field: Field, item: &str, at: usize) -> Result<u64, CronError> {
        let error = |kind| self.error(Some(field), at..at + item.len(), kind);
        let (min, max) = field.range();
        let (base, step) = match item.split_once('/') {
            Some((base, step)) => (base, Some(step)),
            None => (item, None),
        };
        let (start, end) = if base == "*" {
            (min, max)
        } else if let Some((a, b)) = base.split_once('-') {
            if a.is_empty() || b.is_empty() || b.contains('-') {
                return Err(error(CronErrorKind::BadRange));
            }
            let start = self.value(field, a, at)?;
            let end = self.value(field, b, at + a.len() + 1)?;
            if start > end {
                return Err(error(CronErrorKind::ReversedRange { start, end }));
            }
            (start, end)
        } else {
            let value = self.value(field, base, at)?;
            // `a/n` means `a-max/n`.
            (value, if step.is_some() { max } else { value })
        };
        let step = match step {
            None => 1,
            Some(step) if !step.is_empty() && step.bytes().all(|b| b.is_ascii_digit()) => {
                match saturating_number(step) {
                    0 => return Err(error(CronErrorKind::StepZero)),
                    n => n,
                }
            }
            Some(_) => return Err(error(CronErrorKind::BadStep)),
        };
        Ok((u32::from(start)..=u32::from(end)).step_by(step as usize).fold(0, |bits, v| bits | 1 << v))
    }

    /// A number or a name, checked against the field's range.
    fn value(&self, field: Field, text: &str, at: usize) -> Result<u8, CronError> {
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
            Field::Month => &MONTHS,
            Field::DayOfWeek => &DAYS,
            _ => &[],
        };
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphabetic()) {
            let upper = text.to_ascii_uppercase();
            if let Some(i) = names.iter().position(|n| *n == upper) {
                // Months count from 1, days from 0 (SUN).
                return Ok(i as u8 + min);
            }
            if MONTHS.contains(&upper.as_str()) || DAYS.contains(&upper.as_str()) {
                return Err(error(CronErrorKind::NameInWrongField(upper)));
            }
            if !names.is_empty() {
                return Err(error(CronErrorKind::UnknownName(text.to_owned())));
            }
        }
        let names = match field {
            Field::Month => ", or a name (JAN-DEC)",
            Field::DayOfWeek => ", or a name (SUN-SAT)",
            _ => "",
        };
        Err(error(CronErrorKind::NotANumber { names }))
    }

    fn days(&self, dom: &Text<'_>, dow: &Text<'_>) -> Result<DayRule, CronError> {
        let mut rule =
            DayRule { and: dom.starts_with_star() || dow.starts_with_star(), ..DayRule::default() };
        if dom.text == "?" {
            rule.dom = self.range_item(Field::DayOfMonth, "*", dom.at)?;
        } else {
            for (item, at) in self.items(dom)? {
                self.dom_item(&mut rule, item, at)?;
            }
        }
        if dow.text == "?" {
            rule.dow = 0x7F;
        } else {
            for (item, at) in self.items(dow)? {
                self.dow_item(&mut rule, item, at)?;
            }
        }
        Ok(rule)
    }

    fn dom_item(&self, rule: &mut DayRule, item: &str, at: usize) -> Result<(), CronError> {
        let special = |message| {
            self.error(Some(Field::DayOfMonth), at..at + item.len(), CronErrorKind::BadSpecial(message))
        };
        let upper = item.to_ascii_uppercase();
        match upper.as_str() {
            "L" => rule.last_day = true,
            "LW" => rule.last_weekday = true,
            u if u.starts_with('L') => {
                return Err(special(
                    "only L (last day) and LW (last weekday) start with L; offsets such as L-2 are not supported",
                ));
            }
            u if u.ends_with('W') => {
                let day = &item[..item.len() - 1];
                if day.is_empty() || !day.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(special(
                        "W follows a single day number (nW, e.g. 15W); ranges and steps with W are not supported",
                    ));
                }
                let day = self.value(Field::DayOfMonth, day, at)?;
                rule.nearest_weekday |= 1 << day;
            }
            _ => rule.dom |= self.range_item(Field::DayOfMonth, item, at)?,
        }
        Ok(())
    }

    fn dow_item(&self, rule: &mut DayRule, item: &str, at: usize) -> Result<(), CronError> {
        let special = |message| {
            self.error(Some(Field::DayOfWeek), at..at + item.len(), CronErrorKind::BadSpecial(message))
        };
        if let Some((weekday, nth)) = item.split_once('#') {
            let weekday = self.value(Field::DayOfWeek, weekday, at)? % 7;
            if nth.len() != 1 || !matches!(nth.as_bytes()[0], b'1'..=b'5') {
                return Err(special("in w#k, k counts the weeks of the month: 1 to 5"));
            }
            rule.nth[weekday as usize] |= 1 << (nth.as_bytes()[0] - b'0');
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
            let weekday = self.value(Field::DayOfWeek, weekday, at)? % 7;
            rule.last_dow |= 1 << weekday;
            return Ok(());
        }
        let bits = self.range_item(Field::DayOfWeek, item, at)?;
        // 7 is Sunday, like 0.
        rule.dow |= ((bits | bits >> 7) & 0x7F) as u8;
        Ok(())
    }

    /// Under the AND rule, a day-of-month that none of the selected months has is an
    /// error rather than an expression that never fires.
    fn check_possible_day(&self, spec: &Spec, dom: &Text<'_>) -> Result<(), CronError> {
        let days = &spec.days;
        if !days.and || dom.starts_with_star() || days.last_day || days.last_weekday {
            return Ok(());
        }
        let plain = days.dom | days.nearest_weekday;
        let longest =
            (1..=12).filter(|m| spec.months & (1 << m) != 0).map(|m| MAX_DAYS[m]).max().unwrap_or(31);
        let smallest = plain.trailing_zeros() as u8;
        if plain != 0 && smallest > longest {
            let kind = CronErrorKind::ImpossibleDay { day: smallest };
            return Err(self.error(Some(Field::DayOfMonth), dom.span(), kind));
        }
        Ok(())
    }
}

/// A run of ASCII digits as a number, saturating at 9999.
fn saturating_number(digits: &str) -> u32 {
    digits.bytes().fold(0u32, |n, b| (n * 10 + u32::from(b - b'0')).min(9999))
}
