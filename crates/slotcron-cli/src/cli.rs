//! The command line: `slotcron run | next | check | history` (clap derive).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use jiff::Timestamp;
use slotcron::Outcome;

use crate::settings;
use crate::state::StateUrl;

/// Cron for a fleet: runs shell jobs from a TOML jobs file or a crontab.
#[derive(Debug, Parser)]
#[command(name = "slotcron", version, about, max_term_width = 100, after_help = MAIN_EXAMPLES)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// How log lines are written: text, or json (one object per line).
    ///
    /// `text` is for people; `json` writes one JSON object per line, with `job`,
    /// `trigger`, `instance`, `outcome`, `duration_ms`... as fields.
    #[arg(long, global = true, value_enum, value_name = "FORMAT", default_value = "text")]
    pub log_format: LogFormat,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the jobs of FILE until SIGINT or SIGTERM; SIGHUP or SIGUSR2 reloads FILE.
    #[command(after_help = RUN_EXAMPLES)]
    Run(RunArgs),
    /// Print the next fire times of a cron expression.
    #[command(after_help = NEXT_EXAMPLES)]
    Next(FireTimesArgs),
    /// Print the previous fire times of a cron expression, newest first.
    #[command(after_help = PREV_EXAMPLES)]
    Prev(FireTimesArgs),
    /// Validate FILE and list its jobs with their next fire times.
    #[command(after_help = CHECK_EXAMPLES)]
    Check(CheckArgs),
    /// Print the run history kept in the state (or, with --admin-url, the fleet's), newest trigger first.
    #[command(after_help = HISTORY_EXAMPLES)]
    History(HistoryArgs),
    /// Print what a run's attempts wrote, each with how it ended and how long it took.
    #[command(after_help = LOGS_EXAMPLES)]
    Logs(LogsArgs),
    /// Manage the jobs kept in the state, which daemons run with --jobs-from-state.
    Jobs(JobsArgs),
    /// Print the jobs of a running daemon, read from its admin API.
    #[command(after_help = STATUS_EXAMPLES)]
    Status(StatusArgs),
    #[command(flatten)]
    Steer(SteerCommand),
    /// Stop a running run of JOB on whichever daemon of the fleet runs it.
    ///
    /// That daemon sends SIGTERM to the command's process group (SIGKILL after the kill
    /// grace), starts no retry and records the run cancelled, naming the daemon asked, the
    /// token kind and the note. The daemon asked finds the run in its history, or in the
    /// other daemons' (asked through their admin APIs) when each keeps its own.
    #[command(after_help = CANCEL_EXAMPLES)]
    Cancel(CancelArgs),
    /// Print the shell completion script for SHELL.
    ///
    /// bash: `slotcron completions bash > /etc/bash_completion.d/slotcron`; zsh: into a
    /// directory of $fpath as `_slotcron`; fish: `~/.config/fish/completions/slotcron.fish`.
    Completions(CompletionsArgs),
    /// Print the man page (roff), generated from the same definitions as --help.
    ///
    /// `slotcron man > /usr/local/share/man/man1/slotcron.1`, then `man slotcron`; the page
    /// of a command, which that one names: `slotcron man trigger > .../slotcron-trigger.1`.
    Man(ManArgs),
}

/// `slotcron man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page (slotcron-COMMAND(1)) to print, e.g. `trigger`; none:
    /// slotcron(1).
    pub command: Option<String>,
}

/// `slotcron completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// The commands that steer a running fleet through a daemon's admin API.
#[derive(Debug, Subcommand)]
pub enum SteerCommand {
    /// Pause JOB across the fleet until it is resumed, also across restarts.
    ///
    /// No daemon sharing the coordinator runs its triggers; each records them
    /// skipped-paused.
    #[command(after_help = PAUSE_EXAMPLES)]
    Pause(SteerArgs),
    /// Resume a paused JOB across the fleet.
    #[command(after_help = PAUSE_EXAMPLES)]
    Resume {
        #[command(flatten)]
        args: SteerArgs,
        /// Also run the triggers that came due while paused, as misfires under the
        /// job's misfire policy (skip: none, run_once: the newest, run_all: up to its cap).
        #[arg(long)]
        catch_up: bool,
    },
    /// Run JOB once now, once across the fleet (cause manual), also while paused.
    #[command(after_help = PAUSE_EXAMPLES)]
    Trigger {
        #[command(flatten)]
        args: SteerArgs,
        /// A key naming this request: given again within 24 h it runs nothing more.
        ///
        /// 1 to 128 ASCII letters, digits, `.`, `_` or `-`.
        #[arg(long, value_name = "KEY")]
        idempotency_key: Option<String>,
        /// Run nothing: print the trigger a run now would get and whether JOB is paused.
        ///
        /// Asked of the daemon, which checks the request as for a run (the same errors);
        /// a KEY is checked, not looked up.
        #[arg(long)]
        dry_run: bool,
    },
    /// Run each past trigger of JOB from FROM to TO, oldest first (cause backfill).
    ///
    /// Both ends included, at most 1,000 triggers; each runs once across the fleet.
    #[command(after_help = PAUSE_EXAMPLES)]
    Backfill {
        #[command(flatten)]
        args: SteerArgs,
        /// The first instant of the range (RFC 3339).
        #[arg(long, value_name = "RFC3339", value_parser = parse_instant)]
        from: Timestamp,
        /// The last instant of the range (RFC 3339), not after now.
        #[arg(long, value_name = "RFC3339", value_parser = parse_instant)]
        to: Timestamp,
        /// Run nothing: print the triggers that would run, oldest first.
        ///
        /// Asked of the daemon: from its schedule of JOB, the request checked as for a
        /// backfill (the same errors, such as a range of more than 1,000 triggers).
        #[arg(long)]
        dry_run: bool,
    },
}

impl SteerCommand {
    /// The command's name and its common arguments.
    pub fn parts(&self) -> (&'static str, &SteerArgs) {
        match self {
            Self::Pause(args) => ("pause", args),
            Self::Resume { args, .. } => ("resume", args),
            Self::Trigger { args, .. } => ("trigger", args),
            Self::Backfill { args, .. } => ("backfill", args),
        }
    }
}

/// `slotcron cancel`.
#[derive(Debug, Args)]
pub struct CancelArgs {
    #[command(flatten)]
    pub steer: SteerArgs,
    /// The run's trigger (RFC 3339), as `history` shows it; default: JOB's running run,
    /// if only one runs (else each is listed, and this is required).
    #[arg(long, value_name = "RFC3339", value_parser = parse_instant)]
    pub trigger: Option<Timestamp>,
    /// Why, kept in the run's record (at most 1,000 bytes).
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
}

/// The job and daemon of a steering command.
#[derive(Debug, Args)]
pub struct SteerArgs {
    /// The job's name.
    pub job: String,
    /// The daemon's admin API: http://HOST:PORT or unix:PATH.
    ///
    /// As given to `run --admin`; default: SLOTCRON_ADMIN_URL (as kubectl and nomad read
    /// theirs). A token in SLOTCRON_ADMIN_TOKEN (or in the file named by
    /// SLOTCRON_ADMIN_TOKEN_FILE) is sent as a bearer token; a read-only one cannot steer
    /// (403). Any daemon of the fleet will do.
    #[arg(long, value_name = "URL", env = ADMIN_URL_VAR, hide_env_values = true)]
    pub admin_url: String,
}

/// The environment variable holding the admin API's URL when `--admin-url` is not given.
pub const ADMIN_URL_VAR: &str = "SLOTCRON_ADMIN_URL";

/// `slotcron status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The daemon's admin API: http://HOST:PORT or unix:PATH.
    ///
    /// As given to `run --admin`; default: SLOTCRON_ADMIN_URL. A token in
    /// SLOTCRON_ADMIN_TOKEN (or in the file named by SLOTCRON_ADMIN_TOKEN_FILE) is sent as a
    /// bearer token; a read-only one will do.
    #[arg(long, value_name = "URL", env = ADMIN_URL_VAR, hide_env_values = true)]
    pub admin_url: String,
}

/// `slotcron jobs`.
#[derive(Debug, Args)]
pub struct JobsArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: JobsCommand,
}

/// The `slotcron jobs` subcommands.
#[derive(Debug, Subcommand)]
pub enum JobsCommand {
    /// Store the `[[job]]` tables of FILE (`-`: standard input) in the state, replacing the
    /// jobs of the same names; nothing is written if any is invalid.
    ///
    /// Each job created or changed is a change record (token `state`: written with access
    /// to the state itself), listed by `slotcron jobs history`; a job given as the state
    /// holds it already is left alone, unrecorded.
    Put {
        /// A TOML jobs file, or `-`.
        #[arg(default_value = "-")]
        file: PathBuf,
        #[command(flatten)]
        state: StateArg,
        /// Why, kept in each change's record (at most 1,000 bytes).
        #[arg(long, value_name = "TEXT", value_parser = parse_note)]
        note: Option<String>,
    },
    /// Remove a job from the state (a change record, as for `put`).
    Rm {
        /// The job's name.
        name: String,
        #[command(flatten)]
        state: StateArg,
        /// Why, kept in the change's record (at most 1,000 bytes).
        #[arg(long, value_name = "TEXT", value_parser = parse_note)]
        note: Option<String>,
    },
    /// List the state's jobs and the jobs the daemons' files define, with their source.
    Ls {
        #[command(flatten)]
        state: StateArg,
        /// One JSON object per line instead of columns.
        #[arg(long)]
        json: bool,
    },
    /// Print the changes made to the state's jobs (through the admin API, `jobs put` and
    /// `jobs rm`), newest first.
    ///
    /// Each change: when, the job, created/changed/deleted, the token kind and the note,
    /// then the definition before (`-`) and after (`+`) as the state keeps them.
    History {
        /// Only this job's changes (also after it was deleted); default: every job's.
        job: Option<String>,
        /// The admin API of a daemon started with --jobs-from-state: http://HOST:PORT or
        /// unix:PATH.
        ///
        /// Default: SLOTCRON_ADMIN_URL. A token in SLOTCRON_ADMIN_TOKEN (or in the file
        /// named by SLOTCRON_ADMIN_TOKEN_FILE) is sent as a bearer token; a read-only one
        /// will do. Any daemon of the fleet lists the same changes.
        #[arg(long, value_name = "URL", env = ADMIN_URL_VAR, hide_env_values = true)]
        admin_url: String,
        /// At most N changes, from 1 to 1,000.
        #[arg(long, value_name = "N", default_value_t = slotcron_admin::DEFAULT_AUDIT_LIMIT)]
        limit: usize,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
}

/// `slotcron run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// A jobs file (`*.toml`), a crontab (any other name), or a directory of crontabs
    /// (each file's jobs named FILE/...).
    pub file: PathBuf,
    /// Read FILE as a system crontab: a user field before each command.
    ///
    /// /etc/crontab and the files of /etc/cron.d/ (and that directory) always are.
    #[arg(long)]
    pub system_crontab: bool,
    /// Claim each trigger in this Redis: it runs once in the fleet.
    ///
    /// `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`, `rediss://…` (TLS),
    /// `redis+unix:///PATH`, or a Redis Cluster: `redis+cluster://HOST:PORT[,HOST:PORT…]`
    /// (`rediss+cluster://…` for TLS). Takes precedence over the SLOTCRON_REDIS_URL
    /// environment variable, which takes precedence over `redis` in the jobs file's
    /// `[coordination]` table (an empty one is an error). Without any, a postgres:// state
    /// coordinates;
    /// else single-replica mode.
    #[arg(long, value_name = "URL")]
    pub redis: Option<String>,
    /// The prefix of the keys written in Redis [default: slotcron:].
    ///
    /// So that several fleets can share one Redis. Takes precedence over the SLOTCRON_REDIS_PREFIX
    /// environment variable, which takes precedence over `prefix` in the jobs file's
    /// `[coordination]` table.
    #[arg(long, value_name = "PREFIX")]
    pub redis_prefix: Option<String>,
    /// How far this daemon's clock may be off its coordinator's (Redis TIME, PostgreSQL
    /// now()), e.g. `5s`: beyond it every trigger is skipped as `skipped-clock-skew`, and
    /// every claim holds this much longer [default: 5s]. Takes precedence over `slack` in
    /// the jobs file's `[coordination]` table.
    #[arg(long, value_name = "DURATION", value_parser = parse_slack)]
    pub clock_skew_slack: Option<Duration>,
    /// How long this daemon waits for a trigger's owner (another daemon of the fleet) to
    /// claim it before it takes the trigger over if still unclaimed, e.g. `300ms`
    /// [default: 300ms].
    ///
    /// An owner that cannot claim (at its max_concurrent_runs, its clock skewed, its link
    /// down) costs a run this much late. Shorter than the membership TTL and every job's
    /// grace. Takes precedence over `takeover_delay` in the jobs file's `[coordination]`
    /// table.
    #[arg(long, value_name = "DURATION", value_parser = parse_takeover_delay)]
    pub takeover_delay: Option<Duration>,
    /// How long the fleet keeps this daemon as a member after its last heartbeat (on the
    /// coordinator's clock), e.g. `10s` [default: 10s].
    ///
    /// A daemon that dies keeps owning its jobs this long (their triggers run a takeover
    /// delay late meanwhile); one that stops leaves at once. Takes precedence over
    /// `membership_ttl` in the jobs file's `[coordination]` table.
    #[arg(long, value_name = "DURATION", value_parser = parse_membership_ttl)]
    pub membership_ttl: Option<Duration>,
    /// This daemon's id, unique in the fleet [default: HOSTNAME-PID].
    ///
    /// In logs, claims, run history and SLOTCRON_INSTANCE; 1 to 200 bytes, no control
    /// characters.
    #[arg(long, value_name = "ID", value_parser = parse_instance)]
    pub instance: Option<String>,
    /// A label this daemon carries, `KEY` or `KEY=VALUE` (e.g. `region=eu`, `gpu`);
    /// repeat the flag for several.
    ///
    /// A job with `on = [...]` runs only on the daemons that carry all of its labels
    /// (still once across the fleet); published in the fleet's membership. Keys and
    /// values are ASCII letters, digits and `-_./`, at most 63 of each; a key once.
    #[arg(long = "label", value_name = "KEY[=VALUE]", value_parser = parse_label)]
    pub labels: Vec<String>,
    /// Also reload FILE when it changes (its directory is watched, so that a file renamed
    /// over it and a Kubernetes ConfigMap update are seen), as SIGHUP and SIGUSR2 do.
    #[arg(long)]
    pub watch: bool,
    /// Also run the jobs kept in the state (`slotcron jobs put`), and follow their changes
    /// within 2 s. Opt-in: whoever may write to the state can then run commands here.
    #[arg(long)]
    pub jobs_from_state: bool,
    /// At a stop, how long running commands may go on [default: 20s].
    ///
    /// At SIGINT or SIGTERM: then they get SIGTERM, and SIGKILL 5 s later. E.g.
    /// 20s, 1m. Takes precedence over `shutdown_timeout` in a TOML jobs file. Give the
    /// supervisor's stop timeout (Kubernetes terminationGracePeriodSeconds, systemd
    /// TimeoutStopSec) 10 s more.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub shutdown_timeout: Option<Duration>,
    #[command(flatten)]
    pub state: StateArg,
    /// Where the commands this daemon starts note that they started [default: beside a
    /// SQLite state, STATE.spawned; with a PostgreSQL state and an --instance,
    /// slotcron-INSTANCE.spawned in the working directory].
    ///
    /// Each command writes one line as it starts. A daemon killed between a run's start
    /// mark and its command's start leaves no line: when a daemon is started again on the
    /// same state and journal, that trigger runs then, once, rather than being recorded
    /// interrupted.
    /// Put it on storage that outlives the daemon's process (a container's volume).
    #[arg(long, value_name = "PATH", env = "SLOTCRON_SPAWN_JOURNAL")]
    pub spawn_journal: Option<PathBuf>,
    /// Serve the admin API, status page and /metrics at ADDR.
    ///
    /// ADDR is IP:PORT (e.g. 127.0.0.1:9090) or unix:PATH. Takes precedence over the
    /// SLOTCRON_ADMIN environment variable, which takes precedence over `listen` in the
    /// jobs file's `[admin]` table; off unless given. An address other machines can reach
    /// needs SLOTCRON_ADMIN_TOKEN.
    ///
    /// Tokens: SLOTCRON_ADMIN_TOKEN opens the API (reads, pause, resume, trigger,
    /// backfill, and with --jobs-from-state PUT and DELETE of the state's jobs);
    /// SLOTCRON_ADMIN_READ_TOKEN, beside it, opens the reads only. Either can be
    /// given in a file instead: SLOTCRON_ADMIN_TOKEN_FILE, SLOTCRON_ADMIN_READ_TOKEN_FILE.
    /// /healthz, /readyz, /metrics, /openapi.json and the status page need no token.
    #[arg(long, value_name = "ADDR")]
    pub admin: Option<String>,
    /// Also accept this Host header in admin requests (repeatable).
    ///
    /// A name (NAME or NAME:PORT) the Host header of admin requests may carry besides the
    /// listen address, e.g. the name a proxy or browser uses. Only a server without a
    /// token checks the Host: a request with any other Host gets 403, except to /healthz
    /// and /readyz.
    #[arg(long, value_name = "NAME")]
    pub admin_host: Vec<String>,
    /// Whether metrics carry a `job` label.
    ///
    /// Per job: runs by outcome, last success, last failure and paused. `false` for very
    /// large job sets: only the fleet-wide series are left.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub metrics_per_job: bool,
    /// Also give each job its own duration and lateness histograms.
    ///
    /// About 40 more lines of /metrics per job; the fleet-wide histograms are always
    /// there.
    #[arg(long)]
    pub metrics_per_job_histograms: bool,
}

/// `--state URL`, shared by `run`, `history` and `jobs`.
#[derive(Debug, Args)]
pub struct StateArg {
    /// Job state and run history.
    ///
    /// sqlite:PATH (a file on this machine), postgres://USER@HOST/DATABASE[?schema=NAME]
    /// (shared by a fleet; schema default `slotcron`), or memory (nothing kept). `run`
    /// creates what is missing; `history` only reads.
    #[arg(long = "state", value_name = "URL", default_value = StateUrl::DEFAULT)]
    pub url: String,
}

/// `slotcron next` and `slotcron prev`.
#[derive(Debug, Args)]
pub struct FireTimesArgs {
    /// A cron expression: 5 or 6 fields, a descriptor such as `@daily`, or `@every 90s`.
    #[arg(required_unless_present = "file", conflicts_with = "file")]
    pub expression: Option<String>,
    /// A jobs file (or crontab): give the fire times of its job --job, with the job's
    /// zone, window and calendars applied.
    #[arg(long, value_name = "FILE", requires = "job")]
    pub file: Option<PathBuf>,
    /// The job of --file.
    #[arg(long, value_name = "NAME", requires = "file")]
    pub job: Option<String>,
    /// The IANA time zone the expression is evaluated in (a --file job: its own).
    #[arg(long = "tz", value_name = "ZONE", default_value = "UTC", conflicts_with = "file")]
    pub zone: String,
    /// Count from this RFC 3339 instant [default: now].
    ///
    /// Not itself printed: `next` prints the fire times strictly after it, `prev` those
    /// strictly before it.
    #[arg(long, value_name = "RFC3339")]
    pub from: Option<String>,
    /// How many fire times to print.
    #[arg(short = 'n', long, value_name = "COUNT", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub count: u32,
    /// First print the schedule in English.
    ///
    /// One line, e.g. "At 09:30 on Monday through Friday (UTC)"; for a --file job with
    /// calendars, also each instant a calendar removed, on a line of its own starting
    /// with `#`, before the fire time that follows it.
    #[arg(long)]
    pub explain: bool,
}

/// `slotcron check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// A jobs file (`*.toml`), a crontab (any other name), or a directory of crontabs
    /// (each file's jobs named FILE/...).
    pub file: PathBuf,
    /// Also show each job's last trigger and the one-shots done, from this state.
    ///
    /// sqlite:PATH or postgres://…, opened for reading only: a LAST column says when each
    /// job last triggered and how that ended; a one-shot that ran shows "never (done)".
    #[arg(long = "state", value_name = "URL")]
    pub state: Option<String>,
    /// Read FILE as a system crontab: a user field before each command.
    ///
    /// /etc/crontab and the files of /etc/cron.d/ (and that directory) always are.
    #[arg(long)]
    pub system_crontab: bool,
    /// Judge the jobs as a daemon given this Redis would (`slotcron run --redis`); never
    /// connected to.
    ///
    /// With no coordinator (this flag, SLOTCRON_REDIS_URL, `redis` in the jobs file's
    /// `[coordination]` table, or a postgres:// --state), a job with max_runs or
    /// pause_after_failures, or placed (`on`) on labels no --label gives, is refused, as
    /// `slotcron run` refuses it.
    #[arg(long, value_name = "URL")]
    pub redis: Option<String>,
    /// A label the daemon carries (`slotcron run --label`), `KEY` or `KEY=VALUE`; repeat
    /// the flag for several.
    #[arg(long = "label", value_name = "KEY[=VALUE]", value_parser = parse_label)]
    pub labels: Vec<String>,
}

/// `slotcron history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Only the runs of this job.
    pub job: Option<String>,
    #[command(flatten)]
    pub state: StateArg,
    /// At most this many runs (the newest triggers).
    #[arg(long, value_name = "COUNT", default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub limit: u32,
    /// Only triggers at or after this RFC 3339 instant.
    ///
    /// E.g. 2026-12-04T16:00:00Z, or with an offset, 2026-12-04T17:00:00+01:00.
    #[arg(long, value_name = "RFC3339", value_parser = parse_instant)]
    pub since: Option<Timestamp>,
    /// Only triggers strictly before this RFC 3339 instant.
    #[arg(long, value_name = "RFC3339", value_parser = parse_instant)]
    pub until: Option<Timestamp>,
    /// Only runs with this outcome.
    #[arg(long, value_name = "OUTCOME", value_parser = parse_outcome)]
    pub outcome: Option<Outcome>,
    /// One JSON object per line instead of columns.
    #[arg(long)]
    pub json: bool,
    /// Read JOB's runs across the fleet through this daemon's admin API (http://HOST:PORT
    /// or unix:PATH) instead of from --state: it merges the runs of the members that keep
    /// a state of their own and names those that did not answer.
    ///
    /// A token in SLOTCRON_ADMIN_TOKEN (or in the file named by SLOTCRON_ADMIN_TOKEN_FILE)
    /// is sent as a bearer token; a read-only one will do.
    #[arg(long, value_name = "URL", conflicts_with = "url", requires = "job")]
    pub admin_url: Option<String>,
}

/// `slotcron logs`.
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The job's name.
    pub job: String,
    /// The run's trigger, an RFC 3339 instant.
    ///
    /// Default: the newest trigger with output kept, among the job's last
    /// 100 runs. Output is kept for each attempt that wrote any or failed.
    #[arg(long, value_name = "RFC3339", value_parser = parse_instant)]
    pub trigger: Option<Timestamp>,
    /// Only this attempt: 1 for the first, 2 for the first retry...
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub attempt: Option<u32>,
    /// Read through a daemon's admin API: http://HOST:PORT or unix:PATH.
    ///
    /// Default: SLOTCRON_ADMIN_URL; without either, the state is read directly
    /// (--state). A token in SLOTCRON_ADMIN_TOKEN (or in the file named by
    /// SLOTCRON_ADMIN_TOKEN_FILE) is sent as a bearer token; a read-only one will do.
    #[arg(long, value_name = "URL", env = ADMIN_URL_VAR, hide_env_values = true)]
    pub admin_url: Option<String>,
    /// Read the state directly, for reading only, even when SLOTCRON_ADMIN_URL is set.
    ///
    /// sqlite:PATH or postgres://USER@HOST/DATABASE[?schema=NAME]; the default, without an
    /// admin URL: the daemon's default state.
    #[arg(long = "state", value_name = "URL")]
    pub state: Option<String>,
    /// Print the output as one JSON object, as the admin API answers it
    /// (GET /api/v1/jobs/{name}/runs/{trigger}/output).
    #[arg(long)]
    pub json: bool,
}

/// After `slotcron --help`.
const MAIN_EXAMPLES: &str = "\
Examples:
  slotcron check jobs.toml                 validate a jobs file, list its next fire times
  slotcron run jobs.toml                   run it (Ctrl-C stops, letting commands finish)
  slotcron next '0 9 * * MON-FRI' --explain

Logs go to standard error at level info; RUST_LOG changes it (RUST_LOG=debug).
See docs/configuration.md for the file formats.";

/// After `slotcron run --help`.
const RUN_EXAMPLES: &str = "\
Examples:
  slotcron run jobs.toml
  slotcron run /etc/crontab --state memory
  slotcron run jobs.toml --redis redis://10.0.0.5:6379 --state postgres://app@db/app

Logs go to standard error at level info; RUST_LOG=debug shows more, e.g. every job loaded.";

/// After `slotcron next --help`.
const NEXT_EXAMPLES: &str = "\
Examples:
  slotcron next '*/15 * * * *'
  slotcron next '30 2 * * *' --tz America/New_York -n 3
  slotcron next --file jobs.toml --job report --explain";

/// After `slotcron prev --help`.
const PREV_EXAMPLES: &str = "\
Examples:
  slotcron prev '0 9 * * 1-5' --from 2026-12-07T08:00:00Z -n 1
  slotcron prev '30 2 * * *' --tz America/New_York -n 3";

/// After `slotcron check --help`.
const CHECK_EXAMPLES: &str = "\
Examples:
  slotcron check jobs.toml
  slotcron check /etc/cron.d/backup
  slotcron check jobs.toml --state sqlite:slotcron.db";

/// After `slotcron history --help`.
const HISTORY_EXAMPLES: &str = "\
Examples:
  slotcron history backup --limit 10
  slotcron history --state postgres://app@db/app --json
  slotcron history backup --admin-url http://127.0.0.1:9090  (the fleet's runs)";

/// After `slotcron logs --help`.
const LOGS_EXAMPLES: &str = "\
Examples:
  slotcron logs backup                          (its newest run with output, read from the state)
  slotcron logs backup --trigger 2026-12-04T03:00:00Z --attempt 2
  slotcron logs backup --admin-url http://127.0.0.1:9090";

/// After `slotcron status --help`.
const STATUS_EXAMPLES: &str = "\
Examples:
  slotcron status --admin-url http://127.0.0.1:9090      (a daemon run with --admin 127.0.0.1:9090)
  slotcron status --admin-url unix:/run/slotcron/admin.sock";

/// After `slotcron pause --help` and the other steering commands'.
const CANCEL_EXAMPLES: &str = "\
Examples:
  slotcron cancel backup --admin-url http://127.0.0.1:9090     (its one running run, on any daemon)
  slotcron cancel backup --trigger 2026-11-30T03:00:00Z --note 'stuck on a lock' --admin-url URL";

const PAUSE_EXAMPLES: &str = "\
Examples:
  slotcron pause backup --admin-url http://127.0.0.1:9090       (then: slotcron resume backup ...)
  slotcron trigger backup --idempotency-key deploy-42 --admin-url unix:/run/slotcron/admin.sock
  slotcron backfill backup --from 2026-11-30T00:00:00Z --to 2026-11-30T06:00:00Z --admin-url URL";

/// A `--label`: `KEY` or `KEY=VALUE` ([`slotcron::Label::parse`]).
fn parse_label(text: &str) -> Result<String, String> {
    slotcron::Label::parse(text).map(|_| text.to_owned()).map_err(|e| e.to_string())
}

/// The longest `--instance`, in bytes.
const MAX_INSTANCE_LEN: usize = 200;

/// An `--instance` id: it is written to logs, claims and run records, and passed to
/// commands in `SLOTCRON_INSTANCE`.
fn parse_instance(id: &str) -> Result<String, String> {
    if id.trim().is_empty() {
        return Err("must not be empty or only whitespace".into());
    }
    if id.trim() != id {
        return Err(format!("must not start or end with whitespace, got {id:?}"));
    }
    if id.len() > MAX_INSTANCE_LEN {
        return Err(format!("must be at most {MAX_INSTANCE_LEN} bytes, got {}", id.len()));
    }
    if let Some(c) = id.chars().find(|c| c.is_control()) {
        return Err(format!("must not contain control characters, found {c:?}"));
    }
    Ok(id.to_owned())
}

/// A `--clock-skew-slack`: a duration as in jobs files, longer than zero.
fn parse_slack(text: &str) -> Result<Duration, String> {
    let slack = slotcron::parse_duration(text).map_err(|e| e.to_string())?;
    settings::check_slack(slack)?;
    Ok(slack)
}

/// A `--takeover-delay`: a duration as in jobs files.
fn parse_takeover_delay(text: &str) -> Result<Duration, String> {
    slotcron::parse_duration(text).map_err(|e| e.to_string())
}

/// A `--note`: at most [`slotcron_admin::MAX_NOTE`] bytes, as the admin API's `note`.
fn parse_note(text: &str) -> Result<String, String> {
    match text.len() {
        n if n > slotcron_admin::MAX_NOTE => {
            Err(format!("{n} bytes long; at most {}", slotcron_admin::MAX_NOTE))
        }
        _ => Ok(text.to_owned()),
    }
}

/// A `--membership-ttl`: a duration as in jobs files, longer than zero.
fn parse_membership_ttl(text: &str) -> Result<Duration, String> {
    let ttl = slotcron::parse_duration(text).map_err(|e| e.to_string())?;
    settings::check_membership_ttl(ttl)?;
    Ok(ttl)
}

fn parse_instant(text: &str) -> Result<Timestamp, String> {
    text.parse()
        .map_err(|e| format!("not an RFC 3339 instant with an offset, e.g. 2026-12-04T16:50:00Z: {e}"))
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    slotcron::parse_duration(text).map_err(|e| e.to_string())
}

fn parse_outcome(text: &str) -> Result<Outcome, String> {
    text.parse().map_err(|_| {
        let names: Vec<&str> = Outcome::ALL.iter().map(|outcome| outcome.as_str()).collect();
        format!("not an outcome: write one of {}", names.join(", "))
    })
}
