//! `slotcron jobs put | rm | ls | history`: the jobs kept in the shared state, which the
//! daemons started with `--jobs-from-state` run (see [`crate::state_jobs`]).

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use slotcron::jiff::Timestamp;
use slotcron::{DefinitionChange, JobDefinition, Retention, ScheduleSpec, Store};

/// The credential of a change `slotcron jobs put` or `rm` makes, in its record: access to
/// the state itself (the admin API writes the kind of token it was given).
pub const STATE_TOKEN: &str = "state";

use crate::cli::{JobsArgs, JobsCommand};
use crate::jobs_file::{self, Format, Problems};
use crate::state::{State, StateUrl};
use crate::state_jobs::{self, Listed};
use crate::{INVALID_INPUT, duration, table};

/// Runs `slotcron jobs …`: exit status 0, 1 for `rm` of a job the state does not have, 2
/// with the reason on standard error for invalid jobs or a state that cannot be used.
pub fn run(args: &JobsArgs) -> ExitCode {
    // Through the admin API, on a runtime of its own.
    if let JobsCommand::History { job, admin_url, limit, json } = &args.command {
        return crate::jobs_history::run(job.as_deref(), admin_url, *limit, *json);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("slotcron jobs: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(dispatch(&args.command)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(INVALID_INPUT)
        }
    }
}

async fn dispatch(command: &JobsCommand) -> Result<ExitCode, String> {
    match command {
        JobsCommand::Put { file, state, note } => put(file, &state.url, note.as_deref()).await,
        JobsCommand::Rm { name, state, note } => {
            let store = open(&state.url).await?;
            let removal = change(name, None, note.as_deref());
            let kept =
                store.change_definition(removal).await.map_err(|e| format!("slotcron jobs rm: {e}"))?;
            if kept.is_some() {
                println!("removed job {name:?} from the state");
                Ok(ExitCode::SUCCESS)
            } else {
                eprintln!("slotcron jobs rm: the state has no job {name:?}");
                Ok(ExitCode::FAILURE)
            }
        }
        JobsCommand::History { .. } => unreachable!("run answers it"),
        JobsCommand::Ls { state, json } => {
            // Only reads: never creates or migrates the state.
            let url = StateUrl::parse(&state.url).map_err(|e| format!("slotcron jobs: --state: {e}"))?;
            let store = State::open_read_only(&url, "job")
                .await
                .map_err(|e| format!("slotcron jobs: cannot open the state: {e}"))?
                .store;
            let listed =
                Listed::of(store.load_definitions().await.map_err(|e| format!("slotcron jobs ls: {e}"))?);
            list(&listed, *json);
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn open(url: &str) -> Result<Arc<dyn Store>, String> {
    let url = StateUrl::parse(url).map_err(|e| format!("slotcron jobs: --state: {e}"))?;
    // Only the store is used: the ledger's retention does not matter here.
    let state = State::open(&url, Retention::default())
        .await
        .map_err(|e| format!("slotcron jobs: cannot open the state: {e}"))?;
    state
        .store
        .ok_or_else(|| "slotcron jobs: a memory state keeps no jobs; use sqlite: or postgres://".into())
}

/// Reads the `[[job]]` tables of `file` (`-`: standard input) with the jobs file's
/// parser, and stores them, replacing those of the same names; nothing is written if any
/// is invalid or is a job a daemon's file defines.
async fn put(file: &Path, url: &str, note: Option<&str>) -> Result<ExitCode, String> {
    let source = if file == Path::new("-") {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map_err(|e| format!("slotcron jobs put: -: {e}"))?;
        text
    } else {
        std::fs::read_to_string(file).map_err(|e| format!("slotcron jobs put: {}: {e}", file.display()))?
    };
    let entries =
        jobs_file::parse(&source, Format::Toml).map_err(|list| Problems::new(file, list).to_string())?.jobs;
    let store = open(url).await?;
    let listed = Listed::of(store.load_definitions().await.map_err(|e| format!("slotcron jobs put: {e}"))?);
    let definitions =
        state_jobs::definitions(&entries, &listed).map_err(|list| Problems::new(file, list).to_string())?;
    let (same, put): (Vec<JobDefinition>, Vec<JobDefinition>) =
        definitions.into_iter().partition(|d| listed.commands.iter().any(|(held, _)| held == d));
    for definition in &put {
        let change = change(&definition.name, Some(definition.clone()), note);
        store.change_definition(change).await.map_err(|e| format!("slotcron jobs put: {e}"))?;
    }
    let names = |list: &[JobDefinition]| list.iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(", ");
    let said = match (put.is_empty(), same.is_empty()) {
        (_, true) => format!("put {} job(s) in the state: {}", put.len(), names(&put)),
        (true, false) => format!("the state holds these job(s) already, unchanged: {}", names(&same)),
        (false, false) => {
            format!("put {} job(s) in the state: {}; unchanged: {}", put.len(), names(&put), names(&same))
        }
    };
    println!("{said}");
    Ok(ExitCode::SUCCESS)
}

/// The change of `job` to `new` (`None`: its removal) made by this command: token
/// [`STATE_TOKEN`], now, with `note`.
fn change(job: &str, new: Option<JobDefinition>, note: Option<&str>) -> DefinitionChange {
    DefinitionChange {
        job: job.to_owned(),
        at: Timestamp::now(),
        token: STATE_TOKEN.to_owned(),
        note: note.filter(|n| !n.is_empty()).map(str::to_owned),
        old: None,
        new,
    }
}

/// Prints the state's jobs and the daemons' file jobs: `JOB SOURCE SCHEDULE COMMAND`, or
/// one JSON object per line. Never an environment value.
fn list(listed: &Listed, json: bool) {
    let mut rows: Vec<[String; 4]> = listed
        .commands
        .iter()
        .map(|(d, p)| [d.name.clone(), "state".into(), schedule(&d.schedule), p.command.clone()])
        .collect();
    rows.extend(
        listed
            .file_names()
            .map(|(job, instance)| [job.into(), format!("file:{instance}"), String::new(), String::new()]),
    );
    if json {
        for [job, source, schedule, command] in rows {
            let mut line = serde_json::json!({ "job": job, "source": source });
            if let Some(instance) = source.strip_prefix("file:") {
                line["instance"] = instance.into();
            }
            if !schedule.is_empty() {
                line["schedule"] = schedule.into();
                line["command"] = command.into();
            }
            println!("{line}");
        }
    } else {
        table::print(Some(["JOB", "SOURCE", "SCHEDULE", "COMMAND"]), &rows, 0);
    }
}

/// A stored schedule as the jobs file writes it.
fn schedule(spec: &ScheduleSpec) -> String {
    match spec {
        ScheduleSpec::Every { period_ms, .. } => {
            format!("every {}", duration::display(Duration::from_millis(*period_ms)))
        }
        ScheduleSpec::Cron { expression, timezone: None } => format!("cron {expression}"),
        ScheduleSpec::Cron { expression, timezone: Some(zone) } => format!("cron {expression} ({zone})"),
        ScheduleSpec::At { instant } => format!("at {instant}"),
        ScheduleSpec::After { delay_ms } => {
            format!("after {}", duration::display(Duration::from_millis(*delay_ms)))
        }
    }
}
