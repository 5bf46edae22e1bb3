//! The shell-command handler: runs a job's command under `/bin/sh -c` in its own
//! process group and logs its output.

mod output;

use std::fmt;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;

use slotcron::jiff::Timestamp;
use slotcron::{CancellationToken, Handler, JobContext};
use tokio::io::AsyncWriteExt;

use crate::process_group::ProcessGroup;

/// The shell that runs every command, as cron does (`sh -c`).
const SHELL: &str = "/bin/sh";

/// A shell command and what it is started with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellCommand {
    /// The command line, run as `/bin/sh -c SCRIPT`.
    pub script: String,
    /// Extra environment variables (a crontab's `NAME=value` lines), set before the
    /// `SLOTCRON_*` ones.
    pub env: Arc<[(String, String)]>,
    /// Text written to the command's standard input (a crontab's `%` lines); none means
    /// standard input is `/dev/null`.
    pub stdin: Option<String>,
}

/// One start of a command: for which job and trigger (in its log lines), the
/// `SLOTCRON_*` variables it gets, and the token that stops it (SIGTERM to its process
/// group).
#[derive(Debug)]
pub struct Launch<'a> {
    /// The job's name.
    pub job: &'a str,
    /// The trigger it stands for.
    pub trigger: Timestamp,
    /// Variables set after the command's own environment.
    pub env: &'a [(&'static str, String)],
    /// Fires to stop the command.
    pub cancel: &'a CancellationToken,
}

/// Why a command run failed.
#[derive(Debug)]
pub enum CommandError {
    /// `/bin/sh` could not be started.
    Spawn(std::io::Error),
    /// Waiting for the command failed.
    Wait(std::io::Error),
    /// The command exited with a non-zero status or was killed by a signal.
    Exit {
        /// How it ended.
        status: ExitStatus,
        /// The last non-blank line it wrote to standard error, escaped as logged.
        last_stderr: Option<String>,
    },
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Spawn(e) => write!(f, "cannot start {SHELL}: {e}"),
            Self::Wait(e) => write!(f, "cannot wait for the command: {e}"),
            Self::Exit { status, last_stderr: None } => write!(f, "command failed: {status}"),
            Self::Exit { status, last_stderr: Some(line) } => {
                write!(f, "command failed: {status}; last stderr line: {line}")
            }
        }
    }
}

impl std::error::Error for CommandError {}

/// Checks text bound for `execve(2)` — a command line, or an environment variable's
/// value — which takes NUL-terminated strings and so cannot hold a NUL byte (the spawn
/// would fail at every run); `what` names it in the reason, e.g. `"a shell command"`.
///
/// # Errors
/// The reason, when `text` contains a NUL byte.
pub fn check_no_nul(text: &str, what: &str) -> Result<(), String> {
    if text.contains('\0') { Err(format!("contains a NUL byte, which {what} cannot hold")) } else { Ok(()) }
}

impl ShellCommand {
    /// A command with no extra environment and no input.
    pub fn new(script: impl Into<String>) -> Self {
        Self { script: script.into(), env: Arc::from([]), stdin: None }
    }

    /// The job handler that runs this command once per trigger.
    pub fn into_handler(self) -> impl Handler {
        let command = Arc::new(self);
        move |ctx: JobContext| {
            let command = command.clone();
            async move { command.run(&ctx).await }
        }
    }

    /// Runs the command for one trigger.
    ///
    /// The command gets `SLOTCRON_JOB` (the job's name), `SLOTCRON_TRIGGER` (the
    /// scheduled instant, RFC 3339 UTC), `SLOTCRON_INSTANCE` (the scheduler's instance
    /// id), `SLOTCRON_FENCING_TOKEN` (the won claim's fencing token, a decimal number
    /// that grows with every won claim of the job across the fleet) and
    /// `SLOTCRON_ATTEMPT` (1 for the first attempt, 2 for the first retry...) in its
    /// environment.
    /// Each line it writes is logged with the job's name (see [`output::log_lines`]).
    /// When the run's cancellation token fires (timeout, shutdown) the process group gets
    /// SIGTERM; when this future is dropped before the command ends, SIGKILL.
    ///
    /// The run ends when the shell exits: its output is read for a short moment more
    /// (what it wrote last), and processes it left in the background keep running, as
    /// under cron, even if they hold its standard output open.
    ///
    /// # Errors
    /// The shell could not be started, or the command exited with a non-zero status or
    /// by a signal; the error names the status and the last line of standard error.
    pub async fn run(&self, ctx: &JobContext) -> Result<(), CommandError> {
        let env = [
            ("SLOTCRON_JOB", ctx.job().to_owned()),
            ("SLOTCRON_TRIGGER", ctx.trigger().to_string()),
            ("SLOTCRON_INSTANCE", ctx.instance().to_owned()),
            ("SLOTCRON_FENCING_TOKEN", ctx.fencing_token().to_string()),
            ("SLOTCRON_ATTEMPT", ctx.attempt().to_string()),
        ];
        let launch =
            Launch { job: ctx.job(), trigger: ctx.trigger(), env: &env, cancel: ctx.cancellation_token() };
        self.launch(&launch).await
    }

    /// Runs the command once, as [`ShellCommand::run`] describes, with `launch.env` set
    /// after the command's own environment, stopped by `launch.cancel`.
    ///
    /// # Errors
    /// As [`ShellCommand::run`].
    pub async fn launch(&self, launch: &Launch<'_>) -> Result<(), CommandError> {
        let job = launch.job;
        let mut child = tokio::process::Command::new(SHELL)
            .arg("-c")
            .arg(&self.script)
            .envs(self.env.iter().map(|(name, value)| (name, value)))
            .envs(launch.env.iter().map(|(name, value)| (name, value)))
            .stdin(if self.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(CommandError::Spawn)?;
        let pid = child.id().unwrap_or_default();
        let group = ProcessGroup::led_by(pid, job, launch.trigger);
        tracing::info!(job, trigger = %launch.trigger, pid, "command started");

        // Fires when the shell has exited: processes it left in the background may hold
        // its standard input and output open, and the run does not wait for them.
        let exited = CancellationToken::new();
        let stdin = child.stdin.take();
        let feed = async {
            if let (Some(mut stdin), Some(text)) = (stdin, &self.stdin) {
                tokio::select! {
                    // A command that does not read its input closes the pipe: not an error.
                    _ = stdin.write_all(text.as_bytes()) => {}
                    () = exited.cancelled() => {}
                }
            }
        };
        let stdout = output::log_lines(child.stdout.take(), job, "stdout", &exited);
        let stderr = output::log_lines(child.stderr.take(), job, "stderr", &exited);
        let cancel = launch.cancel;
        let exit = async {
            let status = tokio::select! {
                status = child.wait() => status,
                () = cancel.cancelled() => {
                    tracing::info!(
                        job,
                        trigger = %launch.trigger,
                        pid,
                        "run cancelled: sending SIGTERM to the command's process group"
                    );
                    if let Some(group) = &group {
                        group.terminate();
                    }
                    child.wait().await
                }
            };
            exited.cancel();
            status
        };
        let (status, (), _, last_stderr) = tokio::join!(exit, feed, stdout, stderr);
        if let Some(group) = group {
            group.disarm();
        }
        let status = status.map_err(CommandError::Wait)?;
        if status.success() { Ok(()) } else { Err(CommandError::Exit { status, last_stderr }) }
    }
}
