//! Durations as the daemon shows them; jobs files are read with the core's
//! [`parse_duration`](slotcron::schedule::parse_duration).

use std::time::Duration;

use jiff::SignedDuration;

/// Formats a duration the way [`parse_duration`](slotcron::schedule::parse_duration)
/// reads it back, e.g. `1h 30m` (days as hours, `48h`).
pub fn display(duration: Duration) -> String {
    match SignedDuration::try_from(duration) {
        Ok(signed) => format!("{signed:#}"),
        Err(_) => format!("{duration:?}"),
    }
}

#[cfg(test)]
mod tests {
    use slotcron::schedule::parse_duration;

    use super::*;

    #[test]
    fn display_round_trips() {
        for d in [Duration::from_secs(5400), Duration::from_secs(2 * 86_400)] {
            assert_eq!(parse_duration(&display(d)), Ok(d));
        }
        assert_eq!(display(Duration::from_secs(5400)), "1h 30m");
    }
}
