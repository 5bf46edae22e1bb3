//! `slotcron check FILE`: validates a jobs file or crontab and lists its jobs.

use std::process::ExitCode;

use jiff::Timestamp;

use crate::cli::CheckArgs;
use crate::command;
use crate::jobs_file::{self, Format, NextFire};
use crate::{INVALID_INPUT, table};

/// Loads `file` and prints one line per job — name, schedule, next fire time (for a
/// daemon started now), the schedule in English — to standard output; exit status 0. On problems, prints every
/// one of them (file, line, job, field, reason) to standard error; exit status 2.
pub fn run(args: &CheckArgs) -> ExitCode {
    let loaded = match jobs_file::load(&args.file, Format::of(&args.file, args.system_crontab)) {
        Ok(loaded) => loaded,
        Err(problems) => {
            eprintln!("{problems}");
            return ExitCode::from(INVALID_INPUT);
        }
    };
    let now = Timestamp::now();
    let rows: Vec<[String; 5]> = loaded
        .jobs
        .iter()
        .map(|entry| {
            let next = NextFire::of(&entry.job, &entry.schedule.zone(), now);
            [
                entry.line.to_string(),
                entry.job.name().to_owned(),
                entry.schedule.to_string(),
                next.to_string(),
                entry.schedule.explain(),
            ]
        })
        .collect();
    table::print(Some(["LINE", "JOB", "SCHEDULE", "NEXT", "DESCRIPTION"]), &rows, 1);
    let format = match loaded.format {
        Format::Toml => "a TOML jobs file",
        Format::Crontab => "a crontab",
        Format::SystemCrontab => "a system crontab",
    };
    if let Some(line) = loaded.mails_from_line.filter(|_| command::sendmail().is_none()) {
        eprintln!(
            "{}:{line}: warning: MAILTO is set, but no sendmail is on PATH: the output of its jobs would not be mailed",
            loaded.path.display()
        );
    }
    println!("{}: {} job(s) in {format}, all valid", loaded.path.display(), rows.len());
    ExitCode::SUCCESS
}
