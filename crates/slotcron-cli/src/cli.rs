//! The command line: `slotcron run | next | check` (clap derive).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

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
    /// Run the jobs of FILE until SIGINT or SIGTERM.
    Run(RunArgs),
    /// Print the next fire times of a cron expression.
    Next(NextArgs),
    /// Validate FILE and list its jobs with their next fire times.
    Check(CheckArgs),
}

/// `slotcron run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// A jobs file (`*.toml`) or a crontab (any other name).
    pub file: PathBuf,
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
}

/// `slotcron check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// A jobs file (`*.toml`) or a crontab (any other name).
    pub file: PathBuf,
}
