//! Durations as the daemon shows them; jobs files are read with the core's
//! [`parse_duration`](slotcron::parse_duration).

use std::time::Duration;

use jiff::SignedDuration;

/// Formats a duration the way [`parse_duration`](slotcron::parse_duration)
/// reads it back, e.g. `1h 30m`, with whole days as days (`30d`, `2d 6h`), as a jobs file
/// writes them.
pub fn display(duration: Duration) -> String {
    const DAY: u64 = 86_400;
    let days = duration.as_secs() / DAY;
    let rest = duration - Duration::from_secs(days * DAY);
    let rest = match SignedDuration::try_from(rest) {
        Ok(signed) => format!("{signed:#}"),
        Err(_) => format!("{rest:?}"),
    };
    match (days, rest.as_str()) {
        (0, _) => rest,
        (_, "0s") => format!("{days}d"),
        _ => format!("{days}d {rest}"),
    }
}

/// A run's duration as the history shows it: whole milliseconds (the history's
/// precision), and `<1ms` for less, rather than `0s`.
pub fn display_run(duration: Duration) -> String {
    let millis = Duration::from_millis(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX));
    if millis.is_zero() { "<1ms".to_owned() } else { display(millis) }
}

#[cfg(test)]
mod tests {
    use slotcron::parse_duration;

    use super::*;

    #[test]
    fn display_round_trips() {
        for d in
            [Duration::from_secs(5400), Duration::from_secs(2 * 86_400), Duration::from_secs(86_400 + 61)]
        {
            assert_eq!(parse_duration(&display(d)), Ok(d));
        }
        assert_eq!(display(Duration::from_secs(5400)), "1h 30m");
        assert_eq!(display(Duration::from_secs(30 * 86_400)), "30d");
        assert_eq!(display(Duration::from_secs(2 * 86_400 + 6 * 3600)), "2d 6h");
        assert_eq!(display(Duration::ZERO), "0s");
    }

    #[test]
    fn runs_shorter_than_a_millisecond_are_not_0s() {
        assert_eq!(display_run(Duration::from_micros(350)), "<1ms");
        assert_eq!(display_run(Duration::from_micros(2_500)), "2ms");
        assert_eq!(display_run(Duration::from_millis(1_500)), "1s 500ms");
    }
}
