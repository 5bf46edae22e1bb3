//! The TOML jobs file.
//!
//! ```toml
//! timezone = "Europe/Berlin"     # default zone of cron and local at jobs (default UTC)
//!
//! [coordination]                 # optional
//! redis = "redis://10.0.0.5:6379" # the Redis of the fleet (--redis and
//!                                # SLOTCRON_REDIS_URL take precedence)
//! prefix = "myapp:"              # its key prefix (--redis-prefix and
//!                                # SLOTCRON_REDIS_PREFIX take precedence)
//!
//! [[job]]
//! name = "backup"
//! cron = "0 3 * * *"             # exactly one of every, cron, at, after
//! command = "pg_dump app > /var/backups/app.sql"
//! timeout = "1h30m"              # optional
//! timezone = "UTC"               # optional, cron and local at jobs only
//! misfire = "run_once"           # optional: skip, run_once or run_all
//! grace = "5m"                   # optional (default 1s)
//!
//! [[job]]
//! name = "heartbeat"
//! every = "10s"
//! run_on_start = true            # optional, interval jobs only
//! on_every_replica = true        # optional: every replica runs it, unclaimed
//! misfire = "run_all"
//! misfire_cap = 3                # optional, run_all only (default 100)
//! command = "echo alive"
//! ```
//!
//! `at` is an RFC 3339 date-time, quoted or not: with an offset
//! (`2026-12-24T18:00:00+01:00`), or without one (`2026-12-24T18:00:00`), read in the
//! job's `timezone`, else the file's. Durations are written `"90s"`, `"5m"`, `"1h30m"`,
//! `"2d"` ([`crate::duration`]).
//!
//! The file is read as a table of spanned values and checked key by key, so that one
//! pass reports every problem: unknown keys (with the nearest known one), values of the
//! wrong type, missing keys, invalid values.

use std::ops::Range;
use std::time::Duration;

use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::{Offset, TimeZone};
use slotcron::Misfire;
use slotcron::schedule::CronSchedule;
use slotcron_redis::RedisConfig;
use toml::Spanned;
use toml::de::{DeTable, DeValue};
use toml::value::{Datetime, Offset as TomlOffset};

use super::problem::line_of;
use super::{Draft, Parsed, Problem, ScheduleSpec};
use crate::command::ShellCommand;
use crate::{coordination, cron_error, duration, zone};

const TOP_LEVEL_KEYS: &[&str] = &["timezone", "coordination", "job"];
const COORDINATION_KEYS: &[&str] = &["redis", "prefix"];
const JOB_KEYS: &[&str] = &[
    "name",
    "every",
    "cron",
    "at",
    "after",
    "command",
    "timeout",
    "run_on_start",
    "on_every_replica",
    "timezone",
    "misfire",
    "misfire_cap",
    "grace",
];
/// The keys of which a job sets exactly one.
const SCHEDULE_KEYS: [&str; 4] = ["every", "cron", "at", "after"];

/// What each kind of value is expected to look like, in type problems.
const DURATION: &str = "a duration string like \"90s\"";
const BOOLEAN: &str = "true or false";
const ZONE: &str = "a time zone name string like \"Europe/Berlin\"";
const AT: &str = "an RFC 3339 date-time like 2026-12-24T18:00:00+01:00";

/// Parses a TOML jobs file, collecting every problem.
pub(super) fn parse(source: &str) -> Parsed {
    let mut reader = Reader { source, parsed: Parsed::default() };
    let (document, errors) = DeTable::parse_recoverable(source);
    if errors.is_empty() {
        reader.document(document.get_ref());
    } else {
        // The document is what could be recovered: its keys would be misleading.
        for error in errors {
            let line = error.span().map_or(1, |span| line_of(source, span.start));
            reader.parsed.problems.push(Problem::line(line, error.message().trim_end()));
        }
    }
    reader.parsed
}

/// A TOML table being read, and how problems name it and its keys.
#[derive(Clone, Copy)]
struct Table<'t, 'i> {
    entries: &'t DeTable<'i>,
    /// The line of its header, for keys that are missing.
    line: usize,
    /// The job it defines, once its name is known.
    job: Option<&'t str>,
    /// What problems prefix its keys with: `coordination.` for `[coordination]`.
    prefix: &'static str,
    /// The keys it may hold.
    known: &'static [&'static str],
    /// What it is called in problems: "a [[job]] table"...
    what: &'static str,
}

impl<'t, 'i> Table<'t, 'i> {
    fn get(&self, key: &str) -> Option<&'t Spanned<DeValue<'i>>> {
        self.entries.iter().find(|(k, _)| k.get_ref() == key).map(|(_, value)| value)
    }
}

/// Reads the document, recording what it finds in `parsed`.
struct Reader<'s> {
    source: &'s str,
    parsed: Parsed,
}

impl Reader<'_> {
    fn line(&self, span: Range<usize>) -> usize {
        line_of(self.source, span.start)
    }

    /// Records a problem with `key` of `table`, on the line of `span`.
    fn problem(&mut self, table: &Table<'_, '_>, key: &str, span: Range<usize>, reason: impl Into<String>) {
        let line = self.line(span);
        let field = format!("{}{key}", table.prefix);
        self.parsed.problems.push(Problem::field(line, table.job, &field, reason));
    }

    /// Records a problem for `key` missing from `table`, on the line of its header.
    fn missing(&mut self, table: &Table<'_, '_>, key: &str, reason: &str) {
        let field = format!("{}{key}", table.prefix);
        self.parsed.problems.push(Problem::field(
            table.line,
            table.job,
            &field,
            format!("missing: {reason}"),
        ));
    }

    /// Records a problem for every key of `table` it may not hold, suggesting the known
    /// key nearest to a likely typo.
    fn unknown_keys(&mut self, table: &Table<'_, '_>) {
        for (key, _) in table.entries.iter() {
            let key_name: &str = key.get_ref();
            if table.known.contains(&key_name) {
                continue;
            }
            let known = table.known.join(", ");
            let reason = match nearest(key_name, table.known) {
                Some(near) => format!("unknown key; did you mean {near}? ({} takes {known})", table.what),
                None => format!("unknown key; {} takes {known}", table.what),
            };
            self.problem(table, key_name, key.span(), reason);
        }
    }

    /// The value of `key` in `table` if `extract` accepts it; a problem saying what was
    /// `expected` otherwise. `None` also when absent.
    fn typed<'t, 'i, T>(
        &mut self,
        table: &Table<'t, 'i>,
        key: &str,
        expected: &str,
        extract: impl FnOnce(&'t DeValue<'i>) -> Option<T>,
    ) -> Option<Spanned<T>> {
        let value = table.get(key)?;
        let extracted = extract(value.get_ref());
        if extracted.is_none() {
            self.wrong_type(table, key, value, expected);
        }
        extracted.map(|extracted| Spanned::new(value.span(), extracted))
    }

    /// Records that `value`, of `key`, is not what was `expected`.
    fn wrong_type(&mut self, table: &Table<'_, '_>, key: &str, value: &Spanned<DeValue<'_>>, expected: &str) {
        let reason = format!("expected {expected}, found {}", self.shown(value));
        self.problem(table, key, value.span(), reason);
    }

    fn string<'t>(&mut self, table: &Table<'t, '_>, key: &str, expected: &str) -> Option<Spanned<&'t str>> {
        self.typed(table, key, expected, DeValue::as_str)
    }

    fn bool(&mut self, table: &Table<'_, '_>, key: &str) -> Option<Spanned<bool>> {
        self.typed(table, key, BOOLEAN, DeValue::as_bool)
    }

    /// A value as type problems show it: its type, and its text if it is short.
    fn shown(&self, value: &Spanned<DeValue<'_>>) -> String {
        let kind = value.get_ref().type_str();
        match value.get_ref() {
            DeValue::Table(_) => "a table".into(),
            DeValue::Array(_) => "an array".into(),
            _ => match self.source.get(value.span()).map(str::trim) {
                Some(text) if text.len() <= 60 && !text.contains('\n') => format!("{kind} {text}"),
                _ => kind.into(),
            },
        }
    }

    /// The top-level table: the file's zone, `[coordination]` and the jobs.
    fn document(&mut self, root: &DeTable<'_>) {
        let top = Table {
            entries: root,
            line: 1,
            job: None,
            prefix: "",
            known: TOP_LEVEL_KEYS,
            what: "the top level",
        };
        self.unknown_keys(&top);
        let default_zone = match top.get("timezone") {
            None => Some(TimeZone::UTC),
            Some(_) => self.string(&top, "timezone", ZONE).and_then(|name| {
                zone::lookup(name.get_ref())
                    .map_err(|reason| self.problem(&top, "timezone", name.span(), reason))
                    .ok()
            }),
        };
        if let Some(entries) = self.typed(&top, "coordination", "a [coordination] table", DeValue::as_table) {
            let line = self.line(entries.span());
            self.coordination(&Table {
                entries: entries.into_inner(),
                line,
                job: None,
                prefix: "coordination.",
                known: COORDINATION_KEYS,
                what: "[coordination]",
            });
        }
        let expected = "[[job]] tables (write [[job]], not [job])";
        let Some(jobs) = self.typed(&top, "job", expected, DeValue::as_array) else { return };
        for item in jobs.get_ref().iter() {
            let Some(entries) = item.get_ref().as_table() else {
                let reason = format!("expected a [[job]] table, found {}", self.shown(item));
                self.problem(&top, "job", item.span(), reason);
                continue;
            };
            let line = self.line(item.span());
            let table =
                Table { entries, line, job: None, prefix: "", known: JOB_KEYS, what: "a [[job]] table" };
            if let Some(draft) = self.job(table, &default_zone) {
                self.parsed.drafts.push(draft);
            }
        }
    }

    /// The `[coordination]` table.
    fn coordination(&mut self, table: &Table<'_, '_>) {
        self.unknown_keys(table);
        let url = "a Redis URL string like \"redis://10.0.0.5:6379\"";
        if let Some(redis) = self.string(table, "redis", url) {
            let checked = match *redis.get_ref() {
                "" => Err("must not be empty: remove the key to run without Redis".into()),
                url => coordination::check_redis_url(url),
            };
            match checked {
                Ok(()) => self.parsed.coordination.redis = Some((*redis.get_ref()).to_owned()),
                Err(reason) => self.problem(table, "redis", redis.span(), reason),
            }
        }
        if let Some(prefix) = self.string(table, "prefix", "a string like \"myapp:\"") {
            match *prefix.get_ref() {
                "" => {
                    let reason =
                        format!("must not be empty (the default is {:?})", RedisConfig::DEFAULT_KEY_PREFIX);
                    self.problem(table, "prefix", prefix.span(), reason);
                }
                text => self.parsed.coordination.prefix = Some(text.to_owned()),
            }
        }
    }

    /// One `[[job]]` table: its draft, or `None` after recording its problems.
    fn job<'t>(&mut self, table: Table<'t, '_>, default_zone: &Option<TimeZone>) -> Option<Draft> {
        let before = self.parsed.problems.len();
        let name = self.string(&table, "name", "a string like \"backup\"");
        if table.get("name").is_none() {
            self.missing(&table, "name", "every [[job]] needs a name");
        }
        let table = Table { job: name.as_ref().map(|n| *n.get_ref()), ..table };
        if let Some(name) = &name {
            let line = self.line(name.span());
            self.parsed.names.push(((*name.get_ref()).to_owned(), line));
        }
        self.unknown_keys(&table);
        let schedule = self.schedule(&table, default_zone);
        let command = self.string(&table, "command", "a shell command string");
        match &command {
            Some(command) if command.get_ref().trim().is_empty() => {
                self.problem(&table, "command", command.span(), "must not be empty");
            }
            Some(_) => {}
            None if table.get("command").is_none() => {
                self.missing(&table, "command", "the shell command to run")
            }
            None => {}
        }
        let timeout = self.duration(&table, "timeout");
        let grace = self.duration(&table, "grace");
        let misfire = self.misfire(&table);
        let run_on_start = self.bool(&table, "run_on_start");
        let on_every_replica = self.bool(&table, "on_every_replica");
        if self.parsed.problems.len() > before {
            return None;
        }
        let (name, command, (schedule, schedule_field)) = (name?, command?, schedule?);
        let field_lines = table
            .entries
            .iter()
            .filter_map(|(key, value)| {
                let field = JOB_KEYS.iter().find(|known| **known == key.get_ref().as_ref())?;
                Some((*field, self.line(value.span())))
            })
            .collect();
        Some(Draft {
            name: (*name.get_ref()).to_owned(),
            name_line: self.line(name.span()),
            line: table.line,
            schedule,
            schedule_field,
            command: ShellCommand::new(command.get_ref().trim()),
            timeout,
            run_on_start: run_on_start.is_some_and(|r| *r.get_ref()),
            on_every_replica: on_every_replica.is_some_and(|r| *r.get_ref()),
            misfire,
            grace,
            field_lines,
        })
    }

    /// The duration of `key`, if given and valid; a problem if invalid.
    fn duration(&mut self, table: &Table<'_, '_>, key: &str) -> Option<Duration> {
        let text = self.string(table, key, DURATION)?;
        duration::parse(text.get_ref()).map_err(|reason| self.problem(table, key, text.span(), reason)).ok()
    }

    /// The misfire policy from `misfire` and `misfire_cap`, if given and valid (problems
    /// are recorded).
    fn misfire(&mut self, table: &Table<'_, '_>) -> Option<Misfire> {
        let expected = "a string: \"skip\", \"run_once\" or \"run_all\"";
        let policy = self.string(table, "misfire", expected).and_then(|policy| match *policy.get_ref() {
            "skip" => Some(Misfire::Skip),
            "run_once" => Some(Misfire::RunOnce),
            "run_all" => Some(Misfire::RunAll { cap: Misfire::DEFAULT_CAP }),
            other => {
                let reason = format!("{other:?} is not a misfire policy: write skip, run_once or run_all");
                self.problem(table, "misfire", policy.span(), reason);
                None
            }
        });
        if table.get("misfire_cap").is_none() {
            return policy;
        }
        let cap = self.typed(table, "misfire_cap", "an integer", DeValue::as_integer)?;
        match policy {
            Some(Misfire::RunAll { .. }) => {
                match u32::from_str_radix(cap.get_ref().as_str(), cap.get_ref().radix()) {
                    Ok(cap) => Some(Misfire::RunAll { cap }),
                    Err(_) => {
                        let text = self.source.get(cap.span()).unwrap_or_default();
                        let reason = format!("{text} is out of range: write a number from 1 to {}", u32::MAX);
                        self.problem(table, "misfire_cap", cap.span(), reason);
                        None
                    }
                }
            }
            // An invalid policy is reported on its own line.
            None if table.get("misfire").is_some() => None,
            _ => {
                self.problem(table, "misfire_cap", cap.span(), "applies to misfire = \"run_all\" only");
                None
            }
        }
    }

    /// The one schedule of the job, and its key.
    fn schedule(
        &mut self,
        table: &Table<'_, '_>,
        default_zone: &Option<TimeZone>,
    ) -> Option<(ScheduleSpec, &'static str)> {
        let given: Vec<(&'static str, &Spanned<DeValue<'_>>)> =
            SCHEDULE_KEYS.into_iter().filter_map(|key| table.get(key).map(|value| (key, value))).collect();
        let zone = self.zone(table, given.first().map(|(key, _)| *key), default_zone);
        let (key, value) = match given.as_slice() {
            [] => {
                self.missing(table, "schedule", "set exactly one of every, cron, at, after");
                return None;
            }
            [one] => *one,
            [(first, first_value), rest @ ..] => {
                let first_line = self.line(first_value.span());
                for (key, value) in rest {
                    let reason = format!(
                        "{key} and {first} (line {first_line}) both set; a job has exactly one of every, cron, at, after"
                    );
                    self.problem(table, key, value.span(), reason);
                }
                return None;
            }
        };
        let spec = match key {
            "every" | "after" => {
                let text = self.string(table, key, DURATION)?;
                let spec = if key == "every" { ScheduleSpec::Every } else { ScheduleSpec::After };
                duration::parse(text.get_ref()).map(spec)
            }
            "cron" => {
                let text = self.string(table, key, "a cron expression string like \"0 3 * * *\"")?;
                match (CronSchedule::parse(text.get_ref()), zone) {
                    (Ok(cron), Some(zone)) => Ok(ScheduleSpec::Cron(cron.with_time_zone(zone))),
                    // An invalid zone is reported on its own line.
                    (Ok(_), None) => return None,
                    (Err(e), _) => Err(cron_error::reason(&e, 0)),
                }
            }
            _ => self.at(table, value, zone.as_ref())?.map(ScheduleSpec::At),
        };
        match spec {
            Ok(spec) => Some((spec, key)),
            Err(reason) => {
                self.problem(table, key, value.span(), reason);
                None
            }
        }
    }

    /// The instant of `at`: a TOML date-time or a string holding one, with its offset or
    /// read in `zone`. `None` after recording a problem that is not the value's own (its
    /// type, or a `timezone` with an offset).
    fn at(
        &mut self,
        table: &Table<'_, '_>,
        value: &Spanned<DeValue<'_>>,
        zone: Option<&TimeZone>,
    ) -> Option<Result<Timestamp, String>> {
        let datetime = match value.get_ref() {
            DeValue::Datetime(datetime) => *datetime,
            DeValue::String(text) => match text.parse::<Datetime>() {
                Ok(datetime) => datetime,
                Err(_) => {
                    return Some(Err(format!(
                        "{text:?} is not an RFC 3339 date-time: write e.g. 2026-12-24T18:00:00+01:00, or \
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

    /// The zone of a cron job or a local `at`: its own `timezone`, else the file's.
    /// `None` if invalid (and reported), or given for a schedule it does not apply to.
    fn zone(
        &mut self,
        table: &Table<'_, '_>,
        schedule_key: Option<&str>,
        default_zone: &Option<TimeZone>,
    ) -> Option<TimeZone> {
        let Some(given) = table.get("timezone") else { return default_zone.clone() };
        let name = self.string(table, "timezone", ZONE)?;
        if let Some(key) = schedule_key.filter(|key| !["cron", "at"].contains(key)) {
            let reason = format!("applies to cron and at schedules only, and this job's schedule is {key}");
            self.problem(table, "timezone", given.span(), reason);
            return None;
        }
        zone::lookup(name.get_ref())
            .map_err(|reason| self.problem(table, "timezone", name.span(), reason))
            .ok()
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
        None => zone.to_ambiguous_zoned_datetime(civil).unambiguous().map(|z| z.timestamp()).map_err(|e| {
            let name = zone.iana_name().unwrap_or("its fixed offset");
            format!("{at} in {name}: {e}; give the offset, e.g. {at}+01:00")
        }),
    }
}

/// The known key nearest to `key`, if close enough to be a typo (at most two edits,
/// swaps counting as one, and fewer than the key's length).
fn nearest(key: &str, known: &[&'static str]) -> Option<&'static str> {
    known
        .iter()
        .map(|candidate| (strsim::damerau_levenshtein(key, candidate), *candidate))
        .filter(|(distance, _)| *distance <= 2 && *distance < key.chars().count())
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

#[cfg(test)]
mod tests {
    use super::super::{Format, JobEntry, parse as load};
    use super::*;

    fn jobs(source: &str) -> Vec<JobEntry> {
        load(source, Format::Toml).unwrap_or_else(|problems| panic!("{problems:?}")).0
    }

    fn problems(source: &str) -> Vec<String> {
        let list = load(source, Format::Toml).map(drop).unwrap_err();
        list.iter()
            .map(|p| format!("{}: {}: {}", p.line.unwrap_or(0), p.field.as_deref().unwrap_or("-"), p.reason))
            .collect()
    }

    fn instant(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn on_every_replica_reaches_the_job() {
        let jobs = jobs(
            "[[job]]\nname = \"all\"\nevery = \"1m\"\non_every_replica = true\ncommand = \"true\"\n\n\
             [[job]]\nname = \"one\"\nevery = \"1m\"\ncommand = \"true\"\n\n\
             [[job]]\nname = \"off\"\nevery = \"1m\"\non_every_replica = false\ncommand = \"true\"\n",
        );
        let flags: Vec<bool> = jobs.iter().map(|entry| entry.job.on_every_replica()).collect();
        assert_eq!(flags, [true, false, false]);
    }

    #[test]
    fn every_key_reaches_the_job() {
        let source = r#"[[job]]
name = "all"
every = "1m"
command = "true"
timeout = "1d"
run_on_start = true
misfire = "run_all"
misfire_cap = 3
grace = "5m"

[[job]]
name = "once"
cron = "0 3 * * *"
timezone = "Asia/Tokyo"
command = "true"
misfire = "run_once"

[[job]]
name = "defaults"
after = "5s"
command = "true"
"#;
        let jobs = jobs(source);
        let job = |k: usize| &jobs[k].job;
        assert_eq!(job(0).timeout(), Some(Duration::from_secs(86_400)));
        assert!(job(0).run_on_start());
        assert_eq!(job(0).misfire(), Misfire::RunAll { cap: 3 });
        assert_eq!(job(0).grace(), Duration::from_secs(300));
        assert_eq!(job(1).misfire(), Misfire::RunOnce);
        assert_eq!(jobs[1].schedule.zone().iana_name(), Some("Asia/Tokyo"));
        assert_eq!(job(2).timeout(), None);
        assert!(!job(2).run_on_start());
        assert_eq!(job(2).grace(), Misfire::DEFAULT_GRACE);
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
    }

    #[test]
    fn likely_typos_get_the_nearest_key() {
        assert_eq!(nearest("comand", JOB_KEYS), Some("command"));
        assert_eq!(nearest("timezon", JOB_KEYS), Some("timezone"));
        assert_eq!(nearest("ta", JOB_KEYS), Some("at"));
        assert_eq!(nearest("colour", JOB_KEYS), None);
        assert_eq!(nearest("env", JOB_KEYS), None);
    }
}
