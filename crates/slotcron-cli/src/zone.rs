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

/// The daemon's own zone: what crontab lines run in when the file sets none, as in cronie
/// and supercronic — the `TZ` environment variable (an IANA name, a POSIX rule such as
/// `JST-9`, or a TZif file path; empty is UTC, as in POSIX), else `/etc/localtime`, else
/// UTC. Resolved by jiff (`TimeZone::try_system`).
#[derive(Debug, Clone)]
pub struct LocalZone {
    /// The zone.
    pub zone: TimeZone,
    /// Its name: the IANA name, or as `TZ` spells it, for logs and for the fleet's check
    /// that every member computes the same instants.
    pub name: String,
    /// Where it came from: `the TZ environment variable`, `/etc/localtime`...
    pub source: &'static str,
}

/// The IANA names of UTC (tzdata's `backward` links and `Etc/`), taken as UTC itself.
const UTC_ALIASES: &[&str] = &[
    "UTC",
    "Etc/UTC",
    "Etc/UCT",
    "UCT",
    "Etc/Universal",
    "Universal",
    "Etc/Zulu",
    "Zulu",
    "Etc/GMT",
    "GMT",
    "Etc/GMT+0",
    "Etc/GMT-0",
    "Etc/GMT0",
    "GMT0",
    "GMT+0",
    "GMT-0",
    "Etc/Greenwich",
    "Greenwich",
];

/// Where the system keeps its local zone on Linux.
const LOCALTIME: &str = "/etc/localtime";

/// The daemon's own zone ([`LocalZone`]), resolved once per process.
///
/// # Errors
/// The reason, naming `TZ` or `/etc/localtime`, when the zone it names cannot be read.
pub fn local() -> Result<LocalZone, String> {
    static LOCAL: std::sync::OnceLock<Result<LocalZone, String>> = std::sync::OnceLock::new();
    LOCAL.get_or_init(resolve_local).clone()
}

fn resolve_local() -> Result<LocalZone, String> {
    let tz = std::env::var_os("TZ");
    let source = match &tz {
        Some(tz) if tz.is_empty() => "the TZ environment variable, empty (UTC, as in POSIX)",
        Some(_) => "the TZ environment variable",
        None if std::path::Path::new(LOCALTIME).exists() => LOCALTIME,
        None => "neither a TZ environment variable nor /etc/localtime: UTC",
    };
    let zone = if tz.is_none() && source != LOCALTIME {
        TimeZone::UTC
    } else {
        TimeZone::try_system().map_err(|_| match &tz {
            Some(tz) => format!(
                "TZ={:?} in the daemon's environment names no time zone (an IANA name such as Asia/Tokyo, a POSIX rule such as JST-9, or the path of a TZif file)",
                tz.to_string_lossy()
            ),
            None => format!("{LOCALTIME} is not a readable time zone file"),
        })?
    };
    // The IANA database's other names of UTC (`/etc/localtime` is often `Etc/UTC`) are
    // UTC itself, written as every UTC schedule is.
    if zone.iana_name().is_some_and(|name| UTC_ALIASES.contains(&name)) {
        return Ok(LocalZone { zone: TimeZone::UTC, name: "UTC".to_owned(), source });
    }
    let name = match (zone.iana_name(), &tz) {
        (Some(name), _) => name.to_owned(),
        (None, Some(tz)) => tz.to_string_lossy().trim_start_matches(':').to_owned(),
        (None, None) => format!("the unnamed zone of {LOCALTIME}"),
    };
    Ok(LocalZone { zone, name, source })
}

/// `name` as a crontab's `CRON_TZ=` or `TZ=` line may give it, as cronie hands it to
/// `tzset`: an IANA name, a POSIX rule such as `JST-9`, or the path of a TZif file (an
/// optional leading `:` dropped, as POSIX allows).
///
/// # Errors
/// The reason, naming the zone and the forms accepted.
pub fn lookup_tz(name: &str) -> Result<TimeZone, String> {
    let name = name.strip_prefix(':').unwrap_or(name);
    let found = if name.starts_with('/') {
        std::fs::read(name).ok().and_then(|data| TimeZone::tzif(name, &data).ok())
    } else {
        TimeZone::get(name).or_else(|_| TimeZone::posix(name)).ok()
    };
    found.ok_or_else(|| {
        format!(
            "unknown time zone {name:?} (an IANA name such as Asia/Tokyo, a POSIX rule such as JST-9, or the path of a TZif file)"
        )
    })
}

/// What two zones must share for every daemon of a fleet to compute the same instants:
/// the offset at 2000-01-01 and every transition until 2100, as a CRC-32 in hex. Zones
/// that differ only in name (`UTC` and `Etc/UTC`, `JST-9` and `Asia/Tokyo`) share it.
pub fn fingerprint(zone: &TimeZone) -> String {
    let from = jiff::Timestamp::constant(946_684_800, 0);
    let until = jiff::Timestamp::constant(4_102_444_800, 0);
    let mut hash = crc32fast::Hasher::new();
    hash.update(&zone.to_offset(from).seconds().to_le_bytes());
    for transition in zone.following(from).take_while(|t| t.timestamp() < until) {
        hash.update(&transition.timestamp().as_second().to_le_bytes());
        hash.update(&transition.offset().seconds().to_le_bytes());
    }
    format!("{:08x}", hash.finalize())
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
    fn zones_that_differ_in_name_only_share_a_fingerprint() {
        let tokyo = fingerprint(&lookup("Asia/Tokyo").unwrap());
        assert_eq!(fingerprint(&lookup_tz("JST-9").unwrap()), tokyo);
        assert_eq!(fingerprint(&lookup_tz(":Asia/Tokyo").unwrap()), tokyo);
        assert_eq!(fingerprint(&lookup_tz("/usr/share/zoneinfo/Asia/Tokyo").unwrap()), tokyo);
        assert_eq!(fingerprint(&lookup("Etc/UTC").unwrap()), fingerprint(&TimeZone::UTC));
        assert_ne!(
            fingerprint(&lookup("Europe/Paris").unwrap()),
            fingerprint(&lookup("Europe/London").unwrap())
        );
        assert_ne!(fingerprint(&lookup("Europe/Berlin").unwrap()), tokyo);
        assert!(lookup_tz("Mars/Olympus").unwrap_err().contains("a POSIX rule such as JST-9"));
    }

    #[test]
    fn unknown_zone_is_named() {
        assert!(lookup("Mars/Olympus").unwrap_err().contains("unknown time zone \"Mars/Olympus\""));
    }
}
