//! Steering the fleet on a manual clock: pause, resume (with and without catch-up), run
//! now with idempotency keys, backfill; alone and with two schedulers sharing an
//! in-process coordinator. Every instant asserted, nothing slept.

use std::sync::Arc;
use std::time::Duration;

use slotcron::{Cause, ControlError, InProcessCoordinator, Job, MemoryStore, Misfire, Outcome};
use slotcron_testkit::harness::{Harness, ok, ts};

fn every_10s(name: &str) -> Job {
    Job::builder(name).every(Duration::from_secs(10)).handler(ok).build().unwrap()
}

/// The (trigger, cause) of `job`'s successful runs in `h`'s ledger, in append order.
fn ran(h: &Harness, job: &str) -> Vec<(slotcron::jiff::Timestamp, Cause)> {
    h.records(job)
        .into_iter()
        .filter(|r| r.outcome == Outcome::Succeeded)
        .map(|r| (r.trigger, r.cause))
        .collect()
}

/// Two schedulers on one in-process coordinator, each with a job `tick` every 10 s.
async fn pair(start: &str) -> (Harness, Harness) {
    let coordinator = Arc::new(InProcessCoordinator::new());
    let replica = |c: Arc<InProcessCoordinator>| {
        move |b: slotcron::SchedulerBuilder| b.coordinator(c).check_clock_skew(false)
    };
    let mut a = Harness::with(start, replica(coordinator.clone()));
    let mut b = Harness::with(start, replica(coordinator));
    for h in [&mut a, &mut b] {
        h.add(every_10s("tick"));
        h.start().await;
    }
    (a, b)
}

async fn advance_both(a: &Harness, b: &Harness, to: &str) {
    let to = ts(to);
    while let Some(next) =
        [a.clock.next_deadline(), b.clock.next_deadline()].into_iter().flatten().filter(|d| *d <= to).min()
    {
        a.advance_to(next).await;
        b.advance_to(next).await;
    }
    a.advance_to(to).await;
    b.advance_to(to).await;
}

#[tokio::test(start_paused = true)]
async fn a_pause_through_one_replica_stops_the_job_on_both_until_resumed() {
    let (mut a, mut b) = pair("2024-05-17T00:00:05Z").await;
    advance_both(&a, &b, "2024-05-17T00:00:15Z").await;
    assert_eq!(a.scheduler.pause("tick").await.unwrap(), ts("2024-05-17T00:00:15Z"));
    assert_eq!(b.scheduler.paused_jobs().await.unwrap().keys().collect::<Vec<_>>(), ["tick"]);
    advance_both(&a, &b, "2024-05-17T00:01:05Z").await;
    let paused: Vec<_> = (2..=6).map(|k| ts("2024-05-17T00:00:00Z") + Duration::from_secs(10 * k)).collect();
    for h in [&a, &b] {
        assert_eq!(h.triggers("tick", Outcome::SkippedPaused), paused, "every paused trigger is recorded");
        assert!(h.triggers("tick", Outcome::Succeeded).iter().all(|t| *t < ts("2024-05-17T00:00:15Z")));
    }
    let resumed = b.scheduler.resume("tick", false).await.unwrap();
    assert_eq!((resumed.paused_since, resumed.caught_up), (Some(ts("2024-05-17T00:00:15Z")), vec![]));
    advance_both(&a, &b, "2024-05-17T00:01:15Z").await;
    let mut after: Vec<_> = [&a, &b].iter().flat_map(|h| h.triggers("tick", Outcome::Succeeded)).collect();
    after.retain(|t| *t > ts("2024-05-17T00:00:15Z"));
    assert_eq!(after, [ts("2024-05-17T00:01:10Z")], "one run of the first trigger after the resume");
    a.stop().await;
    b.stop().await;
}

#[tokio::test(start_paused = true)]
async fn resuming_with_catch_up_runs_the_paused_triggers_under_the_misfire_policy() {
    let mut h = Harness::new("2024-05-17T00:00:05Z");
    let job = Job::builder("tick").every(Duration::from_secs(10)).misfire(Misfire::RunAll { cap: 3 });
    h.add(job.handler(ok).build().unwrap());
    h.start().await;
    h.scheduler.pause("tick").await.unwrap();
    h.advance_to(ts("2024-05-17T00:01:05Z")).await;
    assert_eq!(h.triggers("tick", Outcome::SkippedPaused).len(), 6);
    let resumed = h.scheduler.resume("tick", true).await.unwrap();
    let newest = ["2024-05-17T00:00:40Z", "2024-05-17T00:00:50Z", "2024-05-17T00:01:00Z"].map(ts);
    assert_eq!(resumed.caught_up, newest);
    h.advance(Duration::from_millis(1)).await;
    assert_eq!(ran(&h, "tick"), newest.map(|t| (t, Cause::CatchUp)), "oldest first, cause catch-up");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_pause_survives_a_restart_in_single_replica_mode() {
    let store = Arc::new(MemoryStore::new());
    let with_store = |s: Arc<MemoryStore>| move |b: slotcron::SchedulerBuilder| b.store(s);
    let mut first = Harness::with("2024-05-17T00:00:05Z", with_store(store.clone()));
    first.add(every_10s("tick"));
    first.start().await;
    first.scheduler.pause("tick").await.unwrap();
    first.stop().await;
    let mut second = Harness::with("2024-05-17T00:00:05Z", with_store(store));
    second.add(every_10s("tick"));
    second.start().await;
    second.advance_to(ts("2024-05-17T00:00:35Z")).await;
    assert_eq!(second.triggers("tick", Outcome::SkippedPaused).len(), 3);
    assert!(second.triggers("tick", Outcome::Succeeded).is_empty());
    second.stop().await;
}

#[tokio::test(start_paused = true)]
async fn trigger_now_runs_once_across_the_fleet_and_a_repeated_key_runs_nothing_more() {
    let (mut a, mut b) = pair("2024-05-17T00:00:05.250Z").await;
    a.scheduler.pause("tick").await.unwrap();
    let first = a.scheduler.trigger_now("tick", Some("deploy-7")).await.unwrap();
    assert_eq!((first.trigger, first.repeated), (ts("2024-05-17T00:00:05.250Z"), false));
    let again = b.scheduler.trigger_now("tick", Some("deploy-7")).await.unwrap();
    assert_eq!((again.trigger, again.repeated), (first.trigger, true), "answers with the first run");
    advance_both(&a, &b, "2024-05-17T00:00:06Z").await;
    let manual: Vec<_> = [&a, &b].iter().flat_map(|h| ran(h, "tick")).collect();
    assert_eq!(manual, [(first.trigger, Cause::Manual)], "one run, though the job is paused");
    assert_eq!(a.records("tick")[0].fencing_token, Some(1));
    let bad = a.scheduler.trigger_now("tick", Some("no spaces")).await;
    assert!(matches!(bad, Err(ControlError::InvalidKey { .. })), "{bad:?}");
    let unknown = a.scheduler.trigger_now("nope", None).await;
    assert_eq!(unknown, Err(ControlError::NoSuchJob { job: "nope".into() }));
    a.stop().await;
    b.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_backfill_runs_each_trigger_of_the_range_once_oldest_first() {
    let (mut a, mut b) = pair("2024-05-17T01:00:00.500Z").await;
    let triggers =
        b.scheduler.backfill("tick", ts("2024-05-17T00:10:00Z"), ts("2024-05-17T00:11:30Z")).await.unwrap();
    let expected: Vec<_> =
        (0..10).map(|k| ts("2024-05-17T00:10:00Z") + Duration::from_secs(10 * k)).collect();
    assert_eq!(triggers, expected);
    advance_both(&a, &b, "2024-05-17T01:00:01Z").await;
    let backfilled: Vec<_> =
        [&a, &b].iter().flat_map(|h| ran(h, "tick")).filter(|(_, c)| *c == Cause::Backfill).collect();
    assert_eq!(backfilled, expected.iter().map(|t| (*t, Cause::Backfill)).collect::<Vec<_>>());

    let s = &a.scheduler;
    let (from, to) = (ts("2024-05-17T00:20:00Z"), ts("2024-05-17T00:10:00Z"));
    assert!(matches!(s.backfill("tick", from, to).await, Err(ControlError::InvertedRange { .. })));
    let future = s.backfill("tick", from, ts("2024-05-18T00:00:00Z")).await;
    assert!(matches!(future, Err(ControlError::FutureRange { .. })), "{future:?}");
    let long = s.backfill("tick", ts("2024-05-16T00:00:00Z"), ts("2024-05-17T00:00:00Z")).await;
    // Said with how many: a day of 10 s triggers, both ends included.
    assert_eq!(
        long,
        Err(ControlError::TooManyTriggers { job: "tick".into(), triggers: Some(8641), max: 1000 })
    );
    assert_eq!(
        long.unwrap_err().to_string(),
        "backfill of job \"tick\": the range holds 8641 triggers; at most 1000 per request, split the range"
    );
    // Counting stops at 100,000.
    let longer = s.backfill("tick", ts("2024-04-01T00:00:00Z"), ts("2024-05-17T00:00:00Z")).await;
    assert_eq!(longer, Err(ControlError::TooManyTriggers { job: "tick".into(), triggers: None, max: 1000 }));
    assert!(longer.unwrap_err().to_string().contains("the range holds more than 100000 triggers"));
    let exactly = s.backfill("tick", ts("2024-05-16T20:00:00Z"), ts("2024-05-16T22:46:30Z")).await.unwrap();
    assert_eq!(exactly.len(), 1000, "1,000 triggers are allowed");
    a.stop().await;
    b.stop().await;
}

/// A handler that runs until the clock reaches `until`.
fn busy_until(clock: slotcron::ManualClock, until: slotcron::jiff::Timestamp) -> impl slotcron::Handler {
    move |_ctx: slotcron::JobContext| {
        let clock = clock.clone();
        async move {
            use slotcron::Clock;
            clock.sleep_until(until).await;
            Ok::<_, std::io::Error>(())
        }
    }
}

#[tokio::test(start_paused = true)]
async fn manual_and_backfilled_runs_obey_the_overlap_policy_and_the_concurrency_cap() {
    let mut h = Harness::with("2024-05-17T00:00:05Z", |b| b.max_concurrent_runs(1));
    let job = Job::builder("long").every(Duration::from_secs(60)).overlap(slotcron::Overlap::Forbid);
    h.add(
        job.grace(Duration::from_secs(2))
            .handler(busy_until(h.clock.clone(), ts("2024-05-17T00:01:30Z")))
            .build()
            .unwrap(),
    );
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:00.500Z")).await;
    // The scheduled run of 00:01:00 holds the lease and the one slot until 00:01:30.
    h.scheduler.trigger_now("long", None).await.unwrap();
    h.advance_to(ts("2024-05-17T00:01:10Z")).await;
    let manual =
        h.records("long").into_iter().find(|r| r.cause == Cause::Manual).expect("the manual run's record");
    assert_eq!(manual.outcome, Outcome::SkippedConcurrency, "{manual:?}");
    h.advance_to(ts("2024-05-17T00:01:31Z")).await;

    // Without the cap, the overlap policy: a backfilled run finds the job's run going.
    let mut h2 = Harness::new("2024-05-17T00:00:05Z");
    let job = Job::builder("long").every(Duration::from_secs(60)).overlap(slotcron::Overlap::Forbid);
    h2.add(job.handler(busy_until(h2.clock.clone(), ts("2024-05-17T00:01:30Z"))).build().unwrap());
    h2.start().await;
    h2.advance_to(ts("2024-05-17T00:01:00.500Z")).await;
    h2.scheduler.backfill("long", ts("2024-05-17T00:00:00Z"), ts("2024-05-17T00:00:00Z")).await.unwrap();
    h2.advance_to(ts("2024-05-17T00:01:10Z")).await;
    let backfill =
        h2.records("long").into_iter().find(|r| r.cause == Cause::Backfill).expect("the backfill's record");
    assert_eq!(backfill.outcome, Outcome::SkippedOverlap, "{backfill:?}");
    h.stop().await;
    h2.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_job_every_replica_runs_is_paused_on_every_replica_by_the_coordinator() {
    let coordinator = Arc::new(InProcessCoordinator::new());
    let mut replicas = Vec::new();
    for _ in 0..2 {
        let c = coordinator.clone();
        let mut h = Harness::with("2024-05-17T00:00:05Z", move |b| b.coordinator(c).check_clock_skew(false));
        let job = Job::builder("local").every(Duration::from_secs(10)).on_every_replica(true);
        h.add(job.handler(ok).build().unwrap());
        h.start().await;
        replicas.push(h);
    }
    replicas[0].scheduler.pause("local").await.unwrap();
    for h in &replicas {
        h.advance_to(ts("2024-05-17T00:00:25Z")).await;
        let paused = ["2024-05-17T00:00:10Z", "2024-05-17T00:00:20Z"].map(ts);
        assert_eq!(h.triggers("local", Outcome::SkippedPaused), paused);
        assert!(h.triggers("local", Outcome::Succeeded).is_empty());
    }
    replicas[1].scheduler.resume("local", false).await.unwrap();
    for h in &mut replicas {
        h.advance_to(ts("2024-05-17T00:00:35Z")).await;
        assert_eq!(
            h.triggers("local", Outcome::Succeeded),
            [ts("2024-05-17T00:00:30Z")],
            "each replica runs it"
        );
        h.stop().await;
    }
}
