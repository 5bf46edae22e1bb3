//! A scheduler on a [`ManualClock`], driven by tests without real sleeping.
//!
//! Tests run on tokio's current-thread runtime with paused time
//! (`#[tokio::test(start_paused = true)]`, tokio's `test-util` feature): [`settle`]
//! sleeps 1 ms of paused time, which returns only once every other task is idle, so after
//! it the scheduler has handled everything the manual clock made due. Work on tokio's
//! blocking pool (the SQLite backends' statements) holds paused time still until it
//! finishes, so a scheduler on a SQLite store and ledger settles the same way.
//!
//! ```ignore
//! use slotcron_testkit::harness::{Harness, ok, ts};
//!
//! #[tokio::test(start_paused = true)]
//! async fn ticks() {
//!     let mut h = Harness::new("2024-05-17T00:00:00Z");
//!     h.add(Job::builder("tick").every(Duration::from_secs(60)).handler(ok).build().unwrap());
//!     h.start().await;
//!     h.advance_to(ts("2024-05-17T00:02:00Z")).await;
//!     assert_eq!(h.triggers("tick", Outcome::Succeeded).len(), 2);
//!     h.stop().await;
//! }
//! ```
//!
//! Every helper panics on failure, as a test would.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use jiff::Timestamp;
use slotcron::{
    CancellationToken, Clock, Job, JobContext, LedgerQuery, ManualClock, MemoryLedger, Outcome, RunRecord,
    Scheduler, SchedulerBuilder,
};
use tokio::task::JoinHandle;

/// An instant from RFC 3339 text with an offset, e.g. `2024-05-17T00:00:00Z`.
pub fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

/// Lets every runnable task run until it waits (paused tokio time: 1 ms of it).
pub async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

/// A handler that succeeds at once.
pub async fn ok(_ctx: JobContext) -> Result<(), std::io::Error> {
    Ok(())
}

/// A handler that succeeds once `release` is notified (`notify_one`: one run each), to
/// hold a run in flight.
pub fn gated(release: &Arc<tokio::sync::Notify>) -> impl Fn(JobContext) -> GatedRun + use<> {
    let release = release.clone();
    move |_ctx: JobContext| {
        let release = release.clone();
        Box::pin(async move {
            release.notified().await;
            Ok(())
        })
    }
}

/// A handler that runs until its cancellation token fires, then fails (as a command
/// killed by SIGTERM does), counting its calls in `calls`: a run to cancel.
pub fn until_cancelled(calls: &Arc<AtomicU32>) -> impl Fn(JobContext) -> GatedRun + use<> {
    let calls = calls.clone();
    move |ctx: JobContext| {
        calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            ctx.cancellation_token().cancelled().await;
            Err(std::io::Error::other("stopped when asked"))
        })
    }
}

/// The future of a [`gated`] handler's run.
pub type GatedRun = std::pin::Pin<Box<dyn Future<Output = Result<(), std::io::Error>> + Send>>;

/// A scheduler with instance id `test` on a manual clock, recording runs in an in-memory
/// ledger (unless configured otherwise), and its `run` task once started.
pub struct Harness {
    /// The scheduler's clock: moved by [`Self::advance_to`], or by hand with `set`.
    pub clock: ManualClock,
    /// The scheduler.
    pub scheduler: Scheduler,
    /// The ledger the scheduler records in, unless [`Self::with`] gave it another.
    pub ledger: Arc<MemoryLedger>,
    /// Cancels `run`; [`Self::stop`] cancels it and waits.
    pub cancel: CancellationToken,
    run: Option<JoinHandle<()>>,
}

impl Harness {
    /// A scheduler whose clock starts at `start` (RFC 3339).
    pub fn new(start: &str) -> Self {
        Self::with(start, |b| b)
    }

    /// A scheduler whose clock starts at `start` (RFC 3339), with `configure` applied to
    /// its builder after the clock, the in-memory ledger and the instance id.
    pub fn with(start: &str, configure: impl FnOnce(SchedulerBuilder) -> SchedulerBuilder) -> Self {
        let clock = ManualClock::new(ts(start));
        let ledger = Arc::new(MemoryLedger::new(1_000_000));
        let builder = Scheduler::builder().clock(clock.clone()).ledger(ledger.clone()).instance("test");
        let scheduler = configure(builder).build();
        Self { clock, scheduler, ledger, cancel: CancellationToken::new(), run: None }
    }

    /// Adds a job.
    pub fn add(&self, job: Job) {
        self.scheduler.add(job).unwrap();
    }

    /// Spawns the scheduler's `run` and settles.
    pub async fn start(&mut self) {
        let scheduler = self.scheduler.clone();
        let cancel = self.cancel.clone();
        self.run = Some(tokio::spawn(async move { scheduler.run(cancel).await }));
        settle().await;
    }

    /// Moves the clock to `until`, stopping (and settling) at every deadline on the way.
    pub async fn advance_to(&self, until: Timestamp) {
        while let Some(next) = self.clock.next_deadline().filter(|d| *d <= until) {
            self.clock.set(next);
            settle().await;
        }
        self.clock.set(until);
        settle().await;
    }

    /// Moves the clock forward by `by`, as [`Self::advance_to`] does.
    pub async fn advance(&self, by: Duration) {
        self.advance_to(self.clock.now() + by).await;
    }

    /// Cancels the scheduler and waits for `run` to return, moving the clock through the
    /// deadlines it waits for; panics if it waits for nothing and does not return.
    pub async fn stop(&mut self) {
        self.cancel.cancel();
        settle().await;
        let Some(run) = self.run.take() else { return };
        while !run.is_finished() {
            let deadline =
                self.clock.next_deadline().expect("run() neither returns nor waits for a deadline");
            self.clock.set(deadline);
            settle().await;
        }
        run.await.unwrap();
    }

    /// Whether `run` was started and has not returned.
    pub fn is_running(&self) -> bool {
        self.run.as_ref().is_some_and(|r| !r.is_finished())
    }

    /// The in-memory ledger's records of `job`, in the order they were appended.
    pub fn records(&self, job: &str) -> Vec<RunRecord> {
        self.ledger.records().into_iter().filter(|r| &*r.job == job).collect()
    }

    /// The triggers of the in-memory ledger's records of `job` with `outcome`, in the
    /// order they were appended.
    pub fn triggers(&self, job: &str, outcome: Outcome) -> Vec<Timestamp> {
        self.records(job).into_iter().filter(|r| r.outcome == outcome).map(|r| r.trigger).collect()
    }

    /// Every record of `job` in the scheduler's ledger, whichever it is, newest trigger
    /// first.
    pub async fn history(&self, job: &str) -> Vec<RunRecord> {
        let query = LedgerQuery { job: Some(job.into()), limit: usize::MAX, ..LedgerQuery::default() };
        self.scheduler.history(&query).await.unwrap()
    }
}
