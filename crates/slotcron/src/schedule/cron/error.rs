use std::fmt;
use std::ops::Range;

/// A field of a cron expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CronField {
    /// Seconds, 0-59: the first of six fields.
    Second,
    /// Minutes, 0-59.
    Minute,
    /// Hours, 0-23.
    Hour,
    /// Day of the month, 1-31.
    DayOfMonth,
    /// Month, 1-12 or `JAN`-`DEC`.
    Month,
    /// Day of the week, 0-7 (0 and 7 are Sunday) or `SUN`-`SAT`.
    DayOfWeek,
}

impl CronField {
    /// The field's name as used in messages: `minute`, `day-of-month`...
    pub fn name(self) -> &'static str {
        match self {
            Self::Second => "second",
            Self::Minute => "minute",
            Self::Hour => "hour",
            Self::DayOfMonth => "day-of-month",
            Self::Month => "month",
            Self::DayOfWeek => "day-of-week",
        }
    }

    /// The smallest and largest value the field accepts.
    pub fn range(self) -> (u8, u8) {
        match self {
            Self::Second | Self::Minute => (0, 59),
            Self::Hour => (0, 23),
            Self::DayOfMonth => (1, 31),
            Self::Month => (1, 12),
            Self::DayOfWeek => (0, 7),
        }
    }
}

impl fmt::Display for CronField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a cron expression is rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CronErrorKind {
    /// Nothing but white space.
    #[error("the expression is empty")]
    Empty,
    /// Not 5 or 6 fields.
    #[error(
        "expected 5 fields (minute hour day-of-month month day-of-week) or 6 (with seconds first), found {0}"
    )]
    FieldCount(usize),
    /// A value outside the field's range.
    #[error("{} is out of range {min}-{max}", shown(*.value))]
    OutOfRange {
        /// The value given (saturated at 9999).
        value: u32,
        /// The field's smallest value.
        min: u8,
        /// The field's largest value.
        max: u8,
    },
    /// `a-b` with `a > b`: ranges do not wrap around.
    #[error(
        "range {start}-{end} runs backwards; ranges do not wrap around (write {})",
        unwrapped(*start, *end, *min, *max)
    )]
    ReversedRange {
        /// Where the range starts.
        start: u8,
        /// Where it ends.
        end: u8,
        /// The field's smallest value.
        min: u8,
        /// The field's largest value.
        max: u8,
    },
    /// `*/0`.
    #[error("the step must be at least 1")]
    StepZero,
    /// A step that is not a plain number.
    #[error("a step is written /n with n a whole number, e.g. */5")]
    BadStep,
    /// A malformed range such as `1-` or `1-2-3`.
    #[error("a range is written a-b")]
    BadRange,
    /// An empty item in a list (`1,,2`, a trailing comma).
    #[error("empty list item")]
    EmptyItem,
    /// Not a number, a name, `*`, or a special form the field allows.
    #[error("expected a number{names}")]
    NotANumber {
        /// `, a name (JAN-DEC)` where the field has names.
        names: &'static str,
    },
    /// A name this field does not know.
    #[error("unknown name {0:?}{hint}", hint = name_hint(.0))]
    UnknownName(String),
    /// A month name in day-of-week or a day name in month.
    #[error("{0} is not a name of this field")]
    NameInWrongField(String),
    /// `?` anywhere but as the whole day-of-month or day-of-week field.
    #[error("? is allowed only as the whole day-of-month or day-of-week field")]
    MisplacedQuestionMark,
    /// A misuse of `L`, `W` or `#`.
    #[error("{0}")]
    BadSpecial(&'static str),
    /// A day of the month that none of the selected months has (under the AND rule).
    #[error("no selected month has a day {day}, so the expression would never fire")]
    ImpossibleDay {
        /// The smallest day given.
        day: u8,
    },
    /// `@something` that is not a known descriptor.
    #[error(
        "unknown descriptor {0:?}; known: @yearly @annually @monthly @weekly @daily @midnight @hourly @every <duration>"
    )]
    UnknownDescriptor(String),
    /// Text after a descriptor such as `@daily`, which stands for all five fields.
    #[error("{0} stands for all five fields: nothing may follow it")]
    AfterDescriptor(String),
    /// `@reboot`, which has no fire times.
    #[error("@reboot is not a schedule: it has no fire times")]
    Reboot,
    /// `@every` without a valid positive duration (a day is 24 hours; months and years are refused).
    #[error("@every takes a duration: {0}")]
    BadEvery(String),
}

/// A value as written in messages; one saturated at 9999 has too many digits to repeat.
fn shown(value: u32) -> String {
    if value >= 9999 { "the value".into() } else { value.to_string() }
}

/// The list a reversed range `start-end` stands for: `22-23,0-2`; `5-7` for a
/// day-of-week range ending on Sunday (0), which 7 also writes.
fn unwrapped(start: u8, end: u8, min: u8, max: u8) -> String {
    let range = |a: u8, b: u8| if a == b { a.to_string() } else { format!("{a}-{b}") };
    if max == 7 && end == 0 {
        return range(start, 7);
    }
    format!("{},{}", range(start, max), range(min, end))
}

fn name_hint(name: &str) -> &'static str {
    if name.len() > 3 { " (names are three letters, e.g. JAN or MON)" } else { "" }
}

/// A rejected cron expression: which field, what text, where, and why.
///
/// Its `Display` reads e.g.
/// `hour field "24" (column 3): 24 is out of range 0-23`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronError {
    field: Option<CronField>,
    token: String,
    span: Range<usize>,
    column: usize,
    kind: CronErrorKind,
}

impl CronError {
    pub(super) fn new(
        field: Option<CronField>,
        expression: &str,
        span: Range<usize>,
        kind: CronErrorKind,
    ) -> Self {
        let token = expression.get(span.clone()).unwrap_or_default().to_owned();
        let column = expression.get(..span.start).map_or(0, |before| before.chars().count()) + 1;
        Self { field, token, span, column, kind }
    }

    /// The field at fault, if the error is in one field.
    pub fn field(&self) -> Option<CronField> {
        self.field
    }

    /// Why the expression is rejected.
    pub fn kind(&self) -> &CronErrorKind {
        &self.kind
    }

    /// The byte range of the offending text in the expression.
    pub fn span(&self) -> Range<usize> {
        self.span.clone()
    }

    /// The column (in characters, from 1) where the offending text starts.
    pub fn column(&self) -> usize {
        self.column
    }

    /// The offending text.
    pub fn token(&self) -> &str {
        &self.token
    }
}

impl fmt::Display for CronError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.field {
            Some(field) => {
                write!(f, "{field} field {:?} (column {}): {}", self.token, self.column, self.kind)
            }
            None => write!(f, "{}", self.kind),
        }
    }
}

impl std::error::Error for CronError {}
