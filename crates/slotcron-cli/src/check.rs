//! `slotcron check FILE`: validates a jobs file or crontab and lists its jobs.

use std::path::Path;
use std::process::ExitCode;

use jiff::Timestamp;

use crate::INVALID_INPUT;
use crate::jobs_file::{self, Format, NextFire};

/// Loads `file` and prints one line per job — name, schedule, next fire time (for a
/// daemon started now) — to standard output; exit status 0. On problems, prints every
/// one of them (file, line, job, field, reason) to standard error; exit status 2.
pub fn run(file: &Path) -> ExitCode {
    let loaded = match jobs_file::load(file) {
        Ok(loaded) => loaded,
        Err(problems) => {
            eprintln!("{problems}");
            return ExitCode::from(INVALID_INPUT);
        }
    };
    let now = Timestamp::now();
    let rows: Vec<[String; 4]> = loaded
        .jobs
        .iter()
        .map(|entry| {
            let next = NextFire::of(&entry.job, &entry.schedule.zone(), now);
            [
                entry.line.to_string(),
                entry.job.name().to_owned(),
                entry.schedule.to_string(),
                next.to_string(),
            ]
        })
        .collect();
    print_table(["LINE", "JOB", "SCHEDULE", "NEXT"], &rows);
    let format = match loaded.format {
        Format::Toml => "a TOML jobs file",
        Format::Crontab => "a crontab",
    };
    println!("{}: {} job(s) in {format}, all valid", loaded.path.display(), rows.len());
    ExitCode::SUCCESS
}

fn print_table(header: [&str; 4], rows: &[[String; 4]]) {
    let mut widths = header.map(str::len);
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 4]| {
        let [a, b, c, d] = cells;
        println!("{a:>w0$}  {b:<w1$}  {c:<w2$}  {d}", w0 = widths[0], w1 = widths[1], w2 = widths[2]);
    };
    line(header);
    for row in rows {
        line(row.each_ref().map(String::as_str));
    }
}
