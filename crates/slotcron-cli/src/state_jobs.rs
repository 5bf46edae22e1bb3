//! Jobs kept in the shared state (`slotcron run … --jobs-from-state`, `slotcron jobs`):
//! the daemon's shell-command jobs as the store's [`JobDefinition`]s, and the names of the
//! jobs each daemon's file defines, published beside them.
//!
//! A command job is a definition whose handler is [`COMMAND_HANDLER`] and whose payload
//! holds the command ([`Payload`]). The file jobs of the daemon with instance `ID` are one
//! definition named `@file:ID` (`:` cannot start a job name, so it never meets one) whose
//! handler is [`FILE_JOBS_HANDLER`] and whose payload lists the names ([`FileJobs`]).

use std::collections::{BTreeMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use slotcron::{HandlerRegistry, JobBuilder, JobDefinition, Plan, ScheduleSpec, Store, StoreError};
use tokio::sync::mpsc;

use crate::command::ShellCommand;
use crate::jobs_file::{self, JobEntry, Problem};

/// The handler name of the daemon's command jobs in the state.
pub const COMMAND_HANDLER: &str = "slotcron.command";
/// The handler name of the definitions listing a daemon's file jobs.
pub const FILE_JOBS_HANDLER: &str = "slotcron.file-jobs";
/// How often a daemon reads the state's jobs: converging within 2 s of a change.
pub const POLL: Duration = Duration::from_secs(1);

/// A command job's payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payload {
    /// The command line, run as `/bin/sh -c COMMAND`.
    pub command: String,
    /// Its extra environment variables.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Text for its standard input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    /// The directory it starts in; the daemon's when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<PathBuf>,
    /// Whether every daemon runs every trigger, unclaimed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub on_every_replica: bool,
    /// Keys a newer release wrote: ignored with a warning.
    #[serde(flatten)]
    pub other_fields: serde_json::Map<String, serde_json::Value>,
}

/// What `@file:ID` holds: a daemon's jobs file and its job names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileJobs {
    /// The daemon's instance id.
    pub instance: String,
    /// Its jobs file.
    pub file: String,
    /// The names of that file's jobs.
    pub jobs: Vec<String>,
}

/// The definition name under which a daemon publishes its file's job names.
pub fn file_jobs_name(instance: &str) -> String {
    format!("@file:{instance}")
}

/// A job of a jobs file as a definition in the state.
///
/// # Errors
/// A job the state cannot hold: an `@reboot` one, one with `at_time` or `exclude`, a
/// cron zone without an IANA name. (A setting a definition has no place for is refused by
/// [`definitions`], each named.)
pub fn to_definition(entry: &JobEntry) -> Result<JobDefinition, String> {
    use jobs_file::ScheduleSpec as FileSchedule;
    let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let job = &entry.job;
    if !entry.exclude.is_empty() {
        return Err("jobs with exclude (calendars) cannot be kept in the state".into());
    }
    let schedule = match &entry.schedule {
        FileSchedule::Every(period) => ScheduleSpec::Every { period_ms: millis(*period), offset_ms: 0 },
        FileSchedule::Cron(cron) => {
            let timezone = match cron.time_zone().iana_name() {
                Some("UTC") => None,
                Some(name) => Some(name.to_owned()),
                None => return Err("a cron zone without an IANA name cannot be kept in the state".into()),
            };
            ScheduleSpec::Cron { expression: cron.expression().to_owned(), timezone }
        }
        FileSchedule::At(at) => ScheduleSpec::At { instant: at.to_string() },
        FileSchedule::After(delay) => ScheduleSpec::After { delay_ms: millis(*delay) },
        FileSchedule::AtStartUp => return Err("@reboot jobs cannot be kept in the state".into()),
        FileSchedule::RunAfter(_) => return Err("run_after jobs (chains) cannot be kept in the state".into()),
        FileSchedule::EveryDays(_) => {
            return Err("jobs with at_time cannot be kept in the state (a cron expression can)".into());
        }
    };
    let payload = Payload {
        command: entry.command.script.clone(),
        env: entry.command.env.iter().cloned().collect(),
        stdin: entry.command.stdin.clone(),
        working_dir: entry.command.working_dir.clone(),
        on_every_replica: job.on_every_replica(),
        other_fields: serde_json::Map::new(),
    };
    let mut definition = JobDefinition::new(job.name(), schedule, COMMAND_HANDLER);
    definition.payload = serde_json::to_value(payload).map_err(|e| e.to_string())?;
    definition.timeout_ms = job.timeout().map(millis);
    definition.run_on_start = job.run_on_start();
    definition.misfire = Some(job.misfire());
    definition.grace_ms = Some(millis(job.grace()));
    Ok(definition)
}

/// What a job kept in the state keeps, for the message refusing any other setting.
const KEPT: &str = "a job kept there keeps its schedule, command, env, working_dir, timeout, run_on_start, \
misfire, grace and on_every_replica; a job that needs more belongs in a daemon's jobs file";

/// The settings of `entry` that a definition in the state would drop (it has no place
/// for them), each named as the jobs file names it. A job with any is refused rather than
/// stored without them.
fn not_kept(entry: &JobEntry) -> Vec<&'static str> {
    let job = &entry.job;
    let command = &entry.command;
    [
        ("attempts", job.retry() != slotcron::Retry::default()),
        ("overlap", job.overlap() != slotcron::Overlap::default()),
        ("jitter", job.jitter().is_some()),
        ("on_interrupt", job.on_interrupt() != slotcron::OnInterrupt::default()),
        ("on_failure", entry.on_failure.is_some()),
        ("start", entry.window.0.is_some()),
        ("end", entry.window.1.is_some()),
        ("max_runs", job.max_runs().is_some()),
        ("pause_after_failures", job.pause_after_failures().is_some()),
        ("enabled", !entry.enabled),
        ("on", !job.placement().is_anywhere()),
        ("SHELL", &*command.shell != crate::command::SHELL),
        ("MAILTO", command.mailto.is_some()),
        ("user", command.user.is_some()),
    ]
    .into_iter()
    .filter_map(|(field, given)| given.then_some(field))
    .collect()
}

/// The definitions of `entries` for the state.
///
/// # Errors
/// Every problem: a job the state cannot hold ([`to_definition`]), or one the jobs file
/// of a daemon defines (`listed`).
pub fn definitions(entries: &[JobEntry], listed: &Listed) -> Result<Vec<JobDefinition>, Vec<Problem>> {
    let mut problems = Vec::new();
    let mut definitions = Vec::new();
    for entry in entries {
        let name = entry.job.name();
        let dropped = not_kept(entry);
        for field in &dropped {
            let reason = format!("cannot be kept in the state ({KEPT})");
            problems.push(Problem::field(entry.line, Some(name), field, reason));
        }
        match to_definition(entry) {
            Ok(definition) if dropped.is_empty() => definitions.push(definition),
            Ok(_) => {}
            Err(reason) => problems.push(Problem::field(entry.line, Some(name), "schedule", reason)),
        }
        if let Some((_, instance)) = listed.file_names().find(|(job, _)| *job == name) {
            let reason =
                format!("the jobs file of the daemon {instance:?} defines this job; change it there");
            problems.push(Problem::field(entry.line, Some(name), "name", reason));
        }
    }
    if problems.is_empty() { Ok(definitions) } else { Err(problems) }
}

/// The state's definitions sorted out: command jobs, and the file jobs daemons published.
#[derive(Debug, Default)]
pub struct Listed {
    /// The command jobs, by name.
    pub commands: Vec<(JobDefinition, Payload)>,
    /// What each daemon published.
    pub files: Vec<FileJobs>,
}

impl Listed {
    /// Sorts `definitions`; one that is neither kind (a library's) is left out, and a
    /// command job whose payload cannot be read is logged and left out.
    pub fn of(definitions: Vec<JobDefinition>) -> Self {
        let mut listed = Self::default();
        for definition in definitions {
            match definition.handler.as_str() {
                COMMAND_HANDLER => match serde_json::from_value::<Payload>(definition.payload.clone()) {
                    Ok(payload) => listed.commands.push((definition, payload)),
                    Err(e) => {
                        tracing::error!(job = %definition.name, "the state's job is skipped: payload: {e}")
                    }
                },
                FILE_JOBS_HANDLER => match serde_json::from_value(definition.payload.clone()) {
                    Ok(files) => listed.files.push(files),
                    Err(e) => tracing::warn!(name = %definition.name, "unreadable file-jobs list: {e}"),
                },
                _ => {}
            }
        }
        listed
    }

    /// The published file job names, each with the instance whose file defines it.
    pub fn file_names(&self) -> impl Iterator<Item = (&str, &str)> {
        self.files.iter().flat_map(|f| f.jobs.iter().map(|job| (job.as_str(), f.instance.as_str())))
    }
}

/// The plan of a command job of the state: its handler runs the payload's command, its
/// fingerprint hashes the whole definition.
///
/// # Errors
/// The definition does not build (its reason names the job and the field).
pub fn plan(definition: &JobDefinition, payload: &Payload) -> Result<Plan, String> {
    if !payload.other_fields.is_empty() {
        let keys: Vec<&str> = payload.other_fields.keys().map(String::as_str).collect();
        tracing::warn!(job = %definition.name, ?keys, "payload keys this release does not know are ignored");
    }
    let command = ShellCommand {
        env: payload.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect::<Vec<_>>().into(),
        stdin: payload.stdin.clone(),
        working_dir: payload.working_dir.clone(),
        timeout: definition.timeout_ms.map(Duration::from_millis),
        ..ShellCommand::new(payload.command.clone())
    };
    let registry = HandlerRegistry::default();
    registry.register(COMMAND_HANDLER, command.into_handler());
    let job = definition.to_job(&registry).map_err(|e| e.to_string())?;
    let builder = JobBuilder::from(job).on_every_replica(payload.on_every_replica);
    let mut hasher = DefaultHasher::new();
    serde_json::to_string(definition).unwrap_or_default().hash(&mut hasher);
    Ok(Plan::new(builder).fingerprint(format!("state:{:016x}", hasher.finish())))
}

/// What identifies the command jobs among `definitions`: equal while none changes.
fn fingerprint(definitions: &[JobDefinition]) -> u64 {
    let mut hasher = DefaultHasher::new();
    for definition in definitions.iter().filter(|d| d.handler == COMMAND_HANDLER) {
        serde_json::to_string(definition).unwrap_or_default().hash(&mut hasher);
    }
    hasher.finish()
}

/// A daemon's view of the state's jobs (`--jobs-from-state`).
pub struct StateJobs {
    store: Arc<dyn Store>,
    instance: String,
    /// The [`fingerprint`] of the definitions [`StateJobs::plans`] read last, from which
    /// [`StateJobs::watch`] starts: a change made after they were read and before the
    /// watch's first look is a change too.
    applied: Arc<Mutex<Option<u64>>>,
}

impl StateJobs {
    /// The jobs of `store`, for the daemon `instance`.
    pub fn new(store: Arc<dyn Store>, instance: &str) -> Self {
        Self { store, instance: instance.to_owned(), applied: Arc::default() }
    }

    /// Publishes the names of the jobs of `file`, so that `slotcron jobs put` refuses them.
    pub async fn publish(&self, file: &Path, jobs: &[JobEntry]) {
        let files = FileJobs {
            instance: self.instance.clone(),
            file: file.display().to_string(),
            jobs: jobs.iter().map(|e| e.job.name().to_owned()).collect(),
        };
        let mut definition = JobDefinition::new(
            file_jobs_name(&self.instance),
            ScheduleSpec::After { delay_ms: 0 },
            FILE_JOBS_HANDLER,
        );
        definition.payload = serde_json::to_value(files).unwrap_or_default();
        if let Err(e) = self.store.save_definition(&definition).await {
            tracing::warn!("cannot publish the file's job names in the state: {e}");
        }
    }

    /// Removes what [`StateJobs::publish`] wrote (at shutdown).
    pub async fn unpublish(&self) {
        if let Err(e) = self.store.delete_definition(&file_jobs_name(&self.instance)).await {
            tracing::warn!("cannot remove the file's job names from the state: {e}");
        }
    }

    /// The plans of the state's command jobs that `file_jobs` does not define (a name
    /// both define is the file's, with a warning naming both), and the reasons of those
    /// that do not build.
    ///
    /// # Errors
    /// The state cannot be read.
    pub async fn plans(&self, file: &Path, file_jobs: &[JobEntry]) -> Result<Vec<Plan>, StoreError> {
        let definitions = self.store.load_definitions().await?;
        *self.applied.lock().unwrap_or_else(|p| p.into_inner()) = Some(fingerprint(&definitions));
        let listed = Listed::of(definitions);
        let in_file: HashSet<&str> = file_jobs.iter().map(|e| e.job.name()).collect();
        let mut plans = Vec::new();
        for (definition, payload) in &listed.commands {
            if in_file.contains(definition.name.as_str()) {
                tracing::warn!(
                    job = %definition.name,
                    file = %file.display(),
                    "the job is defined both in the jobs file and in the state; the file's version runs"
                );
                continue;
            }
            match plan(definition, payload) {
                Ok(plan) => plans.push(plan),
                Err(e) => tracing::error!("the state's job is skipped: {e}"),
            }
        }
        Ok(plans)
    }

    /// Reads the state's definitions every [`POLL`] and sends on the channel when they
    /// differ from those seen before (at first, those [`StateJobs::plans`] read last),
    /// until the receiver is dropped.
    pub fn watch(&self) -> mpsc::UnboundedReceiver<()> {
        let (tx, rx) = mpsc::unbounded_channel();
        let store = self.store.clone();
        let mut seen = *self.applied.lock().unwrap_or_else(|p| p.into_inner());
        tokio::spawn(async move {
            loop {
                let Ok(definitions) = store.load_definitions().await else {
                    tokio::time::sleep(POLL).await;
                    continue;
                };
                let now = fingerprint(&definitions);
                if seen.is_some_and(|s| s != now) && tx.send(()).is_err() {
                    return;
                }
                seen = Some(now);
                tokio::time::sleep(POLL).await;
            }
        });
        rx
    }
}
