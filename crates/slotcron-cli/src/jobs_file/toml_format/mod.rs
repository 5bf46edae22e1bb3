//! The TOML jobs file.
//!
//! ```toml
//! timezone = "Europe/Berlin"     # default zone of cron and local at jobs (default UTC)
//! env = { PATH = "/usr/local/bin:/usr/bin:/bin" }   # optional: every job's environment
//! working_dir = "/srv"           # optional: every job's working directory
//! shutdown_timeout = "20s"       # optional: --shutdown-timeout takes precedence
//! max_concurrent_runs = 4        # optional: runs in flight per daemon (default no cap)
//! on_failure = "curl -d @- ..."  # optional: every job's failure hook
//!
//! [coordination]                 # optional
//! redis = "redis://10.0.0.5:6379" # the Redis of the fleet (--redis and
//!                                # SLOTCRON_REDIS_URL take precedence)
//! prefix = "myapp:"              # its key prefix (--redis-prefix and
//!                                # SLOTCRON_REDIS_PREFIX take precedence)
//! slack = "5s"                   # clock-skew slack (default 5s;
//!                                # --clock-skew-slack takes precedence)
//! takeover_delay = "300ms"       # how long a daemon waits for a trigger's owner
//!                                # before taking it over (default 300ms, below
//!                                # membership_ttl and every job's grace;
//!                                # --takeover-delay takes precedence)
//! membership_ttl = "10s"         # a daemon that stops heartbeating leaves the fleet
//!                                # this long after (default 10s; --membership-ttl)
//! shared_work = true             # false: every daemon claims every trigger
//!
//! [admin]                        # optional
//! listen = "127.0.0.1:9090"      # the admin API (--admin and SLOTCRON_ADMIN take
//!                                # precedence); or "unix:/run/slotcron.sock"
//!
//! [history]                      # optional: the run history the daemon keeps
//! retention = "30d"              # records whose trigger is older are pruned
//!                                # (default 30d; "0" is the default)
//! per_job = 10000                # at most this many records per job (default 10000)
//!                                # each job's last success and last failure are kept
//!
//! [[calendar]]                   # optional: instants jobs can `exclude`
//! name = "holidays"
//! dates = ["2026-12-25"]         # whole days, in the calendar's zone
//! ranges = ["2026-12-24T12:00/2026-12-27T00:00"] # half-open, local wall time
//! cron = ["* * * * 0,6"]         # 5 fields: whole minutes; 6 fields: seconds
//! timezone = "Europe/Berlin"     # default: the file's
//!
//! [[job]]
//! name = "backup"
//! cron = "0 3 * * *"             # exactly one of every, cron, at, after, run_after
//! command = "pg_dump app > /var/backups/app.sql"
//! timeout = "1h30m"              # optional
//! timezone = "UTC"               # optional, cron and local at jobs only
//! misfire = "run_once"           # optional: skip, run_once or run_all
//! grace = "5m"                   # optional (default 1s)
//! env = { PGHOST = "db1" }       # optional: added to the file's env (the job's wins)
//! working_dir = "/srv/app"       # optional: replaces the file's (default: the daemon's)
//! attempts = 3                   # optional: in all, the first included (default 1)
//! backoff = "30s"                # optional: before each retry (default none)
//! backoff_multiplier = 2         # optional: exponential backoff (default 1, fixed)
//! backoff_max = "10m"            # optional: the longest backoff
//! overlap = "forbid"             # optional: allow, forbid, buffer_one or replace
//! on_interrupt = "rerun"         # optional: record (the default) or rerun (runs it again)
//! jitter = "30s"                 # optional: start offset in [0, jitter)
//! on_failure = "mail -s backup ops" # optional (the file-wide one otherwise)
//! enabled = false                # optional: validated and listed, never scheduled
//! exclude = ["holidays"]         # optional: calendars whose instants are not triggers
//! on = ["region=eu", "gpu"]      # optional: only daemons with these --label run it
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

use rayon::prelude::*;

use jiff::tz::TimeZone;
use slotcron_redis::RedisConfig;
use toml::de::{DeTable, DeValue};

use super::problem::LineIndex;
use super::{Draft, Parsed, Problem};
use crate::command::{self, ShellCommand};
use crate::{settings, zone};
use env::Defaults;
use table::{ADMIN_KEYS, COORDINATION_KEYS, HISTORY_KEYS, JOB_KEYS, TOP_LEVEL_KEYS, Table, ZONE};

mod at;
mod calendar;
mod chunks;
mod env;
mod history;
mod misfire;
mod placement;
mod policies;
mod reuse;
mod schedule;
mod table;

use reuse::PieceMark;
pub use reuse::{Earlier, Pieces};

/// Parses a TOML jobs file, collecting every problem.
///
/// A big file is parsed in pieces (see [`chunks`]), so that the parser's spanned tables
/// and tokens are held for one piece at a time rather than for the whole file; where a
/// piece would not stand alone, the whole file is parsed at once.
///
/// On a reload (`earlier`: the load before it), an unchanged piece's jobs are taken from
/// that load instead (see [`reuse`]).
pub(super) fn parse(source: &str, earlier: Option<&Earlier<'_>>) -> Parsed {
    let lines = LineIndex::new(source);
    if let Some(parsed) =
        chunks::split(source).and_then(|pieces| parse_pieces(source, &lines, &pieces, earlier))
    {
        return parsed;
    }
    let mut reader = Reader::new(source, &lines);
    reader.piece(source, 0..source.len());
    reader.parsed
}

/// Reads the first of `pieces` (the top level, and the jobs after it), then the others
/// on every core at once, each with what the first one set (the zone, the defaults and
/// the calendars) or, if unchanged since `earlier`, taken from it; what they found, in
/// the file's order, each piece's jobs built as it is read (no drafts of the whole file
/// held at once), with the marks a reload takes them again by. `None` when a later piece
/// holds anything but `[[job]]` tables.
fn parse_pieces(
    source: &str,
    lines: &LineIndex,
    pieces: &[Range<usize>],
    earlier: Option<&Earlier<'_>>,
) -> Option<Parsed> {
    let (first, rest) = pieces.split_first()?;
    let mut reader = Reader::new(source, lines);
    reader.piece(source, first.clone());
    reader.parsed.build();
    let reuse = reuse::Reuse::new(earlier, &source[first.clone()]);
    let found: Option<Vec<(u128, usize, Parsed)>> = rest
        .par_iter()
        .map(|piece| {
            let (key, line) = (reuse::Reuse::key(&source[piece.clone()]), lines.line_of(piece.start));
            if let Some(taken) = reuse.take(key, line) {
                return Some((key, line, taken));
            }
            let mut fork = reader.fork();
            fork.piece(source, piece.clone()).then(|| {
                fork.parsed.build();
                (key, line, fork.parsed)
            })
        })
        .collect();
    let found = found?;
    let mut first_job = reader.parsed.built.len();
    let marks = found
        .iter()
        .map(|(key, line, parsed)| {
            let mark = PieceMark::new(*key, *line, first_job, parsed);
            first_job += parsed.built.len();
            mark
        })
        .collect();
    reader.parsed.append(found.into_iter().map(|(_, _, parsed)| parsed).collect());
    reader.parsed.pieces = Pieces::new(&source[first.clone()], marks);
    Some(reader.parsed)
}

/// A TOML syntax error in plain words where the parser's are its grammar's (`text`: the
/// text the error points at): an unclosed string, a key given twice. Others as the
/// parser words them, which already say what was expected.
fn syntax_error(message: &str, text: &str) -> String {
    match message {
        "invalid basic string, expected `\"`" => {
            "unclosed string: a closing `\"` is missing (a \"...\" string ends on its line)".to_owned()
        }
        "invalid literal string, expected `'`" => {
            "unclosed string: a closing `'` is missing (a '...' string ends on its line)".to_owned()
        }
        "duplicate key" if !text.trim().is_empty() => {
            format!("duplicate key `{}`: a table sets each key once", text.trim())
        }
        _ => message.to_owned(),
    }
}

/// The top-level table of a document (or of a piece of it).
fn top_level<'t, 'i>(root: &'t DeTable<'i>) -> Table<'t, 'i> {
    Table {
        entries: root,
        line: 1,
        job: None,
        number: None,
        prefix: "",
        known: TOP_LEVEL_KEYS,
        what: "the top level",
    }
}

/// Reads the document, recording what it finds in `parsed`.
struct Reader<'s> {
    /// The text being read: the file, or the piece of it being parsed.
    source: &'s str,
    /// Where `source` starts in the file.
    base: usize,
    /// The file's line starts, for the line numbers of jobs and problems.
    lines: &'s LineIndex,
    parsed: Parsed,
    /// The top-level `env`, `working_dir` and `on_failure`, read before the jobs.
    defaults: Defaults,
    /// The top-level `timezone`: the zone of jobs without their own (`None` if invalid).
    default_zone: Option<TimeZone>,
    /// The `[[calendar]]` tables, by name, for the jobs' `exclude`.
    calendars: std::collections::HashMap<String, std::sync::Arc<slotcron::Calendar>>,
}

impl<'s> Reader<'s> {
    fn new(file: &'s str, lines: &'s LineIndex) -> Self {
        Self {
            source: file,
            base: 0,
            lines,
            parsed: Parsed::default(),
            defaults: Defaults::default(),
            default_zone: Some(TimeZone::UTC),
            calendars: std::collections::HashMap::new(),
        }
    }

    /// A reader of a later piece of the same file: the top level's settings, nothing
    /// found yet.
    fn fork(&self) -> Self {
        Self {
            source: self.source,
            base: self.base,
            lines: self.lines,
            parsed: Parsed::default(),
            defaults: self.defaults.clone(),
            default_zone: self.default_zone.clone(),
            calendars: self.calendars.clone(),
        }
    }

    /// Parses and reads `range` of `file`: the top level if it starts the file, and its
    /// jobs. `false` (nothing read) when a later piece holds anything but `[[job]]`
    /// tables, which only the whole file can place.
    fn piece(&mut self, file: &'s str, range: Range<usize>) -> bool {
        (self.source, self.base) = (&file[range.clone()], range.start);
        let (document, errors) = DeTable::parse_recoverable(self.source);
        if !errors.is_empty() {
            // The document is what could be recovered: its keys would be misleading. The
            // recovering parser may report one mistake several times: once per line and
            // message.
            let mut seen = std::collections::HashSet::new();
            for error in errors {
                let span = error.span().unwrap_or(0..0);
                let text = self.source.get(span.clone()).unwrap_or_default();
                let (line, message) = (self.line(span), syntax_error(error.message().trim_end(), text));
                if seen.insert((line, message.clone())) {
                    self.parsed.problems.push(Problem::line(line, message));
                }
            }
            return true;
        }
        let root = document.get_ref();
        if range.start == 0 {
            self.document(root);
        } else if root.keys().any(|key| key.get_ref() != "job") {
            return false;
        } else {
            self.jobs(root);
        }
        true
    }
}

impl Reader<'_> {
    fn line(&self, span: Range<usize>) -> usize {
        self.lines.line_of(self.base + span.start)
    }

    /// The top-level table: the file's zone, `[coordination]` and the jobs.
    fn document(&mut self, root: &DeTable<'_>) {
        let top = top_level(root);
        self.unknown_keys(&top);
        self.default_zone = match top.get("timezone") {
            None => Some(TimeZone::UTC),
            Some(_) => self.string(&top, "timezone", ZONE).and_then(|name| {
                zone::lookup(name.get_ref())
                    .map_err(|reason| self.problem(&top, "timezone", name.span(), reason))
                    .ok()
            }),
        };
        self.parsed.shutdown_timeout = self.duration(&top, "shutdown_timeout");
        self.parsed.max_concurrent_runs =
            self.positive(&top, "max_concurrent_runs").map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        let env = self.env(&top);
        self.defaults =
            Defaults { env: env.into(), working_dir: self.working_dir(&top), on_failure: self.hook(&top) };
        if let Some(entries) = self.typed(&top, "coordination", "a [coordination] table", DeValue::as_table) {
            let line = self.line(entries.span());
            self.coordination(&Table {
                entries: entries.into_inner(),
                line,
                job: None,
                number: None,
                prefix: "coordination.",
                known: COORDINATION_KEYS,
                what: "[coordination]",
            });
        }
        if let Some(entries) = self.typed(&top, "admin", "an [admin] table", DeValue::as_table) {
            let line = self.line(entries.span());
            let table = Table {
                entries: entries.into_inner(),
                line,
                job: None,
                number: None,
                prefix: "admin.",
                known: ADMIN_KEYS,
                what: "[admin]",
            };
            self.unknown_keys(&table);
            if let Some(listen) = self.string(&table, "listen", "an address string like \"127.0.0.1:9090\"") {
                match settings::Listen::parse(listen.get_ref()) {
                    Ok(_) => self.parsed.coordination.admin_listen = Some((*listen.get_ref()).to_owned()),
                    Err(reason) => self.problem(&table, "listen", listen.span(), reason),
                }
            }
        }
        if let Some(entries) = self.typed(&top, "history", "a [history] table", DeValue::as_table) {
            let line = self.line(entries.span());
            self.history(&Table {
                entries: entries.into_inner(),
                line,
                job: None,
                number: None,
                prefix: "history.",
                known: HISTORY_KEYS,
                what: "[history]",
            });
        }
        self.calendars(&top);
        self.jobs(root);
    }

    /// The `[[job]]` tables of `root`.
    fn jobs(&mut self, root: &DeTable<'_>) {
        let top = top_level(root);
        let expected = "[[job]] tables (write [[job]], not [job])";
        let Some(jobs) = self.typed(&top, "job", expected, DeValue::as_array) else { return };
        let default_zone = self.default_zone.clone();
        let before = self.parsed.job_tables;
        self.parsed.job_tables += jobs.get_ref().len();
        for (item, number) in jobs.get_ref().iter().zip(before + 1..) {
            let Some(entries) = item.get_ref().as_table() else {
                let reason = format!("expected a [[job]] table, found {}", self.shown(item));
                self.problem(&top, "job", item.span(), reason);
                continue;
            };
            let line = self.line(item.span());
            let table = Table {
                entries,
                line,
                job: None,
                number: Some(number),
                prefix: "",
                known: JOB_KEYS,
                what: "a [[job]] table",
            };
            if let Some(mut draft) = self.job(table, &default_zone) {
                draft.policies.on_failure =
                    draft.policies.on_failure.or_else(|| self.defaults.on_failure.clone());
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
                url => settings::check_redis_url(url),
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
        if let Some(slack) = self.duration(table, "slack") {
            match settings::check_slack(slack) {
                Ok(()) => self.parsed.coordination.slack = Some(slack),
                Err(reason) => {
                    let span = table.get("slack").map(|v| v.span()).unwrap_or_default();
                    self.problem(table, "slack", span, reason);
                }
            }
        }
        self.fleet(table);
    }

    /// The shared-work keys of the `[coordination]` table: `takeover_delay`,
    /// `membership_ttl` and `shared_work`.
    fn fleet(&mut self, table: &Table<'_, '_>) {
        let span = |key: &str| table.get(key).map(|v| v.span()).unwrap_or_default();
        if let Some(ttl) = self.duration(table, "membership_ttl") {
            match settings::check_membership_ttl(ttl) {
                Ok(()) => self.parsed.coordination.membership_ttl = Some(ttl),
                Err(reason) => self.problem(table, "membership_ttl", span("membership_ttl"), reason),
            }
        }
        if let Some(delay) = self.duration(table, "takeover_delay") {
            let ttl = self.parsed.coordination.membership_ttl;
            let ttl_source = if ttl.is_some() { "membership_ttl" } else { "the default" };
            let ttl = ttl.unwrap_or(slotcron::DEFAULT_MEMBERSHIP_TTL);
            match settings::check_takeover_delay(delay, ttl, ttl_source) {
                Ok(()) => self.parsed.coordination.takeover_delay = Some(delay),
                Err(reason) => self.problem(table, "takeover_delay", span("takeover_delay"), reason),
            }
        } else if let Some(ttl) = self.parsed.coordination.membership_ttl {
            // The default takeover delay must be shorter than the TTL set here too.
            let delay = slotcron::SchedulerBuilder::DEFAULT_TAKEOVER_DELAY;
            if let Err(reason) = settings::check_takeover_delay(delay, ttl, "membership_ttl") {
                let reason = format!("the default takeover delay, {reason}");
                self.parsed.coordination.membership_ttl = None;
                self.problem(table, "membership_ttl", span("membership_ttl"), reason);
            }
        }
        if let Some(shared) = self.bool(table, "shared_work") {
            self.parsed.coordination.shared_work = Some(*shared.get_ref());
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
            Some(command) => {
                if let Err(reason) = command::check_no_nul(command.get_ref(), "a shell command") {
                    self.problem(&table, "command", command.span(), reason);
                }
            }
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
        let enabled = self.bool(&table, "enabled");
        let (env, working_dir) = (self.env(&table), self.working_dir(&table));
        let policies = self.policies(&table);
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
            command: ShellCommand {
                env: self.job_env(env),
                working_dir: working_dir.or_else(|| self.defaults.working_dir.clone()),
                ..ShellCommand::new(command.get_ref().trim())
            },
            timeout,
            run_on_start: run_on_start.is_some_and(|r| *r.get_ref()),
            on_every_replica: on_every_replica.is_some_and(|r| *r.get_ref()),
            misfire,
            grace,
            policies,
            field_lines,
            enabled: enabled.is_none_or(|e| *e.get_ref()),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use slotcron::Misfire;

    use super::super::{Format, JobEntry, parse as load};

    /// The jobs of a valid TOML jobs file.
    pub(super) fn jobs(source: &str) -> Vec<JobEntry> {
        load(source, Format::Toml).unwrap_or_else(|problems| panic!("{problems:?}")).jobs
    }

    /// The problems of an invalid TOML jobs file, as `line: field: reason`.
    pub(super) fn problems(source: &str) -> Vec<String> {
        let list = load(source, Format::Toml).map(drop).unwrap_err();
        list.iter()
            .map(|p| format!("{}: {}: {}", p.line.unwrap_or(0), p.field.as_deref().unwrap_or("-"), p.reason))
            .collect()
    }

    /// A file of `count` jobs, big enough to be parsed in pieces.
    fn many(count: usize) -> String {
        (0..count)
            .map(|i| format!("[[job]]\nname = \"job-{i}\"\nevery = \"1m\"\ncommand = \"echo {i}\"\n\n"))
            .collect()
    }

    #[test]
    fn a_big_file_read_in_pieces_reads_as_a_whole() {
        let source = format!("timezone = \"Asia/Tokyo\"\n{}", many(3000));
        assert!(super::chunks::split(&source).is_some_and(|pieces| pieces.len() > 2));
        let jobs = jobs(&source);
        assert_eq!(jobs.len(), 3000);
        assert_eq!((jobs[2999].job.name(), jobs[2999].line), ("job-2999", 2 + 2999 * 5));
        // A table after the jobs is placed by parsing the whole file.
        let source = format!("{}[coordination]\nprefix = \"p:\"\n", many(3000));
        let parsed = super::parse(&source, None);
        assert_eq!(parsed.coordination.prefix.as_deref(), Some("p:"));
        assert_eq!(parsed.drafts.len(), 3000);
        // Problems in a later piece name their own lines.
        let source = format!("{}[[job]]\nname = \"last\"\nevery = 5\ncommand = \"true\"\n", many(3000));
        assert_eq!(
            problems(&source),
            [format!("{}: every: expected a duration string like \"90s\", found integer 5", 3000 * 5 + 3)]
        );
        // And syntax errors too.
        let source = format!("{}[[job]]\nname = \n", many(3000));
        let listed = problems(&source);
        assert!(listed.len() == 1 && listed[0].starts_with(&format!("{}: -: ", 3000 * 5 + 2)), "{listed:?}");
    }

    #[test]
    fn a_job_without_a_name_is_numbered_among_the_whole_file_s_jobs_also_in_a_later_piece() {
        let source = format!("{}[[job]]\nname = 5\nevery = \"1m\"\ncommand = \"true\"\n", many(3000));
        assert!(super::chunks::split(&source).is_some_and(|pieces| pieces.len() > 2));
        let problems = load(&source, Format::Toml).map(drop).unwrap_err();
        let shown: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(shown, [r#"job #3001: name: expected a string like "backup", found integer 5"#]);
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
}
