//! The `at` key: the instant of a one-shot job, a TOML date-time or a string holding
//! one, with its offset or on the wall clock of the job's zone.

use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use toml::Spanned;
use toml::de::DeValue;
use toml::value::{Datetime, Offset as TomlOffset};

use super::Reader;
use super::table::Table;

/// What an `at` value is expected to look like, in type problems.
const AT: &str = "an RFC 3339 date-time like 2026-12-24T18:00:00+01:00";

impl Reader<'_> {
    /// The instant of `at`: a TOML date-time or a string holding one, with its offset or
    /// read in `zone`. `None` after recording a problem that is not the value's own (its
    /// type, or a `timezone` with an offset).
    pub(super) fn at(
        &mut self,
        table: &Table<'_, '_>,
        value: &Spanned<DeValue<'_>>,
        zone: Option<&TimeZone>,
    ) -> Option<Result<Timestamp, String>> {
        let datetime = match value.get_ref() {
            DeValue::Datetime(datetime) => *datetime,
            DeValue::String(text) => match text.parse::<Datetime>() {
                Ok(datetime) => datetime,
                Err(e) => {
                    return Some(Err(format!(
                        "{text:?} is not an RFC 3339 date-time ({e}): write e.g. 2026-12-24T18:00:00+01:00, or \
                         2026-12-24T18:00:00 in the job's timezone"
                    )));
                }
            },
            _ => {
                self.wrong_type(table, "at", value, AT);
                return None;
            }
        };
        if datetime.offset.is_some()
            && let Some(own) = table.get("timezone")
        {
            let reason = format!("at {datetime} has an offset of its own: remove the offset or the timezone");
            self.problem(table, "timezone", own.span(), reason);
            return None;
        }
        // Without an offset, an invalid zone is reported on its own line.
        let zone = if datetime.offset.is_some() { &TimeZone::UTC } else { zone? };
        Some(instant(datetime, zone))
    }
}

/// The instant of a TOML date-time: with its offset, or on the wall clock of `zone`.
///
/// # Errors
/// A date alone, a time alone, a date-time jiff refuses (a leap second), or a wall-clock
/// time `zone` skips or repeats (a DST change).
fn instant(at: Datetime, zone: &TimeZone) -> Result<Timestamp, String> {
    let (Some(date), Some(time)) = (at.date, at.time) else {
        return Err(match at.date {
            Some(_) => format!("{at} is a date without a time of day: write e.g. {at}T00:00:00"),
            None => format!("{at} is a time of day without a date: write e.g. 2026-12-24T{at}"),
        });
    };
    let invalid = |e: jiff::Error| format!("{at} is not a valid date-time: {e}");
    let civil = DateTime::new(
        i16::try_from(date.year).map_err(|_| format!("{at}: the year is out of range"))?,
        date.month as i8,
        date.day as i8,
        time.hour as i8,
        time.minute as i8,
        time.second.unwrap_or(0) as i8,
        time.nanosecond.unwrap_or(0) as i32,
    )
    .map_err(invalid)?;
    match at.offset {
        Some(offset) => {
            let minutes = match offset {
                TomlOffset::Z => 0,
                TomlOffset::Custom { minutes } => minutes,
            };
            Offset::from_seconds(i32::from(minutes) * 60).and_then(|o| o.to_timestamp(civil)).map_err(invalid)
        }
        None => {
            let ambiguous = zone.to_ambiguous_zoned_datetime(civil);
            let offsets = match ambiguous.offset() {
                AmbiguousOffset::Gap { before, after } | AmbiguousOffset::Fold { before, after } => {
                    [before, after]
                }
                AmbiguousOffset::Unambiguous { offset } => [offset, offset],
            };
            ambiguous.unambiguous().map(|z| z.timestamp()).map_err(|e| {
                let name = zone.iana_name().unwrap_or("its fixed offset");
                let [before, after] = offsets.map(rfc3339_offset);
                format!("{at} in {name}: {e}; give the offset: {at}{before} or {at}{after}")
            })
        }
    }
}

/// An offset as RFC 3339 writes it: `+01:00`, `-07:00`, `+05:45`.
fn rfc3339_offset(offset: Offset) -> String {
    let seconds = offset.seconds();
    let sign = if seconds < 0 { '-' } else { '+' };
    let minutes = seconds.unsigned_abs() / 60;
    format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{jobs, problems};
    use super::*;
    use crate::jobs_file::ScheduleSpec;

    fn instant(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn at_takes_toml_date_times_and_strings_alike() {
        let source = r#"timezone = "Europe/Berlin"

[[job]]
name = "offset"
at = 2026-12-24T18:00:00+01:00
command = "true"

[[job]]
name = "utc"
at = 2026-12-24T17:00:00Z
command = "true"

[[job]]
name = "local-in-file-zone"
at = 2026-12-24T18:00:00
command = "true"

[[job]]
name = "local-string"
at = "2026-12-24T18:00:00"
command = "true"

[[job]]
name = "local-in-job-zone"
at = 2026-12-24T12:00:00
timezone = "America/New_York"
command = "true"

[[job]]
name = "fraction"
at = 2026-12-24T17:00:00.5Z
command = "true"
"#;
        let at: Vec<Timestamp> = jobs(source)
            .iter()
            .map(|entry| match entry.schedule {
                ScheduleSpec::At(at) => at,
                ref other => panic!("{other}"),
            })
            .collect();
        let christmas_eve = instant("2026-12-24T17:00:00Z");
        assert_eq!(at[..5], [christmas_eve; 5]);
        assert_eq!(at[5], instant("2026-12-24T17:00:00.5Z"));
    }

    #[test]
    fn at_problems_are_named() {
        let found = problems(
            r#"timezone = "Europe/Berlin"

[[job]]
name = "date"
at = 2026-12-24
command = "true"

[[job]]
name = "time"
at = 18:00:00
command = "true"

[[job]]
name = "gap"
at = 2026-03-29T02:30:00
command = "true"

[[job]]
name = "both"
at = 2026-12-24T18:00:00Z
timezone = "UTC"
command = "true"

[[job]]
name = "number"
at = 20261224
command = "true"

[[job]]
name = "every"
every = "1m"
timezone = "UTC"
command = "true"
"#,
        );
        let expected = [
            "5: at: 2026-12-24 is a date without a time of day: write e.g. 2026-12-24T00:00:00",
            "10: at: 18:00:00 is a time of day without a date",
            "15: at: 2026-03-29T02:30:00 in Europe/Berlin: ",
            "21: timezone: at 2026-12-24T18:00:00Z has an offset of its own: remove the offset or the timezone",
            "26: at: expected an RFC 3339 date-time like 2026-12-24T18:00:00+01:00, found integer 20261224",
            "32: timezone: applies to cron and at schedules only, and this job's schedule is every",
        ];
        assert_eq!(found.len(), expected.len(), "{found:#?}");
        for (found, expected) in found.iter().zip(expected) {
            assert!(found.starts_with(expected), "expected {expected:?}, got {found:?}");
        }
        assert!(found[2].contains("gap"), "{}", found[2]);
        let offsets = "give the offset: 2026-03-29T02:30:00+01:00 or 2026-03-29T02:30:00+02:00";
        assert!(found[2].ends_with(offsets), "{}", found[2]);
        let fold = problems(
            "timezone = \"America/Los_Angeles\"\n[[job]]\nname = \"f\"\nat = 2026-11-01T01:30:00\ncommand = \"true\"\n",
        );
        let offsets = "give the offset: 2026-11-01T01:30:00-07:00 or 2026-11-01T01:30:00-08:00";
        assert!(fold[0].ends_with(offsets), "{fold:?}");
    }
}
