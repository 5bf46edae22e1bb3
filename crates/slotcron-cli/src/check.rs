//! `slotcron check FILE`: validates a jobs file or crontab and lists its jobs.

use std::path::Path;
use std::process::ExitCode;

use jiff::Timestamp;

use slotcron::Overlap;

use crate::jobs_file::{self, Format, JobEntry, NextFire};
use crate::{INVALID_INPUT, duration, table};

/// Loads `file` and prints one line per job — name, schedule, next fire time (for a
/// daemon started now), the schedule in English — to standard output; exit status 0. On problems, prints every
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
    for entry in &loaded.jobs {
        if let Some(policies) = policies(entry) {
            println!("{}: {policies}", entry.job.name());
        }
    }
    if let Some(max) = loaded.max_concurrent_runs {
        println!(
            "max_concurrent_runs: at most {max} run(s) at once on each daemon; a daemon at its cap leaves triggers to one with room"
        );
    }
    let format = match loaded.format {
        Format::Toml => "a TOML jobs file",
        Format::Crontab => "a crontab",
    };
    println!("{}: {} job(s) in {format}, all valid", loaded.path.display(), rows.len());
    ExitCode::SUCCESS
}

/// A job's run policies in English, if any differs from the default.
fn policies(entry: &JobEntry) -> Option<String> {
    let job = &entry.job;
    let retry = job.retry();
    let mut parts = Vec::new();
    if retry.attempts() > 1 {
        let mut text = format!("up to {} attempts", retry.attempts());
        if !retry.backoff().is_zero() {
            text += &format!(", the first retry {} after a failure", duration::display(retry.backoff()));
        }
        if retry.multiplier() > 1.0 {
            text += &format!(", each later wait {}x the one before", retry.multiplier());
        }
        if let Some(max) = retry.max_backoff() {
            text += &format!(" (at most {})", duration::display(max));
        }
        parts.push(text);
    }
    match job.overlap() {
        Overlap::Allow => {}
        Overlap::Forbid => {
            parts.push("a trigger that finds a run still going anywhere is skipped (forbid)".into())
        }
        Overlap::BufferOne => {
            parts.push("a trigger that finds a run still going waits for it, at most one (buffer_one)".into())
        }
        Overlap::Replace => {
            parts.push("a trigger that finds a run still going stops it, then runs (replace)".into())
        }
    }
    if let Some(jitter) = job.jitter() {
        parts.push(format!(
            "each trigger starts up to {} late, the same on every replica (jitter)",
            duration::display(jitter)
        ));
    }
    if let Some(hook) = &entry.on_failure {
        parts.push(format!("on failure runs `{}`", hook.script));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}
