//! The engine: one ordered queue of next triggers, a sleep until the earliest through
//! the [`Clock`], and one task per run.

mod ahead;
mod batch;
mod builder;
mod hold;
mod introspect;
mod misfire;
mod outbox;
mod ownership;
mod plans;
mod queue;
mod reconcile;
mod record;
mod run;
mod skew;
mod steer;
mod sweep;
mod table;

pub use builder::SchedulerBuilder;
pub use introspect::{JobInfo, Reachable};
pub use reconcile::{PlanError, ReconcileError, ReconcileReport};
pub use steer::{Resumed, Triggered};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use jiff::Timestamp;
use tokio::sync::{Notify, OwnedMutexGuard};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::clock::{Clock, later};
use crate::coordinator::{Coordinator, InProcessCoordinator};
use crate::job::{Handler, Job, JobError};
use crate::ledger::{Ledger, LedgerError, LedgerQuery, RunRecord};
use crate::metrics::{JobLabels, Metrics};
use crate::policy::{ConcurrencyCap, RunObserver};
use crate::registry::HandlerRegistry;
use crate::store::{JobDefinition, Store, StoreError};
use outbox::Outbox;
use run::RunScope;
use table::Table;

/// How many due items the engine takes from the table per lock.
const SPAWN_BATCH: usize = 64;

/// Runs jobs on their schedules; cheap to clone (clones share the same jobs).
///
/// ```no_run
/// use std::time::Duration;
/// use slotcron::{CancellationToken, Job, JobContext, Scheduler};
///
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let scheduler = Scheduler::builder().build();
/// scheduler.add(
///     Job::builder("heartbeat")
///         .every(Duration::from_secs(10))
///         .handler(|ctx: JobContext| async move {
///             println!("{} for {}", ctx.job(), ctx.trigger());
///             Ok::<_, std::io::Error>(())
///         })
///         .build()?,
/// )?;
/// let cancel = CancellationToken::new();
/// scheduler.run(cancel).await; // returns once `cancel` fires and the runs have stopped
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Scheduler {
    shared: Arc<Shared>,
}

pub(crate) struct Shared {
    pub clock: Arc<dyn Clock>,
    /// `None` in single-replica mode: every trigger runs, nothing is claimed.
    pub coordinator: Option<Arc<dyn Coordinator>>,
    pub ledger: Arc<dyn Ledger>,
    pub store: Arc<dyn Store>,
    /// Whether a store was configured: without one, per-trigger state is not saved
    /// (nothing would read it back).
    pub(crate) persist_state: bool,
    pub instance: Arc<str>,
    pub settings: Settings,
    /// The concurrency cap, if any.
    pub cap: Option<ConcurrencyCap>,
    /// Leases of the jobs no coordinator arbitrates: in single-replica mode, and for
    /// `on_every_replica` jobs (each replica keeps its own runs apart).
    local_leases: InProcessCoordinator,
    pub observer: Option<Arc<dyn RunObserver>>,
    /// This replica's offset from its coordinator's clock.
    pub(crate) skew: skew::SkewGuard,
    /// This replica's last view of the fleet's membership.
    membership: ownership::View,
    /// The triggers other replicas own, waiting out the takeover delay.
    takeovers: ownership::Takeovers,
    /// This replica's claims ahead, waiting for their triggers.
    pub(crate) ahead: ahead::Ahead,
    /// See [`Scheduler::idle_at`].
    #[cfg(feature = "testkit")]
    idle_at: Mutex<Option<Option<Timestamp>>>,
    handlers: HandlerRegistry,
    restored: AtomicBool,
    table: Mutex<Table>,
    wake: Notify,
    /// Set while a `run()` fires triggers.
    running: AtomicBool,
    health: introspect::Health,
    /// The scheduler's metrics, counted locally and flushed to the recorder.
    pub(crate) metrics: Arc<Metrics>,
    /// Held by a `run()` from its start to the end of its shutdown, which may go on after
    /// its future was dropped: a later `run()` waits for it.
    lifecycle: Arc<tokio::sync::Mutex<()>>,
    /// The ledger writes and failed job-state writes waiting to be written.
    pub outbox: Arc<Outbox>,
    /// Fired when [`Scheduler::run`] returns: ends the reconcile loops.
    stopped: CancellationToken,
    /// Groups of requested runs (manual, backfill, catch-up at a resume), each run in
    /// order, waiting for the engine to spawn them.
    requests: Mutex<Vec<Vec<table::Due>>>,
    /// Single-replica mode's paused jobs (kept in the store), and since when.
    local_paused: Mutex<std::collections::HashMap<String, Timestamp>>,
}

/// Engine settings; see the [`SchedulerBuilder`] methods.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub claim_timeout: Duration,
    pub slack: Duration,
    pub check_clock_skew: bool,
    pub cancel_grace: Duration,
    pub shutdown_timeout: Duration,
    pub drain_on_shutdown: bool,
    pub lease_ttl: Duration,
    pub takeover_delay: Duration,
    pub claim_ahead: Duration,
    pub membership_ttl: Duration,
    pub shared_work: bool,
    /// Whether the engine counts metrics.
    pub count_metrics: bool,
    pub metrics: JobLabels,
    pub record_buffer: usize,
    pub restore_definitions: bool,
}

/// What one `run()` started: handed to its shutdown, however the `run()` ends.
struct Started {
    tracker: TaskTracker,
    scope: Arc<RunScope>,
    /// Stops the outbox's writer and the heartbeat once the runs have stopped.
    stop_writer: CancellationToken,
    writer: JoinHandle<()>,
    heartbeat: JoinHandle<()>,
    /// The membership heartbeat: leaves the membership when the scheduler starts stopping.
    membership: JoinHandle<()>,
    /// Flushes the metrics [`METRICS_FLUSH_EVERY`](crate::METRICS_FLUSH_EVERY) after activity.
    flusher: JoinHandle<()>,
    _lifecycle: OwnedMutexGuard<()>,
}

/// Clears the running flag when a `run()` ends, however it ends, and hands what it
/// started to the shutdown if its future is dropped.
struct DropGuard {
    scheduler: Scheduler,
    started: Option<Started>,
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        let shared = &self.scheduler.shared;
        shared.running.store(false, Ordering::SeqCst);
        shared.stopped.cancel();
        let Some(started) = self.started.take() else { return };
        tracing::warn!("the Scheduler::run future was dropped: stopping its runs as at a cancellation");
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let scheduler = self.scheduler.clone();
                runtime.spawn(async move { scheduler.shutdown(started).await });
            }
            // No runtime left to stop them on: drop the runs at once.
            Err(_) => {
                started.scope.stopping.cancel();
                started.scope.shutdown.cancel();
                started.scope.abort.cancel();
            }
        }
    }
}

impl Scheduler {
    /// A builder with the defaults: system clock, no coordinator (single-replica
    /// mode), in-memory ledger.
    pub fn builder() -> SchedulerBuilder {
        SchedulerBuilder::default()
    }

    /// Adds a job. If the scheduler is running, its first trigger is queued at once.
    ///
    /// # Errors
    /// [`JobError::Duplicate`] if a job with this name exists.
    pub fn add(&self, job: Job) -> Result<(), JobError> {
        let name = job.name.to_string();
        let Some(earliest) = self.shared.table().insert(job, self.shared.clock.now()) else {
            return Err(JobError::Duplicate { job: name });
        };
        if earliest {
            self.shared.wake.notify_one();
        }
        Ok(())
    }

    /// Replaces the job of the same name (or adds it); its schedule restarts from now.
    pub fn replace(&self, job: Job) {
        let mut table = self.shared.table();
        table.remove(&job.name);
        let earliest = table.insert(job, self.shared.clock.now()) == Some(true);
        drop(table);
        if earliest {
            self.shared.wake.notify_one();
        }
    }

    /// Removes a job: none of its triggers fires from now on, not even one already due
    /// and waiting to start. A run already started goes on (its cancellation token is not
    /// fired) and is recorded. The job's stored state is deleted, so a job added again
    /// under this name starts from its schedule, with no catch-up of the time it was
    /// absent, also after a restart; a one-shot's state is kept, so a one-shot added again
    /// for the same instant does not run again (with a coordinator, its claim stands
    /// too). `false` if there was no such job.
    pub fn remove(&self, name: &str) -> bool {
        self.shared.remove(name, false)
    }

    /// [`Scheduler::remove`], and also fires the cancellation token of the job's runs in
    /// flight (a run that ignores it is dropped after the cancel grace, recorded as
    /// aborted).
    pub fn remove_and_cancel(&self, name: &str) -> bool {
        self.shared.remove(name, true)
    }

    /// The names of the jobs, in no particular order.
    pub fn job_names(&self) -> Vec<String> {
        self.shared.table().names().iter().map(|n| n.to_string()).collect()
    }

    /// The next queued trigger of a job; `None` if there is no such job, the scheduler is
    /// not running yet, or the schedule is exhausted.
    pub fn next_trigger(&self, name: &str) -> Option<Timestamp> {
        self.shared.table().next_trigger(name)
    }

    /// This scheduler's instance id.
    pub fn instance(&self) -> &str {
        &self.shared.instance
    }

    /// This scheduler's last view of the fleet's
    /// [membership](crate::Coordinator#membership): the live members' instance ids,
    /// sorted. `None` before the first heartbeat has answered, and with a coordinator
    /// that keeps no membership (every replica then claims every trigger at once).
    pub fn members(&self) -> Option<Vec<String>> {
        self.shared.membership.get().map(|members| members.iter().map(|m| m.to_string()).collect())
    }

    /// Whether no `run()` is going on, its shutdown included.
    #[cfg(feature = "testkit")]
    pub(crate) fn is_stopped(&self) -> bool {
        !self.shared.running.load(Ordering::SeqCst) && self.shared.lifecycle.try_lock().is_ok()
    }

    /// Whether `job`'s `trigger` waits here for its owner, another replica, to claim it
    /// (in the table's lane of the triggers others own, or taken from it).
    #[cfg(feature = "testkit")]
    pub(crate) fn awaits_takeover(&self, job: &str, trigger: Timestamp) -> bool {
        self.shared.table().lags(job, trigger) || self.shared.takeovers.waits(job, trigger)
    }

    /// When this replica next looks whether `job`'s `trigger`, which waits here for its
    /// owner, is still unclaimed, while it waits for that look (see
    /// `Takeovers::next_look`).
    #[cfg(feature = "testkit")]
    pub(crate) fn next_takeover_look(&self, job: &str, trigger: Timestamp) -> Option<Timestamp> {
        self.shared.takeovers.next_look(job, trigger)
    }

    /// Whether the engine's loop sleeps with nothing to do at `now`: it went to sleep
    /// until an instant after `now` (or until woken), having handled what was due before,
    /// and its claims ahead have their answers.
    #[cfg(feature = "testkit")]
    pub(crate) fn idle_at(&self, now: Timestamp) -> bool {
        let asleep = match *self.shared.idle_at.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(Some(until)) => until > now,
            Some(None) => true,
            None => false,
        };
        asleep && self.shared.ahead.answered()
    }

    /// Whether `job`'s `trigger` waits here for a slot of the concurrency cap.
    #[cfg(feature = "testkit")]
    pub(crate) fn awaits_slot(&self, job: &str, trigger: Timestamp) -> bool {
        self.shared.cap.as_ref().is_some_and(|cap| cap.waits(job, trigger))
    }

    /// Hands the [metrics](crate#metrics) counted since the last flush to the installed
    /// recorder. The engine flushes [`METRICS_FLUSH_EVERY`](crate::METRICS_FLUSH_EVERY) after
    /// activity and when [`Scheduler::run`] returns; call this just before rendering an
    /// exposition (the `/metrics` endpoint of `slotcron-admin` does), so that the counters
    /// hold every record written so far. Takes a few milliseconds for 10,000 jobs.
    pub fn flush_metrics(&self) {
        self.shared.metrics.flush();
    }

    /// The ledger the run records go to.
    pub fn ledger(&self) -> &Arc<dyn Ledger> {
        &self.shared.ledger
    }

    /// Registers a handler by name, for jobs added through [`Scheduler::define`] and for
    /// the stored definitions [`Scheduler::restore`] brings back.
    pub fn register_handler(&self, name: impl Into<String>, handler: impl Handler) {
        self.shared.handlers.register(name, handler);
    }

    /// Adds (or replaces) a job described by data and stores its definition, so it comes
    /// back after a restart. Its handler must be registered.
    ///
    /// # Errors
    /// The definition is invalid (nothing is stored then), or the store failed.
    pub async fn define(&self, definition: JobDefinition) -> Result<(), DefineError> {
        let job = definition.to_job(&self.shared.handlers)?;
        self.shared.store.save_definition(&definition).await?;
        self.replace(job);
        Ok(())
    }

    /// Removes a job added through [`Scheduler::define`] and deletes its definition.
    /// `false` if there was no such definition.
    ///
    /// # Errors
    /// The store failed; the job keeps running then.
    pub async fn undefine(&self, name: &str) -> Result<bool, StoreError> {
        let deleted = self.shared.store.delete_definition(name).await?;
        self.remove(name);
        Ok(deleted)
    }

    /// Reads the store: adds the stored job definitions (whose handlers must be
    /// registered by now) and the state each job resumes from. [`Scheduler::run`] calls it
    /// if it has not been called; call it first to fail early on an unreachable store.
    ///
    /// A definition that cannot be built (e.g. its handler is not registered) is logged
    /// and skipped, never deleted.
    ///
    /// # Errors
    /// The store failed.
    pub async fn restore(&self) -> Result<(), StoreError> {
        let definitions = match self.shared.settings.restore_definitions {
            true => self.shared.store.load_definitions().await?,
            false => Vec::new(),
        };
        let states = self.shared.store.load_states().await?;
        if self.shared.coordinator.is_none()
            && let Some(controls) = self.shared.store.controls()
        {
            *self.shared.local_paused() = controls.paused_jobs().await.map_err(StoreError)?;
        }
        for definition in definitions {
            match definition.to_job(&self.shared.handlers) {
                Ok(job) => self.replace(job),
                Err(e) => tracing::error!("stored definition skipped: {e}"),
            }
        }
        self.shared.table().set_states(states);
        self.shared.restored.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Reads the run history: newest trigger first.
    ///
    /// # Errors
    /// The ledger backend failed.
    pub async fn history(&self, query: &LedgerQuery) -> Result<Vec<RunRecord>, LedgerError> {
        self.shared.ledger.query(query).await
    }

    /// Fires jobs until `cancel` fires, then stops firing, signals the running handlers
    /// (or, with [`SchedulerBuilder::drain_on_shutdown`], lets them finish), waits for
    /// them up to the shutdown timeout, drops what is left after the cancel grace, writes
    /// the records still buffered (for up to 10 s more), and returns. Close connections
    /// the handlers use after this returns, not before.
    ///
    /// A second concurrent call returns at once.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future (it lost a `tokio::select!`, its task was aborted) stops the
    /// firing at once and hands the runs to the same shutdown as a cancellation, on a task
    /// of its own on the current tokio runtime: they are signalled, waited for (bounded)
    /// and recorded. A later call to `run` waits for that shutdown to end, then fires
    /// again. Dropped outside a runtime, the runs are dropped at once.
    pub async fn run(&self, cancel: CancellationToken) {
        if self.shared.running.swap(true, Ordering::SeqCst) {
            tracing::error!("Scheduler::run called while already running; ignored");
            return;
        }
        let mut guard = DropGuard { scheduler: self.clone(), started: None };
        // A dropped run()'s shutdown may still be going on.
        let lifecycle = self.shared.lifecycle.clone().lock_owned().await;
        if !self.shared.restored.load(Ordering::SeqCst)
            && let Err(e) = self.restore().await
        {
            tracing::error!("{e}; jobs start without their stored state");
        }
        let stop_writer = CancellationToken::new();
        let writer =
            tokio::spawn(self.shared.outbox.clone().deliver(self.shared.clock.clone(), stop_writer.clone()));
        let heartbeat = tokio::spawn(sweep::heartbeat(self.shared.clone(), stop_writer.clone()));
        let scope = Arc::new(RunScope::new(self.shared.clone()));
        let membership = tokio::spawn(ownership::heartbeat(self.shared.clone(), scope.stopping.clone()));
        let flusher = tokio::spawn(
            self.shared.metrics.clone().flush_periodically(self.shared.clock.clone(), stop_writer.clone()),
        );
        let started = guard.started.insert(Started {
            tracker: TaskTracker::new(),
            scope,
            stop_writer,
            writer,
            heartbeat,
            membership,
            flusher,
            _lifecycle: lifecycle,
        });
        let (scope, tracker) = (started.scope.clone(), started.tracker.clone());
        tracing::info!(
            instance = %self.shared.instance,
            coordinator = self.shared.coordinator.as_ref().map_or("none", |c| c.name()),
            "scheduler started"
        );
        self.shared.table().start(self.shared.clock.now());
        // With a coordinator, the triggers due together are claimed in batches of up to
        // one round trip's claims; without, nothing is claimed.
        let take = if self.shared.coordinator.is_some() { batch::MAX_BATCH } else { SPAWN_BATCH };
        let mut due = Vec::with_capacity(take);
        let mut batched = Vec::new();
        // The items of a burst left for after its runs claimed ahead have started.
        let mut deferred = Vec::new();
        loop {
            #[cfg(feature = "testkit")]
            {
                *self.shared.idle_at.lock().unwrap_or_else(|p| p.into_inner()) = None;
            }
            let now = self.shared.clock.now();
            // The instants claimed ahead that have come start first (one round trip).
            ahead::start_due(&scope, now).await;
            let mut split = ownership::Split::new(&self.shared);
            let (more, deadline) = {
                let mut table = self.shared.table();
                let more = table.take_due(now, &mut due, take, |job| split.lane(&self.shared, job));
                (more, table.next_deadline())
            };
            let ahead = self.shared.ahead.take(&mut due);
            if !ahead.is_empty() {
                tracker.spawn(ahead::run(scope.clone(), tracker.clone(), ahead));
                // The runs claimed ahead start before the rest of the burst is looked at:
                // their claims are answered, while the rest is claimed or waits out the
                // takeover delay anyway. It is handled once the burst is taken.
                deferred.append(&mut due);
                tokio::task::yield_now().await;
                scope.pace().await;
                if more {
                    continue;
                }
            }
            deferred.append(&mut due);
            std::mem::swap(&mut due, &mut deferred);
            let mut items = due.drain(..).peekable();
            let mut spawned = 0;
            while let Some(item) = items.next() {
                // A job's catch-up comes as consecutive items: claimed in trigger order.
                if items.peek().is_some_and(|next| Arc::ptr_eq(&next.job, &item.job)) {
                    scope.spawning();
                    let mut group = vec![item];
                    while let Some(next) = items.next_if(|next| Arc::ptr_eq(&next.job, &group[0].job)) {
                        scope.spawning();
                        group.push(next);
                    }
                    tracker.spawn(run::execute_in_order(scope.clone(), group));
                    spawned += 1;
                    continue;
                }
                let role = split.role(&self.shared, &item);
                match role {
                    ownership::Role::Other(owner) => self.shared.takeovers.push(&self.shared, item, owner),
                    // Counted as spawning once claimed, when its run is spawned.
                    ownership::Role::Owner(tally) if batch::batchable(&self.shared, &item) => {
                        batched.push((item, Some(tally)))
                    }
                    ownership::Role::Everyone if batch::batchable(&self.shared, &item) => {
                        batched.push((item, None))
                    }
                    ownership::Role::Owner(tally) => {
                        scope.spawning();
                        tracker.spawn(run::execute_owned(scope.clone(), item, Some(tally)));
                        spawned += 1;
                    }
                    ownership::Role::Everyone => {
                        scope.spawning();
                        tracker.spawn(run::execute(scope.clone(), item));
                        spawned += 1;
                    }
                }
            }
            drop(split);
            // Only batches were spawned: they pace their own runs, so the loop goes on
            // taking due triggers (after a yield), which then wait for their batch's turn,
            // not in the table.
            let only_batches = !batched.is_empty() && spawned == 0;
            if !batched.is_empty() {
                let claims = std::mem::take(&mut batched);
                tracker.spawn(batch::execute(scope.clone(), tracker.clone(), claims));
            }
            let requests = std::mem::take(&mut *self.shared.requests());
            for group in requests {
                group.iter().for_each(|_| scope.spawning());
                tracker.spawn(run::execute_in_order(scope.clone(), group));
            }
            if more {
                if only_batches {
                    // Let the batch just spawned send its claims while the loop takes the
                    // rest of the burst: the first claims go out before the last are taken.
                    tokio::task::yield_now().await;
                } else {
                    scope.pace().await;
                }
                continue;
            }
            // Everything due is taken: the triggers others own may be looked at.
            self.shared.takeovers.release(&scope, &tracker);
            // The triggers this replica owns within the claim-ahead window are claimed
            // now, and the engine wakes again when the next instant enters it.
            ahead::claim_upcoming(&scope, &tracker);
            let wake =
                self.shared.ahead.next_wake(&self.shared, |after| self.shared.table().first_after(after));
            let deadline = [deadline, wake, self.shared.ahead.next_start()].into_iter().flatten().min();
            #[cfg(feature = "testkit")]
            {
                *self.shared.idle_at.lock().unwrap_or_else(|p| p.into_inner()) = Some(deadline);
            }
            let sleep = async {
                match deadline {
                    Some(at) => self.shared.clock.sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                () = cancel.cancelled() => break,
                () = self.shared.wake.notified() => {}
                () = sleep => {}
            }
        }
        let started = guard.started.take().expect("taken only here and on drop");
        self.shutdown(started).await;
        // The guard clears the running flag and fires `stopped`.
    }

    async fn shutdown(&self, started: Started) {
        let Started { tracker, scope, stop_writer, writer, heartbeat, membership, flusher, _lifecycle } =
            started;
        let settings = &self.shared.settings;
        let clock = &self.shared.clock;
        tracing::info!(runs = tracker.len(), "scheduler stopping: no new runs start");
        tracker.close();
        scope.stopping.cancel();
        ahead::stop(&scope).await;
        if !settings.drain_on_shutdown {
            scope.shutdown.cancel();
        }
        let bounded = |limit: Duration| {
            let deadline = later(clock.now(), limit);
            let wait = tracker.wait();
            async move {
                tokio::select! {
                    () = wait => true,
                    () = clock.sleep_until(deadline) => false,
                }
            }
        };
        if !bounded(settings.shutdown_timeout).await {
            tracing::warn!(runs = tracker.len(), "runs still going at the shutdown timeout: cancelling them");
            scope.shutdown.cancel();
            if !bounded(settings.cancel_grace).await {
                tracing::warn!(
                    runs = tracker.len(),
                    "runs still going after the cancel grace: abandoning them"
                );
                scope.abort.cancel();
                tracker.wait().await;
            }
        }
        stop_writer.cancel();
        if let Err(e) = writer.await {
            tracing::error!("the ledger writer failed: {e}");
        }
        let _ = heartbeat.await;
        let _ = membership.await;
        let _ = flusher.await;
        // The runs have ended: the recorder gets their last counts.
        self.shared.metrics.flush();
        tracing::info!("scheduler stopped");
    }
}

impl Shared {
    /// Where `job`'s lease lives: the coordinator, unless nothing arbitrates its triggers.
    pub(crate) fn leases(&self, job: &Job) -> &dyn Coordinator {
        match &self.coordinator {
            Some(coordinator) if !job.every_replica => coordinator.as_ref(),
            _ => &self.local_leases,
        }
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn remove(&self, name: &str, cancel_runs: bool) -> bool {
        let Some(job) = self.table().remove(name) else { return false };
        self.retire(&job, cancel_runs);
        true
    }

    /// Marks a removed job so that its waiting triggers do not start and its runs save
    /// no state, and deletes its stored state (not a one-shot's: see
    /// [`Scheduler::remove`]).
    fn retire(&self, job: &Arc<Job>, cancel_runs: bool) {
        job.removed.store(true, Ordering::SeqCst);
        if cancel_runs {
            job.cancel_runs.cancel();
        }
        if !self.persist_state || job.kind.is_one_shot() {
            return;
        }
        let (store, name) = (self.store.clone(), job.name.clone());
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if let Err(e) = store.delete_state(&name).await {
                        tracing::warn!(job = %name, "the removed job's state stays: {e}");
                    }
                });
            }
            Err(_) => tracing::warn!(
                job = %job.name,
                "removed outside a tokio runtime: its stored state stays"
            ),
        }
    }
}

/// Why [`Scheduler::define`] failed.
#[derive(Debug, thiserror::Error)]
pub enum DefineError {
    /// The definition is invalid.
    #[error(transparent)]
    Invalid(#[from] JobError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}
