//! `slotcron logs JOB [--trigger T] [--attempt N]`: what a run's attempts wrote, read
//! through a daemon's admin API or from the state.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use jiff::Timestamp;
use slotcron::LedgerQuery;
use slotcron_admin::{AttemptView, RunOutputs};

use crate::admin_client::{Call, call, call_found};
use crate::cli::LogsArgs;
use crate::state::{ReadOnlyState, State, StateUrl};
use crate::{INVALID_INPUT, duration};
use slotcron_admin::client::encode;

/// How many of a job's newest runs are searched for output when no trigger is given.
const SEARCHED_RUNS: usize = 100;

/// Prints the output kept of the run of `args.job` at `args.trigger` (default: the
/// newest of its last [`SEARCHED_RUNS`] runs with output kept): per instance that ran
/// it, each attempt (only `args.attempt`, if given) as a header line
/// `attempt N: STATUS, took DURATION, started INSTANT` then each line it wrote, marked
/// `stdout: ` or `stderr: ` as the daemon logs them, in the order read. Exit status 0;
/// 1 with the reason on standard error when nothing is kept for that run or attempt; 2
/// when the admin API or the state cannot be read. With `args.json`, the output as one
/// line of JSON, as `GET /api/v1/jobs/{name}/runs/{trigger}/output` answers it.
pub fn run(args: &LogsArgs) -> ExitCode {
    let found = match Source::of(args) {
        Ok(source) => find(&source, args),
        Err(e) => Err(e),
    };
    match found {
        Ok(Some(mut outputs)) => match only_attempt(&mut outputs, args.attempt) {
            Ok(()) => {
                if args.json {
                    print_json(&outputs);
                } else {
                    print(&outputs);
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("slotcron logs: {e}");
                ExitCode::FAILURE
            }
        },
        Ok(None) => {
            let run = match args.trigger {
                Some(trigger) => format!("its run at {trigger}"),
                None => format!("any of its last {SEARCHED_RUNS} runs"),
            };
            eprintln!("slotcron logs: no output kept for job {:?} in {run}", args.job);
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("slotcron logs: {e}");
            ExitCode::from(INVALID_INPUT)
        }
    }
}

/// Keeps attempt number `attempt` only, if given.
///
/// # Errors
/// No instance kept that attempt: the reason, with the attempts kept.
fn only_attempt(outputs: &mut RunOutputs, attempt: Option<u32>) -> Result<(), String> {
    let Some(attempt) = attempt else { return Ok(()) };
    let mut numbers: Vec<u32> =
        outputs.outputs.iter().flat_map(|o| &o.attempts).filter_map(|a| a.attempt).collect();
    numbers.sort_unstable();
    numbers.dedup();
    let kept: Vec<String> = numbers.iter().map(u32::to_string).collect();
    for output in &mut outputs.outputs {
        output.attempts.retain(|a| a.attempt == Some(attempt));
    }
    outputs.outputs.retain(|o| !o.attempts.is_empty());
    if outputs.outputs.is_empty() {
        let kept = if kept.is_empty() { "none numbered".to_owned() } else { kept.join(", ") };
        return Err(format!(
            "no attempt {attempt} kept of job {:?}'s run at {} (attempts kept: {kept})",
            outputs.job, outputs.trigger
        ));
    }
    Ok(())
}

/// Where the output is read: a daemon's admin API, or the state opened for reading.
enum Source {
    Admin(String),
    State(tokio::runtime::Runtime, ReadOnlyState),
}

impl Source {
    /// `--state` if given, else the admin URL if any, else the default state.
    fn of(args: &LogsArgs) -> Result<Self, String> {
        if let (None, Some(url)) = (&args.state, &args.admin_url) {
            return Ok(Self::Admin(url.clone()));
        }
        let url = args.state.as_deref().unwrap_or(StateUrl::DEFAULT);
        let url = StateUrl::parse(url).map_err(|e| format!("--state: {e}"))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the async runtime: {e}"))?;
        let state = runtime
            .block_on(State::open_read_only(&url, "run output"))
            .map_err(|e| format!("cannot open the state: {e}"))?;
        Ok(Self::State(runtime, state))
    }

    /// The triggers of `job`'s newest [`SEARCHED_RUNS`] runs, newest first.
    fn triggers(&self, job: &str) -> Result<Vec<Timestamp>, String> {
        let mut triggers = match self {
            Self::Admin(url) => {
                // This daemon's own runs: those whose output its state keeps.
                let path = format!("/api/v1/jobs/{}/runs?limit={SEARCHED_RUNS}&scope=member", encode(job));
                let page = call(url, Call::get(&path))?;
                let runs = page["runs"].as_array().map(Vec::as_slice).unwrap_or_default();
                let trigger = |run: &serde_json::Value| run["trigger"].as_str()?.parse().ok();
                runs.iter().filter_map(trigger).collect()
            }
            Self::State(runtime, state) => {
                let query =
                    LedgerQuery { job: Some(job.to_owned()), ..LedgerQuery::new().limit(SEARCHED_RUNS) };
                let runs = runtime.block_on(state.ledger.query(&query)).map_err(|e| e.to_string())?;
                runs.iter().map(|r| r.trigger).collect::<Vec<_>>()
            }
        };
        triggers.dedup();
        Ok(triggers)
    }

    /// The output kept of `job`'s run at `trigger`, if any.
    fn output(&self, job: &str, trigger: Timestamp) -> Result<Option<RunOutputs>, String> {
        match self {
            Self::Admin(url) => {
                let path =
                    format!("/api/v1/jobs/{}/runs/{}/output", encode(job), encode(&trigger.to_string()));
                let Some(answer) = call_found(url, Call::get(&path))? else { return Ok(None) };
                serde_json::from_value(answer)
                    .map(Some)
                    .map_err(|e| format!("{url}: not a run's output: {e}"))
            }
            Self::State(runtime, state) => {
                let kept = runtime.block_on(state.outputs.output(job, trigger)).map_err(|e| e.to_string())?;
                Ok((!kept.is_empty()).then(|| RunOutputs::new(job.to_owned(), trigger, &kept)))
            }
        }
    }
}

/// The output of the run `args` names: at `args.trigger`, else the newest of the job's
/// last [`SEARCHED_RUNS`] runs with output kept.
fn find(source: &Source, args: &LogsArgs) -> Result<Option<RunOutputs>, String> {
    if let Some(trigger) = args.trigger {
        return source.output(&args.job, trigger);
    }
    for trigger in source.triggers(&args.job)? {
        if let Some(found) = source.output(&args.job, trigger)? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// Prints `outputs`: per instance a line `JOB at TRIGGER on INSTANCE`, then each attempt.
fn print(outputs: &RunOutputs) {
    let mut out = std::io::stdout().lock();
    let mut write = || -> std::io::Result<()> {
        for output in &outputs.outputs {
            writeln!(out, "{} at {} on {}", outputs.job, outputs.trigger, output.instance)?;
            for kept in &output.attempts {
                writeln!(out, "{}", header(kept))?;
                write_lines(&mut out, kept)?;
            }
        }
        Ok(())
    };
    // A closed pipe (`slotcron logs backup | head`) ends the printing quietly.
    let _ = write();
}

/// Prints `outputs` as the admin API answers them, as one line of JSON.
fn print_json(outputs: &RunOutputs) {
    let mut out = std::io::stdout().lock();
    // A closed pipe is not an error.
    if serde_json::to_writer(&mut out, outputs).is_ok() {
        let _ = writeln!(out);
    }
}

/// `attempt 2: exit 3, took 1.25s, started 2026-12-04T03:00:00Z`, with what is known.
fn header(attempt: &AttemptView) -> String {
    let mut header = match attempt.attempt {
        Some(n) => format!("attempt {n}: {}", attempt.status),
        None => "last attempt (kept by an older release, without its end)".to_owned(),
    };
    if let Some(ms) = attempt.duration_ms {
        header.push_str(&format!(", took {}", duration::display_run(Duration::from_millis(ms))));
    }
    if let Some(started) = attempt.started {
        header.push_str(&format!(", started {started}"));
    }
    if attempt.truncated {
        header.push_str(" (earlier output dropped: the last 64 KiB of each attempt are kept)");
    }
    header
}

/// Each line `attempt` wrote, marked with its stream; `(no output)` if none.
fn write_lines(out: &mut impl Write, attempt: &AttemptView) -> std::io::Result<()> {
    if attempt.chunks.iter().all(|c| c.text.is_empty()) {
        return writeln!(out, "  (no output)");
    }
    for chunk in &attempt.chunks {
        for line in chunk.text.lines() {
            writeln!(out, "  {}: {line}", chunk.stream)?;
        }
    }
    Ok(())
}
