//! The crontab format: a user crontab as cronie reads it, or a system crontab, with a
//! user field between the schedule and the command.
//!
//! ```text
//! # comments and blank lines are ignored
//! MAILTO=""                      # NAME=value: passed to the commands of later lines;
//!                                # MAILTO= mails their output, SHELL= runs them
//! CRON_TZ=Europe/Berlin          # CRON_TZ= or TZ=: the zone of later lines (default:
//!                                # the daemon's own, see below)
//! # name: nightly-backup         # names the job on the next line
//! 0 3 * * *   pg_dump app > /var/backups/app.sql
//! @hourly     date +\%H >> /tmp/hours.log
//! @every 30s  echo heartbeat
//! @reboot     echo started       # once, when the daemon starts
//! ```
//!
//! A job line is 5 time fields (minute hour day-of-month month day-of-week) or a
//! descriptor (`@yearly @annually @monthly @weekly @daily @midnight @hourly`,
//! `@every <duration>`, `@reboot`), then the command, which runs under `$SHELL -c`
//! (`/bin/sh` unless a `SHELL=` line set another).
//! As in cron, an unescaped `%` in the command ends it: the text after it is the
//! command's standard input, with each further `%` a newline; `\%` is a literal `%`
//! (the exact rules are cronie's, see [`percent::split`]).
//!
//! Lines before any `CRON_TZ=` or `TZ=` line run in the daemon's own zone, as in cronie
//! and supercronic: its `TZ` environment variable, else `/etc/localtime`, else UTC
//! ([`zone::local`]). An empty `CRON_TZ=` or `TZ=` line sets the zone of later lines
//! back to that default, as an empty `TZ` does in cronie. A line's derived name does not
//! depend on the daemon's zone.
//!
//! `@reboot` runs once each time the daemon starts, as in cron: a one-shot at the
//! instant the crontab is loaded. Every daemon of a fleet runs its own, without a claim
//! (see [`slotcron::JobBuilder::on_every_replica`]).
//!
//! A job without a `# name:` comment is named from its line ([`super::job_name`]).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use jiff::tz::TimeZone;
use slotcron::CronSchedule;

use super::{Draft, Parsed, Policies, Problem, ScheduleSpec, job_name};
use crate::command::{self, Me, ShellCommand};
use crate::zone::{self, LocalZone};

mod percent;

/// How the name of a line in the default zone (the daemon's own) spells its zone: as
/// before the default followed the daemon, so that names stay stable whatever its zone.
const DEFAULT_ZONE_IN_NAMES: &str = "UTC";

/// The fields of a job line that problems name.
const SCHEDULE: &str = "schedule";
const COMMAND: &str = "command";
const USER: &str = "user";

/// Parses a crontab, a system crontab (with a user field) if `system`, collecting every
/// problem; lines the file gives no zone run in the daemon's own ([`zone::local`]).
pub(super) fn parse(source: &str, system: bool) -> Parsed {
    parse_in(source, system, zone::local())
}

/// [`parse`], with `local` as the zone of lines the file gives none.
fn parse_in(source: &str, system: bool, local: Result<LocalZone, String>) -> Parsed {
    let default_zone = local.as_ref().ok().map(|local| local.zone.clone());
    let mut reader = Reader {
        user: system.then(Me::now),
        zone: (DEFAULT_ZONE_IN_NAMES.into(), default_zone),
        local,
        ..Reader::default()
    };
    for (index, raw) in source.lines().enumerate() {
        reader.line(index + 1, raw.trim_end_matches('\r'));
    }
    reader.end();
    reader.parsed
}

/// The state carried from line to line.
struct Reader {
    parsed: Parsed,
    /// The environment set by the lines so far, in order.
    env: Vec<(String, String)>,
    /// The same, shared by the commands of the following lines.
    env_snapshot: Arc<[(String, String)]>,
    /// The shell of the following lines (`SHELL=`, default `/bin/sh`).
    shell: Arc<str>,
    /// Where the output of the following lines' runs is mailed (`MAILTO=`; none if
    /// unset or empty).
    mailto: Option<Arc<str>>,
    /// In a system crontab, whom the daemon runs as: a line for another user is refused
    /// unless that is root.
    user: Option<Me>,
    /// The zone of the following lines, as written, and the zone itself (`None` when
    /// invalid: reported once, on its own line).
    zone: (String, Option<TimeZone>),
    /// The daemon's own zone, for lines the file gives none.
    local: Result<LocalZone, String>,
    /// Whether the following lines run in it (no `CRON_TZ=` or `TZ=` line yet, or an
    /// empty one).
    in_default_zone: bool,
    /// Whether the reason the daemon's zone is unknown was reported.
    local_reported: bool,
    /// A `# name:` comment waiting for its job line: the name and its line.
    pending_name: Option<(String, usize)>,
    /// How often each derived name has been seen.
    derived: HashMap<String, usize>,
}

impl Default for Reader {
    fn default() -> Self {
        Self {
            parsed: Parsed::default(),
            env: Vec::new(),
            env_snapshot: Arc::from([]),
            shell: Arc::from(command::SHELL),
            mailto: None,
            user: None,
            zone: (DEFAULT_ZONE_IN_NAMES.into(), Some(TimeZone::UTC)),
            local: Ok(LocalZone { zone: TimeZone::UTC, name: "UTC".into(), source: "tests" }),
            in_default_zone: true,
            local_reported: false,
            pending_name: None,
            derived: HashMap::new(),
        }
    }
}

impl Reader {
    fn line(&mut self, number: usize, line: &str) {
        let text = line.trim();
        if let Some(comment) = text.strip_prefix('#') {
            self.dangling_name();
            if let Some(name) = comment.trim_start().strip_prefix("name:") {
                self.pending_name = Some((name.trim().to_owned(), number));
            }
        } else if text.is_empty() {
            self.dangling_name();
        } else if text.starts_with(|c: char| c.is_ascii_digit() || c == '*' || c == '@') {
            let name = self.pending_name.take();
            self.job(number, line, name);
        } else if let Some((name, value)) = env_assignment(text) {
            self.dangling_name();
            self.set_env(number, name, value);
        } else {
            self.dangling_name();
            let mut reason = "neither a job (5 time fields or an @descriptor, then a command) \
                              nor an environment setting (NAME=value)"
                .to_owned();
            if text.starts_with('[') {
                reason += "; a TOML jobs file is read as TOML only when its name ends in .toml";
            }
            self.parsed.problems.push(Problem::line(number, reason));
        }
    }

    fn end(&mut self) {
        self.dangling_name();
    }

    /// A `CRON_TZ=` or `TZ=` line: as in cronie, an empty zone is the default one (the
    /// daemon's own).
    fn set_zone(&mut self, line: usize, name: &str, value: &str) {
        self.in_default_zone = value.is_empty();
        if value.is_empty() {
            let default = self.local.as_ref().ok().map(|local| local.zone.clone());
            self.zone = (DEFAULT_ZONE_IN_NAMES.to_owned(), default);
            return;
        }
        let zone = zone::lookup_tz(value).map_err(|reason| Problem::field(line, None, name, reason));
        self.zone = (value.to_owned(), zone.map_err(|p| self.parsed.problems.push(p)).ok());
    }

    /// Notes that the job on `line` runs in the daemon's own zone: the file then says
    /// which ([`Parsed::local_zone`]), or, once, why it cannot be known.
    fn uses_default_zone(&mut self, line: usize, name: &str) {
        match &self.local {
            Ok(local) => self.parsed.local_zone = Some(local.clone()),
            Err(reason) if !std::mem::replace(&mut self.local_reported, true) => {
                let reason = format!(
                    "{reason}: the zone of lines the file gives none; fix TZ, or set CRON_TZ= above this line"
                );
                self.parsed.problems.push(Problem::field(line, Some(name), "TZ", reason));
            }
            Err(_) => {}
        }
    }

    /// A `# name:` comment not directly followed by a job line.
    fn dangling_name(&mut self) {
        if let Some((name, line)) = self.pending_name.take() {
            let reason = "a `# name:` comment must be directly followed by the job line it names";
            self.parsed.problems.push(Problem::field(line, Some(&name), "name", reason));
        }
    }

    fn set_env(&mut self, line: usize, name: &str, value: &str) {
        if let Err(reason) = command::check_no_nul(value, "an environment variable") {
            self.parsed.problems.push(Problem::field(line, None, name, reason));
            return;
        }
        if name == "CRON_TZ" || name == "TZ" {
            self.set_zone(line, name, value);
        }
        match name {
            // As in cronie: the shell that runs the commands, and where their output goes
            // (an empty value: /bin/sh, and no mail).
            "SHELL" => self.shell = Arc::from(if value.is_empty() { command::SHELL } else { value }),
            "MAILTO" => self.mailto = (!value.is_empty()).then(|| Arc::from(value)),
            _ => {}
        }
        self.env.retain(|(existing, _)| existing != name);
        self.env.push((name.to_owned(), value.to_owned()));
        self.env_snapshot = self.env.clone().into();
    }

    fn job(&mut self, number: usize, line: &str, explicit_name: Option<(String, usize)>) {
        let (schedule_text, schedule, command) = match split_job_line(line) {
            Ok(parts) => parts,
            Err(reason) => {
                let name = explicit_name.as_ref().map(|(name, _)| name.as_str());
                self.parsed.problems.push(Problem::field(number, name, SCHEDULE, reason));
                return;
            }
        };
        let (user, command) = match self.user_field(number, explicit_name.as_ref(), &schedule_text, command) {
            Ok(split) => split,
            Err(problem) => return self.parsed.problems.push(problem),
        };
        let (script, stdin) = percent::split(command);
        let (zone_name, zone) = &self.zone;
        let name = match explicit_name {
            Some((name, _)) => name,
            None => {
                let base = job_name::derive(zone_name, &schedule_text, command, &script);
                let seen = self.derived.entry(base.clone()).or_default();
                *seen += 1;
                job_name::nth(&base, *seen)
            }
        };
        self.parsed.names.push((name.clone(), number));
        let spec = match schedule {
            LineSchedule::Reboot => Ok(ScheduleSpec::AtStartUp),
            LineSchedule::Cron(range) => CronSchedule::parse(&line[range.clone()])
                .map_err(|e| {
                    too_few_time_fields(&line[range.clone()]).unwrap_or_else(|| {
                        ScheduleSpec::cron_refused(
                            &line[range.clone()],
                            &e,
                            line[..range.start].chars().count(),
                        )
                    })
                })
                .map(|cron| ScheduleSpec::Cron(cron.with_time_zone(zone.clone().unwrap_or(TimeZone::UTC))))
                .and_then(ScheduleSpec::checked),
        };
        let spec = match spec {
            Ok(spec) => spec,
            Err(reason) => {
                self.parsed.problems.push(Problem::field(number, Some(&name), SCHEDULE, reason));
                return;
            }
        };
        if command.is_empty() {
            self.parsed.problems.push(Problem::field(
                number,
                Some(&name),
                COMMAND,
                "missing after the schedule",
            ));
            return;
        }
        if let Some(word) = sixth_time_field(&schedule_text, &script) {
            let reason = format!(
                "starts with {word:?}, which looks like a sixth time field: a crontab line has 5 \
                 (minute hour day-of-month month day-of-week); for seconds, use the cron key of a \
                 TOML jobs file"
            );
            self.parsed.problems.push(Problem::field(number, Some(&name), COMMAND, reason));
            return;
        }
        if let Err(reason) = command::check_no_nul(&script, "a shell command") {
            self.parsed.problems.push(Problem::field(number, Some(&name), COMMAND, reason));
            return;
        }
        if self.in_default_zone {
            self.uses_default_zone(number, &name);
        }
        if self.zone.1.is_none() {
            return; // its zone line (or the daemon's zone) is reported
        }
        self.parsed.drafts.push(Draft {
            name,
            name_line: number,
            line: number,
            schedule: spec,
            schedule_field: SCHEDULE,
            command: ShellCommand {
                env: self.env_snapshot.clone(),
                stdin,
                shell: self.shell.clone(),
                mailto: self.mailto.clone(),
                user,
                ..ShellCommand::new(script)
            },
            timeout: None,
            run_on_start: false,
            on_every_replica: false,
            misfire: None,
            grace: None,
            policies: Policies::default(),
            field_lines: Vec::new(),
            enabled: true,
        });
    }
}

impl Reader {
    /// In a system crontab, splits the user field off `command`: the user (`None` when
    /// it is the daemon's own) and the command. A problem when it is missing, or names
    /// another user while the daemon does not run as root. In a user crontab, `command`
    /// as it is.
    fn user_field<'l>(
        &self,
        number: usize,
        name: Option<&(String, usize)>,
        schedule: &str,
        command: &'l str,
    ) -> Result<(Option<Arc<str>>, &'l str), Problem> {
        let Some(me) = &self.user else { return Ok((None, command)) };
        let name = name.map(|(name, _)| name.as_str());
        let problem = |reason: String| Problem::field(number, name, USER, reason);
        if let Some(word) = sixth_time_field(schedule, command) {
            return Err(problem(format!(
                "{word:?} looks like a sixth time field: a system crontab line is 5 time fields, \
                 the user, then the command; for seconds, use the cron key of a TOML jobs file"
            )));
        }
        let (user, rest) = command.split_once([' ', '\t']).unwrap_or((command, ""));
        let rest = rest.trim();
        if user.is_empty() || rest.is_empty() {
            return Err(problem(
                "missing: a system crontab line is 5 time fields (or a descriptor), the user, then the command"
                    .into(),
            ));
        }
        // A line for the daemon's own user needs no switch, but still gets that user's
        // HOME, LOGNAME and USER from the password database, as cron gives them.
        if !me.is(user) && !me.uid.is_root() {
            let me = me.name.as_deref().map_or_else(|| format!("uid {}", me.uid), |name| format!("{name:?}"));
            return Err(problem(format!(
                "runs as {user:?}, but slotcron runs as {me}: only a daemon running as root can run \
                 commands as another user"
            )));
        }
        Ok((Some(Arc::from(user)), rest))
    }
}

/// A job line's schedule.
enum LineSchedule {
    /// `@reboot`.
    Reboot,
    /// A cron expression (5 fields or a descriptor): its byte range in the line.
    Cron(Range<usize>),
}

/// Splits a job line into its schedule (normalized to single spaces, for naming), the
/// schedule's place in the line, and the command.
fn split_job_line(line: &str) -> Result<(String, LineSchedule, &str), String> {
    let first = fields(line, 1).ok_or("missing schedule")?.0;
    let descriptor = line[first.clone()].to_ascii_lowercase();
    let (range, rest, schedule) = if descriptor == "@reboot" {
        (first.clone(), &line[first.end..], LineSchedule::Reboot)
    } else {
        let count = match descriptor.as_str() {
            "@every" => 2,
            d if d.starts_with('@') => 1,
            _ => 5,
        };
        let (range, rest) = fields(line, count).ok_or(match count {
            2 => "@every needs a duration, e.g. `@every 30s command`",
            _ => "expected 5 time fields (minute hour day-of-month month day-of-week) or a descriptor such as @daily, then the command",
        })?;
        (range.clone(), rest, LineSchedule::Cron(range))
    };
    let text = line[range].split_ascii_whitespace().collect::<Vec<_>>().join(" ");
    Ok((text, schedule, rest.trim()))
}

/// Why a line's 5 time fields do not parse, when one of them is a word of the command
/// rather than a time field (`* * * echo hi`: the line has too few time fields), for a
/// reason that says so rather than that `echo` is no month name. A word of a command holds
/// a character no cron field has, or a run of more than 3 letters (names are three
/// letters: JAN, MON) that does not start with a name (`MONDAY` is a day misspelt, which
/// the cron parser's reason explains).
fn too_few_time_fields(schedule: &str) -> Option<String> {
    const NAMES: [&str; 19] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec", "sun", "mon",
        "tue", "wed", "thu", "fri", "sat",
    ];
    let cron_char = |c: char| c.is_ascii_alphanumeric() || "*/,-?#".contains(c);
    let long_word = |field: &str| {
        let named = |run: &str| NAMES.iter().any(|name| run.to_ascii_lowercase().starts_with(name));
        field.split(|c: char| !c.is_ascii_alphabetic()).any(|run| run.len() > 3 && !named(run))
    };
    if schedule.starts_with('@') {
        return None;
    }
    let (found, word) = schedule
        .split_ascii_whitespace()
        .enumerate()
        .find(|(_, field)| !field.chars().all(cron_char) || long_word(field))?;
    let expected = "a crontab line is 5 time fields (minute hour day-of-month month day-of-week) or a \
                    descriptor such as @daily, then the command";
    Some(match found {
        0 => format!("{expected}; this one starts with {word:?}"),
        1 => format!("{expected}; this one has 1 time field before {word:?}, which looks like the command"),
        n => {
            format!("{expected}; this one has {n} time fields before {word:?}, which looks like the command")
        }
    })
}

/// The first word of `command` if, after the 5 time fields of `schedule`, it makes a valid
/// 6-field (seconds-first) expression: a line written for a cron with seconds
/// (`0 0 9 * * MON-FRI cmd`), which cronie would run at the wrong time with `MON-FRI` as
/// the program.
fn sixth_time_field<'c>(schedule: &str, command: &'c str) -> Option<&'c str> {
    if schedule.starts_with('@') {
        return None;
    }
    let word = command.split_ascii_whitespace().next()?;
    CronSchedule::parse(&format!("{schedule} {word}")).is_ok().then_some(word)
}

/// The byte range spanning the first `count` white-space separated fields of `line`,
/// and the text after them; `None` if the line has fewer fields.
fn fields(line: &str, count: usize) -> Option<(Range<usize>, &str)> {
    let bytes = line.as_bytes();
    let blank = |i: usize| bytes[i] == b' ' || bytes[i] == b'\t';
    let (mut pos, mut start) = (0, None);
    for _ in 0..count {
        while pos < bytes.len() && blank(pos) {
            pos += 1;
        }
        if pos == bytes.len() {
            return None;
        }
        start.get_or_insert(pos);
        while pos < bytes.len() && !blank(pos) {
            pos += 1;
        }
    }
    Some((start.unwrap_or(0)..pos, &line[pos..]))
}

/// A `NAME=value` line (cronie's `load_env`): spaces around `=` are allowed, and a value
/// in matching single or double quotes loses them. `None` if `text` is not one.
fn env_assignment(text: &str) -> Option<(&str, &str)> {
    let (name, value) = text.split_once('=')?;
    let name = name.trim();
    let mut chars = name.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return None;
    }
    let value = value.trim();
    let unquoted = ['"', '\'']
        .into_iter()
        .find_map(|q| value.strip_prefix(q).and_then(|v| v.strip_suffix(q)))
        .unwrap_or(value);
    Some((name, unquoted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs_file::{self, Format};

    #[test]
    fn env_lines_as_cronie_reads_them() {
        assert_eq!(env_assignment("MAILTO = \"ops@example.com\""), Some(("MAILTO", "ops@example.com")));
        assert_eq!(env_assignment("PATH=/usr/bin:/bin"), Some(("PATH", "/usr/bin:/bin")));
        assert_eq!(env_assignment("EMPTY=''"), Some(("EMPTY", "")));
        assert_eq!(env_assignment("not an=assignment"), None);
        assert_eq!(env_assignment("no assignment"), None);
    }

    #[test]
    fn a_line_with_too_few_time_fields_is_told_so_not_that_the_command_is_a_bad_month() {
        let reason = |line: &str| {
            let problems = jobs_file::parse(line, Format::Crontab).map(drop).unwrap_err();
            problems.into_iter().map(|p| p.reason).collect::<Vec<_>>().join("; ")
        };
        let three = reason("* * * echo hi\n");
        assert!(
            three.contains("this one has 3 time fields before \"echo\", which looks like the command"),
            "{three}"
        );
        let four = reason("*/5 * * * /usr/bin/backup --all\n");
        assert!(four.contains("4 time fields before \"/usr/bin/backup\""), "{four}");
        // A day's name misspelt is the cron parser's to explain.
        let misspelt = reason("0 9 * * MONDAY echo hi\n");
        assert!(!misspelt.contains("time fields before"), "{misspelt}");
        assert!(misspelt.contains("MONDAY"), "{misspelt}");
    }

    #[test]
    fn fields_keep_their_place_in_the_line() {
        let line = "  */5  * * * *   echo hi";
        let (range, rest) = fields(line, 5).unwrap();
        assert_eq!(&line[range], "*/5  * * * *");
        assert_eq!(rest.trim(), "echo hi");
        assert!(fields("* * *", 5).is_none());
    }

    /// [`super::parse`] on a daemon whose own zone is UTC, whatever this host's.
    fn parse(source: &str, system: bool) -> Parsed {
        in_zone(source, system, "UTC")
    }

    /// [`super::parse`] on a daemon whose own zone is `local`.
    fn in_zone(source: &str, system: bool, local: &str) -> Parsed {
        let zone = zone::lookup(local).unwrap();
        parse_in(source, system, Ok(LocalZone { zone, name: local.to_owned(), source: "the test" }))
    }

    fn drafts(source: &str) -> Vec<Draft> {
        let parsed = parse(source, false);
        assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);
        parsed.drafts
    }

    #[test]
    fn a_sixth_time_field_is_not_taken_for_the_command() {
        let sixth = [
            "* * * * * * echo six",
            "0 0 * * * */5 echo six",
            "0 0 1 1 * ? echo",
            "0 0 9 * * MON-FRI /usr/local/bin/report.sh",
            "30 0 9 * * 1-5 report.sh",
            "0 0 12 * * 5L report.sh",
            "0 0 1 * * 0",
        ];
        for line in sixth {
            let problems = parse(line, false).problems;
            assert_eq!(problems.len(), 1, "{line}: {problems:?}");
            assert_eq!(problems[0].field.as_deref(), Some(COMMAND));
            assert!(problems[0].reason.contains("looks like a sixth time field"), "{problems:?}");
        }
        // A descriptor's command, and commands that merely contain a star, stay commands.
        drafts("@daily * echo\n0 0 * * * echo *\n0 0 * * * 7z a backup.7z *\n0 0 * * * true\n0 0 * * * date");
    }

    fn env(draft: &Draft) -> Vec<(&str, &str)> {
        draft.command.env.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect()
    }

    #[test]
    fn env_lines_reach_the_commands_of_later_lines_only() {
        let drafts = drafts(
            "@hourly echo before\nA=1\nB = 'two words'\n@hourly echo middle\nA=3\n@hourly echo after\n",
        );
        assert_eq!(env(&drafts[0]), []);
        assert_eq!(env(&drafts[1]), [("A", "1"), ("B", "two words")]);
        assert_eq!(env(&drafts[2]), [("B", "two words"), ("A", "3")]);
    }

    fn zones(drafts: &[Draft]) -> Vec<String> {
        drafts
            .iter()
            .map(|d| match &d.schedule {
                ScheduleSpec::Cron(cron) => cron.time_zone().iana_name().unwrap().to_owned(),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn cron_tz_and_tz_set_the_zone_of_later_lines() {
        let drafts = drafts(
            "0 9 * * * echo a\nCRON_TZ=Asia/Tokyo\n0 9 * * * echo b\nTZ=Europe/Paris\n0 9 * * * echo c\n",
        );
        assert_eq!(zones(&drafts), ["UTC", "Asia/Tokyo", "Europe/Paris"]);
        // As cronie does, the zone variables are also in the commands' environment.
        assert_eq!(env(&drafts[2]), [("CRON_TZ", "Asia/Tokyo"), ("TZ", "Europe/Paris")]);
    }

    #[test]
    fn an_empty_cron_tz_or_tz_sets_the_zone_back_to_the_daemons() {
        let drafts = drafts(
            "CRON_TZ=Asia/Tokyo\n0 9 * * * echo a\nCRON_TZ=\n0 9 * * * echo b\n\
             TZ=Europe/Paris\n0 9 * * * echo c\nTZ=''\n0 9 * * * echo d\n",
        );
        assert_eq!(zones(&drafts), ["Asia/Tokyo", "UTC", "Europe/Paris", "UTC"]);
        // Named as the same line in the default zone, and passed on empty, as written.
        assert_eq!(drafts[1].name, parse("0 9 * * * echo b\n", false).drafts[0].name);
        assert_eq!(env(&drafts[3]), [("CRON_TZ", ""), ("TZ", "")]);
    }

    #[test]
    fn lines_without_a_zone_run_in_the_daemons_and_keep_their_names() {
        let source = "0 9 * * * echo a\nCRON_TZ=Europe/Paris\n0 9 * * * echo b\nCRON_TZ=\n0 9 * * * echo c\n";
        let tokyo = in_zone(source, false, "Asia/Tokyo");
        assert!(tokyo.problems.is_empty(), "{:?}", tokyo.problems);
        assert_eq!(zones(&tokyo.drafts), ["Asia/Tokyo", "Europe/Paris", "Asia/Tokyo"]);
        assert_eq!(tokyo.local_zone.as_ref().map(|local| local.name.as_str()), Some("Asia/Tokyo"));
        let names = |parsed: &Parsed| parsed.drafts.iter().map(|d| d.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&tokyo), names(&parse(source, false)), "names do not follow the daemon's zone");
        let set = in_zone("CRON_TZ=UTC\n0 9 * * * echo a\n", false, "Asia/Tokyo");
        assert!(set.local_zone.is_none(), "no line runs in the daemon's zone");
    }

    #[test]
    fn a_daemon_zone_that_cannot_be_known_is_reported_once_for_the_lines_that_need_it() {
        let unknown = Err("TZ=\"Mars/Olympus\" in the daemon's environment is not a time zone".to_owned());
        let parsed =
            parse_in("0 9 * * * echo a\n0 10 * * * echo b\nCRON_TZ=UTC\n0 9 * * * echo c\n", false, unknown);
        assert_eq!(parsed.problems.len(), 1, "{:?}", parsed.problems);
        assert_eq!((parsed.problems[0].line, parsed.problems[0].field.as_deref()), (Some(1), Some("TZ")));
        assert!(parsed.problems[0].reason.contains("Mars/Olympus"), "{:?}", parsed.problems);
        assert!(parsed.problems[0].reason.contains("set CRON_TZ="), "{:?}", parsed.problems);
        assert_eq!(parsed.drafts.len(), 1, "the line with a zone of its own");
    }

    #[test]
    fn percent_splits_the_command_from_its_standard_input() {
        let drafts = drafts("@daily mail -s \"50\\% full\" root%Disk at 50\\%%Please look\n");
        let command = &drafts[0].command;
        assert_eq!(command.script, "mail -s \"50% full\" root");
        assert_eq!(command.stdin.as_deref(), Some("Disk at 50%\nPlease look\n"));
        // Named from the command alone.
        assert!(drafts[0].name.starts_with("mail-s-50-full-root-"), "{}", drafts[0].name);
    }

    #[test]
    fn reboot_runs_once_at_start_up_on_every_replica() {
        let drafts = drafts("@reboot echo up\n");
        assert!(matches!(drafts[0].schedule, ScheduleSpec::AtStartUp));
        assert_eq!(drafts[0].command.script, "echo up");

        let jobs =
            jobs_file::parse("@reboot echo up\n@hourly echo hourly\n", Format::Crontab).expect("valid").jobs;
        let every_replica: Vec<_> = jobs.iter().map(|entry| entry.job.on_every_replica()).collect();
        assert_eq!(every_replica, [true, false], "only @reboot runs on every replica, unclaimed");
    }
}
