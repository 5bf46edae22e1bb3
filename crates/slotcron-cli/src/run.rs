//! `slotcron run FILE`: the daemon. Scheduler construction lives here, in
//! [`Settings::scheduler`], and nowhere else.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use slotcron::{CancellationToken, Coordinator, Scheduler, SchedulerBuilder};
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::cli::RunArgs;
use crate::coordination::{self, Redis};
use crate::jobs_file::{self, Coordination, JobsFile};
use crate::state::{State, StateUrl};
use crate::{INVALID_INPUT, duration, process_group};

/// How the daemon's scheduler is set up.
#[derive(Debug, Clone)]
pub struct Settings {
    /// This daemon's instance id, in logs, claims, run records and `SLOTCRON_INSTANCE`
    /// (`--instance`, default `{hostname}-{pid}`).
    pub instance: String,
    /// Where job state and run history are kept (`--state`).
    pub state: StateUrl,
    /// The Redis to claim triggers in, and its key prefix (see [`Redis::choose`]), if
    /// any.
    pub redis: Option<Redis>,
    /// At SIGINT/SIGTERM/SIGHUP, how long running commands may go on before they get SIGTERM.
    pub shutdown_timeout: Duration,
    /// How long a command may take to stop after SIGTERM (timeout or shutdown) before
    /// its process group gets SIGKILL.
    pub cancel_grace: Duration,
    /// How far this daemon's clock may be off its coordinator's (`--clock-skew-slack`,
    /// `[coordination] slack`, default [`SchedulerBuilder::DEFAULT_SLACK`]).
    pub slack: Duration,
}

/// What the scheduler works with, opened and connected at start-up.
pub struct Backends {
    /// The store and the ledger.
    pub state: State,
    /// The coordinator that arbitrates claims; `None` in single-replica mode.
    pub coordinator: Option<Arc<dyn Coordinator>>,
}

impl Settings {
    /// Running commands get this long to finish at shutdown.
    pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);
    /// SIGKILL follows SIGTERM after this long.
    pub const CANCEL_GRACE: Duration = Duration::from_secs(5);

    /// The settings for `slotcron run` with these arguments, the `SLOTCRON_REDIS_*`
    /// environment variables and the jobs file's `[coordination]` table: the place where
    /// options become settings.
    ///
    /// # Errors
    /// An invalid `--state` URL, or Redis settings [`Redis::choose`] refuses.
    pub fn from_args(args: &RunArgs, file: &Coordination) -> Result<Self, String> {
        let redis = Redis::choose(args, file)?;
        Ok(Self {
            instance: args.instance.clone().unwrap_or_else(default_instance),
            state: StateUrl::parse(&args.state.url).map_err(|e| format!("--state: {e}"))?,
            redis,
            shutdown_timeout: Self::SHUTDOWN_TIMEOUT,
            cancel_grace: Self::CANCEL_GRACE,
            slack: args.clock_skew_slack.or(file.slack).unwrap_or(SchedulerBuilder::DEFAULT_SLACK),
        })
    }

    /// Connects the Redis if one is given (see [`coordination::connect_redis`]), then opens
    /// the state, whose PostgreSQL coordinates when there is no Redis
    /// ([`coordination::of_state`]).
    ///
    /// # Errors
    /// The state or the coordinator cannot be used; the message names the URL (without
    /// its password) and the cause.
    pub async fn backends(&self) -> Result<Backends, String> {
        let redis = match &self.redis {
            Some(redis) => Some(coordination::connect_redis(redis).await?),
            None => None,
        };
        tracing::info!(state = %self.state, "opening the state");
        let state = State::open(&self.state).await.map_err(|e| format!("cannot open the state: {e}"))?;
        tracing::info!(state = %self.state, "keeping job state and run history");
        let coordinator = redis.or_else(|| coordination::of_state(&state, &self.state));
        Ok(Backends { state, coordinator })
    }

    /// The scheduler these settings describe on `backends`, draining running commands at
    /// shutdown.
    pub fn scheduler(&self, backends: &Backends) -> SchedulerBuilder {
        let mut builder = Scheduler::builder().instance(&self.instance);
        if let Some(coordinator) = &backends.coordinator {
            builder = builder.coordinator(coordinator.clone());
        }
        let builder = builder
            .ledger(backends.state.ledger.clone())
            .drain_on_shutdown(true)
            .shutdown_timeout(self.shutdown_timeout)
            .cancel_grace(self.cancel_grace)
            .slack(self.slack);
        match &backends.state.store {
            Some(store) => builder.store(store.clone()),
            None => builder,
        }
    }
}

/// `{hostname}-{pid}`: unique among the daemons of a fleet.
fn default_instance() -> String {
    let host = nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok());
    format!("{}-{}", host.as_deref().unwrap_or("localhost"), std::process::id())
}

/// Runs the jobs of `args.file` until SIGINT, SIGTERM or SIGHUP, then lets running commands
/// finish (bounded by the shutdown timeout; a second signal kills them at once) and exits
/// with status 0. An invalid file:
/// every problem on standard error, exit status 2. A state or coordinator that cannot be
/// used at start (see [`Settings::backends`]): the reason on standard error, exit
/// status 2.
pub fn run(args: &RunArgs) -> ExitCode {
    let loaded = match jobs_file::load(&args.file) {
        Ok(loaded) => loaded,
        Err(problems) => {
            eprintln!("{problems}");
            return ExitCode::from(INVALID_INPUT);
        }
    };
    let settings = match Settings::from_args(args, &loaded.coordination) {
        Ok(settings) => settings,
        Err(e) => return start_failed(&e),
    };
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
    let mut stop = match StopSignals::install() {
        Ok(stop) => stop,
        Err(e) => {
            tracing::error!("cannot install the SIGINT/SIGTERM/SIGHUP handlers: {e}");
            return ExitCode::FAILURE;
        }
    };
    let path = loaded.path.clone();
    // A stop asked for while the state or the coordinator is still connecting (each
    // bounded by its own timeout) is a stop like any other: at once, status 0.
    let started = tokio::select! {
        started = start(loaded, settings) => started,
        signal = stop.next() => {
            tracing::info!(signal, "stopping before the start-up finished");
            return ExitCode::SUCCESS;
        }
    };
    let scheduler = match started {
        Ok(scheduler) => scheduler,
        Err(code) => return code,
    };
    tracing::info!(file = %path.display(), instance = %settings.instance, "slotcron running; stop with Ctrl-C, SIGTERM or SIGHUP");
    let cancel = CancellationToken::new();
    let shutdown_timeout = duration::display(settings.shutdown_timeout);
    tokio::spawn(stop.cancel_on_signal(cancel.clone(), shutdown_timeout));
    scheduler.run(cancel).await;
    ExitCode::SUCCESS
}

/// Opens the backends, adds the jobs and restores their state: the scheduler ready to
/// run, or the exit status of a failed start (its reason already on standard error).
async fn start(loaded: JobsFile, settings: &Settings) -> Result<Scheduler, ExitCode> {
    let backends = settings.backends().await.map_err(|e| start_failed(&e))?;
    let scheduler = settings.scheduler(&backends).build();
    for entry in loaded.jobs {
        let job = entry.job.name().to_owned();
        if let Err(e) = scheduler.add(entry.job) {
            tracing::error!("{e}");
            return Err(ExitCode::from(INVALID_INPUT));
        }
        tracing::info!(job, line = entry.line, schedule = %entry.schedule, "job loaded");
    }
    // Read each job's last trigger now, so that a state that cannot be read stops the
    // daemon here rather than jobs starting without it.
    if let Err(e) = scheduler.restore().await {
        return Err(start_failed(&format!("cannot read the state {}: {e}", settings.state)));
    }
    Ok(scheduler)
}

/// Reports why the daemon cannot start, on one line (a PostgreSQL error's `DETAIL` and
/// `HINT` lines joined with `; `): exit status 2.
fn start_failed(reason: &str) -> ExitCode {
    let lines: Vec<&str> = reason.lines().map(str::trim).filter(|line| !line.is_empty()).collect();
    eprintln!("slotcron run: {}", lines.join("; "));
    ExitCode::from(INVALID_INPUT)
}

/// SIGINT, SIGTERM and SIGHUP, installed before the first job starts. SIGHUP (the
/// terminal or SSH session closing) stops the daemon as SIGTERM does: its default action
/// would kill the daemon at once and leave the commands, in their own process groups,
/// running unwatched and unrecorded.
struct StopSignals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl StopSignals {
    fn install() -> std::io::Result<Self> {
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    /// The next SIGINT, SIGTERM or SIGHUP: its name.
    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.interrupt.recv() => "SIGINT",
            _ = self.terminate.recv() => "SIGTERM",
            _ = self.hangup.recv() => "SIGHUP",
        }
    }

    /// Cancels `cancel` at the first signal. Each later one hurries the shutdown: the
    /// running commands' process groups get SIGKILL at once, and the daemon exits as soon
    /// as their runs are recorded (still with status 0: the stop was asked for).
    async fn cancel_on_signal(mut self, cancel: CancellationToken, shutdown_timeout: String) {
        let name = self.next().await;
        cancel.cancel();
        tracing::info!(
            signal = name,
            "stopping: no new runs; running commands get up to {shutdown_timeout} to finish (signal again to kill them now)"
        );
        loop {
            let name = self.next().await;
            let commands = process_group::kill_all();
            tracing::warn!(
                signal = name,
                commands,
                "stopping now: sending SIGKILL to the running commands' process groups"
            );
        }
    }
}
