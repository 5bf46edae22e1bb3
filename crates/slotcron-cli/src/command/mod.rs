//! The shell-command handler: runs a job's command under `/bin/sh -c` (or a crontab's
//! `SHELL=`), in the job's working directory and as its user if it has them, in its own
//! process group and logs its output.

mod capture;
pub mod journal;
mod mail;
mod output;
mod user;

pub use mail::sendmail;
pub use user::Me;

pub use capture::{KeepingOutput, keep_output_in};

use std::fmt;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use slotcron::jiff::Timestamp;
use slotcron::{
    AttemptEnd, BoxError, CancellationToken, Handler, JobContext, OutputStream, StoppedByShutdown,
};
use tokio::io::AsyncWriteExt;

use crate::duration;
use crate::process_group::{self, ProcessGroup};
use capture::Tail;

/// How much earlier than its timeout a run may be cancelled and still be told timed out
/// (the engine's timer and this run's clock start a moment apart).
const TIMEOUT_SLACK: Duration = Duration::from_millis(100);

/// The shell that runs a command unless a crontab's `SHELL=` says otherwise, as in cron
/// (`sh -c`).
pub const SHELL: &str = "/bin/sh";

/// A shell command and what it is started with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShellCommand {
    /// The command line, run as `SHELL -c SCRIPT`.
    pub script: String,
    /// The shell: [`SHELL`], or a crontab's `SHELL=` value.
    pub shell: Arc<str>,
    /// The user to run as (a system crontab's user field); none for the daemon's.
    pub user: Option<Arc<str>>,
    /// Where to mail the run's output (a crontab's `MAILTO=`); none for no mail.
    pub mailto: Option<Arc<str>>,
    /// The job's timeout, to tell a timeout from a shutdown when the run is cancelled.
    pub timeout: Option<Duration>,
    /// Extra environment variables (a crontab's `NAME=value` lines), set before the
    /// `SLOTCRON_*` ones.
    pub env: Arc<[(String, String)]>,
    /// The directory the command starts in; none for the daemon's.
    pub working_dir: Option<PathBuf>,
    /// Text written to the command's standard input (a crontab's `%` lines); none means
    /// standard input is `/dev/null`.
    pub stdin: Option<String>,
}

/// One start of a command: for which job and trigger (in its log lines), the
/// `SLOTCRON_*` variables it gets, and the token that stops it (SIGTERM to its process
/// group).
pub struct Launch<'a> {
    /// The job's name.
    pub job: &'a str,
    /// The trigger it stands for.
    pub trigger: Timestamp,
    /// Variables set after the command's own environment.
    pub env: &'a [(&'static str, String)],
    /// Fires to stop the command.
    pub cancel: &'a CancellationToken,
    /// Why `cancel` fired, for the log line, when it was not the job's timeout.
    pub stop_reason: &'a (dyn Fn() -> &'static str + Sync),
    /// The run this is an attempt of: the command's process goes into the run's record
    /// and its output into the run output store. None for a failure hook.
    pub run: Option<&'a JobContext>,
}

/// Why a command run failed.
#[derive(Debug)]
pub enum CommandError {
    /// The shell could not be started (in `dir`, the job's working directory, if it has
    /// one: a missing directory fails here).
    Spawn {
        /// The shell.
        shell: Arc<str>,
        /// The working directory it was to start in.
        dir: Option<PathBuf>,
        /// Why it could not.
        error: std::io::Error,
    },
    /// The user the command is to run as cannot be switched to.
    User(String),
    /// The spawn journal could not note the command's start: it was not started.
    Journal(std::io::Error),
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
            Self::Spawn { shell, dir: None, error } => write!(f, "cannot start {shell}: {error}"),
            Self::Spawn { shell, dir: Some(dir), error } => {
                write!(f, "cannot start {shell} in the working directory {}: {error}", dir.display())
            }
            Self::User(reason) => write!(f, "cannot run the command as its user: {reason}"),
            Self::Journal(e) => write!(f, "not started: the spawn journal cannot note its start: {e}"),
            Self::Wait(e) => write!(f, "cannot wait for the command: {e}"),
            Self::Exit { status, last_stderr: None } => write!(f, "command failed: {status}"),
            Self::Exit { status, last_stderr: Some(line) } => {
                write!(f, "command failed: {status}; last stderr line: {line}")
            }
        }
    }
}

impl std::error::Error for CommandError {}

impl CommandError {
    /// This error as the run's handler returns it: marked [`StoppedByShutdown`] (the run
    /// is recorded `aborted`) when the command was killed by a signal the daemon's
    /// shutdown sent — SIGKILL at a second stop signal, or SIGTERM when the shutdown
    /// timeout cancelled the run.
    fn for_run(self, ctx: &JobContext) -> BoxError {
        let killed = matches!(&self, Self::Exit { status, .. } if status.signal().is_some());
        if killed && ctx.is_scheduler_stopping() && (process_group::hurried() || ctx.is_cancelled()) {
            StoppedByShutdown::new(self).into()
        } else {
            self.into()
        }
    }
}

/// How an attempt that returned `result` ended, as its output is kept: its exit status,
/// the signal that killed it, or the error that kept it from running.
fn attempt_end(result: &Result<(), CommandError>) -> AttemptEnd {
    match result {
        Ok(()) => AttemptEnd::Exited(0),
        Err(CommandError::Exit { status, .. }) => match (status.code(), status.signal()) {
            (Some(code), _) => AttemptEnd::Exited(code),
            (None, Some(signal)) => AttemptEnd::Signalled(process_group::signal_name(signal)),
            (None, None) => AttemptEnd::Failed(status.to_string()),
        },
        Err(error) => AttemptEnd::Failed(error.to_string()),
    }
}

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
        Self {
            script: script.into(),
            shell: Arc::from(SHELL),
            user: None,
            mailto: None,
            timeout: None,
            env: Arc::from([]),
            working_dir: None,
            stdin: None,
        }
    }

    /// The job handler that runs this command once per trigger.
    pub fn into_handler(self) -> impl Handler {
        let command = Arc::new(self);
        move |ctx: JobContext| {
            let command = command.clone();
            async move { command.run(&ctx).await.map_err(|error| error.for_run(&ctx)) }
        }
    }

    /// Runs the command for one trigger.
    ///
    /// The command gets `SLOTCRON_JOB` (the job's name), `SLOTCRON_TRIGGER` (the
    /// scheduled instant, RFC 3339 UTC), `SLOTCRON_INSTANCE` (the scheduler's instance
    /// id), `SLOTCRON_FENCING_TOKEN` (the won claim's fencing token, a decimal number
    /// that grows with every won claim of the job across the fleet) and
    /// `SLOTCRON_ATTEMPT` (1 for the first attempt, 2 for the first retry...) and
    /// `SLOTCRON_RECOVERED` (`1` for a run recovered after its daemon died: the rerun of an
    /// interrupted trigger, `on_interrupt = "rerun"`, or a trigger whose command never
    /// started, see [`journal`]; else `0`) in its environment.
    /// Each line it writes is logged with the job's name (see [`output::log_lines`]), and
    /// the last 64 KiB of its output, both streams told apart, are kept in the daemon's
    /// state with how it ended (see [`keep_output_in`]): of each attempt that wrote any
    /// or failed.
    /// When the run's cancellation token fires (timeout, shutdown, cancel) the process
    /// group gets SIGTERM; when this future is dropped before the command ends, SIGKILL.
    ///
    /// The run ends when the shell exits: its output is read for a short moment more
    /// (what it wrote last), and processes it left in the background keep running, as
    /// under cron, even if they hold its standard output open.
    ///
    /// # Errors
    /// The shell could not be started, or the command exited with a non-zero status or
    /// by a signal; the error names the status and the last line of standard error.
    pub async fn run(&self, ctx: &JobContext) -> Result<(), CommandError> {
        let recovered = if ctx.cause() == slotcron::Cause::Recovered { "1" } else { "0" };
        let env = [
            ("SLOTCRON_JOB", ctx.job().to_owned()),
            ("SLOTCRON_TRIGGER", ctx.trigger().to_string()),
            ("SLOTCRON_INSTANCE", ctx.instance().to_owned()),
            ("SLOTCRON_FENCING_TOKEN", ctx.fencing_token().to_string()),
            ("SLOTCRON_ATTEMPT", ctx.attempt().to_string()),
            ("SLOTCRON_RECOVERED", recovered.to_owned()),
        ];
        let stop_reason = || {
            if ctx.is_cancelled_by_operator() {
                "the run was cancelled (slotcron cancel, or the admin API)"
            } else if ctx.is_scheduler_stopping() {
                "the daemon is stopping"
            } else {
                "its overlap policy stopped the run (replaced, or its lease was lost)"
            }
        };
        let launch = Launch {
            job: ctx.job(),
            trigger: ctx.trigger(),
            env: &env,
            cancel: ctx.cancellation_token(),
            stop_reason: &stop_reason,
            run: Some(ctx),
        };
        let (tail, started) = (Tail::new(ctx.attempt()), Instant::now());
        let result = self.start(&launch, Some(&tail)).await;
        tail.save(ctx, attempt_end(&result), started.elapsed()).await;
        result
    }

    /// Runs the command once, as [`ShellCommand::run`] describes, with `launch.env` set
    /// after the command's own environment, stopped by `launch.cancel`; its output is
    /// logged, not kept.
    ///
    /// # Errors
    /// As [`ShellCommand::run`].
    pub async fn launch(&self, launch: &Launch<'_>) -> Result<(), CommandError> {
        self.start(launch, None).await
    }

    /// [`ShellCommand::launch`], keeping the output in `tail` if given.
    async fn start(&self, launch: &Launch<'_>, tail: Option<&Tail>) -> Result<(), CommandError> {
        let job = launch.job;
        let mut command = tokio::process::Command::new(&*self.shell);
        if let Some(dir) = &self.working_dir {
            command.current_dir(dir);
        }
        let switch = self.user.as_deref().map(user::Switch::to).transpose().map_err(CommandError::User)?;
        let forked = switch.is_some();
        if let Some(switch) = switch {
            switch.apply(&mut command);
        }
        let script = match launch.run {
            Some(ctx) => {
                let run = (ctx.job(), ctx.trigger(), ctx.cause());
                journal::note_start(&mut command, (&self.shell, forked), &self.script, run)
                    .map_err(CommandError::Journal)?
            }
            None => std::borrow::Cow::Borrowed(self.script.as_str()),
        };
        // Mail only where a sendmail exists (its absence is warned of at start-up).
        let mail =
            self.mailto.as_ref().and_then(|to| Some((to, mail::sendmail()?, mail::Collected::default())));
        let mut child = command
            .arg("-c")
            .arg(&*script)
            .envs(self.env.iter().map(|(name, value)| (name, value)))
            .envs(launch.env.iter().map(|(name, value)| (name, value)))
            .stdin(if self.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|error| CommandError::Spawn {
                shell: self.shell.clone(),
                dir: self.working_dir.clone(),
                error,
            })?;
        let started = Instant::now();
        let pid = child.id().unwrap_or_default();
        let group = ProcessGroup::led_by(pid, job, launch.trigger);
        // In the run's record: a daemon that dies now leaves what stops it at the next start.
        if let Some(ctx) = launch.run
            && let Some(process) = process_group::run_process(pid)
        {
            ctx.started_process(process);
        }
        match launch.run {
            Some(_) => tracing::info!(job, trigger = %launch.trigger, pid, "command started"),
            None => tracing::info!(job, trigger = %launch.trigger, pid, "failure hook started"),
        }

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
        let collect = mail.as_ref().map(|(_, _, collected)| collected);
        let stdout =
            output::log_lines(child.stdout.take(), job, OutputStream::Stdout, &exited, tail, collect);
        let stderr =
            output::log_lines(child.stderr.take(), job, OutputStream::Stderr, &exited, tail, collect);
        let cancel = launch.cancel;
        let exit = async {
            let status = tokio::select! {
                status = child.wait() => status,
                () = cancel.cancelled() => {
                    let trigger = launch.trigger;
                    match self.timeout.filter(|timeout| started.elapsed() + TIMEOUT_SLACK >= *timeout) {
                        Some(timeout) => tracing::warn!(
                            job,
                            %trigger,
                            pid,
                            "timed out after {}: sending SIGTERM to the command's process group",
                            duration::display(timeout)
                        ),
                        None => tracing::info!(
                            job,
                            %trigger,
                            pid,
                            "{}: sending SIGTERM to the command's process group",
                            (launch.stop_reason)()
                        ),
                    }
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
        if let Some((to, sendmail, collected)) = mail {
            collected.send(&sendmail, to, job, &self.script).await;
        }
        let status = status.map_err(CommandError::Wait)?;
        if status.success() { Ok(()) } else { Err(CommandError::Exit { status, last_stderr }) }
    }
}
