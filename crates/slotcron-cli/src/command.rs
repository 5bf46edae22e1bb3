//! The shell-command handler: runs a job's command under `/bin/sh -c` in its own
//! process group and logs its output.

use std::fmt;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;

use slotcron::{Handler, JobContext};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};

use crate::process_group::ProcessGroup;

/// The shell that runs every command, as cron does (`sh -c`).
const SHELL: &str = "/bin/sh";

/// Longer output lines are logged in pieces of this many bytes.
const MAX_LINE: u64 = 16 * 1024;

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
        /// The last non-blank line it wrote to standard error.
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
    /// id) and `SLOTCRON_FENCING_TOKEN` (the won claim's fencing token, a decimal number
    /// that grows with every won claim of the job across the fleet) in its environment. Each line it writes is logged with the job's
    /// name. When the run's cancellation token fires (timeout, shutdown) the process
    /// group gets SIGTERM; when this future is dropped before the command ends, SIGKILL.
    ///
    /// # Errors
    /// The shell could not be started, or the command exited with a non-zero status or
    /// by a signal; the error names the status and the last line of standard error.
    pub async fn run(&self, ctx: &JobContext) -> Result<(), CommandError> {
        let job = ctx.job();
        let mut child = tokio::process::Command::new(SHELL)
            .arg("-c")
            .arg(&self.script)
            .envs(self.env.iter().map(|(name, value)| (name, value)))
            .env("SLOTCRON_JOB", job)
            .env("SLOTCRON_TRIGGER", ctx.trigger().to_string())
            .env("SLOTCRON_INSTANCE", ctx.instance())
            .env("SLOTCRON_FENCING_TOKEN", ctx.fencing_token().to_string())
            .stdin(if self.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(CommandError::Spawn)?;
        let pid = child.id().unwrap_or_default();
        let group = ProcessGroup::led_by(pid);
        tracing::info!(job, trigger = %ctx.trigger(), pid, "command started");

        let stdin = child.stdin.take();
        let feed = async {
            if let (Some(mut stdin), Some(text)) = (stdin, &self.stdin) {
                // A command that does not read its input closes the pipe: not an error.
                let _ = stdin.write_all(text.as_bytes()).await;
            }
        };
        let stdout = log_lines(child.stdout.take(), job, "stdout");
        let stderr = log_lines(child.stderr.take(), job, "stderr");
        let cancel = ctx.cancellation_token();
        let exit = async {
            tokio::select! {
                status = child.wait() => status,
                () = cancel.cancelled() => {
                    tracing::info!(job, pid, "run cancelled: sending SIGTERM to the command's process group");
                    if let Some(group) = &group {
                        group.terminate();
                    }
                    child.wait().await
                }
            }
        };
        let (status, (), _, last_stderr) = tokio::join!(exit, feed, stdout, stderr);
        if let Some(group) = group {
            group.disarm();
        }
        let status = status.map_err(CommandError::Wait)?;
        if status.success() { Ok(()) } else { Err(CommandError::Exit { status, last_stderr }) }
    }
}

/// Logs every line of `stream` with the job's name; returns the last non-blank line.
async fn log_lines(stream: Option<impl AsyncRead + Unpin>, job: &str, name: &'static str) -> Option<String> {
    let mut reader = BufReader::new(stream?);
    let mut buf = Vec::new();
    let mut last = None;
    loop {
        buf.clear();
        match (&mut reader).take(MAX_LINE).read_until(b'\n', &mut buf).await {
            Ok(0) => return last,
            Ok(_) => {
                let line = String::from_utf8_lossy(&buf);
                let line = line.trim_end_matches(['\n', '\r']);
                tracing::info!(job, stream = name, "{line}");
                if !line.trim().is_empty() {
                    last = Some(line.to_owned());
                }
            }
            Err(e) => {
                tracing::warn!(job, stream = name, "cannot read the command's output: {e}");
                return last;
            }
        }
    }
}
