//! Instants relative to now, as the human tables show them beside the absolute ones
//! (`in 4m`, `12s ago`); machine output (`--json`) keeps the absolute instants only.

use jiff::Timestamp;

/// `instant` as seen from `now`: `in 4m` when it is later, `12s ago` when earlier, `now`
/// when less than 1 s apart either way. One unit, the largest the gap fills at least once:
/// seconds (`s`) under a minute, minutes (`m`) under an hour, hours (`h`) under a day, days
/// (`d`, of 24 h) beyond; rounded down (59.9 s is `59s`, 119 s is `1m`). Both instants
/// are absolute (UTC), so no time zone enters.
pub fn relative(instant: Timestamp, now: Timestamp) -> String {
    let gap = instant.duration_since(now);
    let seconds = gap.as_secs().unsigned_abs();
    let amount = match seconds {
        0 => return "now".to_owned(),
        1..60 => format!("{seconds}s"),
        60..3_600 => format!("{}m", seconds / 60),
        3_600..86_400 => format!("{}h", seconds / 3_600),
        _ => format!("{}d", seconds / 86_400),
    };
    if gap.is_negative() { format!("{amount} ago") } else { format!("in {amount}") }
}

/// The cell of a table's relative column (`IN`, `AGO`) beside an instant's: its
/// [`relative`] form, or `-` when there is no instant.
pub fn cell(instant: Option<Timestamp>, now: Timestamp) -> String {
    instant.map_or_else(|| "-".to_owned(), |instant| relative(instant, now))
}

#[cfg(test)]
mod tests {
    use jiff::SignedDuration;

    use super::*;

    fn at(seconds_from_now: f64) -> String {
        let now: Timestamp = "2026-12-06T10:00:00Z".parse().unwrap();
        relative(now + SignedDuration::from_secs_f64(seconds_from_now), now)
    }

    #[test]
    fn within_a_second_either_way_is_now() {
        assert_eq!([at(0.0), at(0.999), at(-0.999)], ["now", "now", "now"]);
    }

    #[test]
    fn later_instants_are_in_and_earlier_ones_ago() {
        assert_eq!(at(240.0), "in 4m");
        assert_eq!(at(-12.0), "12s ago");
    }

    #[test]
    fn each_unit_starts_where_the_gap_fills_it_once() {
        let gaps = [1.0, 59.0, 60.0, 3_599.0, 3_600.0, 86_399.0, 86_400.0, 40.0 * 86_400.0];
        let want = ["in 1s", "in 59s", "in 1m", "in 59m", "in 1h", "in 23h", "in 1d", "in 40d"];
        assert_eq!(gaps.map(at), want);
    }

    #[test]
    fn rounds_down_never_up() {
        assert_eq!(
            [at(59.9), at(119.0), at(-7_199.0), at(2.0 * 86_400.0 - 1.0)],
            ["in 59s", "in 1m", "1h ago", "in 1d"]
        );
    }

    #[test]
    fn no_instant_is_a_dash() {
        let now = Timestamp::UNIX_EPOCH;
        assert_eq!([cell(None, now), cell(Some(now), now)], ["-", "now"]);
    }
}
