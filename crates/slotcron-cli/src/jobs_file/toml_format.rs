//! The TOML jobs file.
//!
//! ```toml
//! timezone = "Europe/Berlin"     # default zone of cron jobs (default UTC)
//!
//! [coordination]                 # optional
//! redis = "redis://10.0.0.5:6379" # the Redis of the fleet (--redis and
//!                                # SLOTCRON_REDIS_URL take precedence)
//!
//! [[job]]
//! name = "backup"
//! cron = "0 3 * * *"             # exactly one of every, cron, at, after
//! command = "pg_dump app > /var/backups/app.sql"
//! timeout = "1h30m"              # optional
//! timezone = "UTC"               # optional, cron jobs only
//! misfire = "run_once"           # optional: skip, run_once or run_all
//! grace = "5m"                   # optional (default 1s)
//!
//! [[job]]
//! name = "heartbeat"
//! every = "10s"
//! run_on_start = true            # optional, interval jobs only
//! misfire = "run_all"
//! misfire_cap = 3                # optional, run_all only (default 100)
//! command = "echo alive"
//! ```
//!
//! `at` is an RFC 3339 instant with an offset (`"2026-12-24T18:00:00+01:00"`);
//! durations are written `"90s"`, `"5m"`, `"1h30m"` ([`crate::duration`]). Unknown
//! keys are errors.

use std::ops::Range;
use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde::Deserialize;
use slotcron::Misfire;
use slotcron::schedule::CronSchedule;
use toml::Spanned;

use super::problem::line_of;
use super::{Coordination, Draft, Parsed, Problem, ScheduleSpec};
use crate::command::ShellCommand;
use crate::{coordination, cron_error, duration, zone};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    timezone: Option<Spanned<String>>,
    coordination: Option<CoordinationTable>,
    #[serde(default)]
    job: Vec<Spanned<JobTable>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CoordinationTable {
    redis: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JobTable {
    name: Option<Spanned<String>>,
    every: Option<Spanned<String>>,
    cron: Option<Spanned<String>>,
    at: Option<Spanned<String>>,
    after: Option<Spanned<String>>,
    command: Option<Spanned<String>>,
    timeout: Option<Spanned<String>>,
    run_on_start: Option<Spanned<bool>>,
    timezone: Option<Spanned<String>>,
    misfire: Option<Spanned<String>>,
    misfire_cap: Option<Spanned<i64>>,
    grace: Option<Spanned<String>>,
}

/// Parses a TOML jobs file, collecting every problem.
pub(super) fn parse(source: &str) -> Parsed {
    let mut parsed = Parsed::default();
    let document: Document = match toml::from_str(source) {
        Ok(document) => document,
        Err(e) => {
            let line = e.span().map_or(1, |span| line_of(source, span.start));
            parsed.problems.push(Problem::line(line, e.message().trim_end()));
            return parsed;
        }
    };
    let default_zone = match &document.timezone {
        None => Some(TimeZone::UTC),
        Some(name) => match zone::lookup(name.get_ref()) {
            Ok(zone) => Some(zone),
            Err(reason) => {
                let line = line_of(source, name.span().start);
                parsed.problems.push(Problem::field(line, None, "timezone", reason));
                None
            }
        },
    };
    if let Some(redis) = document.coordination.and_then(|table| table.redis) {
        match coordination::check_redis_url(redis.get_ref()) {
            Ok(()) => parsed.coordination = Coordination { redis: Some(redis.into_inner()) },
            Err(reason) => {
                let line = line_of(source, redis.span().start);
                parsed.problems.push(Problem::field(line, None, "coordination.redis", reason));
            }
        }
    }
    for table in &document.job {
        let mut job =
            JobReader { source, problems: &mut parsed.problems, table, default_zone: &default_zone };
        if let Some(name) = &table.get_ref().name {
            parsed.names.push((name.get_ref().clone(), job.line(name.span())));
        }
        if let Some(draft) = job.read() {
            parsed.drafts.push(draft);
        }
    }
    parsed
}

/// Reads one `[[job]]` table, recording its problems.
struct JobReader<'a> {
    source: &'a str,
    problems: &'a mut Vec<Problem>,
    table: &'a Spanned<JobTable>,
    /// The file's zone; `None` if it is invalid (reported once, at the file level).
    default_zone: &'a Option<TimeZone>,
}

impl JobReader<'_> {
    fn line(&self, span: Range<usize>) -> usize {
        line_of(self.source, span.start)
    }

    /// The job's draft, or `None` after recording its problems.
    fn read(&mut self) -> Option<Draft> {
        let spanned = self.table;
        let table = spanned.get_ref();
        let line = self.line(self.table.span());
        let before = self.problems.len();
        let name = match &table.name {
            Some(name) => Some(name),
            None => {
                self.problems.push(Problem::field(line, None, "name", "missing: every [[job]] needs a name"));
                None
            }
        };
        let job = name.map(|n| n.get_ref().as_str());
        let schedule = self.schedule(job);
        let command = match &table.command {
            Some(command) if command.get_ref().trim().is_empty() => {
                self.problem(command.span(), job, "command", "must not be empty");
                None
            }
            Some(command) => Some(command),
            None => {
                self.problems.push(Problem::field(line, job, "command", "missing: the shell command to run"));
                None
            }
        };
        let timeout = self.duration("timeout", &table.timeout, job);
        let grace = self.duration("grace", &table.grace, job);
        let misfire = self.misfire(job);
        if self.problems.len() > before {
            return None;
        }
        let (name, command, (schedule, schedule_field, schedule_line)) = (name?, command?, schedule?);
        let mut field_lines = vec![("name", self.line(name.span())), (schedule_field, schedule_line)];
        let spans = [
            ("timeout", table.timeout.as_ref().map(Spanned::span)),
            ("run_on_start", table.run_on_start.as_ref().map(Spanned::span)),
            ("misfire", table.misfire.as_ref().map(Spanned::span)),
            ("misfire_cap", table.misfire_cap.as_ref().map(Spanned::span)),
            ("grace", table.grace.as_ref().map(Spanned::span)),
        ];
        for (field, span) in spans {
            if let Some(span) = span {
                field_lines.push((field, self.line(span)));
            }
        }
        Some(Draft {
            name: name.get_ref().clone(),
            name_line: self.line(name.span()),
            line,
            schedule,
            schedule_field,
            command: ShellCommand::new(command.get_ref().trim()),
            timeout,
            run_on_start: table.run_on_start.as_ref().is_some_and(|r| *r.get_ref()),
            misfire,
            grace,
            field_lines,
        })
    }

    /// The duration in `value` (the key `field`), if given and valid; a problem if invalid.
    fn duration(
        &mut self,
        field: &str,
        value: &Option<Spanned<String>>,
        job: Option<&str>,
    ) -> Option<Duration> {
        let value = value.as_ref()?;
        duration::parse(value.get_ref()).map_err(|reason| self.problem(value.span(), job, field, reason)).ok()
    }

    /// The misfire policy from `misfire` and `misfire_cap`, if given and valid (problems
    /// are recorded).
    fn misfire(&mut self, job: Option<&str>) -> Option<Misfire> {
        let spanned = self.table;
        let table = spanned.get_ref();
        let policy = table.misfire.as_ref().and_then(|policy| match policy.get_ref().as_str() {
            "skip" => Some(Misfire::Skip),
            "run_once" => Some(Misfire::RunOnce),
            "run_all" => Some(Misfire::RunAll { cap: Misfire::DEFAULT_CAP }),
            other => {
                let reason = format!("{other:?} is not a misfire policy: write skip, run_once or run_all");
                self.problem(policy.span(), job, "misfire", reason);
                None
            }
        });
        let Some(cap) = &table.misfire_cap else { return policy };
        match policy {
            Some(Misfire::RunAll { .. }) => match u32::try_from(*cap.get_ref()) {
                Ok(cap) => Some(Misfire::RunAll { cap }),
                Err(_) => {
                    let reason =
                        format!("{} is out of range: write a number from 1 to {}", cap.get_ref(), u32::MAX);
                    self.problem(cap.span(), job, "misfire_cap", reason);
                    None
                }
            },
            // An invalid policy is reported on its own line.
            None if table.misfire.is_some() => None,
            _ => {
                let reason = "applies to misfire = \"run_all\" only";
                self.problem(cap.span(), job, "misfire_cap", reason);
                None
            }
        }
    }

    /// The one schedule of the job, its key and its line.
    fn schedule(&mut self, job: Option<&str>) -> Option<(ScheduleSpec, &'static str, usize)> {
        let spanned = self.table;
        let table = spanned.get_ref();
        let given: Vec<(&'static str, &Spanned<String>)> =
            [("every", &table.every), ("cron", &table.cron), ("at", &table.at), ("after", &table.after)]
                .into_iter()
                .filter_map(|(key, value)| value.as_ref().map(|v| (key, v)))
                .collect();
        let zone = self.zone(job, given.first().map(|(key, _)| *key));
        let (key, value) = match given.as_slice() {
            [] => {
                let line = self.line(self.table.span());
                let reason = "missing: set exactly one of every, cron, at, after";
                self.problems.push(Problem::field(line, job, "schedule", reason));
                return None;
            }
            [one] => *one,
            [(first, first_value), rest @ ..] => {
                let first_line = self.line(first_value.span());
                for (key, value) in rest {
                    let reason = format!(
                        "{key} and {first} (line {first_line}) both set; a job has exactly one of every, cron, at, after"
                    );
                    self.problem(value.span(), job, key, reason);
                }
                return None;
            }
        };
        let text = value.get_ref();
        let spec = match key {
            "every" => duration::parse(text).map(ScheduleSpec::Every),
            "after" => duration::parse(text).map(ScheduleSpec::After),
            "at" => text.parse::<Timestamp>().map(ScheduleSpec::At).map_err(|e| {
                format!("{text:?} is not an RFC 3339 instant with an offset, e.g. \"2026-12-24T18:00:00+01:00\": {e}")
            }),
            _ => match (CronSchedule::parse(text), zone) {
                (Ok(cron), Some(zone)) => Ok(ScheduleSpec::Cron(cron.with_time_zone(zone))),
                // An invalid zone is reported on its own line.
                (Ok(_), None) => return None,
                (Err(e), _) => Err(cron_error::reason(&e, 0)),
            },
        };
        match spec {
            Ok(spec) => Some((spec, key, self.line(value.span()))),
            Err(reason) => {
                self.problem(value.span(), job, key, reason);
                None
            }
        }
    }

    /// The zone of a cron job: its own `timezone`, else the file's. `None` if invalid
    /// (and reported), or given for a schedule that is not a cron expression.
    fn zone(&mut self, job: Option<&str>, schedule_key: Option<&str>) -> Option<TimeZone> {
        let spanned = self.table;
        let Some(name) = &spanned.get_ref().timezone else {
            return self.default_zone.clone();
        };
        if let Some(key) = schedule_key.filter(|key| *key != "cron") {
            let reason = format!("applies to cron schedules only, and this job's schedule is {key}");
            self.problem(name.span(), job, "timezone", reason);
            return None;
        }
        zone::lookup(name.get_ref()).map_err(|reason| self.problem(name.span(), job, "timezone", reason)).ok()
    }

    fn problem(&mut self, span: Range<usize>, job: Option<&str>, field: &str, reason: impl Into<String>) {
        let line = self.line(span);
        self.problems.push(Problem::field(line, job, field, reason));
    }
}
