//! How a schedule reads to a person: for the admin API, the status page and logs.

use std::fmt;

use jiff::tz::TimeZone;

/// A schedule as a person reads it; see [`Schedule::describe`](super::Schedule::describe).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScheduleDescription {
    /// How it is spelled: a cron expression as written (`*/5 * * * *`), `every 10s`,
    /// `at 2026-12-04T16:00:00Z`, `after 30s`, or a custom schedule's `Debug` text.
    pub text: String,
    /// One line of English, e.g. "At 09:30 on Monday through Friday"; `None` for a
    /// custom schedule that does not say.
    pub english: Option<String>,
    /// The IANA time zone the wall-clock times are read in (`None`: no wall-clock times,
    /// or a fixed offset).
    pub zone: Option<String>,
}

impl ScheduleDescription {
    /// This description with `suffix` after its text and its English (a window's bounds,
    /// a calendar's exceptions).
    pub(crate) fn followed_by(self, suffix: &str) -> Self {
        Self {
            text: format!("{}{suffix}", self.text),
            english: self.english.map(|english| format!("{english}{suffix}")),
            zone: self.zone,
        }
    }

    /// A description from its spelling and English; no zone.
    pub fn new(text: impl Into<String>, english: impl Into<String>) -> Self {
        Self { text: text.into(), english: Some(english.into()), zone: None }
    }

    /// The same, read in `zone`.
    #[must_use]
    pub fn in_zone(self, zone: &TimeZone) -> Self {
        Self { zone: zone.iana_name().map(str::to_owned), ..self }
    }
}

/// A duration as people write it in a jobs file: `90s`, `5m`, `1h30m`, `250ms`.
pub(crate) struct Compact(pub std::time::Duration);

impl fmt::Display for Compact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0.as_millis();
        if rest == 0 {
            return f.write_str("0s");
        }
        for (unit, size) in [("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)] {
            if rest >= size {
                write!(f, "{}{unit}", rest / size)?;
                rest %= size;
            }
        }
        Ok(())
    }
}
