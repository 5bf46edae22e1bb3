//! `slotcron run FILE`: the daemon. Scheduler construction lives here, in
//! [`Settings::scheduler`], and nowhere else.

use std::collections::HashSet;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use slotcron::DEFAULT_MEMBERSHIP_TTL;
use slotcron::{CancellationToken, Coordinator, Labels, Leftover, Retention, Scheduler, SchedulerBuilder};
use slotcron_admin::{Reload, ReloadStatus};

use crate::admin::AdminSettings;
use crate::cli::RunArgs;
use crate::command::{self, KeepingOutput};
use crate::coordination::{self, Redis};
use crate::hook::{FailureHooks, HOOK_TIMEOUT};
use crate::jobs_file::{self, Coordination, Format, GraceFloor, JobsFile, LoneLabels};
use crate::reload::{Reloader, Triggers};
use crate::settings::{self, Listen};
use crate::signals::{self, StopSignals};
use crate::state::{State, StateUrl};
use crate::state_jobs::StateJobs;
use crate::state_lock::StateLock;
use crate::zone::{self, LocalZone};
use crate::{INVALID_INPUT, duration, process_group};

/// Up to this many jobs, start-up logs a line for each at info level; beyond, one
/// summary line (and each job at debug level).
const LOGGED_JOBS: usize = 100;

/// How often the daemon applies the history's retention to every job (and once at
/// start), besides the pruning its ledger does as it appends: a quiet daemon's history is
/// pruned too.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// How the daemon's scheduler is set up.
#[derive(Debug, Clone)]
pub struct Settings {
    /// This daemon's instance id, in logs, claims, run records and `SLOTCRON_INSTANCE`
    /// (`--instance`, default `{hostname}-{pid}`).
    pub instance: String,
    /// Where job state and run history are kept (`--state`).
    pub state: StateUrl,
    /// How much run history is kept (the jobs file's `[history]`).
    pub retention: Retention,
    /// The Redis to claim triggers in, and its key prefix (see [`Redis::choose`]), if
    /// any.
    pub redis: Option<Redis>,
    /// At SIGINT/SIGTERM, how long running commands may go on before they get SIGTERM.
    pub shutdown_timeout: Duration,
    /// How long a command may take to stop after SIGTERM (timeout or shutdown) before
    /// its process group gets SIGKILL.
    pub cancel_grace: Duration,
    /// The jobs file's `max_concurrent_runs`: runs in flight at once; `None`: no cap.
    pub max_concurrent_runs: Option<usize>,
    /// The jobs' `on_failure` commands.
    pub failure_hooks: FailureHooks,
    /// How far this daemon's clock may be off its coordinator's (`--clock-skew-slack`,
    /// `[coordination] slack`, default [`SchedulerBuilder::DEFAULT_SLACK`]).
    pub slack: Duration,
    /// Shared work across the fleet (see [`Fleet::choose`]).
    pub fleet: Fleet,
    /// The admin API, if asked for (see [`AdminSettings::choose`]).
    pub admin: Option<AdminSettings>,
    /// Whether metrics carry a `job` label (`--metrics-per-job`).
    pub metrics_per_job: bool,
    /// Whether each job has its own histograms (`--metrics-per-job-histograms`).
    pub metrics_per_job_histograms: bool,
    /// The spawn journal (`--spawn-journal`, else [`default_spawn_journal`]); none
    /// without a place for one.
    pub spawn_journal: Option<PathBuf>,
    /// Whether `spawn_journal` was given (`--spawn-journal`, `SLOTCRON_SPAWN_JOURNAL`): one
    /// that cannot be written then stops the start, where a default one is only warned of.
    pub spawn_journal_given: bool,
    /// The daemon's own zone, which the crontab's lines without `CRON_TZ=` or `TZ=` run
    /// in: a [fleet setting](SchedulerBuilder::fleet_setting) every member must share.
    pub crontab_zone: Option<LocalZone>,
    /// The labels this daemon carries (`--label`), published in the fleet's membership:
    /// the jobs placed on labels (`on`) run only on the daemons that carry them.
    pub labels: Labels,
}

/// The [fleet setting](SchedulerBuilder::fleet_setting) of the zone a crontab's lines
/// without `CRON_TZ=` or `TZ=` run in.
pub const CRONTAB_ZONE_SETTING: &str = "crontab_zone";

/// Where the spawn journal goes unless `--spawn-journal` says: `PATH.spawned` beside a
/// SQLite state's file; `slotcron-{instance}.spawned` in the working directory with a
/// PostgreSQL state and an `--instance` given (characters other than ASCII letters,
/// digits, `.`, `_` and `-` become `_`); none otherwise (a memory state keeps no runs, and
/// a default instance id is new at every start).
fn default_spawn_journal(state: &StateUrl, instance: Option<&str>) -> Option<PathBuf> {
    match (state, instance) {
        (StateUrl::Sqlite { path, .. }, _) => {
            let mut name = path.as_os_str().to_owned();
            name.push(".spawned");
            Some(PathBuf::from(name))
        }
        (StateUrl::Postgres { .. }, Some(instance)) => {
            let safe = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
            let name: String = instance.chars().map(|c| if safe(c) { c } else { '_' }).collect();
            Some(PathBuf::from(format!("slotcron-{name}.spawned")))
        }
        _ => None,
    }
}

/// How the daemons of a fleet share the work: each trigger's owner claims it at once, the
/// others take over what it left unclaimed after the takeover delay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fleet {
    /// The takeover delay and where it was given (`--takeover-delay`, `[coordination]
    /// takeover_delay`, default [`SchedulerBuilder::DEFAULT_TAKEOVER_DELAY`]).
    pub takeover_delay: (Duration, &'static str),
    /// The membership TTL and where it was given (`--membership-ttl`, `[coordination]
    /// membership_ttl`, default [`DEFAULT_MEMBERSHIP_TTL`]).
    pub membership_ttl: (Duration, &'static str),
    /// `[coordination] shared_work` (default `true`).
    pub shared_work: bool,
}

impl Fleet {
    /// The flags first, then the jobs file's `[coordination]` keys, then the defaults.
    ///
    /// # Errors
    /// A takeover delay not shorter than the membership TTL, naming where each was given.
    pub fn choose(args: &RunArgs, file: &Coordination) -> Result<Self, String> {
        let pick = |flag: Option<Duration>, flag_name, key: Option<Duration>, key_name, default| {
            flag.map(|d| (d, flag_name)).or(key.map(|d| (d, key_name))).unwrap_or(default)
        };
        let takeover_delay = pick(
            args.takeover_delay,
            "--takeover-delay",
            file.takeover_delay,
            "[coordination] takeover_delay",
            (SchedulerBuilder::DEFAULT_TAKEOVER_DELAY, "the default"),
        );
        let membership_ttl = pick(
            args.membership_ttl,
            "--membership-ttl",
            file.membership_ttl,
            "[coordination] membership_ttl",
            (DEFAULT_MEMBERSHIP_TTL, "the default"),
        );
        settings::check_takeover_delay(takeover_delay.0, membership_ttl.0, membership_ttl.1).map_err(
            |e| match takeover_delay.1 {
                "the default" => format!("the default takeover delay, {e}"),
                source => format!("{source}: {e}"),
            },
        )?;
        Ok(Self { takeover_delay, membership_ttl, shared_work: file.shared_work.unwrap_or(true) })
    }
}

/// What the scheduler works with, opened and connected at start-up.
pub struct Backends {
    /// The store and the ledger.
    pub state: State,
    /// The coordinator that arbitrates claims; `None` in single-replica mode.
    pub coordinator: Option<Arc<dyn Coordinator>>,
    /// The lock of a SQLite state, held while the daemon runs.
    pub lock: Option<StateLock>,
}

impl Settings {
    /// Running commands get this long to finish at shutdown: with [`Self::CANCEL_GRACE`]
    /// and the time to record the runs, within Kubernetes' default 30 s grace period.
    pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(20);
    /// SIGKILL follows SIGTERM after this long.
    pub const CANCEL_GRACE: Duration = Duration::from_secs(5);

    /// The settings for `slotcron run` with these arguments, the `SLOTCRON_REDIS_*`
    /// environment variables, the jobs file's `[coordination]` table and its
    /// `shutdown_timeout` (`--shutdown-timeout` first, then the file's, then
    /// [`Self::SHUTDOWN_TIMEOUT`]): the place where options become settings.
    ///
    /// # Errors
    /// An invalid `--state` URL, Redis settings [`Redis::choose`] refuses, a takeover
    /// delay [`Fleet::choose`] refuses, or a key given twice in `--label`.
    pub fn from_args(
        args: &RunArgs,
        file: &Coordination,
        file_shutdown_timeout: Option<Duration>,
    ) -> Result<Self, String> {
        let redis = Redis::choose(args.redis.as_deref(), args.redis_prefix.as_deref(), file)?;
        let failure_hooks = FailureHooks::new(HOOK_TIMEOUT, Self::CANCEL_GRACE);
        let admin = AdminSettings::choose(args, file.admin_listen.as_deref())?;
        let state = StateUrl::parse(&args.state.url).map_err(|e| format!("--state: {e}"))?;
        let spawn_journal =
            args.spawn_journal.clone().or_else(|| default_spawn_journal(&state, args.instance.as_deref()));
        Ok(Self {
            spawn_journal,
            spawn_journal_given: args.spawn_journal.is_some(),
            admin,
            metrics_per_job: args.metrics_per_job,
            metrics_per_job_histograms: args.metrics_per_job_histograms,
            instance: args.instance.clone().unwrap_or_else(default_instance),
            state,
            retention: Retention::default(),
            redis,
            shutdown_timeout: args
                .shutdown_timeout
                .or(file_shutdown_timeout)
                .unwrap_or(Self::SHUTDOWN_TIMEOUT),
            cancel_grace: Self::CANCEL_GRACE,
            max_concurrent_runs: None,
            crontab_zone: None,
            labels: Labels::parse(&args.labels).map_err(|e| format!("--label: {e}"))?,
            failure_hooks,
            slack: args.clock_skew_slack.or(file.slack).unwrap_or(SchedulerBuilder::DEFAULT_SLACK),
            fleet: Fleet::choose(args, file)?,
        })
    }

    /// Whether a coordinator arbitrates the claims: a Redis, or a PostgreSQL state.
    fn coordinated(&self) -> bool {
        self.redis.is_some() || self.state.coordinates()
    }

    /// This daemon's labels, if it runs without a coordinator: the jobs placed on labels
    /// it lacks are then refused at start (a reload that adds one leaves it out, as the
    /// scheduler refuses it).
    pub fn lone_labels(&self) -> LoneLabels {
        LoneLabels::new(&self.labels, self.coordinated())
    }

    /// The takeover delay every job's grace window must exceed: the daemons share the
    /// work only with a coordinator and `shared_work`.
    pub fn grace_floor(&self) -> GraceFloor {
        GraceFloor::new((self.coordinated() && self.fleet.shared_work).then_some(self.fleet.takeover_delay))
    }

    /// Takes the jobs file's concurrency cap, failure hooks and history retention, and
    /// the daemon's own zone when a crontab line runs in it.
    pub fn with_policies_of(mut self, file: &JobsFile) -> Self {
        self.max_concurrent_runs = file.max_concurrent_runs;
        self.retention = file.history.retention();
        self.crontab_zone = file.local_zone.clone();
        self.failure_hooks.set(&file.jobs);
        self
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
        let state = State::open(&self.state, self.retention)
            .await
            .map_err(|e| format!("cannot open the state: {e}"))?;
        // One daemon per SQLite file: its lock, taken once the file is known to be usable
        // (so that a file this user may not write is refused with its own cause).
        let lock = match &self.state {
            StateUrl::Sqlite { url, path } => Some(StateLock::take(url, path)?),
            StateUrl::Postgres { .. } | StateUrl::Memory => None,
        };
        match self.state {
            StateUrl::Memory => {
                tracing::info!(state = %self.state, "job state and run history are kept in memory only: lost at exit")
            }
            _ => {
                let Retention { max_age, max_records_per_job } = self.retention;
                tracing::info!(
                    state = %self.state,
                    history_retention = %max_age.map_or_else(|| "none".into(), duration::display),
                    history_per_job = max_records_per_job,
                    "keeping job state and run history (each job's last success and last failure are always kept)"
                )
            }
        }
        let coordinator = redis.or_else(|| coordination::of_state(&state, &self.state));
        Ok(Backends { state, coordinator, lock })
    }

    /// The scheduler these settings describe on `backends`, draining running commands at
    /// shutdown. Its jobs are the file's (and, with `--jobs-from-state`, the state's
    /// command jobs, see [`Reloader`]), never the library definitions a shared state may
    /// also hold: [`Scheduler::restore`] reads only the jobs' state.
    pub fn scheduler(&self, backends: &Backends) -> SchedulerBuilder {
        let mut builder = Scheduler::builder().instance(&self.instance).restore_definitions(false);
        if let Some(coordinator) = &backends.coordinator {
            builder = builder.coordinator(coordinator.clone());
        }
        if let Some(max) = self.max_concurrent_runs {
            builder = builder.max_concurrent_runs(max);
        }
        builder = builder.observer(self.failure_hooks.observer());
        if let Some(zone) = &self.crontab_zone {
            // Compared by what the zone does (its fingerprint), shown by its name.
            builder = builder
                .fleet_setting(CRONTAB_ZONE_SETTING, zone::fingerprint(&zone.zone))
                .member_about(CRONTAB_ZONE_SETTING, &zone.name);
        }
        builder = self.about(builder).labels(self.labels.clone());
        let builder = builder
            .ledger(backends.state.ledger.clone())
            .drain_on_shutdown(true)
            .shutdown_timeout(self.shutdown_timeout)
            .cancel_grace(self.cancel_grace)
            .slack(self.slack)
            .shared_work(self.fleet.shared_work)
            .takeover_delay(self.fleet.takeover_delay.0)
            .membership_ttl(self.fleet.membership_ttl.0)
            // Without the admin server no recorder is installed: nothing to count.
            .metrics(self.admin.is_some())
            .metrics_per_job(self.metrics_per_job)
            .metrics_per_job_histograms(self.metrics_per_job_histograms);
        match &backends.state.store {
            Some(store) => builder.store(store.clone()),
            None => builder,
        }
    }
}

impl Settings {
    /// What this daemon says of itself in the fleet's membership: its host, version, start
    /// time, admin address and, for a PostgreSQL state, which other members record in too,
    /// that state (without its password, [`slotcron_admin::SHARED_LEDGER`]).
    fn about(&self, builder: SchedulerBuilder) -> SchedulerBuilder {
        let mut builder = builder
            .member_about("host", hostname().unwrap_or_default())
            .member_about("version", env!("CARGO_PKG_VERSION"))
            .member_about("started", slotcron::jiff::Timestamp::now().to_string());
        if matches!(self.state, StateUrl::Postgres { .. }) {
            builder = builder.member_about(slotcron_admin::SHARED_LEDGER, self.state.to_string());
        }
        match self.admin.as_ref().map(|admin| &admin.listen) {
            Some(Listen::Tcp(addr)) => builder.member_about("admin", addr.to_string()),
            Some(Listen::Unix(path)) => builder.member_about("admin", format!("unix:{}", path.display())),
            None => builder,
        }
    }
}

/// `{hostname}-{pid}`: unique among the daemons of a fleet.
fn default_instance() -> String {
    format!("{}-{}", hostname().as_deref().unwrap_or("localhost"), std::process::id())
}

/// This host's name, if it has a UTF-8 one.
fn hostname() -> Option<String> {
    nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok())
}

/// Runs the jobs of `args.file` until SIGINT or SIGTERM, then lets running commands
/// finish (bounded by the shutdown timeout; a second signal kills them at once) and exits
/// with status 0. SIGHUP and SIGUSR2 (and, with `--watch`, a change of the file) reload
/// the file (see [`Reloader::reload`]). An invalid file:
/// every problem on standard error, exit status 2. A state or coordinator that cannot be
/// used at start (see [`Settings::backends`]): the reason on standard error, exit
/// status 2.
pub fn run(args: &RunArgs) -> ExitCode {
    let loaded = match jobs_file::load(&args.file, Format::of(&args.file, args.system_crontab)) {
        Ok(loaded) => loaded,
        Err(problems) => {
            eprintln!("{problems}");
            return ExitCode::from(INVALID_INPUT);
        }
    };
    give_back_freed_memory();
    if let Some((file, line)) = loaded.mails_from.as_ref().filter(|_| command::sendmail().is_none()) {
        tracing::warn!(
            file = %file.display(),
            line,
            "MAILTO is set, but no sendmail is on PATH: the output of its jobs is not mailed"
        );
    }
    let settings = match Settings::from_args(args, &loaded.coordination, loaded.shutdown_timeout) {
        Ok(settings) => settings.with_policies_of(&loaded),
        Err(e) => return start_failed(&e),
    };
    if let Err(e) = settings.grace_floor().check(&loaded) {
        return start_failed(&e);
    }
    if let Err(refused) = settings.lone_labels().check(&loaded) {
        return start_failed(&refused.to_string());
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(daemon(loaded, &settings, args))
}

/// Hands the memory the load freed (a big file's parsed pieces, on the threads that read
/// them) back to the system: glibc keeps each thread's freed memory for that thread, and
/// the scheduler's threads could not use it. On a thread of its own, so that the start
/// goes on beside it (the walk takes about 0.3 s after a million-job file).
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim only walks and releases the allocator's free memory, taking
        // each arena's lock as it goes.
        let trim = || unsafe {
            nix::libc::malloc_trim(0);
        };
        if std::thread::Builder::new().name("malloc-trim".into()).spawn(trim).is_err() {
            trim();
        }
    }
}

async fn daemon(loaded: JobsFile, settings: &Settings, args: &RunArgs) -> ExitCode {
    let watch = args.watch;
    let mut stop = match StopSignals::install() {
        Ok(stop) => stop,
        Err(e) => {
            tracing::error!("cannot install the SIGINT/SIGTERM handlers: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = signals::ignore_others() {
        tracing::error!("cannot install the SIGUSR1/SIGQUIT/SIGWINCH/SIGPIPE handlers: {e}");
        return ExitCode::FAILURE;
    }
    // Before anything can take long: a SIGHUP from then on is a reload, never a stop.
    let mut triggers = match Triggers::install(&loaded.path, watch) {
        Ok(triggers) => triggers,
        Err(e) => return start_failed(&e),
    };
    let path = loaded.path.clone();
    // A stop asked for while the state or the coordinator is still connecting (each
    // bounded by its own timeout) is a stop like any other: at once, status 0.
    let started = tokio::select! {
        started = start(loaded, settings, args.jobs_from_state) => started,
        signal = stop.next() => {
            tracing::info!(signal, "stopping before the start-up finished");
            return ExitCode::SUCCESS;
        }
    };
    // The state's lock is held until the daemon exits.
    let Started { scheduler, reloader, reloads, admin, keeping_output: _keeping_output, lock: _lock } =
        match started {
            Ok(started) => started,
            Err(code) => return code,
        };
    tracing::info!(
        file = %path.display(),
        instance = %settings.instance,
        watch,
        "slotcron running; reload with SIGHUP or SIGUSR2, stop with Ctrl-C or SIGTERM"
    );
    let cancel = CancellationToken::new();
    if let Some(state_jobs) = reloader.state_jobs() {
        triggers.on_state_changes(state_jobs.watch());
    }
    let reloads = tokio::spawn(reloader.serve(triggers, reloads, cancel.clone()));
    let shutdown_timeout = duration::display(settings.shutdown_timeout);
    tokio::spawn(stop.cancel_on_signal(cancel.clone(), shutdown_timeout));
    // The admin API answers until the scheduler has stopped (`/healthz` says so
    // meanwhile).
    let admin_stop = CancellationToken::new();
    let admin = admin.map(|serve| tokio::spawn(serve(scheduler.clone(), admin_stop.clone())));
    // On a shared PostgreSQL state, the sweep goes on: the runs of a daemon that left the
    // fleet's membership are recorded interrupted by a live member.
    let sweeping = async {
        while let StateUrl::Postgres { .. } = settings.state {
            tokio::select! {
                () = tokio::time::sleep(settings.fleet.membership_ttl.0) => {
                    sweep_stale(&scheduler, settings, Sweep::Periodic, None).await
                }
                () = cancel.cancelled() => return,
            }
        }
    };
    tokio::join!(scheduler.run(cancel.clone()), sweeping, prune_history(&scheduler, &cancel));
    admin_stop.cancel();
    if let Some(admin) = admin {
        let _ = admin.await;
    }
    _ = reloads.await;
    ExitCode::SUCCESS
}

/// Applies the history's retention to every job at once and then every [`PRUNE_EVERY`],
/// until `cancel` fires. A pruning that fails is logged; the next one tries again.
async fn prune_history(scheduler: &Scheduler, cancel: &CancellationToken) {
    loop {
        match scheduler.ledger().prune(slotcron::jiff::Timestamp::now()).await {
            Ok(deleted) => tracing::debug!(deleted, "run history pruned"),
            Err(e) => tracing::warn!(
                "pruning the run history failed: {e}; tried again in {}",
                duration::display(PRUNE_EVERY)
            ),
        }
        tokio::select! {
            () = tokio::time::sleep(PRUNE_EVERY) => {}
            () = cancel.cancelled() => return,
        }
    }
}

/// The admin server, bound, waiting for its scheduler and stop signal.
type ServeAdmin =
    Box<dyn FnOnce(Scheduler, CancellationToken) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// A daemon ready to run.
struct Started {
    scheduler: Scheduler,
    /// What reloads its jobs.
    reloader: Reloader,
    /// Where each reload is recorded for the admin API.
    reloads: ReloadStatus,
    /// The admin server, if asked for.
    admin: Option<ServeAdmin>,
    /// Keeps run output in the state while it lives.
    keeping_output: KeepingOutput,
    /// The SQLite state's lock, held while the daemon runs.
    lock: Option<StateLock>,
}

/// Opens the backends, binds the admin address, adds the jobs, restores their state and
/// sweeps the runs a previous start left `running`: the daemon ready to run, or the exit
/// status of a failed start (its reason already on standard error).
async fn start(loaded: JobsFile, settings: &Settings, jobs_from_state: bool) -> Result<Started, ExitCode> {
    let loaded_no_jobs = loaded.no_jobs();
    let loaded_skipped = loaded.directory.clone();
    // Installed first, so that the first metrics of the jobs are recorded.
    let metrics = match &settings.admin {
        Some(_) => Some(slotcron_admin::PrometheusMetrics::install().map_err(|e| start_failed(&e))?),
        None => None,
    };
    let mut backends = settings.backends().await.map_err(|e| start_failed(&e))?;
    let keeping_output = command::keep_output_in(backends.state.outputs.clone());
    let reloads = ReloadStatus::default();
    let state_store = match (jobs_from_state, &backends.state.store) {
        (false, _) => None,
        (true, Some(store)) => Some(store.clone()),
        (true, None) => return Err(start_failed("--jobs-from-state needs a sqlite: or postgres:// --state")),
    };
    let serve_admin = match (&settings.admin, metrics) {
        (Some(admin), Some(metrics)) => {
            let bound = admin.bind().await.map_err(|e| start_failed(&e))?;
            let outputs = backends.state.outputs.clone();
            let reloads = reloads.clone();
            let state_jobs = state_store.clone();
            let serve: ServeAdmin = Box::new(move |scheduler, stop| {
                Box::pin(bound.serve(scheduler, metrics, outputs, reloads, state_jobs, stop))
            });
            Some(serve)
        }
        _ => None,
    };
    let scheduler = settings.scheduler(&backends).build();
    if let Some(zone) = &settings.crontab_zone {
        tracing::info!(zone = %zone.name, source = zone.source, "crontab lines without CRON_TZ= or TZ= run in the daemon's zone");
    }
    scheduler.check_join().await.map_err(|e| start_failed(&e.to_string()))?;
    let state_jobs = state_store.map(|store| StateJobs::new(store, &settings.instance));
    let mut reloader = Reloader::new(
        scheduler.clone(),
        loaded,
        state_jobs,
        settings.grace_floor(),
        settings.failure_hooks.clone(),
    );
    if let Err(e) = reloader.apply().await {
        tracing::error!("{e}");
        return Err(ExitCode::from(INVALID_INPUT));
    }
    // The jobs loaded at start count as the first successful load.
    let at = slotcron::jiff::Timestamp::now();
    slotcron::record_config_reload(true, at);
    reloads.record(Reload { at, cause: "start".into(), successful: true, error: None });
    crate::reload::log_skipped(loaded_skipped.as_ref());
    let count = reloader.file_jobs().len();
    let each_at_info = count <= LOGGED_JOBS;
    for entry in reloader.file_jobs() {
        let job = entry.job.name();
        if !entry.enabled {
            tracing::info!(job, line = entry.line, "job loaded, disabled (enabled = false): never scheduled");
        } else if each_at_info {
            tracing::info!(job, line = entry.line, schedule = %entry.schedule, "job loaded");
        } else {
            tracing::debug!(job, line = entry.line, schedule = %entry.schedule, "job loaded");
        }
    }
    if !each_at_info {
        tracing::info!(jobs = count, "{count} jobs loaded (each is logged at debug level: RUST_LOG=debug)");
    }
    match loaded_no_jobs {
        Some(no_jobs) if jobs_from_state => tracing::warn!("{no_jobs}: only the state's jobs run"),
        Some(no_jobs) => {
            tracing::warn!(
                "{no_jobs}: the daemon idles (serving its admin API, if one is set) until a reload adds one"
            )
        }
        None => {}
    }
    // Read each job's last trigger now, so that a state that cannot be read stops the
    // daemon here rather than jobs starting without it.
    if let Err(e) = scheduler.restore().await {
        return Err(start_failed(&format!("cannot read the state {}: {e}", settings.state)));
    }
    let journal = begin_spawn_journal(settings).map_err(|e| start_failed(&e))?;
    sweep_stale(&scheduler, settings, Sweep::AtStart, journal.as_ref()).await;
    Ok(Started {
        scheduler,
        reloader,
        reloads,
        admin: serve_admin,
        keeping_output,
        lock: backends.lock.take(),
    })
}

/// Begins this daemon's spawn journal (`settings.spawn_journal`), returning what the
/// previous incarnation's says; logs where it is, and why the previous one is not used
/// (a warning unless there was none). A default journal that cannot be written is warned
/// of: the daemon runs without one, and a run its death leaves between its start mark
/// and its command is then recorded interrupted.
///
/// # Errors
/// A journal given (`--spawn-journal`) that cannot be written: the reason.
fn begin_spawn_journal(settings: &Settings) -> Result<Option<command::journal::Previous>, String> {
    let Some(path) = settings.spawn_journal.as_deref() else {
        if matches!(settings.state, StateUrl::Postgres { .. }) {
            tracing::info!(
                "no spawn journal (give --instance, or --spawn-journal): a run this daemon's death leaves \
                 between its start mark and its command's start will be recorded interrupted, not run"
            );
        }
        return Ok(None);
    };
    match command::journal::begin(path, &settings.instance) {
        Ok(Ok(previous)) => {
            tracing::info!(path = %path.display(), "spawn journal (the previous incarnation's read)");
            Ok(Some(previous))
        }
        Ok(Err(why)) => {
            let line =
                "spawn journal; the previous one is not used: runs left `running` are recorded interrupted";
            if why.starts_with("none was found") {
                tracing::info!(path = %path.display(), why, "{line}");
            } else {
                tracing::warn!(path = %path.display(), why, "{line}");
            }
            Ok(None)
        }
        Err(e) if settings.spawn_journal_given => {
            Err(format!("--spawn-journal {}: cannot write it: {e}", path.display()))
        }
        Err(e) => {
            tracing::warn!(
                path = %path.display(),
                "cannot write the spawn journal ({e}): a run this daemon's death leaves between its \
                 start mark and its command's start will be recorded interrupted, not run"
            );
            Ok(None)
        }
    }
}

/// When a stale sweep runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sweep {
    /// At start, before any run of this daemon: its own instance's `running` records are
    /// a previous incarnation's.
    AtStart,
    /// While running (PostgreSQL): the records of instances that have left the fleet's
    /// membership, never this daemon's own, which are its live runs.
    Periodic,
}

/// The stale sweep: the runs a daemon of this state left `running` when it died are
/// recorded `interrupted`. A SQLite state has one daemon (its lock file), which owns
/// every record in it at start; on a PostgreSQL state a daemon records, at start, the
/// runs of its own instance id (a fixed `--instance`: its previous incarnation), and at
/// every sweep those of each instance that has left the coordinator's membership, as
/// this daemon has seen it for a full membership TTL
/// ([`Scheduler::vouched_members`](slotcron::Scheduler::vouched_members)): never a
/// member's, and none while this daemon cannot vouch for its view (no membership, or
/// reconnected less than a TTL ago).
///
/// Only a previous incarnation's command still going on this host is stopped (its
/// process group, when its pid still names the same process): a daemon never signals
/// another daemon's processes.
async fn sweep_stale(
    scheduler: &Scheduler,
    settings: &Settings,
    when: Sweep,
    journal: Option<&command::journal::Previous>,
) {
    let instance = settings.instance.as_str();
    let members = match when {
        Sweep::AtStart => None,
        Sweep::Periodic => match scheduler.vouched_members() {
            Some(members) => Some(members),
            None => return,
        },
    };
    let gone = |record: &slotcron::RunRecord| {
        let own = *record.instance == *instance;
        match (when, &settings.state, &members) {
            (Sweep::AtStart, StateUrl::Sqlite { .. } | StateUrl::Memory, _) => {
                Some("its daemon stopped before the run ended (found at the next start)".to_owned())
            }
            (Sweep::AtStart, StateUrl::Postgres { .. }, _) => own.then(|| {
                format!(
                    "its daemon, instance {instance}, stopped before the run ended (found at its next start)"
                )
            }),
            (Sweep::Periodic, _, Some(members)) => (!own && !members.iter().any(|m| **m == *record.instance))
                .then(|| {
                    format!(
                        "its daemon, instance {}, left the fleet's membership (its heartbeat lapsed) \
                         before the run ended",
                        record.instance
                    )
                }),
            (Sweep::Periodic, _, None) => None,
        }
    };
    let grace = settings.cancel_grace;
    let signalled = match when {
        Sweep::AtStart => terminate_left_running(scheduler, &gone).await,
        Sweep::Periodic => HashSet::new(),
    };
    let stop = async |record: &slotcron::RunRecord| {
        if let Some(journal) = journal.filter(|j| j.started(record) == Some(false)) {
            let how = format!("the spawn journal {} has no line of it", journal.path().display());
            return Leftover::NeverStarted(how);
        }
        match &record.process {
            Some(process) if when == Sweep::AtStart => {
                let already = signalled.contains(&process.pid);
                Leftover::Stopped(process_group::stop_stale(record, process, grace, already).await)
            }
            Some(_) => {
                Leftover::Stopped("its command was not signalled: a daemon never signals another's".into())
            }
            None => Leftover::Unknown,
        }
    };
    match scheduler.sweep_stale(gone, stop).await {
        Ok(stale) if !stale.is_empty() => {
            tracing::warn!(runs = stale.len(), "runs of a stopped daemon found interrupted")
        }
        Ok(_) => {}
        Err(e) => tracing::error!(
            "the stale sweep failed: {e}; runs left running by a stopped daemon stay `running`"
        ),
    }
    let presumed = match when {
        Sweep::AtStart => slotcron::PresumedSweep::AtStart,
        Sweep::Periodic => slotcron::PresumedSweep::Periodic,
    };
    if let Err(e) = scheduler.skip_after_presumed(presumed).await {
        tracing::warn!(
            "the chained jobs' triggers after runs presumed interrupted wait for the next sweep: {e}"
        );
    }
}

/// Sends SIGTERM at once to every command the runs `gone` names left running on this host,
/// so that the sweep's wait for each (and the daemon's start) takes one grace at most,
/// not one per command; returns the pids signalled. A ledger that cannot be read here is
/// left to the sweep.
async fn terminate_left_running(
    scheduler: &Scheduler,
    gone: &impl Fn(&slotcron::RunRecord) -> Option<String>,
) -> HashSet<u32> {
    let query = slotcron::LedgerQuery {
        outcome: Some(slotcron::Outcome::Running),
        limit: usize::MAX,
        ..slotcron::LedgerQuery::default()
    };
    let Ok(records) = scheduler.ledger().query(&query).await else { return HashSet::new() };
    let mut signalled = HashSet::new();
    for record in records.iter().filter(|record| gone(record).is_some()) {
        if let Some(process) = &record.process
            && process_group::terminate_stale(record, process)
        {
            signalled.insert(process.pid);
        }
    }
    signalled
}

/// Reports why the daemon cannot start, on one line (a PostgreSQL error's `DETAIL` and
/// `HINT` lines joined with `; `): exit status 2.
fn start_failed(reason: &str) -> ExitCode {
    let lines: Vec<&str> = reason.lines().map(str::trim).filter(|line| !line.is_empty()).collect();
    eprintln!("slotcron run: {}", lines.join("; "));
    ExitCode::from(INVALID_INPUT)
}
