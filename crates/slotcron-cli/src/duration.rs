//! Durations as people write them in jobs files: `"90s"`, `"5m"`, `"1h30m"`, `"2d"`.

use std::time::Duration;

use jiff::{SignedDuration, Span, SpanRelativeTo};

/// Parses a non-negative duration in jiff's friendly format (`"90s"`, `"5m"`,
/// `"1h30m"`, `"1h 30m"`, `"2 hours"`, `"1.5s"`, `"1d12h"`, `"1w"`) or ISO 8601
/// (`"PT1H30M"`, `"P2D"`). A day is 24 hours and a week 7 days, whatever the time zone
/// does: an elapsed duration, not a calendar day across a DST change. Months and years,
/// whose lengths vary, are refused.
///
/// # Errors
/// The reason, naming the text: not a duration, in months or years, or negative.
pub fn parse(text: &str) -> Result<Duration, String> {
    let span: Span = text.trim().parse().map_err(|e| {
        format!("{text:?} is not a duration (write e.g. \"90s\", \"5m\", \"1h30m\" or \"2d\"): {e}")
    })?;
    if span.get_years() != 0 || span.get_months() != 0 {
        return Err(format!(
            "{text:?} is in months or years, whose lengths vary: write days (\"30d\") or less"
        ));
    }
    let signed: SignedDuration = span
        .to_duration(SpanRelativeTo::days_are_24_hours())
        .map_err(|e| format!("{text:?} is out of range: {e}"))?;
    Duration::try_from(signed).map_err(|_| format!("{text:?} is negative; a duration must be 0 or more"))
}

/// Formats a duration the way [`parse`] reads it back, e.g. `1h 30m` (days as hours,
/// `48h`).
pub fn display(duration: Duration) -> String {
    match SignedDuration::try_from(duration) {
        Ok(signed) => format!("{signed:#}"),
        Err(_) => format!("{duration:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_friendly_forms() {
        assert_eq!(parse("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("0s"), Ok(Duration::ZERO));
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("PT1H30M"), Ok(Duration::from_secs(5400)));
    }

    #[test]
    fn a_day_is_24_hours() {
        assert_eq!(parse("2d"), Ok(Duration::from_secs(2 * 86_400)));
        assert_eq!(parse("1d12h"), Ok(Duration::from_secs(36 * 3600)));
        assert_eq!(parse("1 day 30m"), Ok(Duration::from_secs(86_400 + 1800)));
        assert_eq!(parse("P2D"), Ok(Duration::from_secs(2 * 86_400)));
        assert_eq!(parse("1w"), Ok(Duration::from_secs(7 * 86_400)));
    }

    #[test]
    fn rejects_garbage_negative_and_calendar_durations() {
        assert!(parse("soon").unwrap_err().contains("\"soon\" is not a duration"));
        assert!(parse("2x").unwrap_err().contains("\"2x\" is not a duration"));
        assert!(parse("-5s").unwrap_err().contains("negative"));
        assert!(parse("-1d").unwrap_err().contains("negative"));
        for text in ["1mo", "1y", "P1M"] {
            let error = parse(text).unwrap_err();
            assert!(error.contains("months or years"), "{text}: {error}");
        }
    }

    #[test]
    fn display_round_trips() {
        for d in [Duration::from_secs(5400), Duration::from_secs(2 * 86_400)] {
            assert_eq!(parse(&display(d)), Ok(d));
        }
        assert_eq!(display(Duration::from_secs(5400)), "1h 30m");
    }
}
