//! `slotcron history [JOB]`: the run history kept in a state, or with `--admin-url` a job's
//! runs across the fleet, newest trigger first.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use jiff::Timestamp;
use serde::Serialize;
use slotcron::{LedgerQuery, RunRecord};

use crate::cli::HistoryArgs;
use crate::state::{State, StateUrl};
use crate::{INVALID_INPUT, duration, history_fleet, relative, table};

/// One run as `--json` prints it: one object per line.
#[derive(Debug, Serialize)]
struct JsonRun<'a> {
    job: &'a str,
    /// The scheduled instant, RFC 3339 UTC.
    trigger: String,
    instance: &'a str,
    /// `succeeded`, `failed`, `timed-out`, `panicked`, `aborted`, `skipped-lost`,
    /// `skipped-backend-unavailable`, `missed`, `skipped-overlap`, `skipped-concurrency`,
    /// `running` or `interrupted` — or a name a newer release wrote, as written.
    outcome: &'static str,
    /// `scheduled`, `catch-up`, `manual`, `backfill` or `start-up` (or a newer release's).
    cause: &'static str,
    /// How many times the command was started: 0 for a skipped or missed trigger.
    attempts: u32,
    fencing_token: Option<u64>,
    /// When the command started, or when the trigger was skipped; RFC 3339 UTC.
    started: String,
    /// `null` while `running` and for an `interrupted` run, whose end was never seen.
    duration_ms: Option<u64>,
    error: Option<&'a str>,
    /// The command's process id (its process group's), once it started.
    pid: Option<u32>,
    /// The host the command ran on, once it started.
    host: Option<&'a str>,
}

/// Prints the runs of the state `args.state` that match the arguments, newest trigger
/// first: one per line, as columns `JOB TRIGGER AGO INSTANCE OUTCOME CAUSE ATTEMPTS DURATION
/// ERROR` (two spaces apart, no header; TRIGGER in RFC 3339 UTC, AGO the same instant
/// relative to now, e.g. `12s ago`), or with `--json` as one JSON object per line
/// (absolute instants only). No runs:
/// nothing on standard output, a note on standard error, exit status 0.
///
/// The state is opened for reading only: nothing in it is created, migrated or written
/// (a missing SQLite file or PostgreSQL schema is an error), so a user who may read it but
/// not write it can run this. Exit status 2 with the reason on standard error when the
/// state cannot be read.
pub fn run(args: &HistoryArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("slotcron history: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runs = match (&args.admin_url, &args.job) {
        (Some(admin_url), Some(job)) => fleet_runs(admin_url, job, args),
        _ => {
            let mut query = LedgerQuery::new().limit(args.limit as usize);
            query.job.clone_from(&args.job);
            (query.since, query.until, query.outcome) = (args.since, args.until, args.outcome);
            runtime.block_on(read(&args.state.url, &query))
        }
    };
    match runs {
        Ok(runs) if runs.is_empty() => {
            eprintln!("slotcron history: {}", nothing_found(&runtime, args));
            ExitCode::SUCCESS
        }
        Ok(runs) => {
            if args.json {
                print_json(&runs)
            } else {
                print_columns(&runs)
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("slotcron history: {e}");
            ExitCode::from(INVALID_INPUT)
        }
    }
}

/// What to say when no run matched `args`: for a job given by name, whether the state
/// holds any run of a job by that name at all (a misspelt name is then told apart from
/// filters that matched none of its runs).
fn nothing_found(runtime: &tokio::runtime::Runtime, args: &HistoryArgs) -> String {
    let flags = [
        ("--since", args.since.is_some()),
        ("--until", args.until.is_some()),
        ("--outcome", args.outcome.is_some()),
    ];
    let given: Vec<&str> = flags.into_iter().filter_map(|(flag, set)| set.then_some(flag)).collect();
    let filters = given.join(" and ");
    let Some(job) = &args.job else {
        return match given.is_empty() {
            true => "no runs recorded".to_owned(),
            false => format!("no runs match {filters}"),
        };
    };
    let unknown = || {
        format!(
            "no runs recorded for job {job:?}: no run of a job by that name is in the history (names \
             are case-sensitive; `slotcron history` without a name lists every job's runs)"
        )
    };
    if args.admin_url.is_some() || given.is_empty() {
        return unknown();
    }
    let mut any = LedgerQuery::new().limit(1);
    any.job = Some(job.clone());
    match runtime.block_on(read(&args.state.url, &any)) {
        Ok(runs) if !runs.is_empty() => {
            format!("no runs of job {job:?} match {filters} (it has runs outside them)")
        }
        _ => unknown(),
    }
}

/// The fleet's runs of `job` through the admin API at `admin_url`, each member whose runs
/// are missing named on standard error.
fn fleet_runs(admin_url: &str, job: &str, args: &HistoryArgs) -> Result<Vec<RunRecord>, String> {
    let history = history_fleet::read(admin_url, job, args)?;
    for member in &history.unanswered {
        eprintln!("slotcron history: runs of a member that did not answer are missing: {member}");
    }
    Ok(history.runs)
}

async fn read(state: &str, query: &LedgerQuery) -> Result<Vec<RunRecord>, String> {
    let state = StateUrl::parse(state).map_err(|e| format!("--state: {e}"))?;
    let ledger = State::open_ledger(&state).await.map_err(|e| format!("cannot open the state: {e}"))?;
    ledger.query(query).await.map_err(|e| format!("cannot read the history in {state}: {e}"))
}

/// Whole milliseconds: the history's precision.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn print_columns(runs: &[RunRecord]) {
    let now = Timestamp::now();
    let rows: Vec<[String; 9]> = runs
        .iter()
        .map(|run| {
            [
                run.job.to_string(),
                run.trigger.to_string(),
                relative::relative(run.trigger, now),
                run.instance.to_string(),
                run.outcome.to_string(),
                run.cause.to_string(),
                run.attempts.to_string(),
                // A trigger that did not run, runs still, or was interrupted (its end was
                // never seen) has no duration to show, as in the admin API.
                match run.ended_duration() {
                    Some(duration) if run.outcome.ran() => duration::display_run(duration),
                    _ => "-".to_owned(),
                },
                run.error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    table::print(None, &rows, 0);
}

fn print_json(runs: &[RunRecord]) {
    let mut stdout = std::io::stdout().lock();
    for run in runs {
        let json = JsonRun {
            job: &run.job,
            trigger: run.trigger.to_string(),
            instance: &run.instance,
            outcome: run.outcome.as_str(),
            cause: run.cause.as_str(),
            attempts: run.attempts,
            fencing_token: run.fencing_token,
            started: run.started.to_string(),
            duration_ms: run.ended_duration().map(millis),
            error: run.error.as_deref(),
            pid: run.process.as_ref().map(|p| p.pid),
            host: run.process.as_ref().map(|p| &*p.host),
        };
        // A closed pipe (`slotcron history --json | head -1`) is not an error.
        if serde_json::to_writer(&mut stdout, &json).is_err() || writeln!(stdout).is_err() {
            return;
        }
    }
}
