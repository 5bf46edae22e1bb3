//! Wall-clock rules shared by the schedules that fire at a fixed time of day.

use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::{AmbiguousOffset, TimeZone};

/// The instant a fixed-time job whose wall time is `wall` fires at in `tz`, following
/// cronie (Vixie cron with Red Hat's DST changes, `cron.c`, "fixed-time jobs"):
///
/// - a wall time inside a spring-forward gap fires at the first instant after the gap
///   (the transition itself);
/// - a wall time repeated by a fall-back overlap fires at its first occurrence.
///
/// `None` only outside the range of [`Timestamp`].
pub(crate) fn fixed_time_instant(tz: &TimeZone, wall: DateTime) -> Option<Timestamp> {
    match tz.to_ambiguous_timestamp(wall).offset() {
        AmbiguousOffset::Unambiguous { offset } => offset.to_timestamp(wall).ok(),
        AmbiguousOffset::Fold { before, .. } => before.to_timestamp(wall).ok(),
        AmbiguousOffset::Gap { after, .. } => {
            // `wall` read with the later offset is an instant before the transition.
            let inside = after.to_timestamp(wall).ok()?;
            tz.following(inside).next().map(|transition| transition.timestamp())
        }
    }
}

/// Whether `tz` has a single offset for all time (UTC, fixed offsets), which lets the
/// schedules skip every ambiguity check.
pub(crate) fn fixed_offset(tz: &TimeZone) -> Option<jiff::tz::Offset> {
    tz.to_fixed_offset().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    fn ny() -> TimeZone {
        TimeZone::get("America/New_York").unwrap()
    }

    #[test]
    fn gap_resolves_to_the_transition() {
        let at = fixed_time_instant(&ny(), date(2024, 3, 10).at(2, 30, 0, 0)).unwrap();
        assert_eq!(at, "2024-03-10T07:00:00Z".parse::<Timestamp>().unwrap());
    }

    #[test]
    fn fold_resolves_to_the_first_occurrence() {
        let at = fixed_time_instant(&ny(), date(2024, 11, 3).at(1, 30, 0, 0)).unwrap();
        assert_eq!(at, "2024-11-03T05:30:00Z".parse::<Timestamp>().unwrap());
    }
}
