//! Claims won and never started (the holder died between its claim and its start mark)
//! are taken over: by the holder's next incarnation at its start, or by a live member
//! once the holder has left the membership; a started claim is never run again.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use slotcron::{
    Cause, Claim, ClaimOutcome, Coordinator, Hold, InProcessCoordinator, Job, JobContext, Outcome, RunRecord,
    StartMark,
};
use slotcron_testkit::harness::{Harness, ok, ts};
use slotcron_testkit::{Link, LinkState};

/// A job every minute whose runs count themselves and see their fencing token.
fn counted(runs: &Arc<AtomicU32>, tokens: &Arc<std::sync::Mutex<Vec<u64>>>) -> Job {
    let (runs, tokens) = (runs.clone(), tokens.clone());
    Job::builder("report")
        .every(Duration::from_secs(60))
        .handler(move |ctx: JobContext| {
            runs.fetch_add(1, Ordering::SeqCst);
            tokens.lock().unwrap().push(ctx.fencing_token());
            async { Ok::<(), std::io::Error>(()) }
        })
        .build()
        .unwrap()
}

/// Claims `report`'s trigger at `at` for `instance`, as a replica that then died would
/// have: its fencing token.
async fn claimed_by(coordinator: &InProcessCoordinator, instance: &str, at: &str) -> u64 {
    let trigger = ts(at);
    let key = slotcron::trigger_key("report", slotcron::ScheduleKind::Recurring, trigger);
    let hold = Some(Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::from_secs(5) });
    let claim = Claim { job: "report", trigger, key: &key, instance, hold };
    match coordinator.claim(&claim).await.unwrap() {
        ClaimOutcome::Won { fencing_token } => fencing_token,
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_restarted_instance_runs_the_claims_its_previous_incarnation_won_and_never_started() {
    let coordinator = Arc::new(InProcessCoordinator::new());
    // A claim whose run had started (marked) before the crash: not run again.
    claimed_by(&coordinator, "test", "2024-05-17T00:00:00Z").await;
    let token = claimed_by(&coordinator, "test", "2024-05-17T00:01:00Z").await;
    let started =
        slotcron::trigger_key("report", slotcron::ScheduleKind::Recurring, ts("2024-05-17T00:00:00Z"));
    coordinator.mark_starts("test", &[StartMark { job: "report", key: &started }]).await.unwrap();

    let (runs, tokens) = (Arc::new(AtomicU32::new(0)), Arc::default());
    let mut h = Harness::with("2024-05-17T00:01:03Z", |b| b.coordinator(coordinator.clone()));
    h.add(counted(&runs, &tokens));
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:10Z")).await;
    h.stop().await;
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the unstarted claim ran once, the started one not again");
    assert_eq!(*tokens.lock().unwrap(), [token], "under the claim it took over");
    let records = h.records("report");
    assert_eq!(records.len(), 1, "{records:?}");
    let record = &records[0];
    assert_eq!(
        (record.trigger, record.outcome, record.cause),
        (ts("2024-05-17T00:01:00Z"), Outcome::Succeeded, Cause::TakenOver)
    );
    assert!(
        record.error.as_deref().unwrap_or_default().contains("previous incarnation of test"),
        "{record:?}"
    );
    assert!(coordinator.unstarted("test", &["report"]).await.unwrap().is_empty(), "marked once run");
}

/// What a live member did with the claim of `report`'s 00:01:00 trigger that `gone` won
/// and never started, `gone` leaving the membership at `leave_at`.
struct LeftClaim {
    /// The live member's runs just before the leave.
    runs_before: u32,
    /// Its runs at 00:01:30, and the fencing tokens they ran with.
    runs: u32,
    tokens: Vec<u64>,
    /// The gone holder's token.
    token: u64,
    /// The trigger's record at the live member.
    record: RunRecord,
}

/// A live member started at 00:01:01 (membership TTL 9 s), `gone` a member that won the
/// 00:01:00 trigger and leaves at `leave_at`: see [`LeftClaim`].
async fn left_at(gone: &str, leave_at: &str) -> LeftClaim {
    let coordinator = Arc::new(InProcessCoordinator::new());
    coordinator.heartbeat(gone, Duration::from_secs(3600)).await.unwrap();
    let token = claimed_by(&coordinator, gone, "2024-05-17T00:01:00Z").await;
    let (runs, tokens) = (Arc::new(AtomicU32::new(0)), Arc::default());
    let ttl = Duration::from_secs(9);
    let mut h =
        Harness::with("2024-05-17T00:01:01Z", |b| b.coordinator(coordinator.clone()).membership_ttl(ttl));
    h.add(counted(&runs, &tokens));
    h.start().await;
    h.advance_to(ts(leave_at)).await;
    let runs_before = runs.load(Ordering::SeqCst);
    coordinator.leave(gone).await.unwrap();
    h.advance_to(ts("2024-05-17T00:01:30Z")).await;
    h.stop().await;
    let record = h.records("report").into_iter().find(|r| r.trigger == ts("2024-05-17T00:01:00Z")).unwrap();
    let tokens = tokens.lock().unwrap().clone();
    LeftClaim { runs_before, runs: runs.load(Ordering::SeqCst), tokens, token, record }
}

#[tokio::test(start_paused = true)]
async fn a_live_member_runs_the_unstarted_claims_of_one_that_left_the_membership_with_a_higher_token() {
    let LeftClaim { runs_before, runs, tokens, token, record } =
        left_at("dead", "2024-05-17T00:01:12Z").await;
    assert_eq!(runs_before, 0, "not while its holder is a member");
    assert_eq!(runs, 1, "taken over once its holder left");
    assert!(tokens[0] > token, "a higher fencing token than the dead holder's: {tokens:?} after {token}");
    assert_eq!((record.outcome, record.cause), (Outcome::Succeeded, Cause::TakenOver), "{record:?}");
    assert!(record.error.as_deref().unwrap_or_default().contains("dead, which left"), "{record:?}");
}

#[tokio::test(start_paused = true)]
async fn a_member_that_left_before_this_ones_first_full_ttl_connected_still_has_its_claims_taken_over() {
    // Seen once, then gone before this replica has watched the membership a full TTL.
    let LeftClaim { runs, tokens, token, record, .. } = left_at("early", "2024-05-17T00:01:02Z").await;
    assert_eq!(runs, 1, "taken over once its holder was seen gone");
    assert!(tokens[0] > token, "a higher fencing token than the gone holder's: {tokens:?} after {token}");
    assert_eq!((record.outcome, record.cause), (Outcome::Succeeded, Cause::TakenOver), "{record:?}");
}

/// The only member carrying the labels a job is placed on won a claim and left before
/// starting it: no live member can run it, so the job's recorder takes the claim over and
/// records it `skipped-no-member` (cause `taken-over`), rather than leaving it to no one.
#[tokio::test(start_paused = true)]
async fn the_unstarted_claim_of_a_placed_jobs_only_carrier_that_left_is_recorded_skipped_no_member() {
    let coordinator = Arc::new(InProcessCoordinator::new());
    coordinator.heartbeat("gpu-box", Duration::from_secs(3600)).await.unwrap();
    let details = slotcron::MemberDetails { labels: vec!["gpu".to_owned()], ..Default::default() };
    coordinator.publish_details("gpu-box", &details).await.unwrap();
    claimed_by(&coordinator, "gpu-box", "2024-05-17T00:01:00Z").await;

    let runs = Arc::new(AtomicU32::new(0));
    let counter = runs.clone();
    let job = Job::builder("report")
        .every(Duration::from_secs(60))
        .on(["gpu"])
        .handler(move |_: JobContext| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Ok::<(), std::io::Error>(()) }
        })
        .build()
        .unwrap();
    let ttl = Duration::from_secs(9);
    let mut h =
        Harness::with("2024-05-17T00:01:01Z", |b| b.coordinator(coordinator.clone()).membership_ttl(ttl));
    h.add(job);
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:12Z")).await;
    assert!(h.records("report").is_empty(), "not while its holder is a member");
    coordinator.leave("gpu-box").await.unwrap();
    h.advance_to(ts("2024-05-17T00:01:30Z")).await;
    h.stop().await;
    let record = h.records("report").into_iter().find(|r| r.trigger == ts("2024-05-17T00:01:00Z")).unwrap();
    assert_eq!((record.outcome, record.cause), (Outcome::SkippedNoMember, Cause::TakenOver), "{record:?}");
    let reason = record.error.as_deref().unwrap_or_default();
    assert!(reason.contains("gpu-box") && reason.contains("no live member carries the labels"), "{reason}");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing ran");
}

/// At its start a replica claims nothing before its first heartbeat has answered: until
/// then it knows no other member and would claim every trigger as if it were alone
/// (replicas started together would each claim every one). Its heartbeat is held past a
/// trigger instant: nothing is claimed; once it answers, each trigger of that instant
/// runs once.
#[tokio::test(start_paused = true)]
async fn a_replica_claims_nothing_before_its_first_heartbeat_has_answered() {
    let coordinator = Arc::new(InProcessCoordinator::new());
    coordinator.heartbeat("replica-x", Duration::from_secs(600)).await.unwrap();
    let link = Arc::new(Link::new(coordinator.clone()));
    link.set(LinkState::HeartbeatsHeld);
    let mut h = Harness::with("2024-05-17T00:00:59.600Z", |b| {
        b.coordinator(link.clone()).instance("replica-a").check_clock_skew(false)
    });
    let names: Vec<String> = (0..12).map(|i| format!("job-{i}")).collect();
    for name in &names {
        h.add(Job::builder(name).every(Duration::from_secs(60)).handler(ok).build().unwrap());
    }
    h.start().await;
    // Past the instant, within the claim timeout (1 s) that bounds the heartbeat.
    h.advance_to(ts("2024-05-17T00:01:00.300Z")).await;
    assert_eq!(link.claimed(), [], "claims sent before the first heartbeat answered");
    link.set(LinkState::Up);
    h.advance_to(ts("2024-05-17T00:01:02Z")).await;
    h.stop().await;
    for name in &names {
        assert_eq!(h.triggers(name, Outcome::Succeeded), [ts("2024-05-17T00:01:00Z")], "{name}");
    }
}
