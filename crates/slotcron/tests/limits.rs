//! Run limits on the manual clock: a job with `max_runs` runs exactly that many
//! scheduled triggers, counted in the coordinator with their start marks; manual runs do
//! not count, and the count outlives a scheduler's restart.

use std::sync::Arc;
use std::time::Duration;

use slotcron::{InProcessCoordinator, Job, JobError, Outcome, Scheduler};
use slotcron_testkit::harness::{Harness, ok, settle, ts};

/// A scheduler on `coordinator` (clock-skew guard off: the in-process coordinator keeps
/// the system's time, not the manual clock's) with a job `limited` every minute, at most
/// three runs.
fn limited(start: &str, coordinator: &InProcessCoordinator) -> Harness {
    let coordinator = Arc::new(coordinator.clone());
    let h = Harness::with(start, |b| b.coordinator(coordinator).check_clock_skew(false));
    let job = Job::builder("limited").every(Duration::from_secs(60)).max_runs(3).handler(ok);
    h.add(job.build().unwrap());
    h
}

#[tokio::test(flavor = "current_thread")]
async fn max_runs_3_runs_exactly_three_scheduled_triggers_then_the_job_ends() {
    let coordinator = InProcessCoordinator::new();
    let mut h = limited("2024-05-17T00:00:30Z", &coordinator);
    h.start().await;
    h.advance_to(ts("2024-05-17T00:10:30Z")).await;
    let succeeded = h.triggers("limited", Outcome::Succeeded);
    assert_eq!(
        succeeded,
        [ts("2024-05-17T00:01:00Z"), ts("2024-05-17T00:02:00Z"), ts("2024-05-17T00:03:00Z")]
    );
    let refused =
        h.records("limited").into_iter().filter(|r| r.outcome == Outcome::SkippedMaxRuns).collect::<Vec<_>>();
    assert_eq!(refused.len(), 1, "one refused trigger, then no more: {refused:?}");
    assert_eq!(refused[0].trigger, ts("2024-05-17T00:04:00Z"));
    assert!(refused[0].error.as_deref().unwrap_or_default().contains("max_runs reached (3)"), "{refused:?}");
    let info = h.scheduler.job("limited", 3).unwrap();
    assert!(info.ended && info.next_triggers.is_empty(), "{info:?}");
    assert_eq!(h.scheduler.run_counts().await.get("limited"), Some(&3));
    h.stop().await;
}

#[tokio::test(flavor = "current_thread")]
async fn manual_runs_of_a_job_with_max_runs_are_not_counted() {
    let coordinator = InProcessCoordinator::new();
    let mut h = limited("2024-05-17T00:00:30Z", &coordinator);
    h.start().await;
    for _ in 0..2 {
        h.scheduler.trigger_now("limited", None).await.unwrap();
        settle().await;
        // Each manual run at an instant of its own: its key is made of it.
        h.advance(Duration::from_secs(1)).await;
    }
    assert_eq!(h.scheduler.run_counts().await.get("limited"), Some(&0));
    h.advance_to(ts("2024-05-17T00:05:30Z")).await;
    let manual = h.records("limited").into_iter().filter(|r| r.cause == slotcron::Cause::Manual).count();
    assert_eq!(manual, 2);
    assert_eq!(h.triggers("limited", Outcome::Succeeded).len(), 2 + 3, "two manual runs and three scheduled");
    h.stop().await;
}

#[tokio::test(flavor = "current_thread")]
async fn the_count_of_max_runs_outlives_a_restart_of_the_scheduler() {
    let coordinator = InProcessCoordinator::new();
    let mut first = limited("2024-05-17T00:00:30Z", &coordinator);
    first.start().await;
    first.advance_to(ts("2024-05-17T00:02:30Z")).await;
    first.stop().await;
    assert_eq!(first.triggers("limited", Outcome::Succeeded).len(), 2);
    // A new scheduler (a restart) on the same coordinator: one run left.
    let mut second = limited("2024-05-17T00:02:30Z", &coordinator);
    second.start().await;
    second.advance_to(ts("2024-05-17T00:08:30Z")).await;
    assert_eq!(second.triggers("limited", Outcome::Succeeded), [ts("2024-05-17T00:03:00Z")]);
    assert_eq!(second.scheduler.run_counts().await.get("limited"), Some(&3));
    second.stop().await;
}

/// The records of `h`'s job `limited` refused at its `max_runs`.
fn refused(h: &Harness) -> usize {
    h.records("limited").iter().filter(|r| r.outcome == Outcome::SkippedMaxRuns).count()
}

#[tokio::test(flavor = "current_thread")]
async fn a_restarted_scheduler_reads_the_count_and_the_ended_job_refuses_no_more_triggers() {
    let coordinator = InProcessCoordinator::new();
    let mut first = limited("2024-05-17T00:00:30Z", &coordinator);
    first.start().await;
    first.advance_to(ts("2024-05-17T00:04:30Z")).await;
    first.stop().await;
    assert_eq!((first.triggers("limited", Outcome::Succeeded).len(), refused(&first)), (3, 1));
    let mut second = limited("2024-05-17T00:04:30Z", &coordinator);
    second.start().await;
    let info = second.scheduler.job("limited", 3).unwrap();
    assert!(info.ended && info.next_triggers.is_empty(), "ended at once: {info:?}");
    second.advance_to(ts("2024-05-17T00:10:30Z")).await;
    assert!(second.records("limited").is_empty(), "nothing more recorded: {:?}", second.records("limited"));
    second.stop().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_job_added_to_a_running_scheduler_after_its_max_runs_has_ended_at_once() {
    let coordinator = InProcessCoordinator::new();
    let mut first = limited("2024-05-17T00:00:30Z", &coordinator);
    first.start().await;
    first.advance_to(ts("2024-05-17T00:03:30Z")).await;
    first.stop().await;
    assert_eq!(first.triggers("limited", Outcome::Succeeded).len(), 3);
    let coordinator = Arc::new(coordinator.clone());
    let mut second =
        Harness::with("2024-05-17T00:03:30Z", |b| b.coordinator(coordinator).check_clock_skew(false));
    second.start().await;
    let job = Job::builder("limited").every(Duration::from_secs(60)).max_runs(3).handler(ok);
    second.add(job.build().unwrap());
    settle().await;
    assert!(second.scheduler.job("limited", 3).unwrap().ended, "ended once its count was read");
    second.advance_to(ts("2024-05-17T00:10:30Z")).await;
    assert_eq!(refused(&second), 0, "{:?}", second.records("limited"));
    second.stop().await;
}

#[test]
fn max_runs_of_zero_or_without_a_counting_coordinator_is_refused_naming_the_field() {
    let zero = Job::builder("z").every(Duration::from_secs(60)).max_runs(0).handler(ok).build();
    assert!(matches!(zero, Err(JobError::Invalid { field: "max_runs", .. })), "{:?}", zero.err());
    let alone = Scheduler::builder().build();
    let job = Job::builder("alone").every(Duration::from_secs(60)).max_runs(2).handler(ok).build().unwrap();
    let refused = alone.add(job);
    assert!(matches!(&refused, Err(JobError::Invalid { field: "max_runs", .. })), "{refused:?}");
}

/// A replica that did not run the job's last counted trigger learns that the job has
/// ended as soon as it reads the count (as the admin API does), not only at its next
/// trigger: no next fire time is shown for it from then on.
#[tokio::test(flavor = "current_thread")]
async fn reading_a_count_that_another_replica_brought_to_max_runs_ends_the_job_here() {
    use slotcron::{Claim, ClaimOutcome, Coordinator, CountedMark, Hold, ScheduleKind, StartMark};
    let coordinator = InProcessCoordinator::new();
    let mut h = limited("2024-05-17T00:00:30Z", &coordinator);
    h.start().await;
    assert!(!h.scheduler.job("limited", 1).unwrap().ended);
    let hold = Some(Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::from_secs(5) });
    for at in ["2024-05-17T00:01:00Z", "2024-05-17T00:02:00Z", "2024-05-17T00:03:00Z"] {
        let key = slotcron::trigger_key("limited", ScheduleKind::Recurring, ts(at));
        let claim = Claim { job: "limited", trigger: ts(at), key: &key, instance: "other", hold };
        assert!(matches!(coordinator.claim(&claim).await.unwrap(), ClaimOutcome::Won { .. }));
        let mark = CountedMark { mark: StartMark { job: "limited", key: &key }, max_runs: 3 };
        coordinator.mark_counted_starts("other", &[mark]).await.unwrap();
    }
    assert_eq!(h.scheduler.run_counts().await.get("limited"), Some(&3));
    let info = h.scheduler.job("limited", 3).unwrap();
    assert!(info.ended && info.next_triggers.is_empty(), "{info:?}");
    h.stop().await;
}

/// A chained job with `max_runs` ends as any job does: once its count is reached, its
/// parent's later successes fire it no more (one refused trigger, then nothing).
#[tokio::test(flavor = "current_thread")]
async fn a_chained_job_that_reached_its_max_runs_is_fired_no_more() {
    let coordinator = Arc::new(InProcessCoordinator::new());
    let h = Harness::with("2024-05-17T00:00:30Z", |b| b.coordinator(coordinator).check_clock_skew(false));
    h.add(Job::builder("parent").every(Duration::from_secs(60)).handler(ok).build().unwrap());
    h.add(Job::builder("child").run_after("parent").max_runs(2).handler(ok).build().unwrap());
    let mut h = h;
    h.start().await;
    h.advance_to(ts("2024-05-17T00:06:30Z")).await;
    assert_eq!(h.triggers("parent", Outcome::Succeeded).len(), 6);
    assert_eq!(h.triggers("child", Outcome::Succeeded).len(), 2);
    let refused = h.records("child").into_iter().filter(|r| r.outcome == Outcome::SkippedMaxRuns).count();
    assert_eq!(refused, 1, "one refused trigger, then the job has ended");
    h.stop().await;
}
