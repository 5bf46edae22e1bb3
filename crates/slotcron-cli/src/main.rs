//! `slotcron`: runs shell jobs from a TOML jobs file or a crontab, and inspects
//! schedules. See the README for the file formats.

mod admin;
mod admin_client;
mod admin_token;
mod cancel;
mod check;
mod cli;
mod command;
mod completions;
mod coordination;
mod cron_error;
mod duration;
mod history;
mod history_fleet;
mod hook;
mod jobs;
mod jobs_file;
mod jobs_history;
mod logging;
mod logs;
mod next;
mod process_group;
mod relative;
mod reload;
mod run;
mod settings;
mod signals;
mod state;
mod state_jobs;
mod state_jobs_reader;
mod state_lock;
mod status;
mod steer;
mod table;
mod zone;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Command};

/// The exit status for invalid input — a bad file, expression, zone or URL — and for a
/// state or coordinator that cannot be used at start (as clap uses for bad arguments).
const INVALID_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Run(_)) {
        // As other Unix tools: output cut short (`slotcron check jobs.toml | head`) ends
        // the command quietly, where Rust's ignored SIGPIPE would panic in `println!`. The
        // daemon keeps it ignored, to outlive a closed standard error.
        // SAFETY: SIG_DFL installs no handler; nothing runs on a signal.
        unsafe {
            let _ = nix::sys::signal::signal(
                nix::sys::signal::Signal::SIGPIPE,
                nix::sys::signal::SigHandler::SigDfl,
            );
        }
    }
    logging::init(cli.log_format);
    match &cli.command {
        Command::Run(args) => run::run(args),
        Command::Next(args) => next::run(args, next::Direction::Next),
        Command::Prev(args) => next::run(args, next::Direction::Prev),
        Command::Check(args) => check::run(args),
        Command::History(args) => history::run(args),
        Command::Logs(args) => logs::run(args),
        Command::Jobs(args) => jobs::run(args),
        Command::Status(args) => status::run(args),
        Command::Steer(command) => steer::run(command),
        Command::Cancel(args) => cancel::run(args),
        Command::Completions(args) => completions::completions(args),
        Command::Man(args) => completions::man(args),
    }
}
