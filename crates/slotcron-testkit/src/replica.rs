//! One replica of a simulated fleet: a scheduler on its own skewed manual clock, and the
//! triggers it must have recorded.

use std::sync::Arc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use slotcron::{
    CancellationToken, Clock, Coordinator, Job, ManualClock, RunRecord, ScheduleKind, Scheduler,
    SchedulerBuilder,
};
use tokio::task::JoinHandle;

use crate::WatchedLedger;
use crate::link::{Link, LinkState};

/// A scheduler instance on its own [`ManualClock`], which reads the fleet's time plus a
/// fixed skew. Its ledger outlives restarts, as a durable ledger would.
pub struct Replica {
    instance: String,
    skew: SignedDuration,
    clock: ManualClock,
    jobs: Vec<Job>,
    ledger: Arc<WatchedLedger>,
    running: Option<Running>,
    /// Triggers that came due on this replica's clock and are not yet in its ledger.
    pending: Vec<(Arc<str>, Timestamp)>,
    /// Every trigger that came due on this replica, across restarts.
    due: Vec<(Job, Timestamp)>,
    /// The links to the coordinator of every start, the last one's last.
    links: Vec<Arc<Link>>,
}

/// Settings every replica's scheduler gets, on top of the fleet's own.
pub(crate) type Configure = Arc<dyn Fn(SchedulerBuilder) -> SchedulerBuilder + Send + Sync>;

/// A running scheduler and, per job, its next trigger not yet due.
struct Running {
    scheduler: Scheduler,
    cancel: CancellationToken,
    task: JoinHandle<()>,
    cursors: Vec<(Job, Option<Timestamp>)>,
}

impl Replica {
    pub(crate) fn new(instance: &str, skew: SignedDuration, fleet_now: Timestamp, jobs: Vec<Job>) -> Self {
        assert!(!jobs.is_empty(), "replica {instance}: a replica needs at least one job");
        Self {
            instance: instance.to_owned(),
            skew,
            clock: ManualClock::new(fleet_now.saturating_add(skew).expect("skewed start in range")),
            jobs,
            ledger: Arc::new(WatchedLedger::default()),
            running: None,
            pending: Vec::new(),
            due: Vec::new(),
            links: Vec::new(),
        }
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// How far this replica's clock is ahead of the fleet's time (negative: behind).
    pub fn skew(&self) -> SignedDuration {
        self.skew
    }

    /// This replica's clock.
    pub fn clock(&self) -> &ManualClock {
        &self.clock
    }

    /// The jobs it runs.
    pub fn jobs(&self) -> &[Job] {
        &self.jobs
    }

    /// The ledger of every incarnation of this replica.
    pub fn ledger(&self) -> &Arc<WatchedLedger> {
        &self.ledger
    }

    /// Every record of this replica, in the order appended.
    pub fn records(&self) -> Vec<RunRecord> {
        self.ledger.records()
    }

    /// Every `(job, trigger)` that came due on this replica's clock while it ran.
    pub fn due(&self) -> &[(Job, Timestamp)] {
        &self.due
    }

    /// Whether a scheduler runs.
    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// Every `(job, trigger)` this replica tried to claim, across restarts, in order.
    pub fn claimed(&self) -> Vec<(Arc<str>, Timestamp)> {
        self.links.iter().flat_map(|link| link.claimed()).collect()
    }

    /// Every `(job, trigger)` this replica tried to claim ahead of its instant, in order,
    /// across its runs, whether or not the trigger then came due here.
    pub fn claimed_ahead(&self) -> Vec<(Arc<str>, Timestamp)> {
        self.links.iter().flat_map(|link| link.claimed_ahead()).collect()
    }

    /// How many start marks the replica sent in mark calls through its links (the claims
    /// ahead of an instant are marked by its start instead).
    pub fn marks_sent(&self) -> usize {
        self.links.iter().flat_map(|link| link.mark_calls()).sum()
    }

    /// What the link of the running scheduler to its coordinator lets through.
    ///
    /// # Panics
    /// If it never started.
    pub fn set_link(&self, state: LinkState) {
        self.links.last().expect("a started replica").set(state);
    }

    /// What the running scheduler's link to its coordinator lets through (`None` when it
    /// never started).
    pub fn link(&self) -> Option<LinkState> {
        self.links.last().map(|link| link.state())
    }

    /// The running scheduler's view of the fleet's membership (`None` before its first
    /// heartbeat answered, or when stopped).
    pub fn members(&self) -> Option<Vec<String>> {
        self.running.as_ref().and_then(|r| r.scheduler.members())
    }

    /// Starts a scheduler with a fresh coordinator, waits until it has read its clock,
    /// and queues what is due at once (a past `at`).
    pub(crate) async fn start(
        &mut self,
        coordinator: Arc<dyn Coordinator>,
        timeout: Duration,
        check_clock_skew: bool,
        configure: Option<&Configure>,
    ) {
        assert!(self.running.is_none(), "replica {} is already running", self.instance);
        let link = Arc::new(Link::new(coordinator));
        self.links.push(link.clone());
        let builder = Scheduler::builder()
            .clock(self.clock.clone())
            .coordinator(link)
            .ledger(self.ledger.clone())
            .instance(self.instance.clone())
            .check_clock_skew(check_clock_skew);
        let scheduler = match configure {
            Some(configure) => configure(builder),
            None => builder,
        }
        .build();
        for job in &self.jobs {
            scheduler.add(job.clone()).expect("distinct job names");
        }
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (scheduler, cancel) = (scheduler.clone(), cancel.clone());
            async move { scheduler.run(cancel).await }
        });
        let records_before = self.ledger.records().len();
        let started = || {
            self.jobs.iter().any(|job| scheduler.next_trigger(job.name()).is_some())
                || self.ledger.records().len() > records_before
        };
        wait_until(timeout, started, || format!("replica {} did not start", self.instance)).await;
        let start = self.clock.now();
        let cursors = self.jobs.iter().map(|job| (job.clone(), first_trigger(job, start))).collect();
        self.running = Some(Running { scheduler, cancel, task, cursors });
        self.collect_due();
    }

    /// Stops the scheduler and waits for it to return.
    pub(crate) async fn stop(&mut self, timeout: Duration) {
        let Some(running) = self.running.take() else { return };
        running.cancel.cancel();
        let stopped = tokio::time::timeout(timeout, running.task).await;
        let joined = stopped.unwrap_or_else(|_| panic!("replica {} did not stop", self.instance));
        joined.unwrap_or_else(|e| panic!("replica {} panicked: {e}", self.instance));
    }

    /// Stops the scheduler as a crash would, as far as the fleet can tell: its link goes
    /// down (no heartbeat, no claim, no leaving the membership) and its `run` future is
    /// dropped; waits until what it had started has stopped.
    pub(crate) async fn kill(&mut self, timeout: Duration) {
        let Some(running) = self.running.take() else { return };
        self.set_link(LinkState::Down);
        running.task.abort();
        let _ = running.task.await;
        let stopped = || running.scheduler.probe().is_stopped();
        wait_until(timeout, stopped, || format!("replica {} did not stop", self.instance)).await;
    }

    /// The triggers that came due and that the fleet has not waited for yet; first waits
    /// until this replica, if running, has either recorded each (a running record will
    /// do) or set it aside to wait for its owner or for a slot of its concurrency cap, or
    /// it lacks the labels the job is placed on (it leaves the trigger to others), or
    /// its link holds its claim ([`LinkState::ClaimsHeld`]), so that owners' claims are
    /// made before another replica's takeover.
    pub(crate) async fn take_pending(&mut self, timeout: Duration) -> Vec<(Arc<str>, Timestamp)> {
        if let Some(running) = &self.running {
            let (ledger, pending, link) = (&self.ledger, &self.pending, self.links.last());
            let settled = |(job, trigger): &(Arc<str>, Timestamp)| {
                ledger.has_record(job, *trigger)
                    || running.scheduler.probe().awaits_takeover(job, *trigger)
                    || running.scheduler.probe().awaits_slot(job, *trigger)
                    || running.scheduler.probe().lacks_labels_of(job)
                    || link.is_some_and(|link| link.holds(job, *trigger))
            };
            let what = || {
                let open: Vec<String> =
                    pending.iter().filter(|due| !settled(due)).map(|(job, t)| format!("{job}@{t}")).collect();
                format!("replica {} did not settle {}", self.instance, open.join(", "))
            };
            wait_until(timeout, || pending.iter().all(settled), what).await;
        }
        std::mem::take(&mut self.pending)
    }

    /// Whether this replica, if running, waits for `job`'s `trigger`'s owner to claim it:
    /// `Some(Some(look))` while it sleeps until its next look whether the trigger is
    /// still unclaimed (fleet time), `Some(None)` while it is not asleep.
    pub(crate) fn takeover_look(&self, job: &str, trigger: Timestamp) -> Option<Option<Timestamp>> {
        let running = self.running.as_ref()?;
        let look = running.scheduler.probe().next_takeover_look(job, trigger);
        if look.is_none() && !running.scheduler.probe().awaits_takeover(job, trigger) {
            return None;
        }
        Some(look.and_then(|at| at.saturating_sub(self.skew).ok()))
    }

    /// Waits until this replica's engine, if running, has gone to sleep at its clock's
    /// time: it has handled what came due by now, claims ahead included.
    pub(crate) async fn wait_idle(&self, timeout: Duration) {
        let Some(running) = &self.running else { return };
        let now = self.clock.now();
        let idle = || running.scheduler.probe().idle_at(now) || running.scheduler.probe().is_stopped();
        wait_until(timeout, idle, || format!("replica {}'s engine did not settle at {now}", self.instance))
            .await;
    }

    /// Moves this replica's clock to the fleet's time plus its skew and notes what comes
    /// due.
    pub(crate) fn set_time(&mut self, fleet_now: Timestamp) {
        self.clock.set(fleet_now.saturating_add(self.skew).expect("skewed time in range"));
        self.collect_due();
    }

    /// The fleet time at which this replica's next trigger comes due.
    pub(crate) fn next_due(&self) -> Option<Timestamp> {
        let running = self.running.as_ref()?;
        let next = running.cursors.iter().filter_map(|(_, at)| *at).min()?;
        next.saturating_sub(self.skew).ok()
    }

    fn collect_due(&mut self) {
        let now = self.clock.now();
        let Some(running) = self.running.as_mut() else { return };
        for (job, cursor) in &mut running.cursors {
            while let Some(at) = cursor.filter(|at| *at <= now) {
                self.pending.push((job.name().into(), at));
                self.due.push((job.clone(), at));
                *cursor = next_trigger(job, at);
            }
        }
    }

    /// Waits until every trigger that came due has a record in the ledger.
    ///
    /// # Panics
    /// After `timeout`, naming the triggers still missing.
    pub(crate) async fn wait_recorded(&mut self, timeout: Duration) {
        let mut changed = self.ledger.changed();
        let ledger = &self.ledger;
        let complete =
            |pending: &[(Arc<str>, Timestamp)]| pending.iter().all(|(j, t)| ledger.count(j, *t) > 0);
        let waited = tokio::time::timeout(timeout, changed.wait_for(|_| complete(&self.pending))).await;
        if waited.is_err() {
            let missing: Vec<String> = self
                .pending
                .iter()
                .filter(|(j, t)| ledger.count(j, *t) == 0)
                .map(|(j, t)| format!("{j}@{t}"))
                .collect();
            panic!("replica {}: no record within {timeout:?} for {}", self.instance, missing.join(", "));
        }
        self.pending.clear();
    }
}

/// The first trigger of a job on a scheduler that started at `start`, as the engine
/// queues it.
fn first_trigger(job: &Job, start: Timestamp) -> Option<Timestamp> {
    match job.schedule().kind() {
        ScheduleKind::At(at) => Some(at),
        ScheduleKind::After(delay) => start.checked_add(delay).ok(),
        ScheduleKind::Interval { period } if job.run_on_start() => {
            job.schedule().next_after(start).and_then(|first| first.checked_sub(period).ok())
        }
        _ => job.schedule().next_after(start),
    }
}

fn next_trigger(job: &Job, after: Timestamp) -> Option<Timestamp> {
    if job.schedule().kind().is_one_shot() { None } else { job.schedule().next_after(after) }
}

/// Polls `condition` every millisecond (real time) until it holds.
///
/// # Panics
/// With `what()` once `timeout` has passed.
pub(crate) async fn wait_until(
    timeout: Duration,
    mut condition: impl FnMut() -> bool,
    what: impl FnOnce() -> String,
) {
    let poll = async {
        while !condition() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    if tokio::time::timeout(timeout, poll).await.is_err() {
        panic!("{} within {timeout:?}", what());
    }
}
