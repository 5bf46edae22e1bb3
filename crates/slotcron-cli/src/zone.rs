//! Looking up IANA time zones by name.

use jiff::tz::TimeZone;

/// The time zone called `name` in the IANA database (`UTC`, `Europe/Berlin`...).
///
/// # Errors
/// The reason, naming the zone, when the database has no such zone.
pub fn lookup(name: &str) -> Result<TimeZone, String> {
    TimeZone::get(name)
        .map_err(|_| format!("unknown time zone {name:?} (use an IANA name such as UTC or Europe/Berlin)"))
}

/// `instant` on the wall clock of `zone` as RFC 3339 with the zone's offset, e.g.
/// `2026-03-08T03:00:00-04:00`; fractional seconds only when there are any.
pub fn rfc3339(instant: jiff::Timestamp, zone: &TimeZone) -> String {
    instant.to_zoned_datetime(zone.clone()).strftime("%Y-%m-%dT%H:%M:%S%.f%:z").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_the_offset_of_the_zone() {
        let ny = lookup("America/New_York").unwrap();
        let t: jiff::Timestamp = "2026-03-08T07:00:00Z".parse().unwrap();
        assert_eq!(rfc3339(t, &ny), "2026-03-08T03:00:00-04:00");
        assert_eq!(rfc3339(t, &TimeZone::UTC), "2026-03-08T07:00:00+00:00");
        let frac: jiff::Timestamp = "2026-03-08T07:00:00.25Z".parse().unwrap();
        assert_eq!(rfc3339(frac, &TimeZone::UTC), "2026-03-08T07:00:00.25+00:00");
    }

    #[test]
    fn unknown_zone_is_named() {
        assert!(lookup("Mars/Olympus").unwrap_err().contains("unknown time zone \"Mars/Olympus\""));
    }
}
