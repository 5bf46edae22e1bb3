//! Job chains (`JobBuilder::run_after`) on a manual clock: a parent's successful run fires
//! its child at the parent's trigger instant, once; a parent that fails records the
//! child's trigger (and the grandchild's) `skipped-parent`; a chain three deep runs each
//! job once per trigger of the first; a child's claim won and never started is taken over;
//! a parent interrupted by its own daemon's crash records `skipped-parent` at the restart;
//! one a member presumed interrupted decides nothing while its daemon may come back, and
//! is decided once when that daemon is gone for good (a new incarnation, or
//! `PRESUMED_PARENT_WAIT` out of the membership); a cycle and a schedule beside
//! `run_after` are refused, and so is a backfill of a chained job.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use slotcron::jiff::Timestamp;
use slotcron::{
    Cause, Claim, ClaimOutcome, ControlError, Coordinator, Hold, InProcessCoordinator, Job, JobBuilder,
    JobContext, Ledger, Leftover, Outcome, RunRecord, Scheduler,
};
use slotcron_testkit::harness::{Harness, ts};

const MINUTE: Duration = Duration::from_secs(60);

/// The runs handlers saw, in the order they started: (job, trigger, trigger key).
type Runs = Arc<Mutex<Vec<(String, Timestamp, String)>>>;

/// `builder` with a handler that notes its run in `runs` and fails if `fail`.
fn noting(builder: JobBuilder, runs: &Runs, fail: bool) -> Job {
    let runs = runs.clone();
    builder
        .handler(move |ctx: JobContext| {
            runs.lock().unwrap().push((ctx.job().to_owned(), ctx.trigger(), ctx.trigger_key().to_owned()));
            async move { if fail { Err(std::io::Error::other("exit status 1")) } else { Ok(()) } }
        })
        .build()
        .unwrap()
}

/// A harness starting at `start` whose scheduler claims from `coordinator` (on the
/// system clock: no clock-skew check).
fn coordinated(start: &str, coordinator: &Arc<InProcessCoordinator>) -> Harness {
    Harness::with(start, |b| b.coordinator(coordinator.clone()).check_clock_skew(false))
}

/// A coordinated harness at 10:00:30, started with `a` every minute and `b` after it,
/// both succeeding.
async fn a_then_b_started(runs: &Runs) -> Harness {
    let coordinator = Arc::new(InProcessCoordinator::new());
    let mut h = coordinated("2024-05-17T10:00:30Z", &coordinator);
    h.add(noting(Job::builder("a").every(MINUTE), runs, false));
    h.add(noting(Job::builder("b").run_after("a"), runs, false));
    h.start().await;
    h
}

/// The runs of `job` seen: (trigger, trigger key).
fn runs_of(runs: &Runs, job: &str) -> Vec<(Timestamp, String)> {
    runs.lock().unwrap().iter().filter(|r| r.0 == job).map(|r| (r.1, r.2.clone())).collect()
}

/// `a` every minute and `b` after it, succeeding, in one scheduler: each trigger of `a`
/// runs `b` once, at `a`'s instant and under `b`'s own trigger key, after `a`'s run.
#[tokio::test(start_paused = true)]
async fn a_successful_parent_run_fires_its_child_once_at_the_parents_trigger() {
    let runs = Runs::default();
    let mut h = Harness::new("2024-05-17T10:00:30Z");
    h.add(noting(Job::builder("a").every(MINUTE), &runs, false));
    h.add(noting(Job::builder("b").run_after("a"), &runs, false));
    h.start().await;
    h.advance_to(ts("2024-05-17T10:02:30Z")).await;
    h.stop().await;
    let (t1, t2) = (ts("2024-05-17T10:01:00Z"), ts("2024-05-17T10:02:00Z"));
    assert_eq!(
        runs_of(&runs, "b"),
        [(t1, "b:2024-05-17T10:01:00Z".to_owned()), (t2, "b:2024-05-17T10:02:00Z".to_owned())]
    );
    let order: Vec<String> = runs.lock().unwrap().iter().map(|r| r.0.clone()).collect();
    assert_eq!(order, ["a", "b", "a", "b"], "each child after its parent");
    assert_eq!(h.triggers("b", Outcome::Succeeded), [t1, t2]);
    assert!(h.records("b").iter().all(|r| r.cause == Cause::Scheduled), "{:?}", h.records("b"));
}

/// A failing `a`: `b` and `c` (after `b`) are not run; their triggers are recorded
/// `skipped-parent`, each naming its parent and the parent's outcome, and `c` the run
/// where the chain stopped.
#[tokio::test(start_paused = true)]
async fn a_failing_parent_records_skipped_parent_for_its_child_and_grandchild() {
    let runs = Runs::default();
    let coordinator = Arc::new(InProcessCoordinator::new());
    let mut h = coordinated("2024-05-17T10:00:30Z", &coordinator);
    h.add(noting(Job::builder("a").every(MINUTE), &runs, true));
    h.add(noting(Job::builder("b").run_after("a"), &runs, false));
    h.add(noting(Job::builder("c").run_after("b"), &runs, false));
    h.start().await;
    h.advance_to(ts("2024-05-17T10:01:30Z")).await;
    h.stop().await;
    let t = ts("2024-05-17T10:01:00Z");
    assert!(runs_of(&runs, "b").is_empty() && runs_of(&runs, "c").is_empty(), "{runs:?}");
    for (job, reason) in [
        ("b", "its parent a's run of this trigger ended failed"),
        (
            "c",
            "its parent b's run of this trigger ended skipped-parent; the chain stopped at a's run, which ended failed",
        ),
    ] {
        let records = h.records(job);
        assert_eq!(records.len(), 1, "{records:?}");
        assert_eq!((records[0].trigger, records[0].outcome), (t, Outcome::SkippedParent), "{records:?}");
        assert_eq!(records[0].error.as_deref(), Some(reason));
    }
    // Claimed and settled: no member takes them over and runs them.
    assert!(coordinator.unstarted("test", &["b", "c"]).await.unwrap().is_empty());
}

/// `a → b → c` on a coordinator: one run of each per trigger of `a`, each under its own
/// trigger key at `a`'s instant, each with one record.
#[tokio::test(start_paused = true)]
async fn a_chain_three_deep_runs_each_job_once_per_trigger_of_the_first() {
    let runs = Runs::default();
    let coordinator = Arc::new(InProcessCoordinator::new());
    let mut h = coordinated("2024-05-17T10:00:30Z", &coordinator);
    h.add(noting(Job::builder("c").run_after("b"), &runs, false));
    h.add(noting(Job::builder("b").run_after("a"), &runs, false));
    h.add(noting(Job::builder("a").every(MINUTE), &runs, false));
    h.start().await;
    h.advance_to(ts("2024-05-17T10:03:30Z")).await;
    h.stop().await;
    let triggers = [ts("2024-05-17T10:01:00Z"), ts("2024-05-17T10:02:00Z"), ts("2024-05-17T10:03:00Z")];
    for job in ["a", "b", "c"] {
        let ran: Vec<Timestamp> = runs_of(&runs, job).into_iter().map(|(t, _)| t).collect();
        assert_eq!(ran, triggers, "{job}");
        assert_eq!(h.triggers(job, Outcome::Succeeded), triggers, "{job}: one record per trigger");
        assert_eq!(h.records(job).len(), 3, "{job}");
    }
    let keys: Vec<String> = runs_of(&runs, "c").into_iter().map(|(_, key)| key).collect();
    assert_eq!(keys[0], "c:2024-05-17T10:01:00Z");
}

/// The daemon that ran `a` won the claim of `b`'s trigger and died before starting it:
/// its next incarnation (or a live member) takes the claim over and runs `b` once, late,
/// at `a`'s instant; `b`'s success then fires `c` at the same instant.
#[tokio::test(start_paused = true)]
async fn a_childs_claim_won_and_never_started_is_taken_over_and_the_chain_goes_on() {
    let coordinator = Arc::new(InProcessCoordinator::new());
    let t = ts("2024-05-17T10:01:00Z");
    let (key, claimed) = claim_b(&coordinator, t, "test").await;
    assert!(matches!(claimed, ClaimOutcome::Won { .. }));

    let runs = Runs::default();
    let mut h = coordinated("2024-05-17T10:01:02Z", &coordinator);
    chain_of_three(&h, &runs, false);
    h.start().await;
    h.advance_to(ts("2024-05-17T10:01:10Z")).await;
    h.stop().await;
    assert!(runs_of(&runs, "a").is_empty(), "a's trigger was before this start");
    assert_eq!(runs_of(&runs, "b"), [(t, key.clone())]);
    assert_eq!(runs_of(&runs, "c"), [(t, "c:2024-05-17T10:01:00Z".to_owned())]);
    let b = h.records("b");
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!((b[0].outcome, b[0].cause), (Outcome::Succeeded, Cause::TakenOver), "{b:?}");
    assert_eq!(h.triggers("c", Outcome::Succeeded), [t]);
    assert_eq!(h.records("c").len(), 1);
}

/// A failed parent's end and its child's `skipped-parent` record were written together,
/// then its daemon claimed the child's trigger and died before settling that claim: the
/// claim taken over is settled, not run — the ledger already tells the trigger's outcome —
/// and the chain below it stays as recorded.
#[tokio::test(start_paused = true)]
async fn a_skipped_childs_claim_left_unsettled_is_taken_over_and_settled_not_run() {
    let coordinator = Arc::new(InProcessCoordinator::new());
    let t = ts("2024-05-17T10:01:00Z");
    let (_, claimed) = claim_b(&coordinator, t, "test").await;
    assert!(matches!(claimed, ClaimOutcome::Won { .. }));

    let runs = Runs::default();
    let mut h = coordinated("2024-05-17T10:01:02Z", &coordinator);
    let skipped = |job: &str| RunRecord {
        job: job.into(),
        outcome: Outcome::SkippedParent,
        attempts: 0,
        fencing_token: None,
        error: Some("its parent's run of this trigger ended failed".into()),
        ..left_running(t, "test")
    };
    h.ledger.append(&skipped("b")).await.unwrap();
    h.ledger.append(&skipped("c")).await.unwrap();
    chain_of_three(&h, &runs, false);
    h.start().await;
    h.advance_to(ts("2024-05-17T10:01:10Z")).await;
    h.stop().await;
    assert!(runs.lock().unwrap().is_empty(), "nothing ran: {:?}", runs.lock().unwrap());
    for job in ["b", "c"] {
        let records = h.records(job);
        assert_eq!(records.len(), 1, "{records:?}");
        assert_eq!(records[0].outcome, Outcome::SkippedParent);
    }
}

/// A successful parent's child claimed and never started, whose `running` record the
/// restart's sweep recorded `skipped-lost` (its command never started: its claim is to be
/// taken over and run once): the takeover runs it — only a `skipped-parent` record means
/// the trigger was decided without a run.
#[tokio::test(start_paused = true)]
async fn a_childs_claim_whose_start_never_came_is_taken_over_and_run_despite_its_skipped_lost_record() {
    let coordinator = Arc::new(InProcessCoordinator::new());
    let t = ts("2024-05-17T10:01:00Z");
    let (key, claimed) = claim_b(&coordinator, t, "test").await;
    assert!(matches!(claimed, ClaimOutcome::Won { .. }));

    let runs = Runs::default();
    let mut h = coordinated("2024-05-17T10:01:02Z", &coordinator);
    let never_started = RunRecord {
        job: "b".into(),
        outcome: Outcome::SkippedLost,
        error: Some("its command never started: its claim is taken over".into()),
        ..left_running(t, "test")
    };
    h.ledger.append(&never_started).await.unwrap();
    chain_of_three(&h, &runs, false);
    h.start().await;
    h.advance_to(ts("2024-05-17T10:01:10Z")).await;
    h.stop().await;
    assert_eq!(runs_of(&runs, "b"), [(t, key.clone())]);
    assert_eq!(runs_of(&runs, "c"), [(t, "c:2024-05-17T10:01:00Z".to_owned())]);
    assert_eq!(h.triggers("b", Outcome::Succeeded), [t]);
}

/// Adding the job that closes a cycle is refused, naming every job in it; so are a
/// `run_after` beside another schedule, a placed one, and one after itself.
#[test]
fn a_cycle_and_a_second_schedule_are_refused_naming_the_jobs() {
    let scheduler = Scheduler::builder().build();
    let runs = Runs::default();
    scheduler.add(noting(Job::builder("a").run_after("c"), &runs, false)).unwrap();
    scheduler.add(noting(Job::builder("b").run_after("a"), &runs, false)).unwrap();
    let error = scheduler.add(noting(Job::builder("c").run_after("b"), &runs, false)).unwrap_err();
    assert_eq!(
        error.to_string(),
        r#"job "c": run_after: a cycle of jobs that run after each other: c → b → a → c"#
    );
    let ok = |_: JobContext| async { Ok::<_, std::io::Error>(()) };
    let both = Job::builder("d").every(MINUTE).run_after("a").handler(ok).build().unwrap_err();
    assert_eq!(
        both.to_string(),
        r#"job "d": run_after: cannot be combined with another schedule (every, cron, at or after): a job has exactly one schedule"#
    );
    let placed = Job::builder("f").run_after("a").on(["gpu"]).handler(ok).build().unwrap_err();
    assert_eq!(
        placed.to_string(),
        r#"job "f": run_after: cannot be combined with on: the replica that ran the parent's trigger runs it"#
    );
    let own = Job::builder("e").run_after("e").handler(ok).build().unwrap_err();
    assert_eq!(own.to_string(), r#"job "e": run_after: a job cannot run after itself (a cycle: e → e)"#);
}

/// Each setting a chained job cannot have is a problem of its own, all listed by
/// `chain_problems`; `build` refuses the job with the first.
#[test]
fn every_setting_a_chained_job_cannot_have_is_a_problem_of_its_own() {
    let ok = |_: JobContext| async { Ok::<_, std::io::Error>(()) };
    let chained = || {
        Job::builder("g")
            .run_after("a")
            .start_at(ts("2027-01-01T00:00:00Z"))
            .jitter(Duration::from_secs(5))
            .on(["gpu"])
            .on_every_replica(true)
            .handler(ok)
    };
    let problems: Vec<String> = chained().chain_problems().iter().map(ToString::to_string).collect();
    assert_eq!(
        problems,
        [
            r#"job "g": run_after: cannot be combined with start: the parent's triggers are the job's"#,
            r#"job "g": run_after: cannot be combined with jitter: its trigger fires as its parent's run ends"#,
            r#"job "g": run_after: cannot be combined with on: the replica that ran the parent's trigger runs it"#,
            r#"job "g": run_after: cannot be combined with on_every_replica: the replica that ran the parent's trigger fires it"#,
        ]
    );
    assert_eq!(chained().build().unwrap_err().to_string(), problems[0]);
    assert!(Job::builder("h").run_after("a").handler(ok).chain_problems().is_empty());
    assert!(Job::builder("i").every(MINUTE).handler(ok).chain_problems().is_empty());
}

/// A `running` record of `a`'s trigger at `at` left by `instance`.
fn left_running(at: Timestamp, instance: &str) -> RunRecord {
    RunRecord {
        job: "a".into(),
        trigger: at,
        instance: instance.into(),
        cause: Cause::Scheduled,
        attempts: 1,
        outcome: Outcome::Running,
        fencing_token: Some(1),
        started: at,
        duration: Duration::ZERO,
        error: None,
        process: None,
    }
}

/// The stale sweep at a restart finds `a`'s run of this instance's previous incarnation
/// (gone for good) and records it `interrupted`: `b`'s trigger is recorded
/// `skipped-parent`, naming it. A run of another member, presumed interrupted (it may
/// still end, if that member was only cut off), decides nothing for `b`.
#[tokio::test(start_paused = true)]
async fn a_parent_interrupted_by_its_own_daemons_crash_records_skipped_parent_and_a_presumed_one_waits() {
    let runs = Runs::default();
    let coordinator = Arc::new(InProcessCoordinator::new());
    let mut h = coordinated("2024-05-17T10:05:00Z", &coordinator);
    h.add(noting(Job::builder("a").every(MINUTE), &runs, false));
    h.add(noting(Job::builder("b").run_after("a"), &runs, false));
    let (own, other) = (ts("2024-05-17T10:01:00Z"), ts("2024-05-17T10:02:00Z"));
    h.ledger.append(&left_running(own, "test")).await.unwrap();
    h.ledger.append(&left_running(other, "cut-off")).await.unwrap();
    let gone = |_: &RunRecord| Some("its daemon is gone".to_owned());
    let stale = h.scheduler.sweep_stale(gone, async |_: &RunRecord| Leftover::Unknown).await.unwrap();
    assert_eq!(stale.len(), 2);
    // Written by the ledger's writer, which runs with the scheduler.
    h.start().await;
    h.stop().await;
    let b = h.history("b").await;
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!((b[0].trigger, b[0].outcome), (own, Outcome::SkippedParent), "{b:?}");
    assert_eq!(b[0].error.as_deref(), Some("its parent a's run of this trigger ended interrupted"));
    assert!(runs.lock().unwrap().is_empty());
}

/// A manual run of `a` that succeeds runs `b` as a manual run too, at the manual run's
/// instant, under `b`'s own manual key (never a scheduled trigger's).
#[tokio::test(start_paused = true)]
async fn a_manual_run_of_the_parent_runs_the_child_manually_under_its_own_key() {
    let runs = Runs::default();
    let mut h = a_then_b_started(&runs).await;
    let asked = h.scheduler.trigger_now("a", None).await.unwrap();
    h.advance(Duration::from_secs(1)).await;
    h.stop().await;
    let key = format!("b:manual:{}", asked.trigger);
    assert_eq!(runs_of(&runs, "b"), [(asked.trigger, key)]);
    let b = h.records("b");
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!((b[0].outcome, b[0].cause), (Outcome::Succeeded, Cause::Manual), "{b:?}");
}

/// `a` succeeds while its scheduler stops: `b` does not start there; its trigger is claimed
/// and left unstarted, and the next start of the same instance takes it over and runs it.
#[tokio::test(start_paused = true)]
async fn a_parent_that_succeeds_while_its_scheduler_stops_leaves_the_child_to_the_next_start() {
    let (runs, release) = (Runs::default(), Arc::new(tokio::sync::Notify::new()));
    let coordinator = Arc::new(InProcessCoordinator::new());
    let mut first = coordinated("2024-05-17T10:00:30Z", &coordinator);
    let gated = slotcron_testkit::harness::gated(&release);
    first.add(Job::builder("a").every(MINUTE).handler(gated).build().unwrap());
    first.add(noting(Job::builder("b").run_after("a"), &runs, false));
    first.start().await;
    first.advance_to(ts("2024-05-17T10:01:00Z")).await;
    first.cancel.cancel();
    slotcron_testkit::harness::settle().await;
    release.notify_one();
    first.stop().await;
    let t = ts("2024-05-17T10:01:00Z");
    assert_eq!(first.triggers("a", Outcome::Succeeded), [t]);
    assert!(runs_of(&runs, "b").is_empty(), "not started while stopping");
    let unstarted = coordinator.unstarted("test", &["b"]).await.unwrap();
    assert_eq!(unstarted.len(), 1, "{unstarted:?}");

    let mut second = coordinated("2024-05-17T10:01:20Z", &coordinator);
    second.add(noting(Job::builder("a").every(MINUTE), &runs, false));
    second.add(noting(Job::builder("b").run_after("a"), &runs, false));
    second.start().await;
    second.advance_to(ts("2024-05-17T10:01:30Z")).await;
    second.stop().await;
    assert_eq!(runs_of(&runs, "b"), [(t, "b:2024-05-17T10:01:00Z".to_owned())]);
    let b = second.records("b");
    assert_eq!((b.len(), b[0].outcome, b[0].cause), (1, Outcome::Succeeded, Cause::TakenOver), "{b:?}");
}

/// A harness like [`coordinated`] on `ledger`: the same state as a scheduler before it,
/// as a daemon started again finds it.
fn restarted(
    start: &str,
    coordinator: &Arc<InProcessCoordinator>,
    ledger: &Arc<slotcron::MemoryLedger>,
) -> Harness {
    let mut h = Harness::with(start, |b| {
        b.coordinator(coordinator.clone()).check_clock_skew(false).ledger(ledger.clone())
    });
    h.ledger = ledger.clone();
    h
}

/// Claims `b`'s trigger at `t` (a child of `a`, keyed by `a`'s trigger) as `instance`
/// would: its key and the coordinator's answer.
async fn claim_b(coordinator: &InProcessCoordinator, t: Timestamp, instance: &str) -> (String, ClaimOutcome) {
    let key = slotcron::trigger_key("b", slotcron::ScheduleKind::Chained, t);
    let hold = Some(Hold { slot: Duration::ZERO, run_budget: None, slack: Duration::from_secs(5) });
    let claim = Claim { job: "b", trigger: t, key: &key, instance, hold };
    let claimed = coordinator.claim(&claim).await.unwrap();
    (key, claimed)
}

/// `a` every minute, `b` after it and `c` after `b`, each noting its runs in `runs`
/// (`a` failing if `fail`).
fn chain_of_three(h: &Harness, runs: &Runs, fail: bool) {
    h.add(noting(Job::builder("a").every(MINUTE), runs, fail));
    h.add(noting(Job::builder("b").run_after("a"), runs, false));
    h.add(noting(Job::builder("c").run_after("b"), runs, false));
}

/// What a daemon started again does before it runs: its stale sweep (its own previous
/// incarnation's runs) and the children of runs presumed interrupted.
async fn sweep_at_start(h: &Harness) {
    let gone = |r: &RunRecord| (&*r.instance == "test").then(|| "its daemon restarted".to_owned());
    h.scheduler.sweep_stale(gone, async |_: &RunRecord| Leftover::Unknown).await.unwrap();
    h.scheduler.skip_after_presumed(slotcron::PresumedSweep::AtStart).await.unwrap();
}

/// A failing `a`: the skips of `b` and `c` are written with `a`'s end, and then their
/// triggers are claimed and settled — never left unstarted for a takeover, never claimed
/// again. A daemon started again on that state (killed at any point after the records)
/// records and runs nothing more.
#[tokio::test(start_paused = true)]
async fn a_failed_parents_skips_are_recorded_with_its_end_then_claimed_settled_and_never_decided_again() {
    let runs = Runs::default();
    let coordinator = Arc::new(InProcessCoordinator::new());
    let mut h = coordinated("2024-05-17T10:00:30Z", &coordinator);
    chain_of_three(&h, &runs, true);
    h.start().await;
    h.advance_to(ts("2024-05-17T10:01:05Z")).await;
    h.stop().await;
    let t = ts("2024-05-17T10:01:00Z");
    let unstarted = coordinator.unstarted("test", &["b", "c"]).await.unwrap();
    assert!(unstarted.is_empty(), "settled, not left for a takeover: {unstarted:?}");
    let (_, claimed) = claim_b(&coordinator, t, "other").await;
    assert_eq!(claimed, ClaimOutcome::Lost, "claimed once");

    let mut again = restarted("2024-05-17T10:01:06Z", &coordinator, &h.ledger);
    chain_of_three(&again, &runs, true);
    sweep_at_start(&again).await;
    again.start().await;
    again.advance_to(ts("2024-05-17T10:01:30Z")).await;
    again.stop().await;
    for job in ["b", "c"] {
        let records = again.records(job);
        assert_eq!(records.len(), 1, "{job}: {records:?}");
        assert_eq!((records[0].trigger, records[0].outcome), (t, Outcome::SkippedParent), "{records:?}");
    }
    assert_eq!(runs_of(&runs, "a").len(), 1);
    assert!(runs_of(&runs, "b").is_empty() && runs_of(&runs, "c").is_empty());
}

/// A daemon killed after `a` failed and before `a`'s end (with its children's skips)
/// reached the ledger: `a` is still `running`. Its next incarnation records it
/// interrupted and `b` and `c` `skipped-parent` once; a second restart adds nothing.
#[tokio::test(start_paused = true)]
async fn a_parent_left_running_by_a_kill_decides_its_children_once_at_the_restarts() {
    let runs = Runs::default();
    let coordinator = Arc::new(InProcessCoordinator::new());
    let t = ts("2024-05-17T10:01:00Z");
    let ledger = Arc::new(slotcron::MemoryLedger::new(1_000));
    ledger.append(&left_running(t, "test")).await.unwrap();
    for start in ["2024-05-17T10:01:10Z", "2024-05-17T10:01:20Z"] {
        let mut h = restarted(start, &coordinator, &ledger);
        chain_of_three(&h, &runs, false);
        sweep_at_start(&h).await;
        h.start().await;
        h.advance(Duration::from_secs(1)).await;
        h.stop().await;
    }
    let h = restarted("2024-05-17T10:01:30Z", &coordinator, &ledger);
    let (b, c) = (h.records("b"), h.records("c"));
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!(b[0].error.as_deref(), Some("its parent a's run of this trigger ended interrupted"));
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(
        c[0].error.as_deref(),
        Some(
            "its parent b's run of this trigger ended skipped-parent; the chain stopped at a's run, which ended interrupted"
        )
    );
    assert!(runs.lock().unwrap().is_empty());
}

/// A daemon killed after `a` succeeded and `b`'s trigger was claimed, before `a`'s end
/// reached the ledger: the restart records `a` interrupted, and `b`'s claim, made by the
/// previous incarnation, is taken over and run — not recorded `skipped-lost` or
/// `skipped-parent` besides.
#[tokio::test(start_paused = true)]
async fn a_childs_claim_left_by_the_previous_incarnation_is_run_not_skipped_at_the_restart() {
    let runs = Runs::default();
    let coordinator = Arc::new(InProcessCoordinator::new());
    let t = ts("2024-05-17T10:01:00Z");
    let (key, claimed) = claim_b(&coordinator, t, "test").await;
    assert!(matches!(claimed, ClaimOutcome::Won { .. }));
    let ledger = Arc::new(slotcron::MemoryLedger::new(1_000));
    ledger.append(&left_running(t, "test")).await.unwrap();
    let mut h = restarted("2024-05-17T10:01:02Z", &coordinator, &ledger);
    chain_of_three(&h, &runs, false);
    sweep_at_start(&h).await;
    h.start().await;
    h.advance_to(ts("2024-05-17T10:01:10Z")).await;
    h.stop().await;
    let b = h.records("b");
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!((b[0].outcome, b[0].cause), (Outcome::Succeeded, Cause::TakenOver), "{b:?}");
    assert_eq!(runs_of(&runs, "b"), [(t, key)]);
}

/// `a`'s run by `cut-off`, a member that left the membership, was presumed interrupted by
/// this member's sweep: its children wait while it may still come back; once it has been
/// out of the membership for `PRESUMED_PARENT_WAIT`, this member records `b` and `c`
/// `skipped-parent`, once, saying why; the claim of `b`'s trigger, settled, refuses a
/// late real end of `a` on `cut-off`.
#[tokio::test(start_paused = true)]
async fn a_parent_presumed_interrupted_whose_daemon_never_returns_is_decided_after_the_wait_once() {
    let runs = Runs::default();
    let coordinator = Arc::new(InProcessCoordinator::new());
    let ttl = Duration::from_secs(9);
    let mut h = Harness::with("2024-05-17T10:01:30Z", |b| {
        b.coordinator(coordinator.clone()).check_clock_skew(false).membership_ttl(ttl)
    });
    // Every minute: newer triggers of `b` run during the wait, so its high-water mark
    // refuses the late claim; the trigger is decided all the same, and so is `c`'s.
    chain_of_three(&h, &runs, false);
    let t = ts("2024-05-17T10:01:00Z");
    h.ledger.append(&left_running(t, "cut-off")).await.unwrap();
    h.start().await;
    h.advance(ttl).await;
    let members = h.scheduler.vouched_members().expect("vouched for after a full TTL");
    let gone = |r: &RunRecord| (!members.iter().any(|m| **m == *r.instance)).then(|| "it left".to_owned());
    h.scheduler.sweep_stale(gone, async |_: &RunRecord| Leftover::Unknown).await.unwrap();
    let periodic = slotcron::PresumedSweep::Periodic;
    assert_eq!(h.scheduler.skip_after_presumed(periodic).await.unwrap(), 0, "the wait starts");
    h.advance(slotcron::PRESUMED_PARENT_WAIT - Duration::from_secs(1)).await;
    assert_eq!(h.scheduler.skip_after_presumed(periodic).await.unwrap(), 0, "still waiting");
    h.advance(Duration::from_secs(1)).await;
    assert_eq!(h.scheduler.skip_after_presumed(periodic).await.unwrap(), 2, "b and c");
    assert_eq!(h.scheduler.skip_after_presumed(periodic).await.unwrap(), 0, "once");
    h.stop().await;
    let at_t = |job: &str| h.records(job).into_iter().filter(|r| r.trigger == t).collect::<Vec<_>>();
    let b = at_t("b");
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!((b[0].trigger, b[0].outcome, &*b[0].instance), (t, Outcome::SkippedParent, "test"));
    let reason = b[0].error.as_deref().unwrap();
    assert!(
        reason.starts_with(
            "its parent a's run of this trigger ended interrupted; its daemon, instance cut-off"
        ),
        "{reason}"
    );
    let c = at_t("c");
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].outcome, Outcome::SkippedParent);
    let (_, claimed) = claim_b(&coordinator, t, "cut-off").await;
    assert!(!matches!(claimed, ClaimOutcome::Won { .. }), "a late end fires nothing");
    assert!(runs.lock().unwrap().iter().all(|(job, trigger, _)| job == "a" || *trigger != t));
}

/// A backfill of a chained job is refused, naming its parent: its triggers are the
/// parent's runs' ends, and backfilling the parent fills them.
#[tokio::test(start_paused = true)]
async fn a_backfill_of_a_chained_job_is_refused_naming_the_parent_to_backfill() {
    let runs = Runs::default();
    let mut h = a_then_b_started(&runs).await;
    let refused = h.scheduler.backfill("b", ts("2024-05-17T09:00:00Z"), ts("2024-05-17T10:00:00Z")).await;
    let expected = ControlError::ChainedJob { job: "b".into(), parent: "a".into() };
    assert_eq!(refused.unwrap_err(), expected);
    assert!(
        expected.to_string().contains(r#"backfill "a": each of its backfilled runs that succeeds runs "b""#)
    );
    h.stop().await;
}
