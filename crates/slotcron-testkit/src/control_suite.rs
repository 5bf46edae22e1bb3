//! The pause, request and cancel contract of a coordinator ([`Coordinator::controls`](slotcron::Coordinator::controls),
//! [`Coordinator::claim_request`](slotcron::Coordinator::claim_request)), shared by every backend's tests.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use slotcron::{
    CancelRequest, CancellationToken, Cause, Claim, ClaimOutcome, ControlError, Hold, Job, ManualClock,
    MemoryLedger, Outcome, RequestClaim, ScheduleKind, Scheduler, request_key, trigger_key,
};

use crate::CoordinatorFactory;
use crate::harness::until_cancelled;
use crate::replica::wait_until;
use crate::suite::namespace;

fn ts(s: &str) -> Timestamp {
    s.parse().expect("a valid instant")
}

/// A pause made through one coordinator refuses the job's claims through another of
/// the same namespace (and only that job's), one by one and in a batch (each paused
/// claim of a batch refused, the others' decided as usual), survives a new connection,
/// and is listed; a resume lets claims win again. Request claims ignore the pause, win
/// once per key, and take fencing tokens from the job's counter, so that tokens grow
/// per job across trigger claims, batches and request claims; an idempotency key is
/// remembered once, atomically.
pub async fn pauses_and_requests(factory: &impl CoordinatorFactory) {
    let ns = namespace("controls");
    let (a, b) = (factory.coordinator(&ns).await, factory.coordinator(&ns).await);
    let (ca, cb) = (a.controls().expect("controls"), b.controls().expect("controls"));
    let kind = ScheduleKind::Recurring;
    let hold = Some(Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::ZERO });
    let now = Timestamp::from_second(Timestamp::now().as_second()).expect("a valid instant");
    let claim = |job, trigger, key| Claim { job, trigger, key, instance: "suite", hold };

    let paused_at = ts("2024-05-17T00:00:00Z");
    assert_eq!(ca.set_paused("job", Some(paused_at)).await.expect("pause"), None);
    let later = ts("2024-05-17T01:00:00Z");
    assert_eq!(ca.set_paused("job", Some(later)).await.expect("pause"), Some(paused_at), "the first instant");
    assert_eq!(cb.paused("job").await.expect("paused"), Some(paused_at));
    assert_eq!(cb.paused("other").await.expect("paused"), None);
    let k1 = trigger_key("job", kind, now);
    assert_eq!(b.claim(&claim("job", now, &k1)).await.expect("claim"), ClaimOutcome::Paused);
    let other = trigger_key("other", kind, now);
    assert!(matches!(b.claim(&claim("other", now, &other)).await.expect("claim"), ClaimOutcome::Won { .. }));
    let next = now + Duration::from_secs(60);
    let (k2, other_next) = (trigger_key("job", kind, next), trigger_key("other", kind, next));
    let batch = [claim("job", now, &k1), claim("other", next, &other_next), claim("job", next, &k2)];
    let outcomes: Vec<ClaimOutcome> =
        b.claim_batch(&batch).await.into_iter().map(|o| o.expect("batch claim")).collect();
    assert_eq!(outcomes[0], ClaimOutcome::Paused, "a paused job's claim in a batch");
    assert!(
        matches!(outcomes[1], ClaimOutcome::Won { .. }),
        "another job's claim in the batch: {outcomes:?}"
    );
    assert_eq!(outcomes[2], ClaimOutcome::Paused, "each paused claim of the batch");
    let fresh = factory.coordinator(&ns).await;
    let listed = fresh.controls().expect("controls").paused_jobs().await.expect("paused jobs");
    assert_eq!(listed.into_iter().collect::<Vec<_>>(), [("job".to_owned(), paused_at)]);

    let manual = request_key("job", kind, Cause::Manual, now);
    let request = RequestClaim {
        job: "job",
        trigger: now,
        key: &manual,
        instance: "suite",
        ttl: Duration::from_secs(60),
    };
    let first = match a.claim_request(&request).await.expect("request claim") {
        ClaimOutcome::Won { fencing_token } => fencing_token,
        other => panic!("a request claim of a paused job wins: {other:?}"),
    };
    assert_eq!(b.claim_request(&request).await.expect("request claim"), ClaimOutcome::Lost);

    assert_eq!(cb.set_paused("job", None).await.expect("resume"), Some(paused_at));
    assert_eq!(ca.paused("job").await.expect("paused"), None);
    assert!(ca.paused_jobs().await.expect("paused jobs").is_empty());
    let resumed = match a.claim(&claim("job", now, &k1)).await.expect("claim") {
        ClaimOutcome::Won { fencing_token } if fencing_token > first => fencing_token,
        other => panic!("a resumed job's claim wins with a greater token than {first}: {other:?}"),
    };
    let backfill = request_key("job", kind, Cause::Backfill, now);
    let request = RequestClaim { key: &backfill, ..request };
    let requested = match b.claim_request(&request).await.expect("request claim") {
        ClaimOutcome::Won { fencing_token } if fencing_token > resumed => fencing_token,
        other => panic!("a request claim after a claim wins with a greater token than {resumed}: {other:?}"),
    };
    match b.claim_batch(&[claim("job", next, &k2)]).await.pop().expect("one answer").expect("batch claim") {
        ClaimOutcome::Won { fencing_token } => assert!(fencing_token > requested, "tokens grow per job"),
        other => panic!("a resumed job's claim in a batch wins: {other:?}"),
    }

    let day = Duration::from_secs(86_400);
    assert_eq!(ca.remember_request("job", "deploy-1", now, day).await.expect("remember"), None);
    let again = now + Duration::from_secs(5);
    assert_eq!(cb.remember_request("job", "deploy-1", again, day).await.expect("remember"), Some(now));
    assert_eq!(cb.remember_request("other", "deploy-1", again, day).await.expect("remember"), None);
    let racers = futures_util::future::join_all((0..4).map(|_| factory.coordinator(&ns))).await;
    let answers =
        futures_util::future::join_all(racers.iter().map(|c| async {
            c.controls().expect("controls").remember_request("job", "race", now, day).await
        }))
        .await;
    let firsts = answers.into_iter().filter(|a| a.as_ref().expect("remember").is_none()).count();
    assert_eq!(firsts, 1, "of concurrent calls with one key, one is first");
}

/// A cancel asked of one replica stops the run another holds, through the coordinator's
/// controls: replica `a` and replica `b` share the coordinator's namespace and a ledger
/// (as a PostgreSQL one is shared); a manual run of a job with three attempts held by `b`
/// runs until its token fires. Asked of `a`, the cancel is relayed to `b` (an unknown
/// trigger is [`ControlError::NoSuchRun`]); `b` stops the run at its next look and records
/// it `cancelled`, once, with who asked, after one attempt (no retry); asked again, it is
/// [`ControlError::RunEnded`]. The requests are kept per run: a second request for the
/// same run replaces the first.
pub async fn a_cancel_asked_of_one_replica_stops_the_run_another_holds(factory: &impl CoordinatorFactory) {
    let ns = namespace("cancel");
    let now = Timestamp::from_second(Timestamp::now().as_second()).expect("a valid instant");
    let (clock, ledger, calls) = (ManualClock::new(now), Arc::new(MemoryLedger::new(1_000)), Arc::default());
    let job = Job::builder("long").every(Duration::from_secs(3600)).attempts(3);
    let job = job.handler(until_cancelled(&calls)).build().expect("a valid job");
    let mut replicas = Vec::new();
    for instance in ["a", "b"] {
        let scheduler = Scheduler::builder()
            .clock(clock.clone())
            .coordinator(factory.coordinator(&ns).await)
            .ledger(ledger.clone())
            .instance(instance)
            .check_clock_skew(false)
            .build();
        scheduler.add(job.clone()).expect("one job");
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (scheduler, cancel) = (scheduler.clone(), cancel.clone());
            async move { scheduler.run(cancel).await }
        });
        replicas.push((scheduler, cancel, task));
    }
    let (a, b) = (&replicas[0].0, &replicas[1].0);
    wait_until(WAIT, || b.is_running(), || "replica b did not start".into()).await;
    let trigger = b.trigger_now("long", None).await.expect("a manual run").trigger;
    let record = || ledger.records().into_iter().find(|r| r.job.as_ref() == "long" && r.trigger == trigger);
    let running = || record().is_some_and(|r| r.outcome == Outcome::Running);
    wait_until(WAIT, running, || "the manual run did not start on b".into()).await;

    let unknown = a.cancel("long", trigger + Duration::from_secs(1), "the suite").await;
    assert!(matches!(unknown, Err(ControlError::NoSuchRun { .. })), "{unknown:?}");
    let asked = a.cancel("long", trigger, "the suite, through a").await.expect("relayed");
    assert_eq!((asked.holder.as_str(), asked.relayed), ("b", true));
    let requests = b_controls(factory, &ns).await;
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!((requests[0].job.as_str(), requests[0].trigger), ("long", trigger));
    // b looks every second of its clock.
    let ended = || record().is_some_and(|r| r.outcome != Outcome::Running);
    let stepping = async {
        while !ended() {
            clock.advance(SignedDuration::from_secs(1));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(WAIT, stepping).await.expect("b stops the run");
    let record = record().expect("the run's record");
    assert_eq!((record.outcome, &*record.instance, record.attempts), (Outcome::Cancelled, "b", 1));
    let error = record.error.as_deref().unwrap_or_default();
    assert!(error.starts_with("cancelled: the suite, through a"), "{error}");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "not retried");
    let records = ledger.records().into_iter().filter(|r| r.trigger == trigger).count();
    assert_eq!(records, 1, "one record of the run");
    let again = a.cancel("long", trigger, "the suite").await;
    assert!(
        matches!(&again, Err(ControlError::RunEnded { outcome, .. }) if outcome == "cancelled"),
        "{again:?}"
    );
    for (_, cancel, task) in replicas {
        cancel.cancel();
        task.await.expect("the scheduler stops");
    }
}

/// How long a wait of the cancel case may take: generous, it only fails a broken test.
const WAIT: Duration = Duration::from_secs(30);

/// The cancel requests a fresh coordinator of `ns` reads, after a second request for the
/// first one's run (which replaces it).
async fn b_controls(factory: &impl CoordinatorFactory, ns: &str) -> Vec<CancelRequest> {
    let coordinator = factory.coordinator(ns).await;
    let controls = coordinator.controls().expect("controls");
    let mut requests = controls.cancel_requests().await.expect("cancel requests");
    let first = requests.first().cloned().expect("a request");
    let again = CancelRequest { reason: format!("{} (again)", first.reason), ..first };
    controls.request_cancel(&again, Duration::from_secs(60)).await.expect("a second request");
    requests = controls.cancel_requests().await.expect("cancel requests");
    assert_eq!(requests, [again], "the second request replaced the first");
    requests
}
