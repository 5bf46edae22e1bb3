//! `slotcron next EXPR`: the next fire times of a cron expression.

use std::io::Write;
use std::process::ExitCode;

use jiff::Timestamp;
use slotcron::CronSchedule;
use slotcron::Schedule;

use crate::cli::NextArgs;
use crate::jobs_file::with_zone;
use crate::{INVALID_INPUT, cron_error, zone};

/// Prints the next `args.count` fire times of `args.expression` strictly after
/// `args.from` (default now), one per line in RFC 3339 with the zone's offset; with
/// `--explain`, first a line describing the schedule in English.
///
/// Exit status 0, also when fewer fire times exist (said on standard error); 2 with a
/// message on standard error for an invalid expression, zone or `--from`.
pub fn run(args: &NextArgs) -> ExitCode {
    match fire_times(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("slotcron next: {message}");
            ExitCode::from(INVALID_INPUT)
        }
    }
}

fn fire_times(args: &NextArgs) -> Result<(), String> {
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
    let mut after = from;
    let mut printed = 0;
    while printed < args.count {
        let Some(next) = cron.next_after(after) else { break };
        // A closed pipe (`slotcron next ... | head -1`) is not an error.
        if writeln!(stdout, "{}", zone::rfc3339(next, &zone)).is_err() {
            return Ok(());
        }
        after = next;
        printed += 1;
    }
    if printed < args.count {
        eprintln!("slotcron next: only {printed} fire time(s) after {from}; the expression has no more");
    }
    Ok(())
}
