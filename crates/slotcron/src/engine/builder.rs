//! Configuring a [`Scheduler`]: clock, backends, instance id and engine settings.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::Scheduler;
use super::cancel::in_flight::InFlight;
use super::claim::marks::StartMarks;
use super::fleet::cut_off::CutOff;
use super::outbox::Outbox;
use super::shared::{Settings, Shared};
use super::table::Table;
use crate::clock::{Clock, SystemClock};
use crate::coordinator::lease::DEFAULT_LEASE_TTL;
use crate::coordinator::membership::DEFAULT_MEMBERSHIP_TTL;
use crate::coordinator::{Coordinator, InProcessCoordinator, MemberDetails};
use crate::ledger::{Ledger, MemoryLedger};
use crate::metrics::{MetricLabels, Metrics};
use crate::placement::Labels;
use crate::policy::{ConcurrencyCap, RunObserver};
use crate::registry::HandlerRegistry;
use crate::store::{MemoryStore, Store};

/// Configures a [`Scheduler`].
#[must_use]
pub struct SchedulerBuilder {
    clock: Arc<dyn Clock>,
    coordinator: Option<Arc<dyn Coordinator>>,
    ledger: Arc<dyn Ledger>,
    store: Option<Arc<dyn Store>>,
    instance: Option<String>,
    settings: Settings,
    max_concurrent_runs: Option<usize>,
    observer: Option<Arc<dyn RunObserver>>,
}

impl Default for SchedulerBuilder {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            coordinator: None,
            ledger: Arc::new(MemoryLedger::default()),
            store: None,
            instance: None,
            settings: Settings {
                claim_timeout: Duration::from_secs(1),
                slack: SchedulerBuilder::DEFAULT_SLACK,
                check_clock_skew: true,
                cancel_grace: Duration::from_secs(5),
                shutdown_timeout: Duration::from_secs(30),
                drain_on_shutdown: false,
                lease_ttl: DEFAULT_LEASE_TTL,
                takeover_delay: SchedulerBuilder::DEFAULT_TAKEOVER_DELAY,
                claim_ahead: SchedulerBuilder::DEFAULT_CLAIM_AHEAD,
                membership_ttl: DEFAULT_MEMBERSHIP_TTL,
                shared_work: true,
                count_metrics: true,
                metrics: MetricLabels::default(),
                record_buffer: SchedulerBuilder::DEFAULT_RECORD_BUFFER,
                start_mark_timeout: SchedulerBuilder::DEFAULT_START_MARK_TIMEOUT,
                restore_definitions: true,
                details: MemberDetails::default(),
                labels: Labels::default(),
            },
            max_concurrent_runs: None,
            observer: None,
        }
    }
}

impl SchedulerBuilder {
    /// The default [clock-skew slack](Self::slack): 5 s.
    pub const DEFAULT_SLACK: Duration = Duration::from_secs(5);

    /// The default [takeover delay](Self::takeover_delay): 300 ms, below the default grace
    /// window ([`Misfire::DEFAULT_GRACE`](crate::Misfire::DEFAULT_GRACE), 1 s).
    pub const DEFAULT_TAKEOVER_DELAY: Duration = Duration::from_millis(300);

    /// The default [claim-ahead window](Self::claim_ahead): 500 ms.
    pub const DEFAULT_CLAIM_AHEAD: Duration = Duration::from_millis(500);

    /// The default of [`SchedulerBuilder::record_buffer`], in ledger writes.
    pub const DEFAULT_RECORD_BUFFER: usize = 10_000;

    /// How many ledger writes may wait for the ledger before the engine holds back
    /// (default [`SchedulerBuilder::DEFAULT_RECORD_BUFFER`], at least 1). Records are
    /// written by one task, in order, in batches. While the ledger is down or slower than
    /// the runs, writes wait here; once this many wait, the engine claims and starts
    /// nothing new until the ledger has taken some (back-pressure, logged and counted in
    /// [`LEDGER_BACKPRESSURE_TOTAL`](crate::LEDGER_BACKPRESSURE_TOTAL)): no record is
    /// ever dropped, and triggers due meanwhile run late or as their misfire policy
    /// says. Job-state writes that fail wait too (the newest per job, however many jobs).
    pub fn record_buffer(mut self, writes: usize) -> Self {
        self.settings.record_buffer = writes;
        self
    }

    /// The default [start-mark timeout](Self::start_mark_timeout): 30 s.
    pub const DEFAULT_START_MARK_TIMEOUT: Duration = Duration::from_secs(30);

    /// How long a run waits for its start mark, its `running` record, to be in the
    /// ledger before it starts (default [`SchedulerBuilder::DEFAULT_START_MARK_TIMEOUT`]).
    /// A run starts only once its mark is durable, so that a crash leaves a record that
    /// says it started (docs/design.md, "Claims, start marks and takeover"); the marks of runs
    /// starting together are written together. A mark the ledger has not taken by then
    /// fails closed: the run does not start and is recorded
    /// [`SkippedBackendUnavailable`](crate::Outcome::SkippedBackendUnavailable), saying why.
    pub fn start_mark_timeout(mut self, timeout: Duration) -> Self {
        self.settings.start_mark_timeout = timeout;
        self
    }

    /// The clock to read and sleep on (default: [`SystemClock`]).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The coordinator that arbitrates claims between replicas. Without one the
    /// scheduler runs in single-replica mode: every trigger runs, nothing is claimed, and
    /// fencing tokens count each job's runs (what an
    /// [`InProcessCoordinator`] would do, without the
    /// call).
    pub fn coordinator(mut self, coordinator: Arc<dyn Coordinator>) -> Self {
        self.coordinator = Some(coordinator);
        self
    }

    /// Where run records go (default: a [`MemoryLedger`] of 10,000 records).
    pub fn ledger(mut self, ledger: Arc<dyn Ledger>) -> Self {
        self.ledger = ledger;
        self
    }

    /// Where job state and definitions are kept. Without one, definitions live in a
    /// private [`MemoryStore`] and no per-trigger state is saved: nothing survives the
    /// scheduler. Share a [`MemoryStore`] between schedulers to keep state in-process.
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// This scheduler's instance id, in logs, ledger records and claims (default:
    /// `slotcron-{pid}`).
    pub fn instance(mut self, id: impl Into<String>) -> Self {
        self.instance = Some(id.into());
        self
    }

    /// How long a claim may take before the trigger is skipped as
    /// `skipped-backend-unavailable` (default 1 s).
    pub fn claim_timeout(mut self, timeout: Duration) -> Self {
        self.settings.claim_timeout = timeout;
        self
    }

    /// The clock-skew slack (default [`Self::DEFAULT_SLACK`], 5 s): how far this
    /// replica's clock may be off its coordinator's. Every recurring claim holds this much
    /// longer (see [`Hold`](crate::Hold)), and a replica whose clock is off by more skips
    /// every trigger as `skipped-clock-skew` (fail closed) and warns at most once a
    /// minute with the measured offset. The offset is measured by reading the
    /// coordinator's clock at most every
    /// [`SKEW_SAMPLE_EVERY`](crate::coordinator::SKEW_SAMPLE_EVERY), only while triggers
    /// come due. In single-replica mode (no coordinator) there is nothing to measure.
    pub fn slack(mut self, slack: Duration) -> Self {
        self.settings.slack = slack;
        self
    }

    /// Whether to measure this replica's clock against the coordinator's and skip
    /// triggers beyond the [slack](Self::slack) (default `true`). Turn it off only for a
    /// scheduler whose clock is deliberately not the wall clock while its coordinator's
    /// is (a simulation on a [`ManualClock`](crate::ManualClock) against a real server).
    pub fn check_clock_skew(mut self, check: bool) -> Self {
        self.settings.check_clock_skew = check;
        self
    }

    /// How long a cancelled run (timed out, or at shutdown) may take to stop before its
    /// future is dropped (default 5 s).
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.settings.cancel_grace = grace;
        self
    }

    /// How long [`Scheduler::run`] waits for running handlers after it is cancelled,
    /// before cancelling them and, after the cancel grace, dropping them (default 30 s).
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.settings.shutdown_timeout = timeout;
        self
    }

    /// At shutdown, let running handlers finish (up to the shutdown timeout) instead of
    /// cancelling them at once (default `false`).
    pub fn drain_on_shutdown(mut self, drain: bool) -> Self {
        self.settings.drain_on_shutdown = drain;
        self
    }

    /// At most `max` runs in flight at once on this scheduler (at least 1),
    /// `on_every_replica` runs included, failure hooks not (default: no cap). A trigger
    /// that finds every slot busy waits for one up to its job's grace window before it
    /// claims, so that a replica with room wins the claim; if none frees it is recorded
    /// `skipped-concurrency`.
    pub fn max_concurrent_runs(mut self, max: usize) -> Self {
        self.max_concurrent_runs = Some(max);
        self
    }

    /// The TTL of the per-job leases the overlap policies take (default
    /// [`DEFAULT_LEASE_TTL`], 15 s): a replica that dies during a run blocks its job for
    /// at most this long. Leases are renewed every third of it.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.settings.lease_ttl = ttl.max(Duration::from_millis(3));
        self
    }

    /// How long, on this scheduler's clock, a replica that does not own a trigger waits
    /// for its owner to claim it before it reads whether it is still unclaimed and, if so,
    /// claims it (default [`Self::DEFAULT_TAKEOVER_DELAY`], 300 ms). With a coordinator
    /// that keeps a [membership](crate::Coordinator#membership), each trigger's owner
    /// claims at once; an owner that cannot (at its concurrency cap, skipping for clock
    /// skew, its link down) costs a run this much late. An owner whose tally of claimed
    /// triggers grew since the last look (it is still claiming a big burst) is given
    /// another delay, up to the [membership TTL](Self::membership_ttl) in all. Keep it
    /// below the jobs' grace windows and above the owners' claim round trip.
    pub fn takeover_delay(mut self, delay: Duration) -> Self {
        self.settings.takeover_delay = delay;
        self
    }

    /// How long before their instant, on this scheduler's clock, the triggers this
    /// replica owns are claimed (default [`Self::DEFAULT_CLAIM_AHEAD`], 500 ms; zero: each
    /// trigger is claimed when it comes due). A job's trigger is claimed ahead only once
    /// this replica won the job's previous trigger, so a job whose period is shorter
    /// than the window is claimed as its triggers come due. With a coordinator that takes
    /// [claims ahead](crate::Coordinator#claims-ahead) (the Redis coordinator on one
    /// server) and shared work, a burst of triggers due together is claimed while nothing
    /// is due, and its runs start on time however long the claims took the backend; the
    /// instant's claims are then started with one round trip when it comes. A job paused
    /// or removed within the window does not run; a reload within it runs the new
    /// definition under the claim. A replica that dies or stalls after claiming ahead
    /// costs its triggers a [takeover delay](Self::takeover_delay), never a run: the
    /// others void its start and take them over.
    pub fn claim_ahead(mut self, window: Duration) -> Self {
        self.settings.claim_ahead = window;
        self
    }

    /// Whether the replicas share the work (default `true`): with a coordinator that keeps
    /// a [membership](crate::Coordinator#membership), each trigger's owner claims it at
    /// once and the others only take over what it left unclaimed after the
    /// [takeover delay](Self::takeover_delay). With `false` this replica joins no
    /// membership and claims every trigger at once, as with a coordinator that keeps none.
    pub fn shared_work(mut self, shared: bool) -> Self {
        self.settings.shared_work = shared;
        self
    }

    /// How long the coordinator keeps this replica in the fleet's
    /// [membership](crate::Coordinator#membership) after its last heartbeat (default
    /// [`DEFAULT_MEMBERSHIP_TTL`], 10 s, on the coordinator's clock; at least 3 ms): the
    /// most a replica that dies without leaving keeps owning its jobs, whose triggers
    /// then run a [takeover delay](Self::takeover_delay) late. It heartbeats every third
    /// of it, and leaves at once when it stops.
    pub fn membership_ttl(mut self, ttl: Duration) -> Self {
        self.settings.membership_ttl = ttl.max(Duration::from_millis(3));
        self
    }

    /// A setting every member of the fleet must share, published in the membership
    /// ([`MemberDetails::settings`]): [`Scheduler::check_join`](crate::Scheduler::check_join)
    /// refuses this replica while a live member gives `name` another value (e.g. the
    /// zone the crontab lines of a daemon run in). Members without the setting are not
    /// compared. Ignored without a coordinator that keeps a membership.
    pub fn fleet_setting(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.settings.details.settings.insert(name.into(), value.into());
        self
    }

    /// Something this replica says about itself in the membership
    /// ([`MemberDetails::about`]: its host, version, admin address...), shown to the
    /// fleet, never compared.
    pub fn member_about(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.settings.details.about.insert(name.into(), value.into());
        self
    }

    /// The labels this replica carries ([`Labels`], the daemon's `--label`; default
    /// none), published in the membership ([`MemberDetails::labels`]): it claims and runs
    /// the triggers of a job placed on labels ([`JobBuilder::on`](crate::JobBuilder::on))
    /// only if it carries them all, and owns such a job only among the live members that
    /// carry them. Without a coordinator, [`Scheduler::add`] refuses a job placed on
    /// labels this replica does not carry.
    pub fn labels(mut self, labels: Labels) -> Self {
        self.settings.details.labels = labels.written();
        self.settings.labels = labels;
        self
    }

    /// Called with every trigger's record once it has ended, e.g. a
    /// [`FailureHook`](crate::policy::FailureHook) (default: none).
    pub fn observer(mut self, observer: Arc<dyn RunObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Whether the engine counts its [metrics](crate#metrics) at all (default `true`).
    /// Turn it off in a process that installs no recorder, to spare each run the few
    /// atomic additions and the flushes (the daemon does without `--admin`).
    pub fn metrics(mut self, count: bool) -> Self {
        self.settings.count_metrics = count;
        self
    }

    /// Whether the [metrics](crate#metrics) carry a `job` label (default `true`): each
    /// job's runs by outcome (a series per outcome that occurred), last success, last
    /// failure and paused gauge. Turn it off for very large job sets: only the fleet-wide
    /// series stay (runs by outcome, duration and lateness histograms...).
    pub fn metrics_per_job(mut self, per_job: bool) -> Self {
        self.settings.metrics.per_job = per_job;
        self
    }

    /// Whether each job also has its own duration and lateness histograms,
    /// [`JOB_RUN_DURATION_SECONDS`](crate::JOB_RUN_DURATION_SECONDS) and
    /// [`JOB_TRIGGER_LATENESS_SECONDS`](crate::JOB_TRIGGER_LATENESS_SECONDS) (default
    /// `false`: about 40 lines of exposition per job; the fleet-wide histograms are always
    /// there). Only with [`metrics_per_job`](Self::metrics_per_job).
    pub fn metrics_per_job_histograms(mut self, histograms: bool) -> Self {
        self.settings.metrics.per_job_histograms = histograms;
        self
    }

    /// Whether [`Scheduler::restore`] adds the job definitions kept in the store as jobs
    /// (default `true`); with `false` it reads only the jobs' state, for a caller that
    /// manages the jobs itself (with [`Scheduler::reconcile`], for example).
    pub fn restore_definitions(mut self, restore: bool) -> Self {
        self.settings.restore_definitions = restore;
        self
    }

    /// Builds the scheduler.
    pub fn build(self) -> Scheduler {
        let metrics = Arc::new(Metrics::new(self.settings.count_metrics, self.settings.metrics));
        let table = Table::new(metrics.clone(), self.settings.takeover_delay);
        let instance = self.instance.unwrap_or_else(|| format!("slotcron-{}", std::process::id()));
        let store = self.store.clone().unwrap_or_else(|| Arc::new(MemoryStore::new()));
        let outbox = Outbox::new(
            self.ledger.clone(),
            store.clone(),
            self.settings.record_buffer,
            self.settings.count_metrics,
        );
        let fleet = self.coordinator.is_some().then(Arc::default);
        Scheduler {
            fleet,
            shared: Arc::new(Shared {
                clock: self.clock.clone(),
                coordinator: self.coordinator,
                ledger: self.ledger,
                persist_state: self.store.is_some(),
                store,
                instance: instance.into(),
                settings: self.settings,
                cap: self.max_concurrent_runs.map(ConcurrencyCap::new),
                local_leases: InProcessCoordinator::on_shared_clock(self.clock.clone()),
                observer: self.observer,
                skew: Default::default(),
                probe: Default::default(),
                handlers: HandlerRegistry::default(),
                restored: AtomicBool::new(false),
                table: Mutex::new(table),
                wake: Notify::new(),
                runs_cancelled: Notify::new(),
                running: AtomicBool::new(false),
                health: Default::default(),
                metrics,
                lifecycle: Arc::default(),
                outbox: Arc::new(outbox),
                start_marks: StartMarks::default(),
                cut_off: CutOff::default(),
                stopped: CancellationToken::new(),
                requests: Mutex::default(),
                local_paused: Mutex::default(),
                absent_since: Mutex::default(),
                in_flight: InFlight::default(),
            }),
        }
    }
}
