//! What the engine's parts share: [`Shared`], behind the [`Scheduler`](super::Scheduler)'s
//! reference count, and the engine's [`Settings`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use jiff::Timestamp;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::cancel::in_flight::InFlight;
use super::claim::marks::StartMarks;
use super::claim::skew::SkewGuard;
use super::fleet::cut_off::CutOff;
use super::introspect::Health;
use super::outbox::Outbox;
use super::probe::LoopWatch;
use super::table::{Due, Table};
use crate::clock::Clock;
use crate::coordinator::{Coordinator, InProcessCoordinator, MemberDetails};
use crate::job::Job;
use crate::ledger::Ledger;
use crate::metrics::{MetricLabels, Metrics};
use crate::placement::Labels;
use crate::policy::{ConcurrencyCap, RunObserver};
use crate::registry::HandlerRegistry;
use crate::store::Store;

/// What every part of a scheduler shares.
pub(crate) struct Shared {
    pub clock: Arc<dyn Clock>,
    /// `None` in single-replica mode: every trigger runs, nothing is claimed.
    pub coordinator: Option<Arc<dyn Coordinator>>,
    pub ledger: Arc<dyn Ledger>,
    pub store: Arc<dyn Store>,
    /// Whether a store was configured: without one, per-trigger state is not saved
    /// (nothing would read it back).
    pub persist_state: bool,
    pub instance: Arc<str>,
    pub settings: Settings,
    /// The concurrency cap, if any.
    pub cap: Option<ConcurrencyCap>,
    /// Leases of the jobs no coordinator arbitrates: in single-replica mode, and for
    /// `on_every_replica` jobs (each replica keeps its own runs apart).
    pub local_leases: InProcessCoordinator,
    pub observer: Option<Arc<dyn RunObserver>>,
    /// This replica's offset from its coordinator's clock.
    pub skew: SkewGuard,
    /// What tests observe of the engine's loop.
    pub probe: LoopWatch,
    pub handlers: HandlerRegistry,
    pub restored: AtomicBool,
    pub table: Mutex<Table>,
    pub wake: Notify,
    /// Notifies every waiter when a job is removed with its runs cancelled (its
    /// `runs_cancelled` set first): each run in flight then looks whether its job was.
    pub runs_cancelled: Notify,
    /// Set while a `run()` fires triggers.
    pub running: AtomicBool,
    pub health: Health,
    /// The scheduler's metrics, counted locally and flushed to the recorder.
    pub metrics: Arc<Metrics>,
    /// Held by a `run()` from its start to the end of its shutdown, which may go on after
    /// its future was dropped: a later `run()` waits for it.
    pub lifecycle: Arc<tokio::sync::Mutex<()>>,
    /// The ledger writes and failed job-state writes waiting to be written.
    pub outbox: Arc<Outbox>,
    /// The coordinator's start marks waiting to be sent.
    pub start_marks: StartMarks,
    /// Fired while this replica is cut off from its coordinator (the fleet's partition
    /// rule).
    pub cut_off: CutOff,
    /// Fired when [`Scheduler::run`](crate::Scheduler::run) returns: ends the reconcile loops.
    pub stopped: CancellationToken,
    /// Groups of requested runs (manual, backfill, catch-up at a resume), each run in
    /// order, waiting for the engine to spawn them.
    pub requests: Mutex<Vec<Vec<Due>>>,
    /// Single-replica mode's paused jobs (kept in the store), and since when.
    pub local_paused: Mutex<HashMap<String, Timestamp>>,
    /// The runs in flight here, by job and trigger, each with its cancel.
    pub in_flight: InFlight,
    /// The instances of runs presumed interrupted that this scheduler found out of the
    /// membership, and since when (engine/chain/presumed.rs).
    pub absent_since: Mutex<HashMap<Arc<str>, Timestamp>>,
}

/// Engine settings; see the [`SchedulerBuilder`](crate::SchedulerBuilder) methods.
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
    pub metrics: MetricLabels,
    pub record_buffer: usize,
    pub start_mark_timeout: Duration,
    pub restore_definitions: bool,
    /// What this replica publishes in the membership.
    pub details: MemberDetails,
    /// The labels this replica carries (also in `details`, as written).
    pub labels: Labels,
}

impl Shared {
    /// Where `job`'s lease lives: the coordinator, unless nothing arbitrates its triggers.
    pub fn leases(&self, job: &Job) -> &dyn Coordinator {
        match &self.coordinator {
            Some(coordinator) if !job.every_replica => coordinator.as_ref(),
            _ => &self.local_leases,
        }
    }

    pub fn absent_since(&self) -> MutexGuard<'_, HashMap<Arc<str>, Timestamp>> {
        self.absent_since.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn remove(&self, name: &str, cancel_runs: bool) -> bool {
        let Some(job) = self.table().remove(name) else { return false };
        self.retire(&job, cancel_runs);
        true
    }

    /// Marks a removed job so that its waiting triggers do not start and its runs save
    /// no state, and deletes its stored state (not a one-shot's: see
    /// [`Scheduler::remove`](crate::Scheduler::remove)).
    pub fn retire(&self, job: &Arc<Job>, cancel_runs: bool) {
        job.removed.store(true, Ordering::SeqCst);
        if cancel_runs {
            job.runs_cancelled.store(true, Ordering::SeqCst);
            self.runs_cancelled.notify_waiters();
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
