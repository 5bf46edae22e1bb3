//! `slotcron check FILE`: validates a jobs file or crontab and lists its jobs.

use std::fmt::Write as _;
use std::process::ExitCode;

use std::collections::HashMap;

use jiff::Timestamp;
use rayon::prelude::*;
use slotcron::{JobState, Labels, OnInterrupt, Overlap, Retention};

use crate::cli::CheckArgs;
use crate::command;
use crate::coordination::Redis;
use crate::jobs_file::{self, Format, History, JobEntry, JobsFile, LoneLabels, NextFire, ScheduleSpec};
use crate::state::{State, StateUrl};
use crate::table::{self, Packed};
use crate::{INVALID_INPUT, duration, relative};

/// Loads `args.file` (a file, or a directory of crontabs) and prints one line per job —
/// name, schedule, next fire time (for a daemon started now; `disabled` for a job with
/// `enabled = false`) and how far off it is, with `--state` its last trigger and outcome
/// and how long ago, the schedule in
/// English — then the files of a directory skipped and the history kept, to standard
/// output; exit status 0. On problems, prints every one of them
/// (file, line, job, field, reason) to standard error; exit status 2; so for the jobs
/// `slotcron run` would refuse for want of a coordinator (see [`lone_labels`]). A state
/// that cannot be read: the reason on standard error, exit status 2.
pub fn run(args: &CheckArgs) -> ExitCode {
    let loaded = match jobs_file::load(&args.file, Format::of(&args.file, args.system_crontab)) {
        Ok(loaded) => loaded,
        Err(problems) => {
            eprintln!("{problems}");
            return ExitCode::from(INVALID_INPUT);
        }
    };
    let lone = match lone_labels(args, &loaded) {
        Ok(lone) => lone,
        Err(e) => {
            eprintln!("slotcron check: {e}");
            return ExitCode::from(INVALID_INPUT);
        }
    };
    if let Err(refused) = lone.check(&loaded) {
        eprintln!("{refused}");
        return ExitCode::from(INVALID_INPUT);
    }
    if let Some(no_jobs) = loaded.no_jobs() {
        eprintln!(
            "{no_jobs}: a daemon on it would idle (serving its admin API, if one is set) until a reload adds one"
        );
    }
    let states = match args.state.as_deref().map(read_states).transpose() {
        Ok(states) => states,
        Err(e) => {
            eprintln!("slotcron check: {e}");
            return ExitCode::from(INVALID_INPUT);
        }
    };
    let now = Timestamp::now();
    match &states {
        Some(states) => {
            let header = ["LINE", "JOB", "SCHEDULE", "NEXT", "IN", "LAST", "AGO", "DESCRIPTION"];
            print_rows(header, &loaded.jobs, Some(states), now);
        }
        None => print_rows(["LINE", "JOB", "SCHEDULE", "NEXT", "IN", "DESCRIPTION"], &loaded.jobs, None, now),
    }
    let policies: Vec<String> = loaded
        .jobs
        .par_iter()
        .filter_map(|entry| policies(entry).map(|policies| format!("{}: {policies}\n", entry.job.name())))
        .collect();
    print!("{}", policies.concat());
    if let Some(max) = loaded.max_concurrent_runs {
        println!(
            "max_concurrent_runs: at most {max} run(s) at once on each daemon; a daemon at its cap leaves triggers to one with room"
        );
    }
    if let Some(local) = &loaded.local_zone {
        println!(
            "crontab lines without CRON_TZ= or TZ= run in {} (the daemon's zone, from {}; a CRON_TZ= line in the file sets another)",
            local.name, local.source
        );
    }
    if let Some(directory) = &loaded.directory {
        for (path, why) in &directory.skipped {
            println!("skipped {}: {why}", path.display());
        }
    }
    println!("history: {}", history(&loaded.history));
    if let Some((file, line)) = loaded.mails_from.as_ref().filter(|_| command::sendmail().is_none()) {
        eprintln!(
            "{}:{line}: warning: MAILTO is set, but no sendmail is on PATH: the output of its jobs would not be mailed",
            file.display()
        );
    }
    warn_never_firing(&loaded, now);
    println!("{}: {}, all valid", loaded.path.display(), summary(&loaded));
    // The process ends here: its memory goes back whole, not job by job (a million jobs
    // take a second to drop).
    std::mem::forget(loaded);
    ExitCode::SUCCESS
}

/// Warns of each enabled `at` job that never fires: its instant is past the grace and its
/// misfire policy is `skip` (a daemon records it missed at start-up). Valid all the same,
/// as cron takes a line that never fires; most likely a date to move.
fn warn_never_firing(loaded: &JobsFile, now: Timestamp) {
    for entry in loaded.jobs.iter().filter(|entry| entry.enabled) {
        let ScheduleSpec::At(at) = &entry.schedule else { continue };
        if NextFire::of(&entry.job, &entry.schedule.zone(), now) == NextFire::Missed {
            eprintln!(
                "{}:{}: warning: job {:?}: at: {at} is past, beyond the grace, and misfire = \"skip\": it \
                 never runs (misfire = \"run_once\" runs it once at start-up)",
                loaded.path.display(),
                entry.line,
                entry.job.name(),
            );
        }
    }
}

/// What `slotcron run` refuses for want of a coordinator, with this check's `--redis`
/// (else `SLOTCRON_REDIS_URL`, else the file's `[coordination] redis`), `--state` and
/// `--label` ([`LoneLabels`]).
///
/// # Errors
/// A Redis setting, a `--state` or a `--label` that `run` would refuse too.
fn lone_labels(args: &CheckArgs, loaded: &JobsFile) -> Result<LoneLabels, String> {
    let redis = Redis::choose(args.redis.as_deref(), None, &loaded.coordination)?;
    let state =
        args.state.as_deref().map(StateUrl::parse).transpose().map_err(|e| format!("--state: {e}"))?;
    let labels = Labels::parse(&args.labels).map_err(|e| format!("--label: {e}"))?;
    Ok(LoneLabels::new(&labels, redis.is_some() || state.as_ref().is_some_and(StateUrl::coordinates)))
}

/// Prints the table of `jobs` under `header`: with `states`, its 8 columns, else 6 (see
/// [`row`]). The rows are computed on every core at once, and left to the process's
/// exit, as the file is.
fn print_rows<const N: usize>(
    header: [&str; N],
    jobs: &[JobEntry],
    states: Option<&HashMap<String, JobState>>,
    now: Timestamp,
) {
    let rows: Vec<Packed<N>> = jobs.par_iter().map(|entry| row(entry, states, now)).collect();
    table::print(Some(header), &rows, 1);
    std::mem::forget(rows);
}

/// The row of `entry` for a daemon started at `now`: `LINE JOB SCHEDULE NEXT IN
/// DESCRIPTION`, with `states` `LINE JOB SCHEDULE NEXT IN LAST AGO DESCRIPTION` (LAST and
/// AGO from its stored state, and NEXT given it). NEXT is written in the schedule's zone,
/// LAST in UTC; IN and AGO are the same instants relative to `now` (`-` for none).
fn row<const N: usize>(
    entry: &JobEntry,
    states: Option<&HashMap<String, JobState>>,
    now: Timestamp,
) -> Packed<N> {
    let state = states.and_then(|states| states.get(entry.job.name()));
    let next = entry
        .enabled
        .then(|| NextFire::of(&entry.job, &entry.schedule.zone(), now).with_state(&entry.job, state));
    let mut row = Packed::with_capacity(ROW_BYTES);
    // Writing to a row cannot fail.
    let _ = write!(row, "{}", entry.line);
    row.end_cell();
    let _ = row.write_str(entry.job.name());
    row.end_cell();
    let _ = write!(row, "{}", entry.schedule);
    row.end_cell();
    let _ = match &next {
        Some(next) => write!(row, "{next}"),
        None => row.write_str(DISABLED),
    };
    row.end_cell();
    let _ = row.write_str(&relative::cell(next.as_ref().and_then(NextFire::instant), now));
    row.end_cell();
    if states.is_some() {
        let _ = match state {
            None => row.write_str("never"),
            Some(JobState { last_trigger, last_outcome: Some(outcome), .. }) => {
                write!(row, "{last_trigger} {outcome}")
            }
            Some(JobState { last_trigger, last_outcome: None, .. }) => write!(row, "{last_trigger} running"),
        };
        row.end_cell();
        let _ = row.write_str(&relative::cell(state.map(|state| state.last_trigger), now));
        row.end_cell();
    }
    let _ = row.write_str(&entry.explain());
    row.end_cell();
    row
}

/// Room for a row of `check`'s table: most fit.
const ROW_BYTES: usize = 160;

/// What the NEXT column says of a job with `enabled = false`.
const DISABLED: &str = "disabled";

/// How many jobs (and how many of them disabled) are in what.
fn summary(loaded: &JobsFile) -> String {
    let format = match loaded.format {
        Format::Toml => "a TOML jobs file",
        Format::Crontab => "crontab",
        Format::SystemCrontab => "system crontab",
    };
    let place = match (&loaded.directory, loaded.format) {
        (Some(directory), _) => format!("{} {format}(s) of a directory", directory.files.len()),
        (None, Format::Toml) => format.to_owned(),
        (None, _) => format!("a {format}"),
    };
    let disabled = loaded.jobs.len() - loaded.enabled_jobs().count();
    let disabled = if disabled > 0 { format!(" ({disabled} disabled)") } else { String::new() };
    format!("{} job(s){disabled} in {place}", loaded.jobs.len())
}

/// The run history a daemon on the file keeps, in English.
fn history(history: &History) -> String {
    let Retention { max_age, max_records_per_job } = history.retention();
    let age = max_age.map_or_else(|| "for ever".to_owned(), |age| format!("for {}", duration::display(age)));
    let count = max_records_per_job.map_or_else(String::new, |n| format!(", at most {n} record(s) per job"));
    format!("run records are kept {age}{count}; each job's last success and last failure are always kept")
}

/// Each job's stored state in the state at `url`, opened for reading only.
fn read_states(url: &str) -> Result<HashMap<String, JobState>, String> {
    let url = StateUrl::parse(url).map_err(|e| format!("--state: {e}"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        let store = State::open_read_only(&url, "job state")
            .await
            .map_err(|e| format!("cannot open the state: {e}"))?
            .store;
        store.load_states().await.map_err(|e| format!("cannot read the job state in {url}: {e}"))
    })
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
    if job.on_interrupt() == OnInterrupt::Rerun {
        parts.push(
            "a run cut short by its daemon's death runs once more on a live daemon (on_interrupt rerun)"
                .into(),
        );
    }
    if let Some(max_runs) = job.max_runs() {
        parts.push(format!("ends after {max_runs} scheduled runs across the fleet (max_runs)"));
    }
    if let Some(failures) = job.pause_after_failures() {
        let triggers = if failures == 1 { "trigger" } else { "triggers in a row" };
        parts.push(format!("paused after {failures} failed {triggers} (pause_after_failures)"));
    }
    if !job.placement().is_anywhere() {
        parts.push(format!(
            "runs only on daemons carrying the labels {} (on, --label); recorded skipped-no-member when no live daemon carries them",
            job.placement()
        ));
    }
    if let Some(hook) = &entry.on_failure {
        parts.push(format!("on failure runs `{}`", hook.script));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}
