//! `slotcron next EXPR` and `slotcron prev EXPR`: the next or the previous fire times of
//! a cron expression.

use std::io::Write;
use std::process::ExitCode;

use jiff::Timestamp;
use slotcron::CronSchedule;
use slotcron::Schedule;

use crate::cli::FireTimesArgs;
use crate::jobs_file::with_zone;
use crate::{INVALID_INPUT, cron_error, zone};

/// Which way `run` counts from `--from`.
#[derive(Clone, Copy)]
pub enum Direction {
    /// `slotcron next`: the fire times strictly after it, oldest first.
    Next,
    /// `slotcron prev`: the fire times strictly before it, newest first
    /// ([`Schedule::prev_before`], the inverse of `next`).
    Prev,
}

impl Direction {
    fn command(self) -> &'static str {
        match self {
            Self::Next => "slotcron next",
            Self::Prev => "slotcron prev",
        }
    }
}

/// Prints `args.count` fire times of `args.expression` from `args.from` (default now)
/// the `direction` says, one per line in RFC 3339 with the zone's offset; with
/// `--explain`, first a line describing the schedule in English.
///
/// Exit status 0, also when fewer fire times exist (said on standard error); 2 with a
/// message on standard error for an invalid expression, zone or `--from`.
pub fn run(args: &FireTimesArgs, direction: Direction) -> ExitCode {
    match fire_times(args, direction) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{}: {message}", direction.command());
            ExitCode::from(INVALID_INPUT)
        }
    }
}

fn fire_times(args: &FireTimesArgs, direction: Direction) -> Result<(), String> {
    let cron = CronSchedule::parse(&args.expression).map_err(|e| {
        format!(
            "invalid cron expression: {}\n{}",
            cron_error::reason(&e, 0),
            cron_error::pointer(&args.expression, &e)
        )
    })?;
    let zone = zone::lookup(&args.zone)?;
    let from = match &args.from {
        None => Timestamp::now(),
        Some(text) => text.parse::<Timestamp>().map_err(|e| {
            format!(
                "--from {text:?} is not an RFC 3339 instant with an offset, e.g. 2026-12-04T16:50:00Z: {e}"
            )
        })?,
    };
    let cron = cron.with_time_zone(zone.clone());
    let mut stdout = std::io::stdout().lock();
    if args.explain && writeln!(stdout, "{}", with_zone(&cron.explain(), &zone)).is_err() {
        return Ok(());
    }
    let mut at = from;
    let mut printed = 0;
    while printed < args.count {
        let fire = match direction {
            Direction::Next => cron.next_after(at),
            Direction::Prev => cron.prev_before(at),
        };
        let Some(fire) = fire else { break };
        // A closed pipe (`slotcron next ... | head -1`) is not an error.
        if writeln!(stdout, "{}", zone::rfc3339(fire, &zone)).is_err() {
            return Ok(());
        }
        at = fire;
        printed += 1;
    }
    if printed < args.count {
        let side = match direction {
            Direction::Next => "after",
            Direction::Prev => "before",
        };
        let command = direction.command();
        eprintln!("{command}: only {printed} fire time(s) {side} {from}; the expression has no more");
    }
    Ok(())
}
