//! Restarts and misfires with a shared in-memory store: a second scheduler on the same
//! store stands for the process started again.

use std::sync::Arc;
use std::time::Duration;

use slotcron::{Job, JobContext, JobDefinition, MemoryStore, Misfire, Outcome, ScheduleSpec, Store};
use slotcron_testkit as testkit;
use slotcron_testkit::harness::{Harness, ok, settle, ts};

fn on(store: &Arc<MemoryStore>, start: &str) -> Harness {
    let store = store.clone();
    Harness::with(start, move |b| b.store(store))
}

/// [`testkit::restart_after_downtime`] on a new shared in-memory store.
async fn restart_after_downtime(misfire: Option<Misfire>) -> Harness {
    let store = Arc::new(MemoryStore::new());
    testkit::restart_after_downtime(async |start| on(&store, start), misfire).await
}

#[tokio::test(start_paused = true)]
async fn skip_drops_the_triggers_missed_while_down() {
    let mut h = restart_after_downtime(None).await;
    assert_eq!(h.triggers("tick", Outcome::Succeeded), []);
    let missed = h.records("tick");
    assert_eq!(missed.len(), 1);
    assert_eq!((missed[0].outcome, missed[0].trigger), (Outcome::Missed, ts("2024-05-17T00:00:20Z")));
    assert!(missed[0].error.as_deref().unwrap().starts_with("5 trigger(s) noticed after"));
    h.advance_to(ts("2024-05-17T00:00:22Z")).await;
    assert_eq!(h.triggers("tick", Outcome::Succeeded), [ts("2024-05-17T00:00:22Z")]);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn run_once_coalesces_the_missed_triggers_into_one_run() {
    let mut h = restart_after_downtime(Some(Misfire::RunOnce)).await;
    assert_eq!(h.triggers("tick", Outcome::Succeeded), [ts("2024-05-17T00:00:20Z")]);
    assert_eq!(h.records("tick").len(), 1);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn run_all_runs_up_to_the_cap_and_records_the_rest_as_missed() {
    let mut h = restart_after_downtime(Some(Misfire::RunAll { cap: 3 })).await;
    let ran = ["2024-05-17T00:00:16Z", "2024-05-17T00:00:18Z", "2024-05-17T00:00:20Z"].map(ts);
    assert_eq!(h.triggers("tick", Outcome::Succeeded), ran);
    assert_eq!(h.triggers("tick", Outcome::Missed), [ts("2024-05-17T00:00:14Z")]);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_at_job_that_ran_never_runs_again_after_a_restart() {
    let store = Arc::new(MemoryStore::new());
    let job = || Job::builder("migrate").at(ts("2024-05-17T00:00:05Z")).handler(ok).build().unwrap();
    let mut first = on(&store, "2024-05-17T00:00:00Z");
    first.add(job());
    first.start().await;
    first.advance_to(ts("2024-05-17T00:00:06Z")).await;
    first.stop().await;
    assert_eq!(first.triggers("migrate", Outcome::Succeeded), [ts("2024-05-17T00:00:05Z")]);
    let mut second = on(&store, "2024-05-17T00:00:07Z");
    second.add(job());
    second.start().await;
    second.advance_to(ts("2024-05-18T00:00:00Z")).await;
    assert_eq!(second.records("migrate"), []);
    second.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_at_job_whose_instant_passed_while_down_runs_at_start_unless_skipped() {
    let store = Arc::new(MemoryStore::new());
    let mut h = on(&store, "2024-05-17T12:00:00Z");
    h.add(Job::builder("report").at(ts("2024-05-17T09:00:00Z")).handler(ok).build().unwrap());
    h.add(
        Job::builder("cleanup")
            .at(ts("2024-05-17T09:00:00Z"))
            .misfire(Misfire::Skip)
            .handler(ok)
            .build()
            .unwrap(),
    );
    h.start().await;
    assert_eq!(h.triggers("report", Outcome::Succeeded), [ts("2024-05-17T09:00:00Z")]);
    assert_eq!(h.triggers("cleanup", Outcome::Missed), [ts("2024-05-17T09:00:00Z")]);
    h.stop().await;
    let states = store.load_states().await.unwrap();
    assert!(states["report"].one_shot_done && states["cleanup"].one_shot_done);
}

#[tokio::test(start_paused = true)]
async fn a_running_scheduler_treats_a_clock_jump_as_a_misfire() {
    let mut h = Harness::new("2024-05-17T00:00:00Z");
    h.add(Job::builder("tick").every(Duration::from_secs(60)).handler(ok).build().unwrap());
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:00Z")).await;
    // The machine sleeps for an hour.
    h.clock.set(ts("2024-05-17T01:01:30Z"));
    settle().await;
    assert_eq!(h.triggers("tick", Outcome::Succeeded), [ts("2024-05-17T00:01:00Z")]);
    assert_eq!(h.triggers("tick", Outcome::Missed), [ts("2024-05-17T01:01:00Z")]);
    h.advance_to(ts("2024-05-17T01:02:00Z")).await;
    assert_eq!(h.triggers("tick", Outcome::Succeeded).last(), Some(&ts("2024-05-17T01:02:00Z")));
    h.stop().await;
}

fn definition(handler: &str) -> JobDefinition {
    JobDefinition {
        payload: serde_json::json!({"to": "ops@example.com"}),
        ..JobDefinition::new("mail", ScheduleSpec::Every { period_ms: 60_000, offset_ms: 0 }, handler)
    }
}

#[tokio::test(start_paused = true)]
async fn defined_jobs_come_back_after_a_restart_with_their_payload() {
    let store = Arc::new(MemoryStore::new());
    let payloads = Arc::new(std::sync::Mutex::new(Vec::new()));
    let handler = {
        let payloads = payloads.clone();
        move |ctx: JobContext| {
            payloads.lock().unwrap().push(ctx.payload().cloned());
            async { Ok::<_, std::io::Error>(()) }
        }
    };
    let mut first = on(&store, "2024-05-17T00:00:00Z");
    first.scheduler.register_handler("send", handler.clone());
    first.scheduler.define(definition("send")).await.unwrap();
    first.start().await;
    first.advance_to(ts("2024-05-17T00:01:00Z")).await;
    first.stop().await;

    let mut second = on(&store, "2024-05-17T00:01:30Z");
    second.scheduler.register_handler("send", handler);
    second.start().await;
    second.advance_to(ts("2024-05-17T00:02:00Z")).await;
    assert_eq!(second.triggers("mail", Outcome::Succeeded), [ts("2024-05-17T00:02:00Z")]);
    assert_eq!(*payloads.lock().unwrap(), vec![Some(serde_json::json!({"to": "ops@example.com"})); 2]);
    assert!(second.scheduler.undefine("mail").await.unwrap());
    assert!(store.load_definitions().await.unwrap().is_empty());
    second.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_invalid_definition_is_rejected_and_a_stored_one_without_handler_is_kept() {
    let store = Arc::new(MemoryStore::new());
    let h = on(&store, "2024-05-17T00:00:00Z");
    let err = h.scheduler.define(definition("unregistered")).await.unwrap_err();
    assert_eq!(err.to_string(), "job \"mail\": handler: no handler is registered as \"unregistered\"");
    assert!(store.load_definitions().await.unwrap().is_empty(), "nothing stored for an invalid definition");

    store.save_definition(&definition("gone")).await.unwrap();
    h.scheduler.restore().await.unwrap();
    assert!(h.scheduler.job_names().is_empty());
    assert_eq!(
        store.load_definitions().await.unwrap(),
        [definition("gone")],
        "the stored definition is kept"
    );
}

#[tokio::test(start_paused = true)]
async fn an_at_job_moved_to_a_later_instant_runs_again() {
    let store = Arc::new(MemoryStore::new());
    let job = |at: &str| Job::builder("migrate").at(ts(at)).handler(ok).build().unwrap();
    let mut first = on(&store, "2024-05-17T00:00:00Z");
    first.add(job("2024-05-17T00:00:05Z"));
    first.start().await;
    first.advance_to(ts("2024-05-17T00:00:06Z")).await;
    first.stop().await;
    let mut second = on(&store, "2024-05-17T00:00:07Z");
    second.add(job("2024-05-17T00:01:00Z"));
    second.start().await;
    second.advance_to(ts("2024-05-17T00:02:00Z")).await;
    assert_eq!(second.triggers("migrate", Outcome::Succeeded), [ts("2024-05-17T00:01:00Z")]);
    second.stop().await;
}

/// A replica that restarts in a fleet does not take for missed the triggers the fleet
/// ran while it was down: the coordinator's high-water mark is past them, so they are
/// recorded `skipped-lost`, saying so, and no failure is reported. Triggers past the mark
/// (the whole fleet was down) stay `missed`.
#[tokio::test(start_paused = true)]
async fn a_replica_back_in_a_fleet_records_the_triggers_the_fleet_ran_as_lost_not_missed() {
    use slotcron::{Claim, Coordinator, Hold, InProcessCoordinator, JobState, ScheduleKind, trigger_key};

    let coordinator = Arc::new(InProcessCoordinator::new());
    // The rest of the fleet ran every trigger up to 00:00:16 while this replica was down.
    for second in (4..=16).step_by(2) {
        let at = ts(&format!("2024-05-17T00:00:{second:02}Z"));
        let key = trigger_key("tick", ScheduleKind::Recurring, at);
        let hold =
            Some(Hold { slot: Duration::from_secs(2), run_budget: None, slack: Duration::from_secs(5) });
        let claim = Claim { job: "tick", trigger: at, key: &key, instance: "other", hold };
        assert!(matches!(coordinator.claim(&claim).await.unwrap(), slotcron::ClaimOutcome::Won { .. }));
    }
    // This replica last handled 00:00:02, then was down.
    let store = Arc::new(MemoryStore::new());
    let last = JobState::of(ts("2024-05-17T00:00:02Z"), Some(Outcome::Succeeded), false);
    store.save_state("tick", &last).await.unwrap();
    let tick = || Job::builder("tick").every(Duration::from_secs(2)).handler(ok).build().unwrap();
    let back = |at: &str, shared: Arc<dyn Coordinator>| {
        let store = store.clone();
        // The coordinator keeps the system's time, this replica a manual clock in 2024:
        // no skew check (it would skip every trigger; see tests/faults.rs).
        Harness::with(at, move |b| {
            b.store(store).coordinator(shared).shared_work(false).check_clock_skew(false)
        })
    };
    let mut h = back("2024-05-17T00:00:17.500Z", coordinator.clone());
    h.add(tick());
    h.start().await;
    settle().await;
    let records = h.records("tick");
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!((records[0].outcome, records[0].trigger), (Outcome::SkippedLost, ts("2024-05-17T00:00:16Z")));
    assert!(records[0].error.as_deref().unwrap().contains("the fleet handled them"), "{records:?}");
    h.stop().await;

    // Down again past the mark: nobody ran 00:00:18 to 00:00:22.
    let mut h = back("2024-05-17T00:00:23.500Z", coordinator);
    h.add(tick());
    h.start().await;
    settle().await;
    let records = h.records("tick");
    assert_eq!(
        (records[0].outcome, records[0].trigger),
        (Outcome::Missed, ts("2024-05-17T00:00:22Z")),
        "{records:?}"
    );
    h.stop().await;
}
