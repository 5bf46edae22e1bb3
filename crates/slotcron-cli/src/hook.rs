//! `on_failure`: the command a job runs after one of its triggers fails, through the
//! core's rate-limited [`FailureHook`].

use std::collections::HashMap;
use std::pin::pin;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use slotcron::CancellationToken;
use slotcron::{Failure, FailureHook, RunObserver};

use crate::command::{Launch, ShellCommand};
use crate::jobs_file::JobEntry;

/// How long a failure hook may run before it gets SIGTERM (and SIGKILL after the kill
/// grace).
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// The failure hooks of a daemon's jobs, by job name. Clones share the commands, so a
/// reload that [sets](FailureHooks::set) them changes what the observer runs.
#[derive(Debug, Clone, Default)]
pub struct FailureHooks {
    /// Each job's `on_failure` command.
    commands: Arc<RwLock<HashMap<String, ShellCommand>>>,
    /// How long a hook may run ([`HOOK_TIMEOUT`]).
    pub timeout: Duration,
    /// How long a hook may take to stop after SIGTERM.
    pub kill_grace: Duration,
}

impl FailureHooks {
    /// No hooks yet, each to run at most `timeout`, stopped within `kill_grace` after it.
    pub fn new(timeout: Duration, kill_grace: Duration) -> Self {
        Self { commands: Arc::default(), timeout, kill_grace }
    }

    /// Sets the hooks to the `on_failure` commands of `jobs` (at start, and at each reload
    /// that loads: a job added, changed or removed takes its hook with it).
    pub fn set(&self, jobs: &[JobEntry]) {
        let commands =
            jobs.iter().filter_map(|e| Some((e.job.name().to_owned(), e.on_failure.as_deref()?.clone())));
        *self.commands.write().unwrap_or_else(|p| p.into_inner()) = commands.collect();
    }

    /// Whether `job` has a hook.
    fn has(&self, job: &str) -> bool {
        self.commands.read().unwrap_or_else(|p| p.into_inner()).contains_key(job)
    }

    /// The hook of `job`, if it has one.
    fn command(&self, job: &str) -> Option<ShellCommand> {
        self.commands.read().unwrap_or_else(|p| p.into_inner()).get(job).cloned()
    }

    /// The observer that runs them: at most one hook per job per outcome per minute
    /// ([`FailureHook::DEFAULT_INTERVAL`]), each on its own task, outside the
    /// concurrency cap. Installed whatever the jobs (a reload may give one a hook). Call
    /// inside the runtime.
    pub fn observer(&self) -> Arc<dyn RunObserver> {
        let hooks = Arc::new(self.clone());
        let covered = hooks.clone();
        let hook = FailureHook::new(move |failure: Failure| {
            if let Some(command) = hooks.command(&failure.record.job) {
                tokio::spawn(hooks.clone().run(command, failure));
            }
        });
        Arc::new(hook.only_for(move |job| covered.has(job)))
    }

    /// Runs the job's hook for `failure`, with `SLOTCRON_JOB`, `SLOTCRON_TRIGGER`,
    /// `SLOTCRON_OUTCOME`, `SLOTCRON_ERROR`, `SLOTCRON_ATTEMPTS`, `SLOTCRON_INSTANCE` and
    /// `SLOTCRON_SUPPRESSED` (failures of this job and outcome the rate limit held back
    /// since the last hook). A hook's own failure is logged, never retried.
    async fn run(self: Arc<Self>, command: ShellCommand, failure: Failure) {
        let record = &failure.record;
        let env = [
            ("SLOTCRON_JOB", record.job.to_string()),
            ("SLOTCRON_TRIGGER", record.trigger.to_string()),
            ("SLOTCRON_OUTCOME", record.outcome.as_str().to_owned()),
            ("SLOTCRON_ERROR", record.error.clone().unwrap_or_default().replace('\0', " ")),
            ("SLOTCRON_ATTEMPTS", record.attempts.to_string()),
            ("SLOTCRON_INSTANCE", record.instance.to_string()),
            ("SLOTCRON_SUPPRESSED", failure.suppressed.to_string()),
        ];
        let cancel = CancellationToken::new();
        let stop_reason = || "the failure hook timed out";
        let launch = Launch {
            job: &record.job,
            trigger: record.trigger,
            env: &env,
            cancel: &cancel,
            stop_reason: &stop_reason,
            run: None,
        };
        let mut run = pin!(command.launch(&launch));
        let (job, trigger, outcome) = (&*record.job, record.trigger, record.outcome.as_str());
        let result = tokio::select! {
            result = &mut run => result.map_err(|e| e.to_string()),
            () = tokio::time::sleep(self.timeout) => {
                cancel.cancel();
                // Dropping the run after the grace kills what is left of it.
                _ = tokio::time::timeout(self.kill_grace, &mut run).await;
                Err(format!("timed out after {:?}", self.timeout))
            }
        };
        // How many failures of the job and outcome the limit held back since the last.
        let suppressed = failure.suppressed;
        match result {
            Ok(()) => tracing::info!(job, %trigger, outcome, suppressed, "failure hook ran"),
            Err(err) => {
                tracing::warn!(job, %trigger, outcome, suppressed, err, "failure hook failed; not retried")
            }
        }
    }
}
