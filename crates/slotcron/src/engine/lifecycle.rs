//! A scheduler's life: [`Scheduler::run`] starts what a run needs, loops over what comes
//! due, and hands everything to the shutdown when it is cancelled (or dropped).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use jiff::Timestamp;
use tokio::sync::OwnedMutexGuard;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::fleet::{self, FleetRun};
use super::queue::Lane;
use super::scope::{Next, RunScope};
use super::{Scheduler, run};
use crate::clock::later;

/// How many due items the engine takes from the table per lock in single-replica mode.
const SPAWN_BATCH: usize = 64;

/// What one `run()` started: handed to its shutdown, however the `run()` ends.
struct Started {
    tracker: TaskTracker,
    scope: Arc<RunScope>,
    /// The fleet's side of this `run()`, with a coordinator.
    fleet: Option<FleetRun>,
    /// Stops the outbox's writer and the metrics flusher once the runs have stopped.
    stop_writer: CancellationToken,
    writer: JoinHandle<()>,
    /// The membership heartbeat: leaves the membership when the scheduler starts stopping.
    membership: Option<JoinHandle<()>>,
    /// The look for the fleet's cancel requests: ends when the scheduler starts stopping.
    cancels: Option<JoinHandle<()>>,
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
    /// Fires jobs until `cancel` fires, then stops firing, signals the running handlers
    /// (or, with [`SchedulerBuilder::drain_on_shutdown`](crate::SchedulerBuilder::drain_on_shutdown),
    /// lets them finish), waits for them up to the shutdown timeout, drops what is left
    /// after the cancel grace, writes the records still buffered (for up to 10 s more),
    /// and returns. Close connections the handlers use after this returns, not before.
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
        let started = guard.started.insert(self.start().await);
        let (scope, tracker, fleet) = (started.scope.clone(), started.tracker.clone(), started.fleet.clone());
        let mut dispatch = fleet.map(fleet::dispatch::Dispatch::new);
        let mut due = Vec::with_capacity(SPAWN_BATCH);
        loop {
            // Back-pressure: nothing new is claimed while the ledger's buffer is full.
            self.shared.outbox.room(&cancel).await;
            self.shared.probe.awake();
            let now = self.shared.clock.now();
            let next = match dispatch.as_mut() {
                Some(dispatch) => dispatch.pass(now).await,
                None => self.pass_alone(&scope, &tracker, now, &mut due).await,
            };
            let Next::Sleep(deadline) = next else { continue };
            if !self.sleep(&cancel, deadline).await {
                break;
            }
        }
        let started = guard.started.take().expect("taken only here and on drop");
        self.shutdown(started).await;
        // The guard clears the running flag and fires `stopped`.
    }

    /// Restores the store's state (unless done already) and starts what a `run()` needs
    /// beside its loop: the ledger writer, the metrics flusher and, with a
    /// coordinator, the fleet's membership heartbeat.
    async fn start(&self) -> Started {
        let shared = &self.shared;
        // A dropped run()'s shutdown may still be going on.
        let lifecycle = shared.lifecycle.clone().lock_owned().await;
        // The triggers after this instant are due: also those that come due while the
        // state is restored, the previous incarnation's claims are adopted and the first
        // heartbeat is awaited (seconds with a million jobs).
        let since = shared.clock.now();
        if !shared.restored.load(Ordering::SeqCst)
            && let Err(e) = self.restore().await
        {
            tracing::error!("{e}; jobs start without their stored state");
        }
        let stop_writer = CancellationToken::new();
        let writer = tokio::spawn(shared.outbox.clone().deliver(shared.clock.clone(), stop_writer.clone()));
        let flusher = tokio::spawn(
            shared.metrics.clone().flush_periodically(shared.clock.clone(), stop_writer.clone()),
        );
        let (scope, tracker) = (Arc::new(RunScope::new(shared.clone())), TaskTracker::new());
        let fleet = self.fleet.clone().map(|fleet| FleetRun {
            scope: scope.clone(),
            state: fleet,
            tracker: tracker.clone(),
        });
        match &fleet {
            // Before this run claims anything: its own claims would be listed alike.
            Some(fleet) => fleet::orphans::adopt_own(fleet).await,
            // Before the table takes anything: it is the previous process's last trigger.
            None => self.adopt_unrecorded(&scope, &tracker).await,
        }
        let membership =
            fleet.as_ref().map(|fleet| tokio::spawn(fleet::membership::heartbeat(fleet.clone())));
        if let Some(fleet) =
            fleet.as_ref().filter(|_| shared.coordinator.is_some() && shared.settings.shared_work)
        {
            // Before the first claim: until then this replica knows no other member.
            fleet.state.membership.first_heartbeat().await;
        }
        let cancels = fleet.as_ref().map(|fleet| tokio::spawn(fleet::cancels::watch(fleet.clone())));
        if membership.is_none() {
            // No membership: the gauge says so.
            shared.metrics.members(0);
        }
        // Before the table queues anything: a job whose max_runs were counted is over.
        let jobs = shared.table().jobs();
        shared.end_reached(&jobs).await;
        shared.table().start(since);
        tracing::info!(
            instance = %shared.instance,
            coordinator = shared.coordinator.as_ref().map_or("none", |c| c.name()),
            "scheduler started"
        );
        Started {
            tracker,
            scope,
            fleet,
            stop_writer,
            writer,
            membership,
            cancels,
            flusher,
            _lifecycle: lifecycle,
        }
    }

    /// One pass of the loop in single-replica mode: takes what is due (nothing to
    /// claim), spawns its runs (a job's catch-up in trigger order) and the requested
    /// runs.
    async fn pass_alone(
        &self,
        scope: &Arc<RunScope>,
        tracker: &TaskTracker,
        now: Timestamp,
        due: &mut Vec<super::table::Due>,
    ) -> Next {
        let (more, deadline) = {
            let mut table = self.shared.table();
            let more = table.take_due(now, due, SPAWN_BATCH, |_| Lane::Own, |_, _| true);
            (more, table.next_deadline())
        };
        run::spawn_due(scope, tracker, due.drain(..), |item| {
            scope.spawning();
            tracker.spawn(run::execute(scope.clone(), item));
            true
        });
        run::spawn_requests(scope, tracker);
        if more {
            scope.pace().await;
            return Next::Take;
        }
        Next::Sleep(deadline)
    }

    /// Sleeps until `deadline` (`None`: until woken), or until woken by a change to the
    /// jobs; `false` if `cancel` fired first.
    async fn sleep(&self, cancel: &CancellationToken, deadline: Option<Timestamp>) -> bool {
        self.shared.probe.asleep_until(deadline);
        let sleep = async {
            match deadline {
                Some(at) => self.shared.clock.sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = cancel.cancelled() => false,
            () = self.shared.wake.notified() => true,
            () = sleep => true,
        }
    }

    async fn shutdown(&self, started: Started) {
        let Started { tracker, scope, fleet, stop_writer, writer, membership, cancels, flusher, _lifecycle } =
            started;
        tracing::info!(runs = tracker.len(), "scheduler stopping: no new runs start");
        tracker.close();
        scope.stopping.cancel();
        if let Some(fleet) = &fleet {
            fleet::ahead::stop(fleet).await;
        }
        self.stop_runs(&scope, &tracker).await;
        stop_writer.cancel();
        if let Err(e) = writer.await {
            tracing::error!("the ledger writer failed: {e}");
        }
        for task in membership.into_iter().chain(cancels) {
            let _ = task.await;
        }
        let _ = flusher.await;
        // The runs have ended: the recorder gets their last counts.
        self.shared.metrics.flush();
        tracing::info!("scheduler stopped");
    }

    /// Signals the runs (unless they drain), waits for them up to the shutdown timeout,
    /// cancels them and waits the cancel grace, then abandons what is left.
    async fn stop_runs(&self, scope: &RunScope, tracker: &TaskTracker) {
        let (settings, clock) = (&self.shared.settings, &self.shared.clock);
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
        if bounded(settings.shutdown_timeout).await {
            return;
        }
        tracing::warn!(runs = tracker.len(), "runs still going at the shutdown timeout: cancelling them");
        scope.shutdown.cancel();
        if !bounded(settings.cancel_grace).await {
            tracing::warn!(runs = tracker.len(), "runs still going after the cancel grace: abandoning them");
            scope.abort.cancel();
            tracker.wait().await;
        }
    }
}
