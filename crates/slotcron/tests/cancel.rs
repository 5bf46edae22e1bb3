//! Cancelling a run on a one-replica scheduler with a manual clock: the run ends
//! `cancelled` with who asked, once, and is not retried — whether its handler stops when
//! asked, ignores the request (dropped after the cancel grace), or waits between
//! attempts. Every instant asserted, nothing slept.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use slotcron::{ControlError, Job, JobContext, Outcome, RunRecord};
use slotcron_testkit::harness::{Harness, settle, ts, until_cancelled};

/// A job every 10 s with three attempts, whose handler is `handler`.
fn three_attempts(handler: impl slotcron::Handler) -> Job {
    Job::builder("long").every(Duration::from_secs(10)).attempts(3).handler(handler).build().unwrap()
}

/// The record of the trigger at 00:00:10, once there is one.
fn first_run(h: &Harness) -> RunRecord {
    let trigger = ts("2024-05-17T00:00:10Z");
    h.records("long").into_iter().rfind(|r| r.trigger == trigger).expect("a record of the trigger")
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_run_ends_cancelled_once_and_is_not_retried() {
    let calls = Arc::new(AtomicU32::new(0));
    let mut h = Harness::new("2024-05-17T00:00:05Z");
    h.add(three_attempts(until_cancelled(&calls)));
    h.start().await;
    h.advance_to(ts("2024-05-17T00:00:10Z")).await;
    let trigger = ts("2024-05-17T00:00:10Z");
    assert_eq!(first_run(&h).outcome, Outcome::Running);

    let unknown = h.scheduler.cancel("long", ts("2024-05-17T00:00:11Z"), "the test").await;
    let expected = ControlError::NoSuchRun { job: "long".into(), trigger: ts("2024-05-17T00:00:11Z") };
    assert_eq!(unknown, Err(expected), "no run at that trigger");
    let no_job = h.scheduler.cancel("nope", trigger, "the test").await;
    assert_eq!(no_job, Err(ControlError::NoSuchJob { job: "nope".into() }));

    let asked = h.scheduler.cancel("long", trigger, "the test").await.unwrap();
    assert_eq!((asked.holder.as_str(), asked.relayed), ("test", false), "held here: stopped at once");
    h.advance(Duration::from_millis(1)).await;
    let record = first_run(&h);
    assert_eq!((record.outcome, record.attempts), (Outcome::Cancelled, 1));
    assert_eq!(record.error.as_deref(), Some("cancelled: the test (stopped when asked)"));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "not retried");
    let records = h.records("long").into_iter().filter(|r| r.trigger == trigger).count();
    assert_eq!(records, 1, "one record, completed");

    let again = h.scheduler.cancel("long", trigger, "the test").await;
    let ended = ControlError::RunEnded { job: "long".into(), trigger, outcome: "cancelled".into() };
    assert_eq!(again, Err(ended));
    h.stop().await;
}

/// A handler that never returns and ignores its token.
async fn deaf(_ctx: JobContext) -> Result<(), std::io::Error> {
    std::future::pending().await
}

#[tokio::test(start_paused = true)]
async fn a_handler_that_ignores_the_cancel_is_dropped_after_the_cancel_grace() {
    let mut h = Harness::with("2024-05-17T00:00:05Z", |b| b.cancel_grace(Duration::from_secs(5)));
    h.add(three_attempts(deaf));
    h.start().await;
    h.advance_to(ts("2024-05-17T00:00:10Z")).await;
    h.scheduler.cancel("long", ts("2024-05-17T00:00:10Z"), "the test").await.unwrap();
    // The run notices at once, before the clock moves: its grace starts at 00:00:10.
    settle().await;
    h.advance(Duration::from_secs(4)).await;
    assert_eq!(first_run(&h).outcome, Outcome::Running, "within the cancel grace");
    h.advance(Duration::from_secs(1)).await;
    let record = first_run(&h);
    assert_eq!((record.outcome, record.attempts), (Outcome::Cancelled, 1));
    let error = record.error.unwrap_or_default();
    assert!(
        error.starts_with("cancelled: the test (cancelled, and did not stop within the cancel grace"),
        "{error}"
    );
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_run_cancelled_between_attempts_starts_no_more() {
    let calls = Arc::new(AtomicU32::new(0));
    let failing = {
        let calls = calls.clone();
        move |_ctx: JobContext| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err::<(), _>(std::io::Error::other("exit status 1")) }
        }
    };
    let job =
        Job::builder("long").every(Duration::from_secs(10)).attempts(3).backoff(Duration::from_secs(60));
    let mut h = Harness::new("2024-05-17T00:00:05Z");
    h.add(job.handler(failing).build().unwrap());
    h.start().await;
    h.advance_to(ts("2024-05-17T00:00:10Z")).await;
    assert_eq!(
        (first_run(&h).outcome, calls.load(Ordering::SeqCst)),
        (Outcome::Running, 1),
        "in its backoff"
    );
    h.scheduler.cancel("long", ts("2024-05-17T00:00:10Z"), "the test").await.unwrap();
    h.advance(Duration::from_millis(1)).await;
    let record = first_run(&h);
    assert_eq!((record.outcome, record.attempts), (Outcome::Cancelled, 1));
    let error = record.error.unwrap_or_default();
    assert!(error.starts_with("cancelled: the test (exit status 1; retry not started"), "{error}");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "no retry of the cancelled run");
    h.stop().await;
}

/// A handler that returns `Ok` as soon as its token fires.
async fn obliging(ctx: JobContext) -> Result<(), std::io::Error> {
    ctx.cancellation_token().cancelled().await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_handler_that_returns_ok_when_cancelled_is_recorded_cancelled() {
    let mut h = Harness::new("2024-05-17T00:00:05Z");
    h.add(three_attempts(obliging));
    h.start().await;
    h.advance_to(ts("2024-05-17T00:00:10Z")).await;
    h.scheduler.cancel("long", ts("2024-05-17T00:00:10Z"), "the test").await.unwrap();
    h.advance(Duration::from_millis(1)).await;
    let record = first_run(&h);
    assert_eq!((record.outcome, record.attempts), (Outcome::Cancelled, 1));
    assert_eq!(record.error.as_deref(), Some("cancelled: the test"));
    h.stop().await;
}
