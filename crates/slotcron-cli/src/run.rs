//! `slotcron run FILE`: the daemon. Scheduler construction lives here, in
//! [`Settings::scheduler`], and nowhere else.

use std::process::ExitCode;
use std::time::Duration;

use slotcron::{CancellationToken, Scheduler, SchedulerBuilder};
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::cli::RunArgs;
use crate::jobs_file::{self, JobsFile};
use crate::{INVALID_INPUT, duration};

/// How the daemon's scheduler is set up.
#[derive(Debug, Clone)]
pub struct Settings {
    /// This daemon's instance id, in logs, run records and `SLOTCRON_INSTANCE`
    /// (default `{hostname}-{pid}`).
    pub instance: String,
    /// At SIGINT/SIGTERM, how long running commands may go on before they get SIGTERM.
    pub shutdown_timeout: Duration,
    /// How long a command may take to stop after SIGTERM (timeout or shutdown) before
    /// its process group gets SIGKILL.
    pub cancel_grace: Duration,
}

impl Settings {
    /// Running commands get this long to finish at shutdown.
    pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);
    /// SIGKILL follows SIGTERM after this long.
    pub const CANCEL_GRACE: Duration = Duration::from_secs(5);

    /// The settings for `slotcron run` with these arguments: the place where options
    /// such as an instance id or a coordinator URL become settings.
    pub fn from_args(_args: &RunArgs) -> Self {
        Self {
            instance: default_instance(),
            shutdown_timeout: Self::SHUTDOWN_TIMEOUT,
            cancel_grace: Self::CANCEL_GRACE,
        }
    }

    /// The scheduler these settings describe: single-replica mode (in-process
    /// coordinator, in-memory ledger), draining running commands at shutdown.
    pub fn scheduler(&self) -> SchedulerBuilder {
        Scheduler::builder()
            .instance(&self.instance)
            .drain_on_shutdown(true)
            .shutdown_timeout(self.shutdown_timeout)
            .cancel_grace(self.cancel_grace)
    }
}

/// `{hostname}-{pid}`: unique among the daemons of a fleet.
fn default_instance() -> String {
    let host = nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok());
    format!("{}-{}", host.as_deref().unwrap_or("localhost"), std::process::id())
}

/// Runs the jobs of `args.file` until SIGINT or SIGTERM, then lets running commands
/// finish (bounded by the shutdown timeout) and exits with status 0. An invalid file:
/// every problem on standard error, exit status 2.
pub fn run(args: &RunArgs) -> ExitCode {
    let loaded = match jobs_file::load(&args.file) {
        Ok(loaded) => loaded,
        Err(problems) => {
            eprintln!("{problems}");
            return ExitCode::from(INVALID_INPUT);
        }
    };
    let settings = Settings::from_args(args);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(daemon(loaded, &settings))
}

async fn daemon(loaded: JobsFile, settings: &Settings) -> ExitCode {
    let stop = match StopSignals::install() {
        Ok(stop) => stop,
        Err(e) => {
            tracing::error!("cannot install the SIGINT/SIGTERM handlers: {e}");
            return ExitCode::FAILURE;
        }
    };
    let scheduler = settings.scheduler().build();
    for entry in loaded.jobs {
        let job = entry.job.name().to_owned();
        if let Err(e) = scheduler.add(entry.job) {
            tracing::error!("{e}");
            return ExitCode::from(INVALID_INPUT);
        }
        tracing::info!(job, line = entry.line, schedule = %entry.schedule, "job loaded");
    }
    tracing::info!(file = %loaded.path.display(), instance = %settings.instance, "slotcron running; stop with Ctrl-C or SIGTERM");
    let cancel = CancellationToken::new();
    let shutdown_timeout = duration::display(settings.shutdown_timeout);
    tokio::spawn(stop.cancel_on_signal(cancel.clone(), shutdown_timeout));
    scheduler.run(cancel).await;
    ExitCode::SUCCESS
}

/// SIGINT and SIGTERM, installed before the first job starts.
struct StopSignals {
    interrupt: Signal,
    terminate: Signal,
}

impl StopSignals {
    fn install() -> std::io::Result<Self> {
        Ok(Self { interrupt: signal(SignalKind::interrupt())?, terminate: signal(SignalKind::terminate())? })
    }

    /// Cancels `cancel` at the first signal.
    async fn cancel_on_signal(mut self, cancel: CancellationToken, shutdown_timeout: String) {
        let name = tokio::select! {
            _ = self.interrupt.recv() => "SIGINT",
            _ = self.terminate.recv() => "SIGTERM",
        };
        cancel.cancel();
        tracing::info!(
            signal = name,
            "stopping: no new runs; running commands get up to {shutdown_timeout} to finish"
        );
    }
}
