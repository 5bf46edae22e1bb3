//! Run recording on a manual clock: the `running` record and its completion, the stale
//! sweep, and the outbox keeping records while the ledger is down.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use slotcron::LedgerError;
use slotcron::testkit::harness::{Harness, gated, ok, ts};
use slotcron::{
    Cause, Job, JobState, Ledger, LedgerQuery, MemoryLedger, MemoryStore, Outcome, RunRecord, Scheduler,
    Store,
};

/// A memory ledger that refuses every write while `down` is set.
#[derive(Default)]
struct Flaky {
    inner: MemoryLedger,
    down: AtomicBool,
}

impl Flaky {
    fn check(&self) -> Result<(), LedgerError> {
        if self.down.load(Ordering::SeqCst) { Err(LedgerError("the ledger is down".into())) } else { Ok(()) }
    }
}

#[async_trait]
impl Ledger for Flaky {
    async fn append(&self, record: &RunRecord) -> Result<(), LedgerError> {
        self.check()?;
        self.inner.append(record).await
    }

    async fn update(&self, record: &RunRecord) -> Result<(), LedgerError> {
        self.check()?;
        self.inner.update(record).await
    }

    async fn query(&self, query: &LedgerQuery) -> Result<Vec<RunRecord>, LedgerError> {
        self.inner.query(query).await
    }
}

#[tokio::test(start_paused = true)]
async fn records_written_while_the_ledger_is_down_arrive_in_order_once_it_is_back() {
    let flaky = Arc::new(Flaky::default());
    let mut h = Harness::with("2024-05-17T00:00:00Z", |b| b.ledger(flaky.clone()));
    h.add(Job::builder("tick").every(Duration::from_secs(1)).handler(ok).build().unwrap());
    h.start().await;
    h.advance_to(ts("2024-05-17T00:00:02Z")).await;
    flaky.down.store(true, Ordering::SeqCst);
    h.advance_to(ts("2024-05-17T00:00:07Z")).await;
    assert_eq!(flaky.inner.records().len(), 2, "nothing reaches a ledger that is down");
    flaky.down.store(false, Ordering::SeqCst);
    h.advance_to(ts("2024-05-17T00:00:15Z")).await;
    let records = flaky.inner.records();
    let triggers: Vec<_> = records.iter().map(|r| r.trigger).collect();
    let expected: Vec<_> = (1..=15).map(|s| ts("2024-05-17T00:00:00Z") + Duration::from_secs(s)).collect();
    assert_eq!(triggers, expected, "every trigger once, in order");
    assert!(records.iter().all(|r| r.outcome == Outcome::Succeeded && r.attempts == 1), "{records:?}");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_full_buffer_drops_the_oldest_writes_and_keeps_the_newest() {
    let flaky = Arc::new(Flaky::default());
    let mut h = Harness::with("2024-05-17T00:00:00Z", |b| b.ledger(flaky.clone()).record_buffer(4));
    h.add(Job::builder("tick").every(Duration::from_secs(1)).handler(ok).build().unwrap());
    flaky.down.store(true, Ordering::SeqCst);
    h.start().await;
    // 10 runs: 20 writes (each run's start and end) into a buffer of 4.
    h.advance_to(ts("2024-05-17T00:00:10Z")).await;
    flaky.down.store(false, Ordering::SeqCst);
    h.advance_to(ts("2024-05-17T00:00:16Z")).await;
    let records = flaky.inner.records();
    let seconds: Vec<i64> =
        records.iter().map(|r| r.trigger.duration_since(ts("2024-05-17T00:00:00Z")).as_secs()).collect();
    // The oldest writes were dropped (until the writer's next try after the ledger came
    // back); what remains is the newest runs, each whole (an update whose start was
    // dropped appends its record), in order, without a gap.
    let first = seconds[0];
    assert!(first > 1, "the oldest were dropped: {seconds:?}");
    assert_eq!(seconds, (first..=16).collect::<Vec<_>>());
    assert!(records.iter().all(|r| r.outcome == Outcome::Succeeded), "{records:?}");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_run_is_recorded_running_with_its_cause_and_completed_when_it_ends() {
    let mut h = Harness::new("2024-05-17T00:00:00Z");
    let release = Arc::new(tokio::sync::Notify::new());
    let job = Job::builder("slow").at(ts("2024-05-16T00:00:00Z")).handler(gated(&release));
    h.add(job.build().unwrap());
    h.start().await;
    let running = h.records("slow");
    assert_eq!(running.len(), 1);
    assert_eq!(
        (running[0].outcome, running[0].cause, running[0].attempts),
        (Outcome::Running, Cause::CatchUp, 1)
    );
    release.notify_one();
    h.stop().await;
    let done = h.records("slow");
    assert_eq!(done.len(), 1, "the same record, completed: {done:?}");
    assert_eq!((done[0].outcome, done[0].started), (Outcome::Succeeded, running[0].started));
}

#[tokio::test(start_paused = true)]
async fn the_stale_sweep_marks_the_owned_running_records_interrupted() {
    let ledger = Arc::new(MemoryLedger::default());
    let running = |instance: &str| RunRecord {
        job: "migrate".into(),
        trigger: ts("2024-05-17T00:00:00Z"),
        instance: instance.into(),
        cause: Cause::Scheduled,
        attempts: 1,
        outcome: Outcome::Running,
        fencing_token: Some(1),
        started: ts("2024-05-17T00:00:00Z"),
        duration: Duration::ZERO,
        error: None,
        process: None,
    };
    ledger.append(&running("dead")).await.unwrap();
    ledger.append(&running("alive")).await.unwrap();
    let scheduler = Scheduler::builder().ledger(ledger.clone()).instance("new").build();
    let stale = scheduler
        .sweep_stale(
            |r| &*r.instance == "dead",
            async |_r: &RunRecord| Some("its command was stopped".to_owned()),
        )
        .await
        .unwrap();
    assert_eq!(stale, [running("dead")]);
    let records = ledger.records();
    assert_eq!(records[0].outcome, Outcome::Interrupted);
    assert!(records[0].error.as_deref().unwrap().ends_with("; its command was stopped"), "{records:?}");
    assert_eq!(records[1], running("alive"), "a record it does not own is left alone");
}

#[tokio::test(start_paused = true)]
async fn the_stale_sweep_makes_the_interrupted_runs_job_state_say_so() {
    let trigger = ts("2024-05-17T00:00:00Z");
    let ledger = Arc::new(MemoryLedger::default());
    ledger
        .append(&RunRecord {
            job: "migrate".into(),
            trigger,
            instance: "dead".into(),
            cause: Cause::Scheduled,
            attempts: 1,
            outcome: Outcome::Running,
            fencing_token: Some(1),
            started: trigger,
            duration: Duration::ZERO,
            error: None,
            process: None,
        })
        .await
        .unwrap();
    // The state a daemon leaves when it dies during a run: the trigger taken, no outcome.
    let store = Arc::new(MemoryStore::new());
    let started = JobState { last_trigger: trigger, last_outcome: None, one_shot_done: false };
    store.save_state("migrate", &started).await.unwrap();
    store.save_state("other", &started).await.unwrap();
    let scheduler = Scheduler::builder().ledger(ledger.clone()).store(store.clone()).instance("new").build();
    for name in ["migrate", "other"] {
        scheduler
            .add(Job::builder(name).every(Duration::from_secs(60)).handler(ok).build().unwrap())
            .unwrap();
    }
    scheduler.restore().await.unwrap();
    let last = |name: &str| scheduler.job(name, 0).unwrap().last_run.unwrap().outcome;
    assert_eq!(last("migrate"), None, "before the sweep: started, no end stored");

    scheduler.sweep_stale(|r| &*r.instance == "dead", async |_r: &RunRecord| None).await.unwrap();
    assert_eq!(last("migrate"), Some(Outcome::Interrupted), "as the ledger says");
    let states = store.load_states().await.unwrap();
    assert_eq!(states["migrate"], JobState { last_outcome: Some(Outcome::Interrupted), ..started.clone() });
    assert_eq!(states["other"], started, "a job without an interrupted run keeps its state");
    assert_eq!(last("other"), None);
}
