//! Durations as people write them: `"90s"`, `"5m"`, `"1h30m"`, `"2d"`, `"1w"`.

use std::time::Duration;

use jiff::{SignedDuration, Span, SpanRelativeTo};

use super::MAX_DURATION;

/// [`MAX_DURATION`] in days, as [`DurationError::TooLarge`] says it.
const MAX_DAYS: u64 = MAX_DURATION.as_secs() / 86_400;

/// A text that [`parse_duration`] refuses, naming the text and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DurationError {
    /// Not a duration in jiff's friendly format or ISO 8601. The message gives the text
    /// and examples; jiff's reason, in its grammar's terms, is kept in `reason`.
    #[error(
        "{text:?} is not a duration: write a number and a unit, e.g. \"90s\", \"5m\", \"1h30m\" or \"2d\""
    )]
    NotADuration {
        /// The text as given.
        text: String,
        /// jiff's reason.
        reason: String,
    },
    /// A bare number: a duration names its unit.
    #[error(
        "{text:?} has no unit: write e.g. \"{number}s\" (seconds), \"{number}m\" (minutes) or \"{number}h\" (hours)"
    )]
    NoUnit {
        /// The text as given.
        text: String,
        /// The number, trimmed.
        number: String,
    },
    /// In months or years, whose lengths vary.
    #[error("{text:?} is in months or years, whose lengths vary: write days (\"30d\") or less")]
    Calendar {
        /// The text as given.
        text: String,
    },
    /// Too long to be represented: far beyond [`MAX_DURATION`], the longest a job takes.
    #[error("{text:?} is too large: a job's durations are at most 100 years ({MAX_DAYS}d)")]
    TooLarge {
        /// The text as given.
        text: String,
    },
    /// Below zero.
    #[error("{text:?} is negative; a duration takes no minus sign")]
    Negative {
        /// The text as given.
        text: String,
    },
}

/// Parses a non-negative duration in jiff's friendly format (`"90s"`, `"5m"`,
/// `"1h30m"`, `"1h 30m"`, `"2 hours"`, `"1.5s"`, `"1d12h"`, `"1w"`) or ISO 8601
/// (`"PT1H30M"`, `"P2D"`), surrounding white space ignored. A day is 24 hours and a
/// week 7 days, whatever the time zone does: an elapsed duration, not a calendar day
/// across a DST change. Months and years, whose lengths vary, are refused.
///
/// Used by `@every <duration>` in cron expressions and by the `slotcron` daemon's jobs
/// files. Bounds such as [`MAX_DURATION`] are checked where the
/// duration is used, not here.
///
/// # Errors
/// [`DurationError`], naming the text: not a duration, in months or years, too large
/// (beyond what jiff represents, which is far beyond [`MAX_DURATION`]), or negative.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let owned = || text.to_owned();
    let span: Span = text.trim().parse().map_err(|e| refused(text, e))?;
    if span.get_years() != 0 || span.get_months() != 0 {
        return Err(DurationError::Calendar { text: owned() });
    }
    let signed: SignedDuration = span
        .to_duration(SpanRelativeTo::days_are_24_hours())
        .map_err(|_| DurationError::TooLarge { text: owned() })?;
    Duration::try_from(signed).map_err(|_| DurationError::Negative { text: owned() })
}

/// Why jiff's [`Span`] refuses `text`: too large if its number is out of the span's range
/// (days, weeks), or if `text` reads as a [`SignedDuration`] (whose hours, minutes and
/// seconds reach further than a span's); not a duration otherwise.
fn refused(text: &str, error: jiff::Error) -> DurationError {
    let number = text.trim();
    if error.is_range() || number.parse::<SignedDuration>().is_ok() {
        DurationError::TooLarge { text: text.to_owned() }
    } else if !number.is_empty() && number.parse::<f64>().is_ok_and(f64::is_finite) {
        DurationError::NoUnit { text: text.to_owned(), number: number.to_owned() }
    } else {
        DurationError::NotADuration { text: text.to_owned(), reason: error.to_string() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        parse_duration(text).unwrap_err().to_string()
    }

    #[test]
    fn a_bare_number_is_told_to_name_its_unit() {
        assert_eq!(
            error(" 5 "),
            "\" 5 \" has no unit: write e.g. \"5s\" (seconds), \"5m\" (minutes) or \"5h\" (hours)"
        );
        assert!(error("1.5").contains("\"1.5s\""), "{}", error("1.5"));
        assert!(error("five").contains("is not a duration"), "{}", error("five"));
        assert!(error("").contains("is not a duration"));
    }

    #[test]
    fn reads_the_friendly_forms() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration(" 1h 30m "), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("PT1H30M"), Ok(Duration::from_secs(5400)));
    }

    #[test]
    fn a_day_is_24_hours_and_a_week_7_days() {
        assert_eq!(parse_duration("2d"), Ok(Duration::from_secs(2 * 86_400)));
        assert_eq!(parse_duration("1d12h"), Ok(Duration::from_secs(36 * 3600)));
        assert_eq!(parse_duration("1 day 30m"), Ok(Duration::from_secs(86_400 + 1800)));
        assert_eq!(parse_duration("P2D"), Ok(Duration::from_secs(2 * 86_400)));
        assert_eq!(parse_duration("1w"), Ok(Duration::from_secs(7 * 86_400)));
    }

    #[test]
    fn a_duration_too_large_for_jiff_is_too_large_in_our_words() {
        for text in ["100000000d", "99999999w", "P99999999D", "999999999999h", "999999999999999s"] {
            assert_eq!(
                error(text),
                format!("{text:?} is too large: a job's durations are at most 100 years (36500d)")
            );
        }
    }

    #[test]
    fn rejects_garbage_negative_and_calendar_durations() {
        assert!(error("soon").contains("\"soon\" is not a duration"));
        assert!(error("2x").contains("\"2x\" is not a duration"));
        assert_eq!(error("-5s"), "\"-5s\" is negative; a duration takes no minus sign");
        assert!(error("-1d").contains("negative"));
        for text in ["1mo", "1y", "P1M"] {
            assert_eq!(parse_duration(text), Err(DurationError::Calendar { text: text.into() }));
        }
    }
}
