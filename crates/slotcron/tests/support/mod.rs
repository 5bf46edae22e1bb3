//! A scheduler on a manual clock, driven by tests without real sleeping.
//!
//! Tests run on tokio's current-thread runtime with paused time: `settle` sleeps 1 ms of
//! paused time, which returns only once every other task is idle, so after it the
//! scheduler has handled everything the manual clock made due.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use slotcron::jiff::Timestamp;
use slotcron::{
    CancellationToken, Job, LedgerQuery, ManualClock, MemoryLedger, Outcome, RunRecord, Scheduler,
};
use tokio::task::JoinHandle;

pub fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

/// Lets every runnable task run until it waits (paused tokio time).
pub async fn settle() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

pub struct Harness {
    pub clock: ManualClock,
    pub scheduler: Scheduler,
    pub ledger: Arc<MemoryLedger>,
    pub cancel: CancellationToken,
    run: Option<JoinHandle<()>>,
}

impl Harness {
    pub fn new(start: &str) -> Self {
        Self::with(start, |b| b)
    }

    pub fn with(
        start: &str,
        configure: impl FnOnce(slotcron::SchedulerBuilder) -> slotcron::SchedulerBuilder,
    ) -> Self {
        let clock = ManualClock::new(ts(start));
        let ledger = Arc::new(MemoryLedger::new(1_000_000));
        let builder = Scheduler::builder().clock(clock.clone()).ledger(ledger.clone()).instance("test");
        let scheduler = configure(builder).build();
        Self { clock, scheduler, ledger, cancel: CancellationToken::new(), run: None }
    }

    pub fn add(&self, job: Job) {
        self.scheduler.add(job).unwrap();
    }

    pub async fn start(&mut self) {
        let scheduler = self.scheduler.clone();
        let cancel = self.cancel.clone();
        self.run = Some(tokio::spawn(async move { scheduler.run(cancel).await }));
        settle().await;
    }

    /// Moves the clock to `until`, stopping at every deadline on the way.
    pub async fn advance_to(&self, until: Timestamp) {
        while let Some(next) = self.clock.next_deadline().filter(|d| *d <= until) {
            self.clock.set(next);
            settle().await;
        }
        self.clock.set(until);
        settle().await;
    }

    pub async fn advance(&self, by: Duration) {
        self.advance_to(self.clock.now_ts() + by).await;
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

    pub fn is_running(&self) -> bool {
        self.run.as_ref().is_some_and(|r| !r.is_finished())
    }

    pub fn records(&self, job: &str) -> Vec<RunRecord> {
        self.ledger.records().into_iter().filter(|r| &*r.job == job).collect()
    }

    pub fn triggers(&self, job: &str, outcome: Outcome) -> Vec<Timestamp> {
        self.records(job).into_iter().filter(|r| r.outcome == outcome).map(|r| r.trigger).collect()
    }

    pub async fn history(&self, job: &str) -> Vec<RunRecord> {
        let query = LedgerQuery { job: Some(job.into()), limit: usize::MAX, ..LedgerQuery::default() };
        self.scheduler.history(&query).await.unwrap()
    }
}

pub trait NowTs {
    fn now_ts(&self) -> Timestamp;
}

impl NowTs for ManualClock {
    fn now_ts(&self) -> Timestamp {
        slotcron::Clock::now(self)
    }
}

/// A handler that succeeds at once.
pub async fn ok(_ctx: slotcron::JobContext) -> Result<(), std::io::Error> {
    Ok(())
}
