//! The engine on a manual clock: no real sleeping, every instant asserted.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use slotcron::jiff::tz::TimeZone;
use slotcron::{Clock, Job, JobContext, Outcome};
use slotcron::{Interval, Schedule};
use slotcron_testkit::harness::{Harness, ok, settle, ts};
use tokio::sync::Notify;

#[tokio::test(start_paused = true)]
async fn interval_job_fires_exactly_the_expected_triggers_over_a_day() {
    let mut h = Harness::new("2024-05-17T00:00:07Z");
    h.add(Job::builder("tick").every(Duration::from_secs(600)).handler(ok).build().unwrap());
    h.start().await;
    h.advance_to(ts("2024-05-18T00:00:07Z")).await;
    let expected: Vec<_> =
        (1..=144).map(|k| ts("2024-05-17T00:00:00Z") + Duration::from_secs(600 * k)).collect();
    assert_eq!(h.triggers("tick", Outcome::Succeeded), expected);
    assert_eq!(h.records("tick").len(), 144, "nothing but successes");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn replicas_started_at_different_times_compute_identical_triggers() {
    let mut early = Harness::new("2024-05-17T10:00:03.250Z");
    let mut late = Harness::new("2024-05-17T10:04:41.900Z");
    for h in [&early, &late] {
        h.add(Job::builder("sync").every(Duration::from_secs(90)).handler(ok).build().unwrap());
    }
    early.start().await;
    late.start().await;
    early.advance_to(ts("2024-05-17T11:00:00Z")).await;
    late.advance_to(ts("2024-05-17T11:00:00Z")).await;
    let from_late = late.triggers("sync", Outcome::Succeeded);
    let from_early: Vec<_> = early
        .triggers("sync", Outcome::Succeeded)
        .into_iter()
        .filter(|t| *t > ts("2024-05-17T10:04:41.900Z"))
        .collect();
    assert_eq!(from_late.first(), Some(&ts("2024-05-17T10:06:00Z")));
    assert_eq!(from_early, from_late);
    early.stop().await;
    late.stop().await;
}

#[tokio::test(start_paused = true)]
async fn cron_job_in_shanghai_fires_at_the_right_instants() {
    let mut h = Harness::new("2024-05-17T00:00:00Z");
    let shanghai = TimeZone::get("Asia/Shanghai").unwrap();
    h.add(Job::builder("report").cron_in("30 9 * * MON-FRI", shanghai).handler(ok).build().unwrap());
    h.start().await;
    h.advance_to(ts("2024-05-22T00:00:00Z")).await;
    // 09:30 in Shanghai (+08:00) is 01:30 UTC; 2024-05-17 is a Friday.
    let expected = ["2024-05-17T01:30:00Z", "2024-05-20T01:30:00Z", "2024-05-21T01:30:00Z"].map(ts);
    assert_eq!(h.triggers("report", Outcome::Succeeded), expected);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn zoned_job_keeps_the_right_offset_across_a_dst_change() {
    let mut h = Harness::new("2024-03-28T00:00:00Z");
    let london = TimeZone::get("Europe/London").unwrap();
    h.add(Job::builder("standup").cron_in("0 9 * * *", london).handler(ok).build().unwrap());
    h.start().await;
    h.advance_to(ts("2024-04-02T12:00:00Z")).await;
    let expected = [
        "2024-03-28T09:00:00+00:00",
        "2024-03-29T09:00:00+00:00",
        "2024-03-30T09:00:00+00:00",
        "2024-03-31T09:00:00+01:00",
        "2024-04-01T09:00:00+01:00",
        "2024-04-02T09:00:00+01:00",
    ]
    .map(ts);
    assert_eq!(h.triggers("standup", Outcome::Succeeded), expected);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn failing_panicking_and_timed_out_handlers_are_recorded_and_the_schedule_goes_on() {
    let mut h = Harness::with("2024-05-17T00:00:00Z", |b| b.cancel_grace(Duration::from_secs(2)));
    h.add(
        Job::builder("fails")
            .every(Duration::from_secs(60))
            .handler(|_ctx: JobContext| async { Err::<(), _>(std::io::Error::other("disk full")) })
            .build()
            .unwrap(),
    );
    h.add(
        Job::builder("panics")
            .every(Duration::from_secs(60))
            .handler(|ctx: JobContext| async move {
                if ctx.fencing_token() > 0 {
                    panic!("bug in handler");
                }
                Ok::<_, std::io::Error>(())
            })
            .build()
            .unwrap(),
    );
    let saw_cancel = Arc::new(AtomicUsize::new(0));
    let saw = saw_cancel.clone();
    h.add(
        Job::builder("hangs")
            .every(Duration::from_secs(60))
            .timeout(Duration::from_secs(10))
            .handler(move |ctx: JobContext| {
                let saw = saw.clone();
                async move {
                    ctx.cancellation_token().cancelled().await;
                    saw.fetch_add(1, Ordering::SeqCst);
                    std::future::pending::<()>().await;
                    Ok::<_, std::io::Error>(())
                }
            })
            .build()
            .unwrap(),
    );
    h.start().await;
    h.advance_to(ts("2024-05-17T00:03:30Z")).await;
    let minutes = ["2024-05-17T00:01:00Z", "2024-05-17T00:02:00Z", "2024-05-17T00:03:00Z"].map(ts);
    assert_eq!(h.triggers("fails", Outcome::Failed), minutes);
    assert_eq!(h.triggers("panics", Outcome::Panicked), minutes);
    assert_eq!(h.triggers("hangs", Outcome::TimedOut), minutes);
    let failed = &h.records("fails")[0];
    assert_eq!(failed.error.as_deref(), Some("disk full"));
    let panicked = &h.records("panics")[0];
    assert_eq!(panicked.error.as_deref(), Some("panicked: bug in handler"));
    let timed_out = &h.records("hangs")[0];
    assert_eq!(timed_out.error.as_deref(), Some("timed out after 10s"));
    // Cancelled at the timeout, dropped after the 2 s grace.
    assert_eq!(timed_out.duration, Duration::from_secs(12));
    assert_eq!(saw_cancel.load(Ordering::SeqCst), 3);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_waits_for_an_in_flight_run() {
    let mut h = Harness::new("2024-05-17T00:00:00Z");
    let release = Arc::new(Notify::new());
    let gate = release.clone();
    h.add(
        Job::builder("slow")
            .every(Duration::from_secs(60))
            .handler(move |_ctx: JobContext| {
                let gate = gate.clone();
                async move {
                    gate.notified().await;
                    Ok::<_, std::io::Error>(())
                }
            })
            .build()
            .unwrap(),
    );
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:00Z")).await;
    h.cancel.cancel();
    settle().await;
    assert!(h.is_running(), "run() waits for the handler");
    assert_eq!(h.triggers("slow", Outcome::Running), [ts("2024-05-17T00:01:00Z")], "recorded when it starts");
    release.notify_one();
    h.stop().await;
    assert_eq!(h.triggers("slow", Outcome::Succeeded), [ts("2024-05-17T00:01:00Z")]);
}

#[tokio::test(start_paused = true)]
async fn shutdown_drops_a_run_that_ignores_cancellation_after_the_bounds() {
    let mut h = Harness::with("2024-05-17T00:00:00Z", |b| {
        b.shutdown_timeout(Duration::from_secs(30))
            .cancel_grace(Duration::from_secs(5))
            .drain_on_shutdown(true)
    });
    h.add(
        Job::builder("stuck")
            .every(Duration::from_secs(60))
            .handler(|_ctx: JobContext| async {
                std::future::pending::<()>().await;
                Ok::<_, std::io::Error>(())
            })
            .build()
            .unwrap(),
    );
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:00Z")).await;
    h.cancel.cancel();
    settle().await;
    h.advance(Duration::from_secs(34)).await;
    assert!(h.is_running(), "within shutdown timeout + cancel grace");
    h.advance(Duration::from_secs(1)).await;
    h.stop().await;
    let records = h.records("stuck");
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].outcome, Outcome::Aborted);
}

#[tokio::test(start_paused = true)]
async fn a_job_added_while_running_fires_and_a_removed_job_stops() {
    let mut h = Harness::new("2024-05-17T00:00:00Z");
    h.add(Job::builder("old").every(Duration::from_secs(60)).handler(ok).build().unwrap());
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:30Z")).await;
    h.add(Job::builder("new").every(Duration::from_secs(60)).handler(ok).build().unwrap());
    assert!(h.scheduler.remove("old"));
    h.advance_to(ts("2024-05-17T00:03:30Z")).await;
    assert_eq!(h.triggers("old", Outcome::Succeeded), [ts("2024-05-17T00:01:00Z")]);
    assert_eq!(
        h.triggers("new", Outcome::Succeeded),
        ["2024-05-17T00:02:00Z", "2024-05-17T00:03:00Z"].map(ts)
    );
    assert!(!h.scheduler.remove("old"));
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_early_timer_never_starts_a_run_before_its_instant_and_no_trigger_runs_twice() {
    let mut h = Harness::new("2024-05-17T00:00:00Z");
    h.add(Job::builder("tick").every(Duration::from_secs(60)).handler(ok).build().unwrap());
    h.start().await;
    let instant = ts("2024-05-17T00:01:00Z");
    h.clock.set(instant - Duration::from_millis(1));
    settle().await;
    assert!(h.records("tick").is_empty(), "nothing runs 1 ms early");
    h.clock.set(instant);
    settle().await;
    h.clock.set(instant);
    settle().await;
    // The clock steps back and forth over the instant: still one run.
    h.clock.set(instant - Duration::from_millis(500));
    settle().await;
    h.clock.set(instant + Duration::from_millis(10));
    settle().await;
    assert_eq!(h.triggers("tick", Outcome::Succeeded), [instant]);
    h.stop().await;
}

#[derive(Debug)]
struct NeverAgain;

impl Schedule for NeverAgain {
    fn next_after(&self, after: slotcron::jiff::Timestamp) -> Option<slotcron::jiff::Timestamp> {
        let only = ts("2024-05-17T00:00:30Z");
        (after < only).then_some(only)
    }
}

#[tokio::test(start_paused = true)]
async fn exhausted_schedules_leave_the_queue_and_the_scheduler_keeps_running() {
    let mut h = Harness::new("2024-05-17T00:00:00Z");
    h.add(Job::builder("once").at(ts("2024-05-17T00:00:10Z")).handler(ok).build().unwrap());
    h.add(Job::builder("custom").schedule(NeverAgain).handler(ok).build().unwrap());
    h.add(Job::builder("never").cron("0 0 */31 * MON#5").handler(ok).build().unwrap());
    h.add(Job::builder("tick").every(Duration::from_secs(60)).handler(ok).build().unwrap());
    h.start().await;
    assert_eq!(h.scheduler.next_trigger("never"), None);
    h.advance_to(ts("2024-05-17T00:05:00Z")).await;
    assert_eq!(h.triggers("once", Outcome::Succeeded), [ts("2024-05-17T00:00:10Z")]);
    assert_eq!(h.triggers("custom", Outcome::Succeeded), [ts("2024-05-17T00:00:30Z")]);
    assert_eq!(h.scheduler.next_trigger("once"), None);
    assert_eq!(h.triggers("tick", Outcome::Succeeded).len(), 5);
    assert!(h.is_running());
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn after_fires_once_its_delay_after_start_with_the_name_as_key() {
    let mut h = Harness::new("2024-05-17T00:00:00Z");
    let keys = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = keys.clone();
    h.add(
        Job::builder("warmup")
            .after(Duration::from_secs(45))
            .handler(move |ctx: JobContext| {
                seen.lock().unwrap().push(ctx.trigger_key().to_owned());
                async { Ok::<_, std::io::Error>(()) }
            })
            .build()
            .unwrap(),
    );
    h.advance(Duration::from_secs(100)).await;
    h.start().await;
    h.advance(Duration::from_secs(3600)).await;
    assert_eq!(h.triggers("warmup", Outcome::Succeeded), [ts("2024-05-17T00:02:25Z")]);
    assert_eq!(*keys.lock().unwrap(), ["warmup"]);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn run_on_start_fires_the_current_slot_at_once() {
    let mut h = Harness::new("2024-05-17T00:00:07Z");
    h.add(
        Job::builder("warm").every(Duration::from_secs(60)).run_on_start(true).handler(ok).build().unwrap(),
    );
    h.start().await;
    h.advance_to(ts("2024-05-17T00:02:00Z")).await;
    let expected = ["2024-05-17T00:00:00Z", "2024-05-17T00:01:00Z", "2024-05-17T00:02:00Z"].map(ts);
    assert_eq!(h.triggers("warm", Outcome::Succeeded), expected);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn context_carries_job_trigger_key_instance_and_growing_fencing_tokens() {
    let mut h = Harness::new("2024-05-17T00:00:00Z");
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    h.add(
        Job::builder("ctx")
            .every(Duration::from_millis(1500))
            .handler(move |ctx: JobContext| {
                let line = format!(
                    "{} {} {} {} {}",
                    ctx.job(),
                    ctx.trigger(),
                    ctx.trigger_key(),
                    ctx.instance(),
                    ctx.fencing_token()
                );
                sink.lock().unwrap().push(line);
                async { Ok::<_, std::io::Error>(()) }
            })
            .build()
            .unwrap(),
    );
    h.start().await;
    h.advance(Duration::from_secs(3)).await;
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "ctx 2024-05-17T00:00:01.5Z ctx:2024-05-17T00:00:01.500Z test 1",
            "ctx 2024-05-17T00:00:03Z ctx:2024-05-17T00:00:03Z test 2",
        ]
    );
    h.stop().await;
}

#[test]
fn invalid_jobs_are_errors_naming_the_job_field_and_reason() {
    let cases: Vec<(slotcron::JobBuilder, &str)> = vec![
        (Job::builder("a").handler(ok), "job \"a\": schedule: a job needs a schedule"),
        (
            Job::builder("b").every(Duration::from_secs(1)).cron("* * * * *").handler(ok),
            "job \"b\": schedule: a job has exactly one schedule",
        ),
        (
            Job::builder("c").cron("0 24 * * *").handler(ok),
            "job \"c\": hour field \"24\" (column 3): 24 is out of range 0-23",
        ),
        (
            Job::builder("d").cron("* * * * *").run_on_start(true).handler(ok),
            "job \"d\": run_on_start: only interval schedules",
        ),
        (
            Job::builder("e f").every(Duration::from_secs(1)).handler(ok),
            "job \"e f\": name: ' ' is not allowed",
        ),
        (Job::builder("").every(Duration::from_secs(1)).handler(ok), "job \"\": name: must not be empty"),
        (Job::builder("g").every(Duration::ZERO).handler(ok), "job \"g\": every: the period must be"),
        (Job::builder("h").every(Duration::from_secs(1)), "job \"h\": handler: a job needs a handler"),
        (
            Job::builder("i").every(Duration::from_secs(1)).timeout(Duration::ZERO).handler(ok),
            "job \"i\": timeout: must be longer than zero",
        ),
        (
            Job::builder("j").every(Duration::from_secs(1)).timeout(Duration::MAX).handler(ok),
            "job \"j\": timeout: must be at most 100 years",
        ),
        (
            Job::builder("k").after(Duration::MAX).handler(ok),
            "job \"k\": after: the delay must be at most 100 years",
        ),
        (
            Job::builder("l").every(Duration::MAX).handler(ok),
            "job \"l\": every: the period must be at most 100 years",
        ),
        (
            Job::builder("n").every(Duration::from_secs(1)).grace(Duration::ZERO).handler(ok),
            "job \"n\": grace: must be longer than zero",
        ),
        (
            Job::builder("m").every(Duration::from_secs(1)).grace(Duration::MAX).handler(ok),
            "job \"m\": grace: must be at most 100 years",
        ),
    ];
    for (builder, message) in cases {
        let err = builder.build().unwrap_err().to_string();
        assert!(err.starts_with(message), "{err:?} should start with {message:?}");
    }
}

#[tokio::test]
async fn duplicate_names_are_rejected() {
    let scheduler = slotcron::Scheduler::builder().build();
    let job = || {
        Job::builder("dup")
            .schedule(Interval::every(Duration::from_secs(1)).unwrap())
            .handler(ok)
            .build()
            .unwrap()
    };
    scheduler.add(job()).unwrap();
    let err = scheduler.add(job()).unwrap_err();
    assert_eq!(err.to_string(), "job \"dup\": name: a job with this name already exists");
}

#[tokio::test(start_paused = true)]
async fn history_is_newest_first_and_filtered() {
    let mut h = Harness::new("2024-05-17T00:00:00Z");
    h.add(Job::builder("a").every(Duration::from_secs(60)).handler(ok).build().unwrap());
    h.start().await;
    h.advance_to(ts("2024-05-17T00:03:00Z")).await;
    let history: Vec<_> = h.history("a").await.into_iter().map(|r| r.trigger).collect();
    assert_eq!(history, ["2024-05-17T00:03:00Z", "2024-05-17T00:02:00Z", "2024-05-17T00:01:00Z"].map(ts));
    assert_eq!(h.clock.now(), ts("2024-05-17T00:03:00Z"));
    h.stop().await;
}
