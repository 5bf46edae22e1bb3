//! `on_failure`: the command a job runs after one of its triggers fails, through the
//! core's rate-limited [`FailureHook`].

use std::collections::HashMap;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use slotcron::CancellationToken;
use slotcron::{Failure, FailureHook, RunObserver};

use crate::command::{Launch, ShellCommand};

/// How long a failure hook may run before it gets SIGTERM (and SIGKILL after the kill
/// grace).
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// The failure hooks of a daemon's jobs, by job name.
#[derive(Debug, Clone, Default)]
pub struct FailureHooks {
    /// Each job's `on_failure` command.
    pub commands: HashMap<String, ShellCommand>,
    /// How long a hook may run ([`HOOK_TIMEOUT`]).
    pub timeout: Duration,
    /// How long a hook may take to stop after SIGTERM.
    pub kill_grace: Duration,
}

impl FailureHooks {
    /// The observer that runs them: at most one hook per job per outcome per minute
    /// ([`FailureHook::DEFAULT_INTERVAL`]), each on its own task, outside the
    /// concurrency cap. `None` when no job has a hook. Call inside the runtime.
    pub fn observer(&self) -> Option<Arc<dyn RunObserver>> {
        if self.commands.is_empty() {
            return None;
        }
        let hooks = Arc::new(self.clone());
        Some(Arc::new(FailureHook::new(move |failure: Failure| {
            if hooks.commands.contains_key(&*failure.record.job) {
                tokio::spawn(hooks.clone().run(failure));
            }
        })))
    }

    /// Runs the job's hook for `failure`, with `SLOTCRON_JOB`, `SLOTCRON_TRIGGER`,
    /// `SLOTCRON_OUTCOME`, `SLOTCRON_ERROR`, `SLOTCRON_ATTEMPTS`, `SLOTCRON_INSTANCE` and
    /// `SLOTCRON_SUPPRESSED` (failures of this job and outcome the rate limit held back
    /// since the last hook). A hook's own failure is logged, never retried.
    async fn run(self: Arc<Self>, failure: Failure) {
        let record = &failure.record;
        let Some(command) = self.commands.get(&*record.job) else { return };
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
        match result {
            Ok(()) => tracing::info!(job, %trigger, outcome, "failure hook ran"),
            Err(err) => tracing::warn!(job, %trigger, outcome, err, "failure hook failed; not retried"),
        }
    }
}
