//! The run policies on a manual clock: retries, overlap, the concurrency cap, jitter and
//! failure hooks, every instant asserted.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use slotcron::jiff::Timestamp;
use slotcron::{Clock, Job, JobContext, ManualClock, Outcome, Overlap, Permanent, StoppedByShutdown};
use slotcron::{Failure, FailureHook, jitter_offset};
use slotcron_testkit::harness::{Harness, settle, ts};

const S: Duration = Duration::from_secs(1);

/// What a handler saw: (attempt, trigger, fencing token, trigger key, clock instant).
type Seen = Arc<Mutex<Vec<(u32, Timestamp, u64, String, Timestamp)>>>;

/// A handler that records each call and fails the first `fail` attempts of a trigger.
fn failing(clock: ManualClock, seen: Seen, fail: u32) -> impl Fn(JobContext) -> futures::BoxFuture {
    move |ctx: JobContext| {
        let (clock, seen) = (clock.clone(), seen.clone());
        Box::pin(async move {
            let entry = (
                ctx.attempt(),
                ctx.trigger(),
                ctx.fencing_token(),
                ctx.trigger_key().to_owned(),
                clock.now(),
            );
            seen.lock().unwrap().push(entry);
            if ctx.attempt() <= fail {
                Err(std::io::Error::other(format!("attempt {}", ctx.attempt())))
            } else {
                Ok(())
            }
        })
    }
}

mod futures {
    pub type BoxFuture =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), std::io::Error>> + Send>>;
}

#[tokio::test(start_paused = true)]
async fn three_attempts_ten_seconds_apart_make_one_record_with_three_attempts() {
    let mut h = Harness::new("2024-05-17T10:00:30Z");
    let seen = Seen::default();
    let job = Job::builder("flaky")
        .every(60 * S)
        .attempts(3)
        .backoff(10 * S)
        .handler(failing(h.clock.clone(), seen.clone(), u32::MAX))
        .build()
        .unwrap();
    h.add(job);
    h.start().await;
    h.advance_to(ts("2024-05-17T10:01:50Z")).await;
    let seen = seen.lock().unwrap().clone();
    let t = ts("2024-05-17T10:01:00Z");
    let at: Vec<_> = seen.iter().map(|s| (s.0, s.4)).collect();
    assert_eq!(at, [(1, t), (2, t + 10 * S), (3, t + 20 * S)]);
    assert!(seen.iter().all(|s| s.1 == t && s.2 == seen[0].2 && s.3 == "flaky:2024-05-17T10:01:00Z"));
    let records = h.records("flaky");
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!((records[0].outcome, records[0].attempts), (Outcome::Failed, 3));
    assert_eq!(records[0].error.as_deref(), Some("attempt 3"));
    assert_eq!(records[0].duration, 20 * S);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_retry_whose_backoff_crosses_the_next_trigger_still_runs() {
    let mut h = Harness::new("2024-05-17T10:00:30Z");
    let seen = Seen::default();
    let job = Job::builder("slow-retry")
        .every(60 * S)
        .attempts(2)
        .backoff(90 * S)
        .handler(failing(h.clock.clone(), seen.clone(), 1))
        .build()
        .unwrap();
    h.add(job);
    h.start().await;
    h.advance_to(ts("2024-05-17T10:02:40Z")).await;
    let first = ts("2024-05-17T10:01:00Z");
    let second = ts("2024-05-17T10:02:00Z");
    let seen: Vec<_> = seen.lock().unwrap().iter().map(|s| (s.0, s.1, s.4)).collect();
    // The first trigger's retry, 90 s later, after the second trigger ran.
    assert_eq!(seen, [(1, first, first), (1, second, second), (2, first, first + 90 * S)]);
    let records = h.records("slow-retry");
    let summary: Vec<_> = records.iter().map(|r| (r.trigger, r.outcome, r.attempts)).collect();
    // The second trigger waits out its own backoff: its record is still `running`.
    assert_eq!(summary, [(first, Outcome::Succeeded, 2), (second, Outcome::Running, 1)]);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_permanent_error_is_not_retried_and_a_retry_pending_at_shutdown_is_not_started() {
    let mut h = Harness::new("2024-05-17T10:00:30Z");
    let job = Job::builder("refused")
        .every(60 * S)
        .attempts(5)
        .handler(|_ctx: JobContext| async { Err(Permanent::new("no such account")) })
        .build()
        .unwrap();
    h.add(job);
    let seen = Seen::default();
    let job = Job::builder("pending")
        .every(60 * S)
        .attempts(3)
        .backoff(30 * S)
        .handler(failing(h.clock.clone(), seen.clone(), u32::MAX))
        .build()
        .unwrap();
    h.add(job);
    h.start().await;
    h.advance_to(ts("2024-05-17T10:01:05Z")).await;
    h.stop().await;
    let refused = h.records("refused");
    assert_eq!((refused[0].outcome, refused[0].attempts), (Outcome::Failed, 1));
    assert_eq!(seen.lock().unwrap().len(), 1, "the retry due at 10:01:30 was not started");
    let pending = h.records("pending");
    assert_eq!(pending.len(), 1);
    assert_eq!((pending[0].outcome, pending[0].attempts), (Outcome::Failed, 1));
    let error = pending[0].error.as_deref().unwrap();
    assert!(error.contains("retry not started: the scheduler is shutting down"), "{error}");
}

#[tokio::test(start_paused = true)]
async fn an_error_marked_stopped_by_shutdown_is_recorded_aborted_and_not_retried() {
    let mut h = Harness::new("2024-05-17T10:00:30Z");
    let job = Job::builder("killed")
        .every(60 * S)
        .attempts(3)
        .handler(|_ctx: JobContext| async {
            Err(StoppedByShutdown::new("command failed: signal: 9 (SIGKILL)"))
        })
        .build()
        .unwrap();
    h.add(job);
    h.start().await;
    h.advance_to(ts("2024-05-17T10:01:05Z")).await;
    h.stop().await;
    let killed = h.records("killed");
    assert_eq!((killed[0].outcome, killed[0].attempts), (Outcome::Aborted, 1));
    assert_eq!(killed[0].error.as_deref(), Some("command failed: signal: 9 (SIGKILL)"));
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_attempt_is_retried_with_the_next_attempt_number() {
    let mut h = Harness::with("2024-05-17T10:00:30Z", |b| b.cancel_grace(S));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let job = Job::builder("hang-once")
        .every(60 * S)
        .attempts(2)
        .timeout(5 * S)
        .handler({
            let seen = seen.clone();
            move |ctx: JobContext| {
                seen.lock().unwrap().push(ctx.attempt());
                async move {
                    if ctx.attempt() == 1 {
                        ctx.cancellation_token().cancelled().await;
                    }
                    Ok::<_, std::io::Error>(())
                }
            }
        })
        .build()
        .unwrap();
    h.add(job);
    h.start().await;
    h.advance_to(ts("2024-05-17T10:01:30Z")).await;
    assert_eq!(*seen.lock().unwrap(), [1, 2]);
    let records = h.records("hang-once");
    assert_eq!((records[0].outcome, records[0].attempts), (Outcome::Succeeded, 2));
    h.stop().await;
}

/// A handler that takes `work` of manual time and records its span.
fn working(
    clock: ManualClock,
    spans: Arc<Mutex<Vec<(Timestamp, Timestamp, Timestamp)>>>,
    work: Duration,
) -> impl Fn(JobContext) -> futures::BoxFuture {
    move |ctx: JobContext| {
        let (clock, spans) = (clock.clone(), spans.clone());
        Box::pin(async move {
            let start = clock.now();
            tokio::select! {
                () = clock.sleep_until(start + work) => {}
                () = ctx.cancellation_token().cancelled() => {}
            }
            spans.lock().unwrap().push((ctx.trigger(), start, clock.now()));
            Ok(())
        })
    }
}

#[tokio::test(start_paused = true)]
async fn forbid_skips_the_triggers_that_find_the_job_running() {
    let mut h = Harness::new("2024-05-17T10:00:00.500Z");
    let spans = Arc::default();
    let job = Job::builder("long")
        .every(S)
        .overlap(Overlap::Forbid)
        .handler(working(h.clock.clone(), Arc::clone(&spans), Duration::from_millis(2_500)))
        .build()
        .unwrap();
    h.add(job);
    h.start().await;
    h.advance_to(ts("2024-05-17T10:00:09.900Z")).await;
    let ran = h.triggers("long", Outcome::Succeeded);
    let skipped = h.triggers("long", Outcome::SkippedOverlap);
    let at = |s: u32| ts("2024-05-17T10:00:00Z") + s * S;
    assert_eq!(ran, [at(1), at(4), at(7)]);
    assert_eq!(skipped, [at(2), at(3), at(5), at(6), at(8), at(9)]);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn buffer_one_holds_one_trigger_and_replace_cancels_the_running_one() {
    let mut h = Harness::with("2024-05-17T10:00:00.500Z", |b| b.lease_ttl(Duration::from_millis(300)));
    let buffered = Arc::new(Mutex::new(Vec::new()));
    h.add(
        Job::builder("buffered")
            .every(S)
            .overlap(Overlap::BufferOne)
            .handler(working(h.clock.clone(), buffered.clone(), Duration::from_millis(2_500)))
            .build()
            .unwrap(),
    );
    let replaced = Arc::new(Mutex::new(Vec::new()));
    h.add(
        Job::builder("replaced")
            .every(S)
            .overlap(Overlap::Replace)
            .handler(working(h.clock.clone(), replaced.clone(), Duration::from_millis(2_500)))
            .build()
            .unwrap(),
    );
    h.start().await;
    h.advance_to(ts("2024-05-17T10:00:05.900Z")).await;
    let at = |s: u32| ts("2024-05-17T10:00:00Z") + s * S;
    // 1 runs to 3.5; 2 waits and runs from 3.5 (within a heartbeat); 3 finds 2 waiting.
    let buffered = buffered.lock().unwrap().clone();
    assert_eq!(buffered.iter().map(|s| s.0).collect::<Vec<_>>(), [at(1)]);
    assert!(h.triggers("buffered", Outcome::SkippedOverlap).contains(&at(3)));
    // Each replace trigger stops the one before; no two spans overlap.
    let replaced = replaced.lock().unwrap().clone();
    assert!(replaced.len() >= 3, "{replaced:?}");
    for pair in replaced.windows(2) {
        assert!(pair[0].2 <= pair[1].1, "overlap: {pair:?}");
    }
    h.stop().await;
    let buffered_runs = h.triggers("buffered", Outcome::Succeeded);
    assert!(buffered_runs.starts_with(&[at(1), at(2)]), "{buffered_runs:?}");
}

#[tokio::test(start_paused = true)]
async fn a_buffered_trigger_runs_before_a_newer_one_that_finds_the_job_free() {
    // The default lease TTL: the waiting trigger polls for its turn once every 5 s, so
    // newer triggers find the job free before it does.
    let mut h = Harness::with("2024-05-17T10:00:00.500Z", |b| b);
    let spans = Arc::new(Mutex::new(Vec::new()));
    h.add(
        Job::builder("buffered")
            .every(S)
            .overlap(Overlap::BufferOne)
            .handler(working(h.clock.clone(), spans.clone(), Duration::from_millis(2_500)))
            .build()
            .unwrap(),
    );
    h.start().await;
    h.advance_to(ts("2024-05-17T10:00:12.900Z")).await;
    h.stop().await;
    let at = |s: u32| ts("2024-05-17T10:00:00Z") + s * S;
    let runs = spans.lock().unwrap().iter().map(|s| s.0).collect::<Vec<_>>();
    // 1 runs; 2 waits and is the next to run; those that came while it waited are skipped.
    assert!(runs.starts_with(&[at(1), at(2)]), "{runs:?}");
    assert!(h.triggers("buffered", Outcome::SkippedOverlap).contains(&at(4)));
}

#[tokio::test(start_paused = true)]
async fn at_its_cap_a_scheduler_runs_two_at_once_and_skips_what_waits_past_the_grace() {
    let mut h = Harness::with("2024-05-17T10:00:30Z", |b| b.max_concurrent_runs(2));
    let running = Arc::new(Mutex::new((0usize, 0usize)));
    for k in 0..5 {
        let (clock, running) = (h.clock.clone(), running.clone());
        let job = Job::builder(format!("j{k}"))
            .every(60 * S)
            .grace(5 * S)
            .handler(move |_ctx: JobContext| {
                let (clock, running) = (clock.clone(), running.clone());
                async move {
                    {
                        let mut r = running.lock().unwrap();
                        r.0 += 1;
                        r.1 = r.1.max(r.0);
                    }
                    clock.sleep_until(clock.now() + 3 * S).await;
                    running.lock().unwrap().0 -= 1;
                    Ok::<_, std::io::Error>(())
                }
            })
            .build()
            .unwrap();
        h.add(job);
    }
    h.start().await;
    h.advance_to(ts("2024-05-17T10:01:10Z")).await;
    assert_eq!(running.lock().unwrap().1, 2, "never more than two at once");
    let outcomes: Vec<_> = (0..5).map(|k| h.records(&format!("j{k}"))[0].outcome).collect();
    let succeeded = outcomes.iter().filter(|o| **o == Outcome::Succeeded).count();
    let skipped = outcomes.iter().filter(|o| **o == Outcome::SkippedConcurrency).count();
    // Two run from +0 s, two more in the slots freed at +3 s; the fifth waits out its 5 s
    // grace window.
    assert_eq!((succeeded, skipped), (4, 1), "{outcomes:?}");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_jittered_trigger_starts_late_but_keeps_its_nominal_instant_and_key() {
    let mut h = Harness::new("2024-05-17T09:59:00Z");
    let seen = Seen::default();
    let job = Job::builder("hourly")
        .cron("0 * * * *")
        .jitter(30 * S)
        .handler(failing(h.clock.clone(), seen.clone(), 0))
        .build()
        .unwrap();
    h.add(job);
    h.start().await;
    h.advance_to(ts("2024-05-17T11:01:00Z")).await;
    let seen = seen.lock().unwrap().clone();
    let hours = [ts("2024-05-17T10:00:00Z"), ts("2024-05-17T11:00:00Z")];
    assert_eq!(seen.iter().map(|s| s.1).collect::<Vec<_>>(), hours);
    for (hour, s) in hours.iter().zip(&seen) {
        assert_eq!(s.4, *hour + jitter_offset("hourly", *hour, 30 * S));
        assert_eq!(s.3, format!("hourly:{hour:.0}"));
    }
    assert_ne!(seen[0].4, hours[0], "the offset is not zero for this name and hour");
    assert_eq!(h.triggers("hourly", Outcome::Succeeded), hours);
    h.stop().await;
    let too_long =
        Job::builder("x").every(30 * S).jitter(30 * S).handler(slotcron_testkit::harness::ok).build();
    let error = too_long.unwrap_err().to_string();
    assert!(error.contains("jitter") && error.contains("shortest slot"), "{error}");
}

#[tokio::test(start_paused = true)]
async fn the_failure_hook_sees_the_last_attempt_once_per_outcome_per_minute() {
    let failures = Arc::new(Mutex::new(Vec::<Failure>::new()));
    let hook = FailureHook::new({
        let failures = failures.clone();
        move |f: Failure| failures.lock().unwrap().push(f)
    });
    let mut h = Harness::with("2024-05-17T10:00:00.500Z", |b| b.observer(Arc::new(hook)));
    let seen = Seen::default();
    h.add(
        Job::builder("broken")
            .every(10 * S)
            .attempts(2)
            .handler(failing(h.clock.clone(), seen.clone(), u32::MAX))
            .build()
            .unwrap(),
    );
    h.start().await;
    h.advance_to(ts("2024-05-17T10:02:05Z")).await;
    h.stop().await;
    settle().await;
    let failures = failures.lock().unwrap().clone();
    let summary: Vec<_> = failures
        .iter()
        .map(|f| (f.record.trigger, f.record.outcome, f.record.attempts, f.suppressed))
        .collect();
    assert_eq!(
        summary,
        [
            (ts("2024-05-17T10:00:10Z"), Outcome::Failed, 2, 0),
            (ts("2024-05-17T10:01:10Z"), Outcome::Failed, 2, 5),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn replace_drops_a_run_that_ignores_its_cancellation_after_the_cancel_grace() {
    let mut h = Harness::with("2024-05-17T10:00:30Z", |b| b.cancel_grace(2 * S).lease_ttl(3 * S));
    let starts = Arc::new(Mutex::new(Vec::new()));
    let job = Job::builder("stubborn")
        .every(60 * S)
        .overlap(Overlap::Replace)
        .handler({
            let (clock, starts) = (h.clock.clone(), starts.clone());
            move |ctx: JobContext| {
                starts.lock().unwrap().push((ctx.trigger(), clock.now()));
                std::future::pending::<Result<(), std::io::Error>>()
            }
        })
        .build()
        .unwrap();
    h.add(job);
    h.start().await;
    h.advance_to(ts("2024-05-17T10:02:10Z")).await;
    let first = ts("2024-05-17T10:01:00Z");
    let second = ts("2024-05-17T10:02:00Z");
    let starts = starts.lock().unwrap().clone();
    assert_eq!(starts.len(), 2, "{starts:?}");
    assert_eq!(starts[0], (first, first));
    // Asked at 10:02:00, seen at the next renewal (every 1 s), dropped 2 s later, and the
    // new one acquires the freed lease at its next poll.
    assert_eq!(starts[1].0, second);
    assert!(starts[1].1 > second + 2 * S && starts[1].1 <= second + 5 * S, "{starts:?}");
    let records = h.records("stubborn");
    assert_eq!(records[0].trigger, first);
    assert_eq!(records[0].outcome, Outcome::Failed);
    let error = records[0].error.as_deref().unwrap();
    assert!(error.contains("dropped") && error.contains("replaced by a newer trigger"), "{error}");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_run_whose_lease_is_taken_by_another_owner_is_cancelled_and_says_so() {
    use slotcron::{Coordinator, InProcessCoordinator};
    use slotcron::{Lease, LeaseGrant};

    let clock = ManualClock::new(ts("2024-05-17T10:00:30Z"));
    let leases = Arc::new(InProcessCoordinator::with_clock(clock.clone()));
    let mut h = Harness::with("2024-05-17T10:00:30Z", |b| {
        b.clock(clock.clone()).coordinator(leases.clone()).lease_ttl(3 * S)
    });
    // The scheduler and the leases run on this clock: the harness moves it.
    h.clock = clock.clone();
    let cancelled = Arc::new(Mutex::new(None));
    h.add(
        Job::builder("held")
            .every(60 * S)
            .overlap(Overlap::Forbid)
            .handler({
                let (clock, cancelled) = (clock.clone(), cancelled.clone());
                move |ctx: JobContext| {
                    let (clock, cancelled) = (clock.clone(), cancelled.clone());
                    async move {
                        ctx.cancellation_token().cancelled().await;
                        *cancelled.lock().unwrap() = Some(clock.now());
                        Err::<(), _>(std::io::Error::other("stopped"))
                    }
                }
            })
            .build()
            .unwrap(),
    );
    h.start().await;
    h.advance_to(ts("2024-05-17T10:01:00.500Z")).await;
    // Someone deletes the run's lease and another owner takes it.
    let owner = "test held:2024-05-17T10:01:00Z";
    leases.release_lease(&Lease { job: "held", owner, ttl: 3 * S }).await.unwrap();
    let other = Lease { job: "held", owner: "intruder", ttl: 60 * S };
    assert_eq!(leases.acquire_lease(&other).await.unwrap(), LeaseGrant::Acquired);
    h.advance_to(ts("2024-05-17T10:01:05Z")).await;
    // The next renewal (every 1 s) finds it lost and cancels the run.
    assert_eq!(*cancelled.lock().unwrap(), Some(ts("2024-05-17T10:01:01Z")));
    let record = &h.records("held")[0];
    assert_eq!(record.outcome, Outcome::Failed);
    let error = record.error.as_deref().unwrap();
    assert!(error.contains("lease was lost"), "{error}");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_stopping_scheduler_keeps_renewing_the_lease_of_a_run_it_lets_finish() {
    use slotcron::{Coordinator, InProcessCoordinator};
    use slotcron::{Lease, LeaseGrant};

    let clock = ManualClock::new(ts("2024-05-17T10:00:30Z"));
    let leases = Arc::new(InProcessCoordinator::with_clock(clock.clone()));
    let mut h = Harness::with("2024-05-17T10:00:30Z", |b| {
        b.clock(clock.clone())
            .coordinator(leases.clone())
            .lease_ttl(3 * S)
            .drain_on_shutdown(true)
            .shutdown_timeout(60 * S)
    });
    h.clock = clock.clone();
    let spans = Arc::default();
    h.add(
        Job::builder("draining")
            .every(60 * S)
            .overlap(Overlap::Forbid)
            .handler(working(clock.clone(), Arc::clone(&spans), 20 * S))
            .build()
            .unwrap(),
    );
    h.start().await;
    h.advance_to(ts("2024-05-17T10:01:01Z")).await;
    h.cancel.cancel();
    settle().await;
    // Well past the lease's 3 s TTL, the draining run's lease is still held.
    h.advance_to(ts("2024-05-17T10:01:15Z")).await;
    let other = Lease { job: "draining", owner: "other", ttl: 3 * S };
    assert_eq!(leases.acquire_lease(&other).await.unwrap(), LeaseGrant::Held);
    h.stop().await;
    assert_eq!(h.triggers("draining", Outcome::Succeeded), [ts("2024-05-17T10:01:00Z")]);
    assert_eq!(leases.acquire_lease(&other).await.unwrap(), LeaseGrant::Acquired, "released at the end");
}

#[test]
fn invalid_retry_settings_are_errors_naming_the_field() {
    let build = |b: slotcron::JobBuilder| b.every(60 * S).handler(slotcron_testkit::harness::ok).build();
    let error = build(Job::builder("a").attempts(0)).unwrap_err().to_string();
    assert_eq!(error, r#"job "a": attempts: must be at least 1 (the first attempt counts)"#);
    let error = build(Job::builder("b").backoff_multiplier(0.5)).unwrap_err().to_string();
    assert_eq!(error, r#"job "b": backoff_multiplier: must be a number from 1 (a fixed backoff) to 100"#);
    let error = build(Job::builder("c").backoff_multiplier(f64::NAN)).unwrap_err().to_string();
    assert!(error.contains("backoff_multiplier"), "{error}");
    let job =
        build(Job::builder("d").attempts(4).backoff(S).backoff_multiplier(3.0).backoff_max(5 * S)).unwrap();
    assert_eq!(job.retry().total_backoff(), S + 3 * S + 5 * S);
    assert_eq!(job.run_budget(S, S), None, "no timeout: unbounded");
}

/// Claims won by the first instance to ask, remembered with who asked.
#[derive(Default)]
struct FirstWins(Mutex<Vec<(String, String)>>);

#[async_trait::async_trait]
impl slotcron::Coordinator for FirstWins {
    async fn claim(
        &self,
        claim: &slotcron::Claim<'_>,
    ) -> Result<slotcron::ClaimOutcome, slotcron::CoordinatorError> {
        let mut claims = self.0.lock().unwrap();
        let taken = claims.iter().any(|(key, _)| key == claim.key);
        claims.push((claim.key.to_owned(), claim.instance.to_owned()));
        Ok(if taken {
            slotcron::ClaimOutcome::Lost
        } else {
            slotcron::ClaimOutcome::Won { fencing_token: 1 }
        })
    }

    fn name(&self) -> &'static str {
        "first-wins"
    }
}

#[tokio::test(start_paused = true)]
async fn a_replica_at_its_cap_does_not_claim_so_one_with_room_runs_the_trigger() {
    let clock = ManualClock::new(ts("2024-05-17T10:00:30Z"));
    let claims = Arc::new(FirstWins::default());
    let replica = |instance: &'static str, cap: Option<usize>| {
        let (own, claims) = (clock.clone(), claims.clone());
        let mut h = Harness::with("2024-05-17T10:00:30Z", move |b| {
            let b = b.clock(own).coordinator(claims).instance(instance);
            match cap {
                Some(cap) => b.max_concurrent_runs(cap),
                None => b,
            }
        });
        h.clock = clock.clone();
        h
    };
    let (mut full, mut free) = (replica("full", Some(1)), replica("free", None));
    // The full replica's one slot is taken by a local hour-long run.
    let spans = Arc::default();
    full.add(
        Job::builder("local")
            .after(S)
            .on_every_replica(true)
            .handler(working(clock.clone(), Arc::clone(&spans), 3_600 * S))
            .build()
            .unwrap(),
    );
    for h in [&full, &free] {
        h.add(
            Job::builder("tick")
                .every(60 * S)
                .grace(5 * S)
                .handler(slotcron_testkit::harness::ok)
                .build()
                .unwrap(),
        );
    }
    full.start().await;
    free.start().await;
    full.advance_to(ts("2024-05-17T10:02:10Z")).await;
    let tick = [ts("2024-05-17T10:01:00Z"), ts("2024-05-17T10:02:00Z")];
    assert_eq!(free.triggers("tick", Outcome::Succeeded), tick);
    assert_eq!(full.triggers("tick", Outcome::SkippedConcurrency), tick);
    let asked: Vec<String> = claims
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.starts_with("tick"))
        .map(|(_, i)| i.clone())
        .collect();
    assert_eq!(asked, ["free", "free"], "the full replica never claimed");
    full.stop().await;
    free.stop().await;
}
