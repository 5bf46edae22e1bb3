//! Run recording on a manual clock: the `running` record and its completion, the stale
//! sweep, and the outbox keeping records while the ledger is down.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use slotcron::{
    Cause, Job, JobState, Ledger, LedgerQuery, MemoryLedger, MemoryStore, Outcome, RunRecord, Scheduler,
    Store,
};
use slotcron::{Coordinator, LedgerError, Leftover};
use slotcron_testkit::harness::{Harness, gated, ok, ts};

/// A memory ledger that refuses every write while `down` is set.
#[derive(Default)]
struct Flaky {
    inner: MemoryLedger,
    down: AtomicBool,
}

impl Flaky {
    fn check(&self) -> Result<(), LedgerError> {
        if self.down.load(Ordering::SeqCst) { Err(LedgerError::new("the ledger is down")) } else { Ok(()) }
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
async fn failed_writes_to_the_state_are_counted_by_backend_and_kind() {
    let recorder = metrics_util::debugging::DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _recording = metrics::set_default_local_recorder(&recorder);
    let flaky = Arc::new(Flaky::default());
    let mut h = Harness::with("2024-05-17T00:00:00Z", |b| b.ledger(flaky.clone()));
    h.add(Job::builder("tick").every(Duration::from_secs(1)).handler(ok).build().unwrap());
    h.start().await;
    flaky.down.store(true, Ordering::SeqCst);
    h.advance_to(ts("2024-05-17T00:00:05Z")).await;
    h.scheduler.flush_metrics();
    let failed: Vec<(String, u64)> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == slotcron::BACKEND_ERRORS_TOTAL)
        .filter_map(|(key, _, _, value)| {
            let metrics_util::debugging::DebugValue::Counter(n) = value else { return None };
            let labels: Vec<String> =
                key.key().labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
            Some((labels.join(","), n))
        })
        .collect();
    let state = failed.iter().find(|(labels, _)| labels == "backend=state,kind=unavailable");
    assert!(state.is_some_and(|(_, n)| *n >= 1), "{failed:?}");
    let coordinator = failed.iter().find(|(labels, _)| labels == "backend=coordinator,kind=unavailable");
    assert_eq!(coordinator.map(|(_, n)| *n), Some(0), "{failed:?}");
    flaky.down.store(false, Ordering::SeqCst);
    h.stop().await;
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
async fn a_full_buffer_holds_back_new_runs_and_drops_no_record() {
    let flaky = Arc::new(Flaky::default());
    let mut h = Harness::with("2024-05-17T00:00:00Z", |b| b.ledger(flaky.clone()).record_buffer(4));
    h.add(Job::builder("tick").every(Duration::from_secs(1)).handler(ok).build().unwrap());
    flaky.down.store(true, Ordering::SeqCst);
    h.start().await;
    // Each run's start mark waits for the ledger: four marks fill the buffer, and the
    // engine starts nothing new until the ledger has taken them.
    h.advance_to(ts("2024-05-17T00:00:10Z")).await;
    assert!(flaky.inner.records().is_empty(), "nothing reaches a ledger that is down");
    flaky.down.store(false, Ordering::SeqCst);
    h.advance_to(ts("2024-05-17T00:00:20Z")).await;
    h.stop().await;
    let records = flaky.inner.records();
    let second = |r: &RunRecord| r.trigger.duration_since(ts("2024-05-17T00:00:00Z")).as_secs();
    let ran: Vec<i64> = records.iter().filter(|r| r.outcome == Outcome::Succeeded).map(second).collect();
    // The four runs held at their start marks ran once the ledger was back, late.
    assert_eq!(ran[..4], [1, 2, 3, 4], "{records:?}");
    // The triggers that came due while the engine held back are one `missed` record (the
    // misfire policy), and the runs after it follow without a gap: none was dropped.
    let missed: Vec<&RunRecord> = records.iter().filter(|r| r.outcome == Outcome::Missed).collect();
    assert_eq!(missed.len(), 1, "{records:?}");
    let resumed = second(missed[0]) + 1;
    assert_eq!(ran[4..], (resumed..=20).collect::<Vec<_>>(), "{records:?}");
    assert_eq!(records.len(), ran.len() + 1, "one record per run, and the miss: {records:?}");
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
    let ended = Arc::new(Ended::default());
    let scheduler =
        Scheduler::builder().ledger(ledger.clone()).instance("new").observer(ended.clone()).build();
    let stale = scheduler
        .sweep_stale(
            |r| (&*r.instance == "dead").then(|| "instance dead left the membership".to_owned()),
            async |_r: &RunRecord| Leftover::Stopped("its command was stopped".to_owned()),
        )
        .await
        .unwrap();
    assert_eq!(stale, [running("dead")]);
    let records = ledger.records();
    assert_eq!(records[0].outcome, Outcome::Interrupted);
    assert!(records[0].error.as_deref().unwrap().ends_with("; its command was stopped"), "{records:?}");
    assert_eq!(records[1], running("alive"), "a record it does not own is left alone");
    let told = ended.0.lock().unwrap().clone();
    assert_eq!(told, [("migrate".to_owned(), Outcome::Interrupted)], "its observer (failure hooks) is told");
}

/// A [`RunObserver`] that keeps the job and outcome of each record it is told of.
#[derive(Default)]
struct Ended(std::sync::Mutex<Vec<(String, Outcome)>>);

impl slotcron::RunObserver for Ended {
    fn run_ended(&self, record: &RunRecord) {
        self.0.lock().unwrap().push((record.job.to_string(), record.outcome));
    }
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
    let started = JobState::of(trigger, None, false);
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

    scheduler
        .sweep_stale(
            |r| (&*r.instance == "dead").then(|| "gone".to_owned()),
            async |_r: &RunRecord| Leftover::Unknown,
        )
        .await
        .unwrap();
    assert_eq!(last("migrate"), Some(Outcome::Interrupted), "as the ledger says");
    let states = store.load_states().await.unwrap();
    let interrupted =
        JobState { last_outcome: Some(Outcome::Interrupted), last_failure: Some(trigger), ..started.clone() };
    assert_eq!(states["migrate"], interrupted);
    assert_eq!(states["other"], started, "a job without an interrupted run keeps its state");
    assert_eq!(last("other"), None);
}

/// A handler that counts its runs.
fn counted(runs: &Arc<std::sync::atomic::AtomicU32>) -> impl Fn(slotcron::JobContext) -> CountedRun + use<> {
    let runs = runs.clone();
    move |_ctx| {
        runs.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok::<(), std::io::Error>(()) })
    }
}

type CountedRun = std::pin::Pin<Box<dyn Future<Output = Result<(), std::io::Error>> + Send>>;

#[tokio::test(start_paused = true)]
async fn a_run_starts_only_once_its_start_mark_is_in_the_ledger() {
    let flaky = Arc::new(Flaky::default());
    let runs = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut h = Harness::with("2024-05-17T00:00:00Z", |b| b.ledger(flaky.clone()));
    let job = Job::builder("migrate").at(ts("2024-05-17T00:00:01Z")).handler(counted(&runs));
    h.add(job.build().unwrap());
    flaky.down.store(true, Ordering::SeqCst);
    h.start().await;
    h.advance_to(ts("2024-05-17T00:00:05Z")).await;
    assert_eq!(runs.load(Ordering::SeqCst), 0, "not started while its `running` record is not durable");
    flaky.down.store(false, Ordering::SeqCst);
    h.advance_to(ts("2024-05-17T00:00:15Z")).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1, "started once the ledger took its mark");
    h.stop().await;
    let records = flaky.inner.records();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].outcome, Outcome::Succeeded, "{records:?}");
}

#[tokio::test(start_paused = true)]
async fn a_start_mark_the_ledger_does_not_take_in_time_fails_closed_with_its_reason() {
    let flaky = Arc::new(Flaky::default());
    let runs = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let configure =
        |b: slotcron::SchedulerBuilder| b.ledger(flaky.clone()).start_mark_timeout(Duration::from_secs(3));
    let mut h = Harness::with("2024-05-17T00:00:00Z", configure);
    let job = Job::builder("tick").every(Duration::from_secs(60)).handler(counted(&runs));
    h.add(job.build().unwrap());
    flaky.down.store(true, Ordering::SeqCst);
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:10Z")).await;
    flaky.down.store(false, Ordering::SeqCst);
    h.advance_to(ts("2024-05-17T00:01:30Z")).await;
    h.stop().await;
    assert_eq!(runs.load(Ordering::SeqCst), 0, "never started");
    let records = flaky.inner.records();
    assert_eq!(records.len(), 1, "one record for the trigger: {records:?}");
    assert_eq!(records[0].outcome, Outcome::SkippedBackendUnavailable, "{records:?}");
    assert!(records[0].error.as_deref().unwrap_or_default().contains("start mark"), "{records:?}");
}

/// An in-process coordinator whose heartbeats fail while `down` is set (a daemon cut off
/// from its coordinator).
struct Partitioned {
    inner: slotcron::InProcessCoordinator,
    down: AtomicBool,
}

#[async_trait]
impl Coordinator for Partitioned {
    async fn claim(
        &self,
        claim: &slotcron::Claim<'_>,
    ) -> Result<slotcron::ClaimOutcome, slotcron::CoordinatorError> {
        self.inner.claim(claim).await
    }

    async fn heartbeat(
        &self,
        instance: &str,
        ttl: Duration,
    ) -> Result<Option<Vec<String>>, slotcron::CoordinatorError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(slotcron::CoordinatorError::unavailable("cut off"));
        }
        self.inner.heartbeat(instance, ttl).await
    }

    async fn leave(&self, instance: &str) -> Result<(), slotcron::CoordinatorError> {
        self.inner.leave(instance).await
    }

    fn name(&self) -> &'static str {
        "partitioned"
    }
}

#[tokio::test(start_paused = true)]
async fn a_scheduler_vouches_for_its_membership_view_only_after_a_full_ttl_of_unbroken_heartbeats() {
    let ttl = Duration::from_secs(9);
    let coordinator =
        Arc::new(Partitioned { inner: slotcron::InProcessCoordinator::new(), down: AtomicBool::new(false) });
    coordinator.inner.heartbeat("other", Duration::from_secs(3600)).await.unwrap();
    let mut h =
        Harness::with("2024-05-17T00:00:00Z", |b| b.coordinator(coordinator.clone()).membership_ttl(ttl));
    h.start().await;
    assert_eq!(h.scheduler.members(), Some(vec!["other".to_owned(), "test".to_owned()]));
    assert_eq!(h.scheduler.vouched_members(), None, "not connected for a full TTL yet");
    h.advance_to(ts("2024-05-17T00:00:09Z")).await;
    assert_eq!(h.scheduler.vouched_members(), Some(vec!["other".to_owned(), "test".to_owned()]));
    // Cut off: no view to judge others by, until a TTL after the heartbeats answer again.
    coordinator.down.store(true, Ordering::SeqCst);
    h.advance_to(ts("2024-05-17T00:00:13Z")).await;
    assert_eq!(h.scheduler.vouched_members(), None, "a failed heartbeat breaks the run of answers");
    coordinator.down.store(false, Ordering::SeqCst);
    coordinator.inner.leave("other").await.unwrap();
    h.advance_to(ts("2024-05-17T00:00:16Z")).await;
    assert_eq!(h.scheduler.members(), Some(vec!["test".to_owned()]), "it answers again");
    assert_eq!(h.scheduler.vouched_members(), None, "reconnected less than a TTL ago");
    h.advance_to(ts("2024-05-17T00:00:26Z")).await;
    assert_eq!(h.scheduler.vouched_members(), Some(vec!["test".to_owned()]), "`other` has left");
    h.stop().await;
}

/// A `running` record of `job`'s trigger at `at` by `instance`, with `cause`.
fn left_running(job: &str, at: &str, instance: &str, cause: Cause) -> RunRecord {
    RunRecord {
        job: job.into(),
        trigger: ts(at),
        instance: instance.into(),
        cause,
        attempts: 1,
        outcome: Outcome::Running,
        fencing_token: Some(1),
        started: ts(at),
        duration: Duration::ZERO,
        error: None,
        process: None,
    }
}

#[tokio::test(start_paused = true)]
async fn an_interrupted_run_of_a_rerun_job_runs_once_more_and_a_rerun_interrupted_does_not() {
    let runs = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut h = Harness::new("2024-05-17T00:00:30Z");
    let job = Job::builder("etl").every(Duration::from_secs(3600)).on_interrupt(slotcron::OnInterrupt::Rerun);
    h.add(job.handler(counted(&runs)).build().unwrap());
    h.ledger.append(&left_running("etl", "2024-05-17T00:00:00Z", "dead", Cause::Scheduled)).await.unwrap();
    h.ledger.append(&left_running("etl", "2024-05-16T23:00:00Z", "dead", Cause::Recovered)).await.unwrap();
    let gone = |r: &RunRecord| (&*r.instance == "dead").then(|| "instance dead is gone".to_owned());
    let stale = h.scheduler.sweep_stale(gone, async |_r: &RunRecord| Leftover::Unknown).await.unwrap();
    assert_eq!(stale.len(), 2);
    h.start().await;
    h.advance_to(ts("2024-05-17T00:00:40Z")).await;
    h.stop().await;
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the scheduled run rerun once; the rerun not again");
    let records = h.records("etl");
    let recovered: Vec<&RunRecord> = records.iter().filter(|r| r.cause == Cause::Recovered).collect();
    let rerun = recovered.iter().find(|r| r.outcome == Outcome::Succeeded).expect("the rerun's record");
    assert_eq!(rerun.trigger, ts("2024-05-17T00:00:00Z"), "{records:?}");
    let interrupted = records.iter().filter(|r| r.outcome == Outcome::Interrupted).count();
    assert_eq!(interrupted, 2, "both interrupted runs keep their record: {records:?}");
}

/// The rerun counts as an attempt: after an interrupted second attempt of a job with
/// three, the rerun is attempt 3 (its handler sees so), and, failing, is not retried.
#[tokio::test(start_paused = true)]
async fn a_rerun_is_the_attempt_after_the_interrupted_one_within_the_jobs_attempts() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut h = Harness::new("2024-05-17T00:00:30Z");
    let attempts = seen.clone();
    let job = Job::builder("etl")
        .every(Duration::from_secs(3600))
        .attempts(3)
        .on_interrupt(slotcron::OnInterrupt::Rerun)
        .handler(move |ctx: slotcron::JobContext| {
            attempts.lock().unwrap().push(ctx.attempt());
            async { Err::<(), _>(std::io::Error::other("fails")) }
        });
    h.add(job.build().unwrap());
    let second =
        RunRecord { attempts: 2, ..left_running("etl", "2024-05-17T00:00:00Z", "dead", Cause::Scheduled) };
    h.ledger.append(&second).await.unwrap();
    let gone = |r: &RunRecord| (&*r.instance == "dead").then(|| "instance dead is gone".to_owned());
    h.scheduler.sweep_stale(gone, async |_r: &RunRecord| Leftover::Unknown).await.unwrap();
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:00Z")).await;
    h.stop().await;
    assert_eq!(*seen.lock().unwrap(), [3], "the rerun is attempt 3 of 3: not retried");
    let records = h.records("etl");
    let rerun = records.iter().find(|r| r.cause == Cause::Recovered).expect("the rerun's record");
    assert_eq!((rerun.outcome, rerun.attempts), (Outcome::Failed, 3), "{records:?}");
}

#[tokio::test(start_paused = true)]
async fn an_interrupted_run_of_a_record_job_is_only_recorded() {
    let runs = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut h = Harness::new("2024-05-17T00:00:30Z");
    h.add(Job::builder("etl").every(Duration::from_secs(3600)).handler(counted(&runs)).build().unwrap());
    h.ledger.append(&left_running("etl", "2024-05-17T00:00:00Z", "dead", Cause::Scheduled)).await.unwrap();
    let gone = |r: &RunRecord| (&*r.instance == "dead").then(|| "instance dead is gone".to_owned());
    h.scheduler.sweep_stale(gone, async |_r: &RunRecord| Leftover::Unknown).await.unwrap();
    h.start().await;
    h.advance_to(ts("2024-05-17T00:00:40Z")).await;
    h.stop().await;
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_marked_run_whose_command_never_started_runs_once_whatever_its_on_interrupt() {
    let runs = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut h = Harness::new("2024-05-17T00:00:30Z");
    // The default on_interrupt ("record"): an interrupted run would not run again.
    h.add(Job::builder("etl").every(Duration::from_secs(3600)).handler(counted(&runs)).build().unwrap());
    h.ledger.append(&left_running("etl", "2024-05-17T00:00:00Z", "dead", Cause::Scheduled)).await.unwrap();
    h.ledger.append(&left_running("etl", "2024-05-16T23:00:00Z", "dead", Cause::Recovered)).await.unwrap();
    let gone = |r: &RunRecord| (&*r.instance == "dead").then(|| "instance dead is gone".to_owned());
    let never_started = async |_r: &RunRecord| Leftover::NeverStarted("no line in its journal".to_owned());
    let stale = h.scheduler.sweep_stale(gone, never_started).await.unwrap();
    let triggers: Vec<_> = stale.iter().map(|r| r.trigger).collect();
    assert_eq!(
        triggers,
        [ts("2024-05-16T23:00:00Z")],
        "only the rerun is interrupted: a rerun never runs again"
    );
    h.start().await;
    h.advance_to(ts("2024-05-17T00:00:40Z")).await;
    h.stop().await;
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the trigger whose command never started ran, once");
    let records = h.records("etl");
    let at = |trigger: &str, outcome: Outcome| {
        records.iter().filter(|r| r.trigger == ts(trigger) && r.outcome == outcome).collect::<Vec<_>>()
    };
    let skipped = at("2024-05-17T00:00:00Z", Outcome::SkippedLost);
    assert_eq!(skipped.len(), 1, "{records:?}");
    let reason = skipped[0].error.as_deref().unwrap();
    assert!(reason.starts_with("its command never started (no line in its journal)"), "{reason}");
    let ran = at("2024-05-17T00:00:00Z", Outcome::Succeeded);
    assert_eq!(ran.len(), 1, "{records:?}");
    assert_eq!(ran[0].cause, Cause::Recovered);
    let interrupted = at("2024-05-16T23:00:00Z", Outcome::Interrupted);
    assert!(interrupted[0].error.as_deref().unwrap().ends_with("; no line in its journal"), "{records:?}");
}

#[tokio::test(start_paused = true)]
async fn a_trigger_taken_and_never_recorded_runs_at_the_next_start_once_and_a_recorded_one_does_not() {
    // The state a single replica leaves when it dies after taking a trigger and before
    // its run's start mark: the trigger taken, no outcome, and no record of it.
    let store = Arc::new(MemoryStore::new());
    let taken = JobState::of(ts("2024-05-17T00:00:00Z"), None, false);
    store.save_state("lost", &taken).await.unwrap();
    store.save_state("ran", &taken).await.unwrap();
    let runs = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut h = Harness::with("2024-05-17T00:00:05Z", |b| b.store(store.clone()));
    for name in ["lost", "ran"] {
        let job = Job::builder(name).every(Duration::from_secs(3600)).handler(counted(&runs));
        h.add(job.build().unwrap());
    }
    // "ran" has its record: its run started (and its end was lost with the process).
    h.ledger.append(&left_running("ran", "2024-05-17T00:00:00Z", "test", Cause::Scheduled)).await.unwrap();
    h.start().await;
    h.advance_to(ts("2024-05-17T00:00:10Z")).await;
    h.stop().await;
    assert_eq!(runs.load(Ordering::SeqCst), 1, "only the unrecorded trigger ran");
    let records = h.records("lost");
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!((records[0].trigger, records[0].outcome), (ts("2024-05-17T00:00:00Z"), Outcome::Succeeded));
    assert_eq!(records[0].cause, Cause::TakenOver);
    assert!(records[0].error.as_deref().unwrap().contains("its command never started"), "{records:?}");
    assert_eq!(h.triggers("ran", Outcome::Succeeded), [], "a recorded trigger is not run again");
}

#[tokio::test(start_paused = true)]
async fn a_trigger_due_while_the_previous_process_ran_and_never_taken_runs_at_the_next_start() {
    // The previous process took "a"'s 00:00:10 trigger (and ran it) and died before it
    // took "b"'s, due at the same instant: it was running then.
    let store = Arc::new(MemoryStore::new());
    store
        .save_state("a", &JobState::of(ts("2024-05-17T00:00:10Z"), Some(Outcome::Succeeded), false))
        .await
        .unwrap();
    store
        .save_state("b", &JobState::of(ts("2024-05-17T00:00:00Z"), Some(Outcome::Succeeded), false))
        .await
        .unwrap();
    let runs = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut h = Harness::with("2024-05-17T00:00:15Z", |b| b.store(store.clone()));
    for name in ["a", "b"] {
        let job = Job::builder(name).every(Duration::from_secs(10)).grace(Duration::from_secs(1));
        h.add(job.handler(counted(&runs)).build().unwrap());
    }
    h.ledger.append(&left_running("a", "2024-05-17T00:00:10Z", "test", Cause::Scheduled)).await.unwrap();
    h.start().await;
    h.advance_to(ts("2024-05-17T00:00:16Z")).await;
    h.stop().await;
    let b = h.records("b");
    assert_eq!(b.len(), 1, "run once, not also recorded missed: {b:?}");
    assert_eq!(
        (b[0].trigger, b[0].outcome, b[0].cause),
        (ts("2024-05-17T00:00:10Z"), Outcome::Succeeded, Cause::TakenOver)
    );
    assert!(b[0].error.as_deref().unwrap().contains("died before taking it"), "{b:?}");
    assert_eq!(h.records("a").len(), 1, "a's trigger was taken: nothing more of it");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
