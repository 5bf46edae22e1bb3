//! `Scheduler::reconcile`, its loop, and removing jobs while they run: one test per
//! rule, on a manual clock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use slotcron::ScheduleSpec;
use slotcron::{
    BoxError, Job, JobBuilder, JobContext, JobDefinition, JobState, MemoryStore, Misfire, Outcome, Plan,
    PlanErrorKind, ReconcileError, Scheduler, Store,
};
use slotcron_testkit::harness::{Harness, ok, settle, ts};
use tokio::sync::Notify;

fn every_minute(name: &str) -> JobBuilder {
    Job::builder(name).cron("@every 1m").handler(ok)
}

/// A handler that counts its runs in `runs` under `label`.
fn labelled(runs: &Arc<Mutex<Vec<(String, String)>>>, label: &str) -> impl slotcron::Handler {
    let (runs, label) = (runs.clone(), label.to_owned());
    move |ctx: JobContext| {
        let (runs, label) = (runs.clone(), label.clone());
        async move {
            runs.lock().unwrap().push((label, ctx.trigger().to_string()));
            Ok::<_, std::io::Error>(())
        }
    }
}

#[tokio::test(start_paused = true)]
async fn an_unchanged_fingerprint_reconciled_100_times_keeps_the_minutes() {
    let mut h = Harness::new("2024-05-17T00:00:10Z");
    h.start().await;
    let first = h.scheduler.reconcile(vec![Plan::new(every_minute("tick")).fingerprint("v1")]).unwrap();
    assert_eq!(first.added, ["tick"]);
    for i in 0..100 {
        let next = h.scheduler.next_trigger("tick");
        let report = h.scheduler.reconcile(vec![Plan::new(every_minute("tick")).fingerprint("v1")]).unwrap();
        assert_eq!(
            (report.unchanged, report.to_string()),
            (1, "added 0, changed 0, removed 0, unchanged 1".into())
        );
        assert_eq!(h.scheduler.next_trigger("tick"), next, "reconcile {i} moved the next trigger");
        h.advance(Duration::from_secs(23)).await;
    }
    // 100 × 23 s = 2300 s after 00:00:10: up to 00:38:30.
    let expected: Vec<_> =
        (1..=38).map(|m| ts("2024-05-17T00:00:00Z") + Duration::from_secs(60 * m)).collect();
    assert_eq!(h.triggers("tick", Outcome::Succeeded), expected);
    assert_eq!(h.records("tick").len(), 38);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_unchanged_fingerprint_leaves_a_run_in_flight_alone() {
    let mut h = Harness::new("2024-05-17T00:00:00Z");
    let release = Arc::new(Notify::new());
    let cancelled = Arc::new(AtomicBool::new(false));
    let handler = {
        let (release, cancelled) = (release.clone(), cancelled.clone());
        move |ctx: JobContext| {
            let (release, cancelled) = (release.clone(), cancelled.clone());
            async move {
                release.notified().await;
                cancelled.store(ctx.is_cancelled(), Ordering::SeqCst);
                Ok::<_, std::io::Error>(())
            }
        }
    };
    let plan = |handler| {
        Plan::new(Job::builder("slow").every(Duration::from_secs(60)).handler(handler)).handler_name("slow")
    };
    h.scheduler.reconcile(vec![plan(handler.clone())]).unwrap();
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:00Z")).await;
    let report = h.scheduler.reconcile(vec![plan(handler)]).unwrap();
    assert_eq!(report.unchanged, 1, "the derived fingerprint is the same");
    release.notify_one();
    settle().await;
    assert_eq!(h.triggers("slow", Outcome::Succeeded), [ts("2024-05-17T00:01:00Z")]);
    assert!(!cancelled.load(Ordering::SeqCst));
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_changed_fingerprint_replaces_the_job_from_its_next_trigger() {
    let mut h = Harness::new("2024-05-17T00:00:00Z");
    let runs = Arc::new(Mutex::new(Vec::new()));
    let old = Job::builder("job").every(Duration::from_secs(60)).handler(labelled(&runs, "old"));
    h.scheduler.reconcile(vec![Plan::new(old).fingerprint("1")]).unwrap();
    h.start().await;
    h.advance_to(ts("2024-05-17T00:02:30Z")).await;
    let new = Job::builder("job").every(Duration::from_secs(300)).handler(labelled(&runs, "new"));
    let report = h.scheduler.reconcile(vec![Plan::new(new).fingerprint("2")]).unwrap();
    assert_eq!(report.changed, ["job"]);
    assert_eq!(h.scheduler.next_trigger("job"), Some(ts("2024-05-17T00:05:00Z")));
    h.advance_to(ts("2024-05-17T00:10:00Z")).await;
    let runs = runs.lock().unwrap().clone();
    let label = |l: &str, t: &str| (l.to_owned(), t.to_owned());
    assert_eq!(
        runs,
        [
            label("old", "2024-05-17T00:01:00Z"),
            label("old", "2024-05-17T00:02:00Z"),
            label("new", "2024-05-17T00:05:00Z"),
            label("new", "2024-05-17T00:10:00Z"),
        ]
    );
    assert!(h.records("job").iter().all(|r| r.outcome == Outcome::Succeeded), "no misfire, no catch-up");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_missing_or_disabled_plan_removes_its_job() {
    let mut h = Harness::new("2024-05-17T00:00:00Z");
    h.add(every_minute("by-hand").build().unwrap());
    let plans = || ["a", "b", "c"].map(|n| Plan::new(every_minute(n)).fingerprint("1")).into();
    let report = h.scheduler.reconcile(plans()).unwrap();
    assert_eq!((report.added.len(), report.removed.clone()), (3, vec!["by-hand".to_owned()]));
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:00Z")).await;
    let report = h
        .scheduler
        .reconcile(vec![
            Plan::new(every_minute("a")).fingerprint("1"),
            Plan::new(every_minute("b")).fingerprint("1").enabled(false),
            Plan::new(every_minute("never")).enabled(false),
        ])
        .unwrap();
    assert_eq!(report.removed, ["b", "c"]);
    assert_eq!(report.unchanged, 1);
    let mut names = h.scheduler.job_names();
    names.sort();
    assert_eq!(names, ["a"]);
    h.advance_to(ts("2024-05-17T00:05:00Z")).await;
    assert_eq!(h.records("a").len(), 5);
    assert_eq!(h.records("b").len(), 1);
    assert_eq!(h.records("c").len(), 1);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_set_compared_a_chunk_at_a_time_is_applied_whole() {
    let mut h = Harness::new("2024-05-17T00:00:00Z");
    h.start().await;
    let name = |i: usize| format!("job-{i}");
    let plan = |i: usize, version: &str| Plan::new(every_minute(&name(i))).fingerprint(version);
    let report = h.scheduler.reconcile((0..10_000).map(|i| plan(i, "1")).collect()).unwrap();
    assert_eq!(report.added.len(), 10_000);
    // Kept 0..6000 (every 100th of them changed), disabled 6000..8000, missing
    // 8000..10000, new 10000..10050: each part spans several chunks of the comparison.
    let plans = (0..6000)
        .map(|i| plan(i, if i % 100 == 0 { "2" } else { "1" }))
        .chain((6000..8000).map(|i| plan(i, "1").enabled(false)))
        .chain((10_000..10_050).map(|i| plan(i, "1")))
        .collect();
    let report = h.scheduler.reconcile(plans).unwrap();
    assert_eq!(report.unchanged, 5940);
    assert_eq!(report.changed, (0..6000).step_by(100).map(name).collect::<Vec<_>>());
    assert_eq!(report.added, (10_000..10_050).map(name).collect::<Vec<_>>());
    let mut removed = report.removed.clone();
    removed.sort();
    let mut expected: Vec<String> = (6000..10_000).map(name).collect();
    expected.sort();
    assert_eq!(removed, expected);
    let mut names = h.scheduler.job_names();
    names.sort();
    let mut expected: Vec<String> = (0..6000).chain(10_000..10_050).map(name).collect();
    expected.sort();
    assert_eq!(names, expected);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_duplicate_or_empty_id_rejects_the_whole_set() {
    let h = Harness::new("2024-05-17T00:00:00Z");
    h.scheduler.reconcile(vec![Plan::new(every_minute("a")).fingerprint("1")]).unwrap();
    let duplicate = vec![
        Plan::new(every_minute("new")).fingerprint("1"),
        Plan::new(every_minute("x")).fingerprint("1"),
        Plan::new(every_minute("x")).fingerprint("2"),
    ];
    let err = h.scheduler.reconcile(duplicate).unwrap_err();
    assert!(matches!(&err, ReconcileError::DuplicateId { id } if id == "x"), "{err}");
    assert_eq!(err.to_string(), "plan \"x\": two plans have this id; nothing was changed");
    let empty =
        vec![Plan::from_definition(JobDefinition::new("", ScheduleSpec::After { delay_ms: 1 }, "noop"))];
    let err = h.scheduler.reconcile(empty).unwrap_err();
    assert!(matches!(err, ReconcileError::EmptyId { index: 0 }), "{err}");
    assert_eq!(h.scheduler.job_names(), ["a"], "nothing added, nothing removed");
}

#[tokio::test(start_paused = true)]
async fn a_plan_that_fails_does_not_block_the_others_and_its_job_keeps_running() {
    let mut h = Harness::new("2024-05-17T00:00:00Z");
    h.scheduler.reconcile(vec![Plan::new(every_minute("kept")).fingerprint("1")]).unwrap();
    h.start().await;
    let err = h
        .scheduler
        .reconcile(vec![
            Plan::new(Job::builder("kept").cron("61 * * * *").handler(ok)).fingerprint("2"),
            Plan::new(every_minute("added")).fingerprint("1"),
            Plan::new(every_minute("unnamed")),
            Plan::from_definition(JobDefinition::new(
                "unregistered",
                ScheduleSpec::After { delay_ms: 1 },
                "nope",
            )),
        ])
        .unwrap_err();
    let ReconcileError::Plans(report) = &err else { panic!("{err}") };
    assert_eq!(report.added, ["added"]);
    let ids: Vec<_> = report.failures.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, ["kept", "unnamed", "unregistered"]);
    let kinds: Vec<_> = report.failures.iter().map(|f| f.kind).collect();
    assert_eq!(kinds, [PlanErrorKind::InvalidJob, PlanErrorKind::NoFingerprint, PlanErrorKind::InvalidJob]);
    let text = err.to_string();
    assert!(
        text.starts_with("3 plan(s) failed; the others were applied\n  plan \"kept\": job \"kept\": "),
        "{text}"
    );
    assert!(
        text.contains(
            "plan \"unnamed\": the handler is a closure: state the plan's fingerprint or handler name"
        ),
        "{text}"
    );
    assert!(text.contains("no handler is registered as \"nope\""), "{text}");
    h.advance_to(ts("2024-05-17T00:03:00Z")).await;
    assert_eq!(h.records("kept").len(), 3, "the old job runs on");
    assert_eq!(h.records("added").len(), 3);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn definition_plans_derive_their_fingerprint_from_the_whole_definition() {
    let h = Harness::new("2024-05-17T00:00:00Z");
    h.scheduler.register_handler("noop", ok);
    let definition =
        JobDefinition::new("mail", ScheduleSpec::Every { period_ms: 60_000, offset_ms: 0 }, "noop");
    let plan = |d: &JobDefinition| vec![Plan::from_definition(d.clone())];
    assert_eq!(h.scheduler.reconcile(plan(&definition)).unwrap().added, ["mail"]);
    assert_eq!(h.scheduler.reconcile(plan(&definition)).unwrap().unchanged, 1);
    let mut edited = definition.clone();
    edited.payload = serde_json::json!({"to": "ops"});
    assert_eq!(h.scheduler.reconcile(plan(&edited)).unwrap().changed, ["mail"]);
    let mut zoned = edited.clone();
    zoned.schedule =
        ScheduleSpec::Cron { expression: "0 9 * * *".into(), timezone: Some("Asia/Shanghai".into()) };
    assert_eq!(h.scheduler.reconcile(plan(&zoned)).unwrap().changed, ["mail"]);
    zoned.schedule =
        ScheduleSpec::Cron { expression: "0 9 * * *".into(), timezone: Some("Europe/Paris".into()) };
    assert_eq!(h.scheduler.reconcile(plan(&zoned)).unwrap().changed, ["mail"], "the zone counts");
}

#[tokio::test(start_paused = true)]
async fn the_loop_reconciles_every_interval_keeps_the_set_on_a_list_error_and_stops_with_the_scheduler() {
    let mut h = Harness::new("2024-05-17T00:00:00Z");
    h.start().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let looping = tokio::spawn({
        let (scheduler, calls) = (h.scheduler.clone(), calls.clone());
        async move {
            scheduler
                .reconcile_every(Duration::from_secs(30), move || {
                    let call = calls.fetch_add(1, Ordering::SeqCst);
                    async move {
                        match call {
                            0 => Ok(vec![Plan::new(every_minute("a")).fingerprint("1")]),
                            1 => Err::<Vec<Plan>, BoxError>("database down".into()),
                            _ => Ok(vec![Plan::new(every_minute("b")).fingerprint("1")]),
                        }
                    }
                })
                .await
        }
    });
    settle().await;
    assert_eq!((calls.load(Ordering::SeqCst), h.scheduler.job_names()), (1, vec!["a".to_owned()]));
    h.advance(Duration::from_secs(30)).await;
    assert_eq!(
        (calls.load(Ordering::SeqCst), h.scheduler.job_names()),
        (2, vec!["a".to_owned()]),
        "kept on error"
    );
    h.advance(Duration::from_secs(30)).await;
    assert_eq!((calls.load(Ordering::SeqCst), h.scheduler.job_names()), (3, vec!["b".to_owned()]));
    h.stop().await;
    settle().await;
    assert!(looping.is_finished(), "the loop stops with the scheduler");
    looping.await.unwrap();
}

/// A job whose runs wait for `release`, noting whether their token had fired.
fn gated(name: &str, release: &Arc<Notify>, cancelled: &Arc<AtomicBool>) -> Job {
    let (release, cancelled) = (release.clone(), cancelled.clone());
    Job::builder(name)
        .every(Duration::from_secs(60))
        .handler(move |ctx: JobContext| {
            let (release, cancelled) = (release.clone(), cancelled.clone());
            async move {
                tokio::select! {
                    () = release.notified() => {}
                    () = ctx.cancellation_token().cancelled() => {}
                }
                cancelled.store(ctx.is_cancelled(), Ordering::SeqCst);
                Ok::<_, std::io::Error>(())
            }
        })
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn removing_a_job_whose_run_is_in_flight_lets_it_finish_and_fires_nothing_more() {
    let mut h = Harness::new("2024-05-17T00:00:00Z");
    let (release, cancelled) = (Arc::new(Notify::new()), Arc::new(AtomicBool::new(false)));
    h.add(gated("slow", &release, &cancelled));
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:00Z")).await;
    assert!(h.scheduler.remove("slow"));
    assert!(!h.scheduler.remove("slow"), "already removed");
    h.advance(Duration::from_secs(90)).await;
    assert_eq!(h.triggers("slow", Outcome::Running), [ts("2024-05-17T00:01:00Z")], "still running");
    release.notify_one();
    settle().await;
    assert_eq!(h.triggers("slow", Outcome::Succeeded), [ts("2024-05-17T00:01:00Z")]);
    assert!(!cancelled.load(Ordering::SeqCst), "its token was not fired");
    h.advance(Duration::from_secs(600)).await;
    assert_eq!(h.records("slow").len(), 1, "no later trigger");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn remove_and_cancel_fires_the_runs_token() {
    let mut h = Harness::new("2024-05-17T00:00:00Z");
    let (release, cancelled) = (Arc::new(Notify::new()), Arc::new(AtomicBool::new(false)));
    h.add(gated("slow", &release, &cancelled));
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:00Z")).await;
    assert!(h.scheduler.remove_and_cancel("slow"));
    settle().await;
    assert!(cancelled.load(Ordering::SeqCst));
    assert_eq!(h.triggers("slow", Outcome::Succeeded), [ts("2024-05-17T00:01:00Z")], "recorded as it ended");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn remove_and_cancel_fires_the_removed_jobs_tokens_only() {
    let mut h = Harness::new("2024-05-17T00:00:00Z");
    let (release, kept) = (Arc::new(Notify::new()), Arc::new(AtomicBool::new(false)));
    let removed = Arc::new(AtomicBool::new(false));
    h.add(gated("kept", &release, &kept));
    h.add(gated("removed", &Arc::new(Notify::new()), &removed));
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:00Z")).await;
    assert!(h.scheduler.remove_and_cancel("removed"));
    settle().await;
    assert!(removed.load(Ordering::SeqCst), "the removed job's run was told to stop");
    assert_eq!(h.triggers("kept", Outcome::Running), [ts("2024-05-17T00:01:00Z")], "still running");
    release.notify_one();
    settle().await;
    assert!(!kept.load(Ordering::SeqCst), "the other job's token was not fired");
    assert_eq!(h.triggers("kept", Outcome::Succeeded), [ts("2024-05-17T00:01:00Z")]);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_trigger_already_due_and_waiting_does_not_start_once_its_job_is_removed() {
    // Three missed triggers come due at once (run_all); the first run removes its job.
    let store = Arc::new(MemoryStore::new());
    let last = JobState::of(ts("2024-05-17T00:00:00Z"), Some(Outcome::Succeeded), false);
    store.save_state("burst", &last).await.unwrap();
    let mut h = Harness::with("2024-05-17T00:03:30Z", |b| b.store(store.clone()));
    let scheduler = h.scheduler.clone();
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    h.add(
        Job::builder("burst")
            .every(Duration::from_secs(60))
            .misfire(Misfire::RunAll { cap: 10 })
            .grace(Duration::from_secs(1))
            .handler(move |_ctx: JobContext| {
                counted.fetch_add(1, Ordering::SeqCst);
                scheduler.remove("burst");
                async { Ok::<_, std::io::Error>(()) }
            })
            .build()
            .unwrap(),
    );
    h.start().await;
    h.advance(Duration::from_secs(600)).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(h.triggers("burst", Outcome::Succeeded), [ts("2024-05-17T00:01:00Z")]);
    assert_eq!(h.records("burst").len(), 1);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_removed_job_added_again_starts_from_its_schedule_also_after_a_restart() {
    let store = Arc::new(MemoryStore::new());
    let job = || {
        Job::builder("tick")
            .every(Duration::from_secs(60))
            .misfire(Misfire::RunAll { cap: 100 })
            .grace(Duration::from_secs(1))
            .handler(ok)
            .build()
            .unwrap()
    };
    let mut h = Harness::with("2024-05-17T00:00:00Z", |b| b.store(store.clone()));
    h.add(job());
    h.start().await;
    h.advance_to(ts("2024-05-17T00:02:00Z")).await;
    assert!(store.load_states().await.unwrap().contains_key("tick"));
    assert!(h.scheduler.remove("tick"));
    settle().await;
    assert_eq!(store.load_states().await.unwrap(), HashMap::new(), "its state is cleared");
    h.advance_to(ts("2024-05-17T00:10:30Z")).await;
    h.add(job());
    h.advance_to(ts("2024-05-17T00:12:00Z")).await;
    assert_eq!(
        h.triggers("tick", Outcome::Succeeded)[2..],
        [ts("2024-05-17T00:11:00Z"), ts("2024-05-17T00:12:00Z")],
        "no catch-up of 00:03 to 00:10"
    );
    assert!(h.scheduler.remove("tick"));
    h.stop().await;
    // A restart later: the state is gone, so nothing is caught up either.
    let mut later = Harness::with("2024-05-17T00:20:30Z", |b| b.store(store.clone()));
    later.add(job());
    later.start().await;
    later.advance_to(ts("2024-05-17T00:21:00Z")).await;
    assert_eq!(later.triggers("tick", Outcome::Succeeded), [ts("2024-05-17T00:21:00Z")]);
    assert_eq!(later.records("tick").len(), 1);
    later.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_one_shot_added_again_for_the_same_instant_does_not_run_again() {
    let store = Arc::new(MemoryStore::new());
    let at = || Job::builder("once").at(ts("2024-05-17T00:01:00Z")).handler(ok).build().unwrap();
    let mut h = Harness::with("2024-05-17T00:00:00Z", |b| b.store(store.clone()));
    h.add(at());
    h.start().await;
    h.advance_to(ts("2024-05-17T00:02:00Z")).await;
    assert!(h.scheduler.remove("once"));
    settle().await;
    h.add(at());
    h.advance_to(ts("2024-05-17T00:05:00Z")).await;
    assert_eq!(h.records("once").len(), 1);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn reconcile_before_run_adds_jobs_that_start_with_it() {
    let mut h = Harness::new("2024-05-17T00:00:30Z");
    let scheduler: &Scheduler = &h.scheduler;
    scheduler.reconcile(vec![Plan::new(every_minute("early")).fingerprint("1")]).unwrap();
    h.start().await;
    h.advance_to(ts("2024-05-17T00:02:00Z")).await;
    assert_eq!(h.records("early").len(), 2);
    h.stop().await;
}
