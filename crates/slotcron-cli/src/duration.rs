//! Durations as people write them in jobs files: `"90s"`, `"5m"`, `"1h30m"`.

use std::time::Duration;

use jiff::SignedDuration;

/// Parses a non-negative duration in jiff's friendly format (`"90s"`, `"5m"`,
/// `"1h30m"`, `"1h 30m"`, `"2 hours"`, `"1.5s"`) or ISO 8601 (`"PT1H30M"`); units up to
/// hours, since days vary in length across DST changes.
///
/// # Errors
/// The reason, naming the text: not a duration, or negative.
pub fn parse(text: &str) -> Result<Duration, String> {
    let signed: SignedDuration = text
        .trim()
        .parse()
        .map_err(|e| format!("{text:?} is not a duration (write e.g. \"90s\", \"5m\" or \"1h30m\"): {e}"))?;
    Duration::try_from(signed).map_err(|_| format!("{text:?} is negative; a duration must be 0 or more"))
}

/// Formats a duration the way [`parse`] reads it back, e.g. `1h 30m`.
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
    }

    #[test]
    fn rejects_garbage_and_negative_durations() {
        assert!(parse("soon").unwrap_err().contains("\"soon\" is not a duration"));
        assert!(parse("-5s").unwrap_err().contains("negative"));
    }

    #[test]
    fn display_round_trips() {
        let d = Duration::from_secs(5400);
        assert_eq!(display(d), "1h 30m");
        assert_eq!(parse(&display(d)), Ok(d));
    }
}
