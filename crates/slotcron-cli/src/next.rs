//! `slotcron next` and `slotcron prev`: the next or the previous fire times of a cron
//! expression, or of a job of a jobs file (its zone, window and calendars applied).

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use slotcron::{Calendar, CronSchedule, Schedule};

use crate::cli::FireTimesArgs;
use crate::jobs_file::{self, Format, with_zone};
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

    /// The fire time of `schedule` after (or before) `at`.
    fn step(self, schedule: &dyn Schedule, at: Timestamp) -> Option<Timestamp> {
        match self {
            Self::Next => schedule.next_after(at),
            Self::Prev => schedule.prev_before(at),
        }
    }
}

/// Prints `args.count` fire times of `args.expression` (or of the job `--job` of
/// `--file`) from `args.from` (default now) the `direction` says, one per line in RFC
/// 3339 with the zone's offset; with `--explain`, first a line describing the schedule
/// in English, and for a job with calendars each instant they removed, on a `#` line.
///
/// Exit status 0, also when fewer fire times exist (said on standard error); 2 with a
/// message on standard error for an invalid expression, zone, `--from`, file or job.
pub fn run(args: &FireTimesArgs, direction: Direction) -> ExitCode {
    match fire_times(args, direction) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{}: {message}", direction.command());
            ExitCode::from(INVALID_INPUT)
        }
    }
}

/// A job's schedule before its calendars, and the calendars.
type Excluded = (Arc<dyn Schedule>, Vec<Arc<Calendar>>);

/// What fire times are printed of: the schedule, its zone, its English, and what its
/// calendars take out of it (a job of a file that has some).
struct Source {
    schedule: Arc<dyn Schedule>,
    zone: TimeZone,
    explanation: String,
    excluded: Option<Excluded>,
}

impl Source {
    fn expression(expression: &str, zone: &str) -> Result<Self, String> {
        let cron = CronSchedule::parse(expression).map_err(|e| {
            format!(
                "invalid cron expression: {}\n{}",
                cron_error::reason(&e, 0),
                cron_error::pointer(expression, &e)
            )
        })?;
        let zone = zone::lookup(zone)?;
        let cron = cron.with_time_zone(zone.clone());
        let explanation = with_zone(&cron.explain(), &zone);
        Ok(Self { schedule: Arc::new(cron), zone, explanation, excluded: None })
    }

    fn job(file: &std::path::Path, name: &str) -> Result<Self, String> {
        let loaded =
            jobs_file::load(file, Format::of(file, false)).map_err(|problems| problems.to_string())?;
        let Some(entry) = loaded.jobs.iter().find(|entry| entry.job.name() == name) else {
            let names: Vec<&str> = loaded.jobs.iter().map(|entry| entry.job.name()).collect();
            return Err(format!(
                "no job named {name:?} in {} (its jobs: {})",
                file.display(),
                names.join(", ")
            ));
        };
        match &entry.schedule {
            jobs_file::ScheduleSpec::After(delay) => {
                let delay = crate::duration::display(*delay);
                return Err(format!(
                    "job {name:?} runs once, {delay} after the daemon first starts: it has no fire time to list"
                ));
            }
            jobs_file::ScheduleSpec::RunAfter(parent) => {
                return Err(format!(
                    "job {name:?} runs after each successful run of {parent}: it has no fire time of its own to list"
                ));
            }
            jobs_file::ScheduleSpec::AtStartUp => {
                return Err(format!(
                    "job {name:?} (@reboot) runs each time the daemon starts: it has no fire time to list"
                ));
            }
            _ => {}
        }
        let excluded = entry
            .schedule
            .base()
            .filter(|_| !entry.exclude.is_empty())
            .map(|base| (base, entry.exclude.clone()));
        Ok(Self {
            schedule: entry.job.schedule().clone(),
            zone: entry.schedule.zone(),
            explanation: entry.explain(),
            excluded,
        })
    }

    /// The instants strictly between `from` and `to` (either way) that the calendars
    /// removed, each with the calendar's name.
    fn removed(
        &self,
        from: Timestamp,
        to: Option<Timestamp>,
        direction: Direction,
    ) -> Vec<(Timestamp, &str)> {
        let Some((base, calendars)) = &self.excluded else { return Vec::new() };
        let mut removed = Vec::new();
        let mut at = from;
        while let Some(fire) = direction.step(base.as_ref(), at) {
            let before_to = to.is_none_or(|to| match direction {
                Direction::Next => fire < to,
                Direction::Prev => fire > to,
            });
            if !before_to || removed.len() >= MAX_REMOVED_SHOWN {
                break;
            }
            if let Some(calendar) = calendars.iter().find(|calendar| calendar.excludes(fire)) {
                removed.push((fire, calendar.name()));
            }
            at = fire;
        }
        removed
    }
}

/// The most removed instants `--explain` shows between two fire times.
const MAX_REMOVED_SHOWN: usize = 100;

fn fire_times(args: &FireTimesArgs, direction: Direction) -> Result<(), String> {
    let source = match (&args.expression, &args.file, &args.job) {
        (Some(expression), _, _) => Source::expression(expression, &args.zone)?,
        (None, Some(file), Some(job)) => Source::job(file, job)?,
        _ => return Err("give a cron expression, or --file and --job".into()),
    };
    let from = match &args.from {
        None => Timestamp::now(),
        Some(text) => text.parse::<Timestamp>().map_err(|e| {
            format!(
                "--from {text:?} is not an RFC 3339 instant with an offset, e.g. 2026-12-04T16:50:00Z: {e}"
            )
        })?,
    };
    let mut stdout = std::io::stdout().lock();
    if args.explain && writeln!(stdout, "{}", source.explanation).is_err() {
        return Ok(());
    }
    let mut at = from;
    let mut printed = 0;
    while printed < args.count {
        let fire = direction.step(source.schedule.as_ref(), at);
        let removed = if args.explain { source.removed(at, fire, direction) } else { Vec::new() };
        // A closed pipe (`slotcron next ... | head -1`) is not an error.
        for (instant, calendar) in removed {
            if writeln!(stdout, "# {} excluded by {calendar}", zone::rfc3339(instant, &source.zone)).is_err()
            {
                return Ok(());
            }
        }
        let Some(fire) = fire else { break };
        if writeln!(stdout, "{}", zone::rfc3339(fire, &source.zone)).is_err() {
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
        if printed == 0 {
            eprintln!("{command}: no fire time {side} {from}");
        } else {
            eprintln!("{command}: only {printed} fire time(s) {side} {from}; the schedule has no more");
        }
    }
    Ok(())
}
