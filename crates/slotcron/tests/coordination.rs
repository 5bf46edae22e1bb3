//! The engine and its coordinator: one claim per trigger before the handler, lost claims
//! skipped, backend failures and slow claims skipped too (fail closed).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use slotcron::jiff::Timestamp;
use slotcron::{Claim, ClaimOutcome, Coordinator, CoordinatorError, Hold, Job, JobContext, Outcome};
use slotcron_testkit::harness::{Harness, settle, ts};

/// What a scripted coordinator answers.
#[derive(Clone, Copy)]
enum Answer {
    Win,
    Lose,
    Fail,
    Hang,
}

/// A claim as the coordinator received it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    job: String,
    trigger: Timestamp,
    key: String,
    instance: String,
    hold: Option<Hold>,
}

/// Answers every claim the same way and remembers what it was asked.
struct Scripted {
    answer: Answer,
    seen: Mutex<Vec<Seen>>,
    /// How many handlers had run when each claim arrived.
    runs_at_claim: Mutex<Vec<usize>>,
    runs: Arc<AtomicUsize>,
    /// The size of each batch of claims, in order.
    batches: Mutex<Vec<usize>>,
}

impl Scripted {
    fn new(answer: Answer, runs: Arc<AtomicUsize>) -> Arc<Self> {
        Arc::new(Self {
            answer,
            seen: Mutex::default(),
            runs_at_claim: Mutex::default(),
            runs,
            batches: Mutex::default(),
        })
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

#[async_trait]
impl Coordinator for Scripted {
    async fn claim(&self, claim: &Claim<'_>) -> Result<ClaimOutcome, CoordinatorError> {
        self.seen.lock().unwrap().push(Seen {
            job: claim.job.to_owned(),
            trigger: claim.trigger,
            key: claim.key.to_owned(),
            instance: claim.instance.to_owned(),
            hold: claim.hold,
        });
        self.runs_at_claim.lock().unwrap().push(self.runs.load(Ordering::SeqCst));
        match self.answer {
            Answer::Win => Ok(ClaimOutcome::Won { fencing_token: 7 }),
            Answer::Lose => Ok(ClaimOutcome::Lost),
            Answer::Fail => Err(CoordinatorError::unavailable("connection refused")),
            Answer::Hang => std::future::pending().await,
        }
    }

    async fn claim_batch(&self, claims: &[Claim<'_>]) -> Vec<Result<ClaimOutcome, CoordinatorError>> {
        self.batches.lock().unwrap().push(claims.len());
        let mut outcomes = Vec::new();
        for claim in claims {
            outcomes.push(self.claim(claim).await);
        }
        outcomes
    }

    fn name(&self) -> &'static str {
        "scripted"
    }
}

/// A harness whose coordinator answers `answer`, with an interval job `tick` (every 10 s)
/// and a one-shot `once` at 00:00:15, both counting their runs.
async fn harness(answer: Answer) -> (Harness, Arc<Scripted>, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let coordinator = Scripted::new(answer, runs.clone());
    let mut h = Harness::with("2024-05-17T00:00:00Z", |b| {
        b.coordinator(coordinator.clone()).slack(Duration::from_secs(3)).claim_timeout(Duration::from_secs(2))
    });
    let counting = |runs: Arc<AtomicUsize>| {
        move |_ctx: JobContext| {
            runs.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, std::io::Error>(()) }
        }
    };
    h.add(
        Job::builder("tick").every(Duration::from_secs(10)).handler(counting(runs.clone())).build().unwrap(),
    );
    h.add(
        Job::builder("once").at(ts("2024-05-17T00:00:15Z")).handler(counting(runs.clone())).build().unwrap(),
    );
    h.start().await;
    (h, coordinator, runs)
}

#[tokio::test(start_paused = true)]
async fn each_trigger_is_claimed_once_before_its_handler_with_key_instance_and_hold() {
    let (mut h, coordinator, runs) = harness(Answer::Win).await;
    h.advance_to(ts("2024-05-17T00:00:20Z")).await;
    let seen = coordinator.seen();
    let claim = |job: &str, trigger: &str, key: &str, hold| Seen {
        job: job.into(),
        trigger: ts(trigger),
        key: key.into(),
        instance: "test".into(),
        hold,
    };
    // The slot (10 s), no run budget (no timeout), the slack (3 s).
    let hold = Some(Hold { slot: Duration::from_secs(10), run_budget: None, slack: Duration::from_secs(3) });
    assert_eq!(
        seen,
        [
            claim("tick", "2024-05-17T00:00:10Z", "tick:2024-05-17T00:00:10Z", hold),
            // One-shots never expire.
            claim("once", "2024-05-17T00:00:15Z", "once:2024-05-17T00:00:15Z", None),
            claim("tick", "2024-05-17T00:00:20Z", "tick:2024-05-17T00:00:20Z", hold),
        ]
    );
    assert_eq!(*coordinator.runs_at_claim.lock().unwrap(), [0, 1, 2], "each claim precedes its run");
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    let tick = h.records("tick");
    assert_eq!(
        tick.iter().map(|r| (r.outcome, r.fencing_token)).collect::<Vec<_>>(),
        [(Outcome::Succeeded, Some(7)), (Outcome::Succeeded, Some(7))]
    );
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_lost_claim_is_recorded_skipped_lost_and_the_handler_does_not_run() {
    let (mut h, coordinator, runs) = harness(Answer::Lose).await;
    h.advance_to(ts("2024-05-17T00:00:20Z")).await;
    assert_eq!(coordinator.seen().len(), 3);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        h.triggers("tick", Outcome::SkippedLost),
        ["2024-05-17T00:00:10Z", "2024-05-17T00:00:20Z"].map(ts)
    );
    assert_eq!(h.triggers("once", Outcome::SkippedLost), [ts("2024-05-17T00:00:15Z")]);
    assert!(h.records("tick").iter().all(|r| r.fencing_token.is_none() && r.error.is_none()));
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_coordinator_error_skips_the_trigger_as_backend_unavailable_and_the_handler_does_not_run() {
    let (mut h, _coordinator, runs) = harness(Answer::Fail).await;
    h.advance_to(ts("2024-05-17T00:00:20Z")).await;
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let tick = h.records("tick");
    assert_eq!(tick.len(), 2);
    for record in &tick {
        assert_eq!(record.outcome, Outcome::SkippedBackendUnavailable);
        assert_eq!(record.error.as_deref(), Some("scripted coordinator (unavailable): connection refused"));
    }
    assert_eq!(h.triggers("once", Outcome::SkippedBackendUnavailable), [ts("2024-05-17T00:00:15Z")]);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_claim_slower_than_the_claim_timeout_skips_the_trigger_and_the_handler_does_not_run() {
    let (mut h, _coordinator, runs) = harness(Answer::Hang).await;
    h.advance_to(ts("2024-05-17T00:00:10Z")).await;
    assert!(h.records("tick").is_empty(), "still waiting for the claim");
    h.advance(Duration::from_millis(1999)).await;
    assert!(h.records("tick").is_empty(), "the claim timeout (2 s) has not passed");
    h.advance(Duration::from_millis(1)).await;
    settle().await;
    let tick = h.records("tick");
    assert_eq!(tick.len(), 1);
    assert_eq!(tick[0].outcome, Outcome::SkippedBackendUnavailable);
    assert_eq!(
        tick[0].error.as_deref(),
        Some("scripted coordinator (timed-out): no answer within the claim timeout of 2s")
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    h.stop().await;
}

/// Adds `count` jobs `batch-{k}`, every 10 s, counting their runs in `runs`.
fn add_batch_jobs(h: &Harness, count: usize, runs: &Arc<AtomicUsize>) {
    for k in 0..count {
        let runs = runs.clone();
        let job = Job::builder(format!("batch-{k}")).every(Duration::from_secs(10)).handler(move |_ctx| {
            runs.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, std::io::Error>(()) }
        });
        h.add(job.build().unwrap());
    }
}

#[tokio::test(start_paused = true)]
async fn triggers_due_together_are_claimed_in_one_batch_and_each_runs_with_its_own_record() {
    let (mut h, coordinator, runs) = harness(Answer::Win).await;
    add_batch_jobs(&h, 99, &runs);
    h.advance_to(ts("2024-05-17T00:00:10Z")).await;
    settle().await;
    assert_eq!(*coordinator.batches.lock().unwrap(), [100], "tick and the 99 others, in one batch");
    assert_eq!(runs.load(Ordering::SeqCst), 100);
    for k in 0..99 {
        let job = format!("batch-{k}");
        assert_eq!(h.triggers(&job, Outcome::Succeeded), [ts("2024-05-17T00:00:10Z")], "{job}");
        assert_eq!(h.records(&job).len(), 1, "{job}: one record");
    }
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_batch_slower_than_the_claim_timeout_skips_all_its_triggers_and_runs_none() {
    let (mut h, coordinator, runs) = harness(Answer::Hang).await;
    add_batch_jobs(&h, 9, &runs);
    h.advance_to(ts("2024-05-17T00:00:10Z")).await;
    h.advance(Duration::from_millis(1999)).await;
    assert!(h.records("batch-0").is_empty(), "the claim timeout (2 s) has not passed");
    h.advance(Duration::from_millis(1)).await;
    settle().await;
    assert_eq!(*coordinator.batches.lock().unwrap(), [10], "one batch");
    for job in std::iter::once("tick".to_owned()).chain((0..9).map(|k| format!("batch-{k}"))) {
        let records = h.records(&job);
        assert_eq!(records.len(), 1, "{job}: one record");
        assert_eq!(records[0].outcome, Outcome::SkippedBackendUnavailable, "{job}");
        assert_eq!(
            records[0].error.as_deref(),
            Some("scripted coordinator (timed-out): no answer within the claim timeout of 2s")
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0, "none ran");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_job_on_every_replica_runs_without_a_claim_and_counts_its_own_tokens() {
    let (mut h, coordinator, runs) = harness(Answer::Lose).await;
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let seen = tokens.clone();
    h.add(
        Job::builder("warm-local-cache")
            .every(Duration::from_secs(10))
            .on_every_replica(true)
            .handler(move |ctx: JobContext| {
                seen.lock().unwrap().push(ctx.fencing_token());
                async { Ok::<_, std::io::Error>(()) }
            })
            .build()
            .unwrap(),
    );
    h.advance_to(ts("2024-05-17T00:00:20Z")).await;
    assert!(coordinator.seen().iter().all(|claim| claim.job != "warm-local-cache"), "never claimed");
    assert_eq!(
        h.triggers("warm-local-cache", Outcome::Succeeded),
        ["2024-05-17T00:00:10Z", "2024-05-17T00:00:20Z"].map(ts)
    );
    assert_eq!(*tokens.lock().unwrap(), [1, 2]);
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the claimed jobs lost, as scripted");
    h.stop().await;
}
