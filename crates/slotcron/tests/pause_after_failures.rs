//! Pausing after failures on the manual clock: a job with `pause_after_failures` is
//! paused, with its reason, once that many of its triggers in a row have failed; a
//! success ends the streak, and so does a resume.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use slotcron::{InProcessCoordinator, Job, JobContext, JobError, Outcome};
use slotcron_testkit::harness::{Harness, ok, ts};

/// A scheduler on an in-process coordinator (clock-skew guard off: it keeps the system's
/// time) with a job `flaky` every minute, paused after two failed triggers in a row,
/// whose runs fail while `failing` is set.
fn flaky(failing: &Arc<AtomicBool>) -> Harness {
    let coordinator = Arc::new(InProcessCoordinator::new());
    let h = Harness::with("2024-05-17T00:00:30Z", |b| b.coordinator(coordinator).check_clock_skew(false));
    let failing = failing.clone();
    let handler = move |_ctx: JobContext| {
        let fail = failing.load(Ordering::SeqCst);
        async move { if fail { Err(std::io::Error::other("broken")) } else { Ok(()) } }
    };
    let job = Job::builder("flaky").every(Duration::from_secs(60)).pause_after_failures(2).handler(handler);
    h.add(job.build().unwrap());
    h
}

#[tokio::test(flavor = "current_thread")]
async fn two_failed_triggers_in_a_row_pause_the_job_with_the_reason() {
    let failing = Arc::new(AtomicBool::new(true));
    let mut h = flaky(&failing);
    h.start().await;
    h.advance_to(ts("2024-05-17T00:05:30Z")).await;
    assert_eq!(
        h.triggers("flaky", Outcome::Failed),
        [ts("2024-05-17T00:01:00Z"), ts("2024-05-17T00:02:00Z")]
    );
    assert_eq!(h.triggers("flaky", Outcome::SkippedPaused).len(), 3, "paused from the third trigger on");
    let paused = h.scheduler.paused_jobs().await.unwrap();
    assert!(paused.contains_key("flaky"), "{paused:?}");
    let reasons = h.scheduler.pause_reasons().await;
    assert_eq!(
        reasons.get("flaky").map(String::as_str),
        Some("paused after 2 failed triggers in a row, the last at 2024-05-17T00:02:00Z")
    );
    h.stop().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_success_between_failures_ends_the_streak_and_a_resume_starts_a_new_one() {
    let failing = Arc::new(AtomicBool::new(true));
    let mut h = flaky(&failing);
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:30Z")).await;
    failing.store(false, Ordering::SeqCst);
    h.advance_to(ts("2024-05-17T00:02:30Z")).await;
    failing.store(true, Ordering::SeqCst);
    h.advance_to(ts("2024-05-17T00:03:30Z")).await;
    assert_eq!(h.triggers("flaky", Outcome::Failed).len(), 2);
    assert!(h.scheduler.paused_jobs().await.unwrap().is_empty(), "a success between the failures");
    h.advance_to(ts("2024-05-17T00:04:30Z")).await;
    assert!(h.scheduler.paused_jobs().await.unwrap().contains_key("flaky"), "the next failure pauses it");

    h.scheduler.resume("flaky", false).await.unwrap();
    assert!(h.scheduler.pause_reasons().await.is_empty(), "the reason goes with the pause");
    h.advance_to(ts("2024-05-17T00:05:30Z")).await;
    assert!(h.scheduler.paused_jobs().await.unwrap().is_empty(), "one failure of a new streak");
    h.advance_to(ts("2024-05-17T00:06:30Z")).await;
    assert!(h.scheduler.paused_jobs().await.unwrap().contains_key("flaky"));
    h.stop().await;
}

#[test]
fn pause_after_failures_of_zero_or_on_every_replica_is_refused_naming_the_field() {
    let zero = Job::builder("z").every(Duration::from_secs(60)).pause_after_failures(0).handler(ok).build();
    assert!(matches!(zero, Err(JobError::Invalid { field: "pause_after_failures", .. })), "{:?}", zero.err());
    let every =
        Job::builder("every").every(Duration::from_secs(60)).pause_after_failures(2).on_every_replica(true);
    let refused = every.handler(ok).build();
    assert!(
        matches!(&refused, Err(JobError::Invalid { field: "pause_after_failures", .. })),
        "{:?}",
        refused.err()
    );
}
