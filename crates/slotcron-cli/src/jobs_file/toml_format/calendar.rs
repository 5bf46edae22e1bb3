//! `[[calendar]]` tables — named exclusion calendars ([`slotcron::Calendar`]) — and a
//! job's `exclude`, the calendars whose instants are not its triggers.
//!
//! ```toml
//! [[calendar]]
//! name = "holidays"
//! dates = ["2026-12-25", "2027-01-01"]           # whole days, in the calendar's zone
//! ranges = ["2026-12-24T12:00/2026-12-27T00:00"]  # half-open, local wall time
//! cron = ["* * * * 0,6"]                          # 5 fields: each whole minute matched
//! timezone = "Europe/Berlin"                      # default: the file's
//! ```

use std::ops::Range;
use std::sync::Arc;

use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;
use slotcron::{Calendar, ScheduleError};
use toml::de::DeValue;

use super::Reader;
use super::table::{CALENDAR_KEYS, Table, ZONE};
use crate::zone;

impl Reader<'_> {
    /// The `[[calendar]]` tables of `top`, kept by name for the jobs' `exclude`.
    pub(super) fn calendars(&mut self, top: &Table<'_, '_>) {
        let expected = "[[calendar]] tables (write [[calendar]], not [calendar])";
        let Some(tables) = self.typed(top, "calendar", expected, DeValue::as_array) else { return };
        for item in tables.get_ref().iter() {
            let Some(entries) = item.get_ref().as_table() else {
                let reason = format!("expected a [[calendar]] table, found {}", self.shown(item));
                self.problem(top, "calendar", item.span(), reason);
                continue;
            };
            let line = self.line(item.span());
            let table = Table {
                entries,
                line,
                job: None,
                number: None,
                prefix: "calendar.",
                known: CALENDAR_KEYS,
                what: "a [[calendar]] table",
            };
            if let Some(calendar) = self.calendar(&table) {
                self.calendars.insert(calendar.name().to_owned(), Arc::new(calendar));
            }
        }
    }

    /// One `[[calendar]]` table, its problems recorded; `None` without a valid name.
    /// A calendar with problems is still kept by its name: the file is refused anyway,
    /// and a second calendar of that name or a job's `exclude` of it read as they should.
    fn calendar(&mut self, table: &Table<'_, '_>) -> Option<Calendar> {
        self.unknown_keys(table);
        let Some(name) = self.string(table, "name", "a string like \"holidays\"") else {
            if table.get("name").is_none() {
                self.missing(table, "name", "every [[calendar]] needs a name");
            }
            return None;
        };
        if let Err(reason) = check_name(name.get_ref()) {
            self.problem(table, "name", name.span(), reason);
            return None;
        }
        let name = (*name.get_ref()).to_owned();
        let owner = format!("calendar {name:?}: ");
        if self.calendars.contains_key(&name) {
            let span = table.get("name").map(|v| v.span()).unwrap_or_default();
            self.problem(table, "name", span, format!("a [[calendar]] named {name:?} is defined twice"));
        }
        let zone = match table.get("timezone") {
            None => self.default_zone.clone(),
            Some(_) => self.string(table, "timezone", ZONE).and_then(|text| {
                zone::lookup(text.get_ref())
                    .map_err(|reason| self.problem(table, "timezone", text.span(), reason))
                    .ok()
            }),
        };
        // An invalid zone is recorded: the rest is still checked, read in UTC.
        let mut calendar = Calendar::new(name.as_str()).in_zone(zone.unwrap_or(TimeZone::UTC));
        for (text, span) in self.strings(table, "dates", "a list of dates like [\"2026-12-25\"]", &owner) {
            match text.parse::<Date>() {
                Ok(date) => calendar = calendar.date(date),
                Err(_) => self.calendar_problem(
                    table,
                    &name,
                    "dates",
                    span,
                    format!("{text:?} is not a date like 2026-12-25"),
                ),
            }
        }
        for (text, span) in self.strings(
            table,
            "ranges",
            "a list of ranges like [\"2026-12-24T12:00/2026-12-27T00:00\"]",
            &owner,
        ) {
            let parsed = text.split_once('/').and_then(|(start, end)| {
                Some((start.parse::<DateTime>().ok()?, end.parse::<DateTime>().ok()?))
            });
            let Some((start, end)) = parsed else {
                let reason = format!(
                    "{text:?} is not a range of local date-times like 2026-12-24T12:00/2026-12-27T00:00"
                );
                self.calendar_problem(table, &name, "ranges", span, reason);
                continue;
            };
            match calendar.clone().range(start, end) {
                Ok(with) => calendar = with,
                Err(e) => self.calendar_problem(table, &name, "ranges", span, reason_of(e)),
            }
        }
        for (text, span) in
            self.strings(table, "cron", "a list of cron expressions like [\"* * * * 0,6\"]", &owner)
        {
            match calendar.clone().cron(&text) {
                Ok(with) => calendar = with,
                Err(e) => {
                    self.calendar_problem(table, &name, "cron", span, format!("{text:?}: {}", reason_of(e)))
                }
            }
        }
        Some(calendar)
    }

    /// A problem with `key` of the calendar `name`, which the reason names.
    fn calendar_problem(
        &mut self,
        table: &Table<'_, '_>,
        name: &str,
        key: &str,
        span: Range<usize>,
        reason: String,
    ) {
        self.problem(table, key, span, format!("calendar {name:?}: {reason}"));
    }

    /// The strings of the list `key` of `table`, each with its span; a value that is not
    /// a list of strings is a problem (and yields none), its reason starting with `owner`.
    pub(super) fn strings(
        &mut self,
        table: &Table<'_, '_>,
        key: &str,
        expected: &str,
        owner: &str,
    ) -> Vec<(String, Range<usize>)> {
        let Some(value) = table.get(key) else { return Vec::new() };
        let Some(list) = value.get_ref().as_array() else {
            let reason = format!("{owner}expected {expected}, found {}", self.shown(value));
            self.problem(table, key, value.span(), reason);
            return Vec::new();
        };
        let mut strings = Vec::new();
        for item in list.iter() {
            match item.get_ref().as_str() {
                Some(text) => strings.push((text.to_owned(), item.span())),
                None => {
                    let reason = format!("{owner}expected {expected}, found {}", self.shown(item));
                    self.problem(table, key, item.span(), reason);
                }
            }
        }
        strings
    }

    /// A job's `exclude`: the calendars it names, each defined by a `[[calendar]]` of
    /// the file.
    pub(super) fn exclude(&mut self, table: &Table<'_, '_>) -> Vec<Arc<Calendar>> {
        let mut calendars = Vec::new();
        for (name, span) in self.strings(table, "exclude", "a list of calendar names like [\"holidays\"]", "")
        {
            match self.calendars.get(&name) {
                Some(calendar) => calendars.push(calendar.clone()),
                None => {
                    let mut known: Vec<&str> = self.calendars.keys().map(String::as_str).collect();
                    known.sort_unstable();
                    let defined = if known.is_empty() {
                        "none is defined".to_owned()
                    } else {
                        format!("defined: {}", known.join(", "))
                    };
                    self.problem(
                        table,
                        "exclude",
                        span,
                        format!("no [[calendar]] is named {name:?} ({defined})"),
                    );
                }
            }
        }
        calendars
    }
}

/// A calendar's name: letters, digits, `-`, `_` and `.`, as a job's `exclude` names it.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    match name.chars().find(|c| !(c.is_ascii_alphanumeric() || "-_.".contains(*c))) {
        Some(c) => {
            Err(format!("{name:?}: a calendar name is letters, digits, '-', '_' and '.', found {c:?}"))
        }
        None => Ok(()),
    }
}

/// What a calendar's field is refused for, without the field's name the problem gives.
fn reason_of(error: ScheduleError) -> String {
    match error {
        ScheduleError::Invalid { reason, .. } => reason,
        other => other.to_string(),
    }
}
