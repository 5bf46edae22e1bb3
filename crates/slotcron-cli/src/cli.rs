//! The command line: `slotcron run | next | check | history` (clap derive).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use jiff::Timestamp;

use crate::state::StateUrl;

/// Cron for a fleet: runs shell jobs from a TOML jobs file or a crontab.
#[derive(Debug, Parser)]
#[command(name = "slotcron", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the jobs of FILE until SIGINT, SIGTERM or SIGHUP.
    Run(RunArgs),
    /// Print the next fire times of a cron expression.
    Next(NextArgs),
    /// Validate FILE and list its jobs with their next fire times.
    Check(CheckArgs),
    /// Print the run history kept in the state, newest trigger first.
    History(HistoryArgs),
}

/// `slotcron run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// A jobs file (`*.toml`) or a crontab (any other name).
    pub file: PathBuf,
    /// Claim every trigger in this Redis, so that each runs once across the daemons
    /// sharing it: `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`, `rediss://…` (TLS) or
    /// `redis+unix:///PATH`. Takes precedence over the SLOTCRON_REDIS_URL environment
    /// variable, which takes precedence over `redis` in the jobs file's
    /// `[coordination]` table (an empty one is an error). Without any, a postgres:// state coordinates;
    /// else single-replica mode.
    #[arg(long, value_name = "URL")]
    pub redis: Option<String>,
    /// The prefix of the keys the daemons write in Redis, so that several fleets can
    /// share one [default: slotcron:]. Takes precedence over the SLOTCRON_REDIS_PREFIX
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
    /// This daemon's id in logs, claims, run history and SLOTCRON_INSTANCE; unique in
    /// the fleet; 1 to 200 bytes, no control characters [default: HOSTNAME-PID].
    #[arg(long, value_name = "ID", value_parser = parse_instance)]
    pub instance: Option<String>,
    #[command(flatten)]
    pub state: StateArg,
}

/// `--state URL`, shared by `run` and `history`.
#[derive(Debug, Args)]
pub struct StateArg {
    /// Where job state and run history are kept: sqlite:PATH (a file on this machine,
    /// created if absent), postgres://USER@HOST/DATABASE[?schema=NAME] (shared by a
    /// fleet; schema default `slotcron`), or memory (nothing kept).
    #[arg(long = "state", value_name = "URL", default_value = StateUrl::DEFAULT)]
    pub url: String,
}

/// `slotcron next`.
#[derive(Debug, Args)]
pub struct NextArgs {
    /// A cron expression: 5 or 6 fields, a descriptor such as `@daily`, or `@every 90s`.
    pub expression: String,
    /// The IANA time zone the expression is evaluated in.
    #[arg(long = "tz", value_name = "ZONE", default_value = "UTC")]
    pub zone: String,
    /// Print fire times strictly after this RFC 3339 instant (default: now).
    #[arg(long, value_name = "RFC3339")]
    pub from: Option<String>,
    /// How many fire times to print.
    #[arg(short = 'n', long, value_name = "COUNT", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub count: u32,
    /// First print one line describing the schedule in English, e.g.
    /// "At 09:30 on Monday through Friday (UTC)".
    #[arg(long)]
    pub explain: bool,
}

/// `slotcron check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// A jobs file (`*.toml`) or a crontab (any other name).
    pub file: PathBuf,
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
    /// Only triggers at or after this RFC 3339 instant, e.g. 2026-12-04T16:00:00Z.
    #[arg(long, value_name = "RFC3339", value_parser = parse_instant)]
    pub since: Option<Timestamp>,
    /// One JSON object per line instead of columns.
    #[arg(long)]
    pub json: bool,
}

/// The longest `--instance`, in bytes.
const MAX_INSTANCE_LEN: usize = 200;

/// An `--instance` id: it is written to logs, claims and run records, and passed to
/// commands in `SLOTCRON_INSTANCE`.
fn parse_instance(id: &str) -> Result<String, String> {
    if id.is_empty() {
        return Err("must not be empty".into());
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
    let slack = slotcron::schedule::parse_duration(text).map_err(|e| e.to_string())?;
    crate::coordination::check_slack(slack)?;
    Ok(slack)
}

fn parse_instant(text: &str) -> Result<Timestamp, String> {
    text.parse()
        .map_err(|e| format!("not an RFC 3339 instant with an offset, e.g. 2026-12-04T16:50:00Z: {e}"))
}
