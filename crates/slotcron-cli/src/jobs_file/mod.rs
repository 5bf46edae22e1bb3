//! Jobs files: a TOML jobs file (`*.toml`, see [`toml_format`]), a crontab (any other
//! name, see [`crontab`]) or a directory of crontabs (see [`directory`]), loaded into
//! validated [`slotcron::Job`]s — or into every problem found, each with its file, line,
//! job and field.

mod crontab;
mod directory;
mod grace_floor;
mod job_name;
mod lone_labels;
mod problem;
mod schedule_spec;
mod toml_format;

pub use directory::Directory;
pub use grace_floor::GraceFloor;
pub use lone_labels::LoneLabels;
pub use problem::{JobRef, Problem, Problems};
pub use schedule_spec::{NextFire, ScheduleSpec, with_zone};
pub use toml_format::{Earlier, Pieces};

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::hash::{BuildHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rayon::prelude::*;

use slotcron::ScheduleError;
use slotcron::{Job, JobBuilder, JobError, Misfire, OnInterrupt, Overlap, Retention};

use crate::command::ShellCommand;
use crate::zone::LocalZone;

/// The formats `slotcron` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A TOML jobs file.
    Toml,
    /// A user crontab, as cronie reads it.
    Crontab,
    /// A system crontab (`/etc/crontab`, `/etc/cron.d/*`): a user field between the
    /// schedule and the command.
    SystemCrontab,
}

impl Format {
    /// The format of `path`: TOML if its name ends in `.toml` (in any case: `.TOML`); a
    /// system crontab if it is `/etc/crontab`, `/etc/cron.d` (the directory: each of its
    /// crontabs) or in `/etc/cron.d`, or if `system` (the `--system-crontab` flag) says
    /// so; a user crontab otherwise. Decided by the path alone, so that every replica
    /// reads a file alike (a directory's crontabs are never TOML: see [`load`]).
    pub fn of(path: &Path, system: bool) -> Self {
        let system_path = |path| path == Path::new("/etc/crontab") || path == Path::new("/etc/cron.d");
        match path.extension() {
            Some(ext) if ext.eq_ignore_ascii_case("toml") => Self::Toml,
            _ if system || system_path(path) => Self::SystemCrontab,
            _ if path.parent() == Some(Path::new("/etc/cron.d")) => Self::SystemCrontab,
            _ => Self::Crontab,
        }
    }
}

/// A loaded file: every job validated and ready for [`slotcron::Scheduler::add`].
#[derive(Debug)]
pub struct JobsFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// The format it was read as.
    pub format: Format,
    /// Its jobs, in file order.
    pub jobs: Vec<JobEntry>,
    /// Its `[coordination]` table (empty for a crontab).
    pub coordination: Coordination,
    /// Its `[history]` table (empty for a crontab).
    pub history: History,
    /// The file and line of the first job whose output is mailed (a crontab's
    /// `MAILTO=`), if any.
    pub mails_from: Option<(PathBuf, usize)>,
    /// For a directory of crontabs: the files read and those skipped.
    pub directory: Option<Directory>,
    /// A TOML file's `shutdown_timeout` (`--shutdown-timeout` takes precedence).
    pub shutdown_timeout: Option<Duration>,
    /// A TOML file's top-level `max_concurrent_runs`: runs in flight per daemon; `None`:
    /// no cap.
    pub max_concurrent_runs: Option<usize>,
    /// The daemon's own zone, when a crontab line runs in it (the file gives the line no
    /// `CRON_TZ=` or `TZ=`): every daemon of a fleet must resolve the same.
    pub local_zone: Option<LocalZone>,
    /// A big TOML file's later pieces, as this load read them: what a reload takes the
    /// jobs of unchanged pieces again by ([`load_again`]); empty for other files.
    pub pieces: Pieces,
}

impl JobsFile {
    /// When the file has no jobs (valid: a daemon on it idles and serves its admin API),
    /// what to say of it: the file and how to add one.
    pub fn no_jobs(&self) -> Option<String> {
        if !self.jobs.is_empty() {
            return None;
        }
        let how = match self.format {
            Format::Toml => "add [[job]] tables",
            Format::Crontab => "add lines such as `*/5 * * * * command`",
            Format::SystemCrontab => "add lines such as `*/5 * * * * root command`",
        };
        let to = if self.directory.is_some() { " to a crontab in it" } else { "" };
        Some(format!("{}: no jobs ({how}{to})", self.path.display()))
    }

    /// The jobs that are scheduled: those not `enabled = false`.
    pub fn enabled_jobs(&self) -> impl Iterator<Item = &JobEntry> {
        self.jobs.iter().filter(|entry| entry.enabled)
    }
}

/// A TOML jobs file's `[history]` table: how much run history the daemon's ledger keeps.
/// Pruning never drops a job's last success nor its last failure (see
/// [`slotcron::Retention`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct History {
    /// `retention = "30d"`: records whose trigger is older are pruned; `None` (absent, or
    /// zero): [`Retention::DEFAULT_MAX_AGE`].
    pub retention: Option<Duration>,
    /// `per_job = 1000`: at most this many records per job (the newest triggers); `None`:
    /// [`Retention::DEFAULT_MAX_RECORDS_PER_JOB`].
    pub per_job: Option<u64>,
}

impl History {
    /// The retention the daemon's ledger applies.
    pub fn retention(&self) -> Retention {
        Retention {
            max_age: Some(self.retention.unwrap_or(Retention::DEFAULT_MAX_AGE)),
            max_records_per_job: Some(self.per_job.unwrap_or(Retention::DEFAULT_MAX_RECORDS_PER_JOB)),
        }
    }
}

/// A TOML jobs file's daemon settings: its `[coordination]` table (how the daemons of a
/// fleet share triggers) and its `[admin]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Coordination {
    /// `redis = "URL"`: the Redis in which the daemons claim triggers (the `--redis` flag
    /// and the `SLOTCRON_REDIS_URL` variable take precedence).
    pub redis: Option<String>,
    /// `prefix = "PREFIX"`: the prefix of the keys written in that Redis (the
    /// `--redis-prefix` flag and the `SLOTCRON_REDIS_PREFIX` variable take precedence).
    pub prefix: Option<String>,
    /// `slack = "5s"`: the clock-skew slack (the `--clock-skew-slack` flag takes
    /// precedence).
    pub slack: Option<std::time::Duration>,
    /// `takeover_delay = "300ms"`: how long a daemon waits for a trigger's owner to claim
    /// it before it takes the trigger over (the `--takeover-delay` flag takes precedence).
    pub takeover_delay: Option<std::time::Duration>,
    /// `membership_ttl = "10s"`: how long the fleet keeps a daemon that stopped
    /// heartbeating as a member (the `--membership-ttl` flag takes precedence).
    pub membership_ttl: Option<std::time::Duration>,
    /// `shared_work = false`: every daemon claims every trigger at once rather than
    /// sharing the work by owners (default `true`).
    pub shared_work: Option<bool>,
    /// `[admin] listen = "ADDR"`: where the admin API listens (the `--admin` flag and
    /// the `SLOTCRON_ADMIN` variable take precedence).
    pub admin_listen: Option<String>,
}

/// One job of a file.
#[derive(Debug, Clone)]
pub struct JobEntry {
    /// The line the job starts on.
    pub line: usize,
    /// Its schedule as the file states it.
    pub schedule: ScheduleSpec,
    /// The validated job; its handler runs the job's shell command.
    pub job: Job,
    /// The calendars of its `exclude`, already applied to the job's schedule.
    pub exclude: Vec<std::sync::Arc<slotcron::Calendar>>,
    /// `false` for a TOML job with `enabled = false`: loaded, validated and shown, never
    /// scheduled.
    pub enabled: bool,
    /// A hash of everything the file says about the job (its name, schedule and zone,
    /// command, environment, input, policies), not of its line: equal across two loads
    /// exactly when the job is unchanged, for [`slotcron::Plan::fingerprint`] (as 16 hex
    /// digits).
    pub fingerprint: u64,
    /// The command its handler runs.
    pub command: ShellCommand,
    /// The command run after a trigger of the job fails (its own or the file's
    /// `on_failure`); boxed, as most jobs have none (a million-job file's entries are
    /// moved several times while it loads).
    pub on_failure: Option<Box<ShellCommand>>,
    /// `start` and `end`: the window its triggers are bounded to, as given.
    pub window: (Option<jiff::Timestamp>, Option<jiff::Timestamp>),
    /// The line of each field of [`LATER_CHECKED`] the job gives (a TOML job's; a
    /// crontab line has none), for the problems found after the load.
    field_lines: Vec<(&'static str, usize)>,
}

/// The fields named by the checks made once the jobs are built — the chains, the grace
/// floor, what a daemon without a coordinator refuses —, whose lines each [`JobEntry`]
/// keeps (only these: a million-job file).
const LATER_CHECKED: [&str; 5] = ["run_after", "grace", "on", "max_runs", "pause_after_failures"];

impl JobEntry {
    /// A copy of the entry with its lines moved by `moved` (from where an earlier load
    /// found them to where the file now has them).
    fn moved(&self, moved: impl Fn(usize) -> usize) -> JobEntry {
        let mut entry = self.clone();
        entry.line = moved(entry.line);
        for (_, line) in &mut entry.field_lines {
            *line = moved(*line);
        }
        entry
    }

    /// The line of `field` (one of [`LATER_CHECKED`]), if the job gives it; else the line
    /// the job starts on.
    pub fn line_of(&self, field: &str) -> usize {
        self.field_lines.iter().find(|(f, _)| *f == field).map_or(self.line, |(_, line)| *line)
    }

    /// The job's schedule in English (as `slotcron check` shows it), and the calendars
    /// that take instants out of it.
    pub fn explain(&self) -> String {
        let explanation = self.schedule.explain();
        if self.exclude.is_empty() {
            return explanation;
        }
        let names: Vec<&str> = self.exclude.iter().map(|calendar| calendar.name()).collect();
        format!("{explanation}, except in {}", names.join(", "))
    }
}

/// A job's run policies as a file gives them; `None`: the core's default.
#[derive(Debug, Clone, Default)]
struct Policies {
    attempts: Option<u32>,
    backoff: Option<Duration>,
    backoff_multiplier: Option<f64>,
    backoff_max: Option<Duration>,
    overlap: Option<Overlap>,
    jitter: Option<Duration>,
    on_failure: Option<ShellCommand>,
    on_interrupt: Option<OnInterrupt>,
    /// `max_runs`: the most scheduled triggers the job runs across the fleet.
    max_runs: Option<u64>,
    /// `pause_after_failures`: how many failed triggers in a row pause the job.
    pause_after_failures: Option<u64>,
    /// `start` and `end`: the window a recurring schedule's triggers are bounded to.
    start: Option<jiff::Timestamp>,
    end: Option<jiff::Timestamp>,
    /// `exclude`: the calendars whose instants are not triggers.
    exclude: Vec<std::sync::Arc<slotcron::Calendar>>,
    /// `on`: the labels a daemon must carry to run the job, as written.
    on: Vec<String>,
}

/// Reads and validates the jobs file or crontab at `path` in `format` (see
/// [`Format::of`]), or, if `path` is a directory, each of its crontabs (see
/// [`directory`]; read as a system crontab if `format` is one, else as a user crontab).
///
/// # Errors
/// Every problem found: an unreadable file or directory, a directory named as a TOML
/// jobs file ([`TOML_DIRECTORY`]), syntax errors, invalid fields, duplicate names. A file
/// with no jobs loads ([`JobsFile::no_jobs`] says so).
pub fn load(path: &Path, format: Format) -> Result<JobsFile, Problems> {
    load_again(path, format, None)
}

/// [`load`], on a reload after `earlier` (the last load of the same file that
/// succeeded): the jobs of a big TOML file's unchanged pieces are taken from it
/// ([`toml_format::Earlier`]).
///
/// # Errors
/// As [`load`].
pub fn load_again(path: &Path, format: Format, earlier: Option<&Earlier<'_>>) -> Result<JobsFile, Problems> {
    if path.is_dir() {
        let format = match format {
            Format::Toml => return Err(Problems::new(path, vec![Problem::whole(TOML_DIRECTORY)])),
            Format::SystemCrontab => format,
            Format::Crontab => Format::Crontab,
        };
        return directory::load(path, format);
    }
    let source = read(path).map_err(|problem| Problems::new(path, vec![problem]))?;
    let parsed =
        validate(parse_format(&source, format, earlier), format).map_err(|list| Problems::new(path, list))?;
    Ok(JobsFile::at(path, parsed))
}

/// Why a directory whose name ends in `.toml` is not read: the name says a TOML jobs
/// file, and a directory there is most likely one missing (a container's bind mount of a
/// file that does not exist makes a directory in its place), not a directory of crontabs.
const TOML_DIRECTORY: &str = "is a directory, not the TOML jobs file its .toml name says (a directory \
    of crontabs is read under any other name; a bind mount of a missing file leaves an empty directory \
    in its place)";

/// The text of the file at `path`.
fn read(path: &Path) -> Result<String, Problem> {
    std::fs::read_to_string(path).map_err(|e| Problem::whole(format!("cannot read: {e}")))
}

impl JobsFile {
    /// `parsed`, read from `path`.
    fn at(path: &Path, parsed: JobsFile) -> JobsFile {
        let mails_from = parsed.mails_from.map(|(_, line)| (path.to_owned(), line));
        JobsFile { path: path.to_owned(), mails_from, ..parsed }
    }
}

/// Parses and validates the text of a jobs file or crontab (its `path` left empty, for
/// [`load`] to fill in).
///
/// # Errors
/// Every problem found, in no particular order.
pub fn parse(source: &str, format: Format) -> Result<JobsFile, Vec<Problem>> {
    validate(parse_format(source, format, None), format)
}

/// What the parser of `format` finds in `source`, before the names are checked and the
/// jobs built.
fn parse_format(source: &str, format: Format, earlier: Option<&Earlier<'_>>) -> Parsed {
    match format {
        Format::Toml => toml_format::parse(source, earlier),
        Format::Crontab => crontab::parse(source, false),
        Format::SystemCrontab => crontab::parse(source, true),
    }
}

/// Checks the names of `parsed` (unique, valid) and builds its jobs.
///
/// # Errors
/// Every problem found, in no particular order.
fn validate(mut parsed: Parsed, format: Format) -> Result<JobsFile, Vec<Problem>> {
    parsed.build();
    let Parsed {
        names,
        drafts: _,
        built,
        coordination,
        history,
        shutdown_timeout,
        max_concurrent_runs,
        local_zone,
        job_tables: _,
        mut problems,
        pieces,
    } = parsed;
    // foldhash: names hashed quickly (a million-job file); nothing here comes from a peer.
    let mut first_line: HashMap<&str, usize, foldhash::fast::RandomState> =
        HashMap::with_capacity_and_hasher(names.len(), Default::default());
    let before = problems.len();
    for (name, line) in &names {
        match first_line.get(name.as_str()) {
            Some(first) => problems.push(Problem::field(
                *line,
                Some(name),
                "name",
                format!("the job on line {first} has the same name; names must be unique"),
            )),
            None => {
                first_line.insert(name, *line);
                // Here rather than only in the core's build, so that a bad name is
                // reported beside the job's other problems.
                if let Err(reason) = slotcron::validate_job_name(name) {
                    problems.push(Problem::field(*line, Some(name), "name", reason));
                }
            }
        }
    }
    // The jobs whose name is neither a duplicate nor invalid, by their name and its line;
    // `None` when no name had a problem (the usual case): every job then.
    let named: Option<HashSet<(&str, usize), foldhash::fast::RandomState>> =
        (problems.len() > before).then(|| {
            let first = |name: &str, line: &usize| first_line.get(name) == Some(line);
            let named = |(name, line): &&(String, usize)| {
                first(name, line) && slotcron::validate_job_name(name).is_ok()
            };
            names.iter().filter(named).map(|(name, line)| (name.as_str(), *line)).collect()
        });
    // Kept in the file's order, in place. A duplicate or a bad name, reported above, is
    // not loaded; its other problems are reported all the same.
    let mut built_problems = Vec::new();
    let jobs: Vec<JobEntry> = built
        .into_iter()
        .filter_map(|built| {
            let named = named.as_ref().is_none_or(|named| named.contains(&(built.name(), built.name_line)));
            match built.result {
                Ok(entry) if named => Some(entry),
                Ok(_) => None,
                Err(mut refused) => {
                    refused.retain(|problem| named || problem.field.as_deref() != Some("name"));
                    built_problems.extend(refused);
                    None
                }
            }
        })
        .collect();
    // Every job is loaded when this is used (no problems).
    let mails_from =
        jobs.iter().find(|entry| entry.command.mailto.is_some()).map(|entry| (PathBuf::new(), entry.line));
    problems.extend(built_problems);
    problems.extend(chain_problems(&jobs, &names));
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(JobsFile {
        path: PathBuf::new(),
        format,
        jobs,
        coordination,
        history,
        mails_from,
        directory: None,
        shutdown_timeout,
        max_concurrent_runs,
        local_zone,
        pieces,
    })
}

/// The problems of the chains of `jobs` ([`slotcron::check_chains`]): every `run_after`
/// names a job of the file (an `enabled = false` one counts: its children then never
/// run), and no job runs after itself through others. Reported beside the file's other
/// problems: a parent the file has (`names`) that was not built for its own problems is
/// no unknown parent.
fn chain_problems(jobs: &[JobEntry], names: &[(String, usize)]) -> Vec<Problem> {
    let Err(errors) = slotcron::check_chains(jobs.iter().map(|entry| &entry.job)) else { return Vec::new() };
    let entry_of = |name: &str| jobs.iter().find(|entry| entry.job.name() == name);
    let named_in_file = |parent: &str| names.iter().any(|(name, _)| name == parent);
    errors
        .into_iter()
        .filter_map(|error| {
            let JobError::Invalid { job, field, reason } = error else {
                return Some(Problem::whole(error.to_string()));
            };
            let entry = entry_of(&job);
            let parent = entry.and_then(|entry| entry.job.parent());
            let unbuilt_parent = parent.is_some_and(|p| named_in_file(p) && entry_of(p).is_none());
            let line = entry.map_or(0, |entry| entry.line_of(field));
            (!unbuilt_parent).then(|| Problem::field(line, Some(&job), field, reason))
        })
        .collect()
}

/// What a format parser found: the name and line of every job (valid or not, for the
/// duplicate check), a draft of every job without problems (built as it is read, or
/// later), the coordination and history settings, the shutdown timeout, the concurrency
/// cap, the count of `[[job]]` tables, and the problems.
#[derive(Debug, Default)]
struct Parsed {
    names: Vec<(String, usize)>,
    /// Drafts not built yet.
    drafts: Vec<Draft>,
    /// Drafts built, in the file's order, before those of `drafts`.
    built: Vec<Built>,
    coordination: Coordination,
    history: History,
    shutdown_timeout: Option<Duration>,
    max_concurrent_runs: Option<usize>,
    /// The daemon's own zone, when a crontab line runs in it.
    local_zone: Option<LocalZone>,
    /// How many `[[job]]` tables a TOML file's piece holds: a later piece's jobs are
    /// numbered after them ([`JobRef::Number`]).
    job_tables: usize,
    problems: Vec<Problem>,
    /// A big TOML file's later pieces, for a reload to take their jobs again.
    pieces: Pieces,
}

impl Parsed {
    /// Adds what the later pieces of the same file found, in order: their jobs and
    /// problems, each piece's jobs numbered after those before it.
    fn append(&mut self, later: Vec<Parsed>) {
        self.names.reserve(later.iter().map(|parsed| parsed.names.len()).sum());
        self.built.reserve(later.iter().map(|parsed| parsed.built.len()).sum());
        for later in later {
            self.names.extend(later.names);
            self.drafts.extend(later.drafts);
            self.built.extend(later.built);
            let mut problems = later.problems;
            for problem in &mut problems {
                if let Some(JobRef::Number(number)) = &mut problem.job {
                    *number += self.job_tables;
                }
            }
            self.problems.extend(problems);
            self.job_tables += later.job_tables;
        }
    }

    /// Builds the drafts (see [`Draft::build`]), on every core at once, after those built
    /// already.
    fn build(&mut self) {
        let drafts = std::mem::take(&mut self.drafts);
        self.built.par_extend(
            drafts.into_par_iter().map(|draft| Built { name_line: draft.name_line, result: draft.build() }),
        );
    }
}

/// A draft the core has built: the job, or its problems; and the line of its name, for
/// the duplicate check.
#[derive(Debug)]
struct Built {
    name_line: usize,
    result: Result<JobEntry, Vec<Problem>>,
}

impl Built {
    /// The job's name, as its draft gave it (its problems name it).
    fn name(&self) -> &str {
        match &self.result {
            Ok(entry) => entry.job.name(),
            Err(problems) => problems
                .iter()
                .find_map(|problem| match &problem.job {
                    Some(JobRef::Name(name)) => Some(name.as_str()),
                    _ => None,
                })
                .unwrap_or_default(),
        }
    }
}

/// A job as a file defines it, before the core validates it.
#[derive(Debug)]
struct Draft {
    name: String,
    /// The line of the job's name (its table or crontab line for derived names).
    name_line: usize,
    /// The line the job starts on.
    line: usize,
    schedule: ScheduleSpec,
    /// What problems with the schedule are reported against (`cron`, `every`...).
    schedule_field: &'static str,
    command: ShellCommand,
    timeout: Option<Duration>,
    run_on_start: bool,
    /// Whether every replica runs every trigger, unclaimed.
    on_every_replica: bool,
    /// The misfire policy; `None` for the core's default (by schedule kind).
    misfire: Option<Misfire>,
    /// The misfire grace window; `None` for [`Misfire::DEFAULT_GRACE`].
    grace: Option<Duration>,
    /// Retries, overlap, jitter and the failure hook.
    policies: Policies,
    /// The line of each field given, for problems the core finds.
    field_lines: Vec<(&'static str, usize)>,
    /// `false`: `enabled = false`, never scheduled.
    enabled: bool,
}

impl Draft {
    /// Builds the job through the core's [`slotcron::JobBuilder`], which has the last
    /// word on names, schedules and policies.
    ///
    /// # Errors
    /// Every problem of a chained job's settings ([`JobBuilder::chain_problems`]), else
    /// the first problem the core finds.
    fn build(self) -> Result<JobEntry, Vec<Problem>> {
        let command = ShellCommand { timeout: self.timeout, ..self.command.clone() };
        let builder = Job::builder(&self.name)
            .handler(command.into_handler())
            .run_on_start(self.run_on_start)
            .on_every_replica(self.on_every_replica);
        let policies = &self.policies;
        // Each setting given replaces the core's default; one not given keeps it.
        let builder = given(builder, self.timeout, JobBuilder::timeout);
        let builder = given(builder, self.misfire, JobBuilder::misfire);
        let builder = given(builder, self.grace, JobBuilder::grace);
        let builder = given(builder, policies.attempts, JobBuilder::attempts);
        let builder = given(builder, policies.backoff, JobBuilder::backoff);
        let builder = given(builder, policies.backoff_multiplier, JobBuilder::backoff_multiplier);
        let builder = given(builder, policies.backoff_max, JobBuilder::backoff_max);
        let builder = given(builder, policies.overlap, JobBuilder::overlap);
        let builder = given(builder, policies.jitter, JobBuilder::jitter);
        let builder = given(builder, policies.on_interrupt, JobBuilder::on_interrupt);
        let builder = given(builder, policies.start, JobBuilder::start_at);
        let builder = given(builder, policies.end, JobBuilder::end_at);
        let builder = given(builder, policies.max_runs, JobBuilder::max_runs);
        let builder = given(builder, policies.pause_after_failures, JobBuilder::pause_after_failures);
        let builder = policies.exclude.iter().cloned().fold(builder, JobBuilder::exclude);
        // No labels: the core's default placement (anywhere), without parsing none.
        let builder = if policies.on.is_empty() { builder } else { builder.on(&policies.on) };
        let builder = self.schedule.apply(builder);
        let chain = builder.chain_problems();
        if !chain.is_empty() {
            return Err(chain.into_iter().map(|error| self.problem(error)).collect());
        }
        match builder.build() {
            Ok(job) => {
                let fingerprint = self.fingerprint();
                // The hook runs as the job's command does: its shell, user, environment
                // and working directory.
                let on_failure = self.policies.on_failure.map(|hook| {
                    Box::new(ShellCommand {
                        script: hook.script,
                        mailto: None,
                        timeout: None,
                        stdin: None,
                        ..self.command.clone()
                    })
                });
                let command = self.command;
                let field_lines =
                    self.field_lines.into_iter().filter(|(field, _)| LATER_CHECKED.contains(field)).collect();
                Ok(JobEntry {
                    line: self.line,
                    schedule: self.schedule,
                    job,
                    exclude: self.policies.exclude,
                    window: (self.policies.start, self.policies.end),
                    enabled: self.enabled,
                    fingerprint,
                    command,
                    on_failure,
                    field_lines,
                })
            }
            Err(error) => Err(vec![self.problem(error)]),
        }
    }

    /// The definition's fingerprint: a hash of its fields (see [`Definition`]). Compared
    /// only within one process (a reload against the jobs it runs), so the hash need not be
    /// stable across releases; one fixed seed keeps it the same within the process.
    fn fingerprint(&self) -> u64 {
        foldhash::quality::FixedState::with_seed(0).hash_one(Definition(self))
    }

    fn problem(&self, error: JobError) -> Problem {
        let schedule_field = self.schedule_field;
        let (field, reason) = match error {
            JobError::Invalid { field, reason, .. } => (field, reason),
            JobError::Schedule { source: ScheduleError::Invalid { field, reason }, .. } => (field, reason),
            JobError::Schedule { source, .. } => (schedule_field, source.to_string()),
            other => (schedule_field, other.to_string()),
        };
        let field = if field == "schedule" { schedule_field } else { field };
        let line = self.field_lines.iter().find(|(f, _)| *f == field).map_or(self.line, |(_, line)| *line);
        Problem::field(line, Some(&self.name), field, reason)
    }
}

/// `builder` with `set` applied to `value`, if there is one.
fn given<T>(builder: JobBuilder, value: Option<T>, set: fn(JobBuilder, T) -> JobBuilder) -> JobBuilder {
    match value {
        Some(value) => set(builder, value),
        None => builder,
    }
}

/// What a job's fingerprint hashes: everything its draft says but the lines it is on.
struct Definition<'d>(&'d Draft);

impl Hash for Definition<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let Draft {
            name,
            name_line: _,
            line: _,
            schedule,
            schedule_field: _,
            command,
            timeout,
            run_on_start,
            on_every_replica,
            misfire,
            grace,
            policies,
            field_lines: _,
            enabled: _,
        } = self.0;
        (name, command, timeout, run_on_start, on_every_replica, grace).hash(state);
        schedule.hash(state);
        misfire
            .map(|misfire| match misfire {
                Misfire::Skip => (0, 0),
                Misfire::RunOnce => (1, 0),
                Misfire::RunAll { cap } => (2, cap),
            })
            .hash(state);
        policies.hash(state);
    }
}

impl Hash for Policies {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let Self {
            attempts,
            backoff,
            backoff_multiplier,
            backoff_max,
            overlap,
            jitter,
            on_failure,
            on_interrupt,
            max_runs,
            pause_after_failures,
            start,
            end,
            exclude,
            on,
        } = self;
        (attempts, backoff, backoff_multiplier.map(f64::to_bits), backoff_max, overlap.map(Overlap::name))
            .hash(state);
        (jitter, on_failure, on_interrupt, max_runs, pause_after_failures, start, end, on).hash(state);
        exclude.len().hash(state);
        for calendar in exclude {
            // Writing to a hasher cannot fail.
            let _ = write!(Streamed(state), "{calendar:?}");
        }
    }
}

/// A [`std::fmt::Write`] that feeds what is written to a hasher, byte for byte.
struct Streamed<'h, H>(&'h mut H);

impl<H: Hasher> std::fmt::Write for Streamed<'_, H> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.write(s.as_bytes());
        Ok(())
    }
}
