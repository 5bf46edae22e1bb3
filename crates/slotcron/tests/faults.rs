//! Issue 8's fault trial in library form, on manual clocks: whole fleets of schedulers
//! sharing one [`InProcessCoordinator`] whose clock is the fleet's time (the
//! "coordinator's clock"), counting every record.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use slotcron::jiff::{SignedDuration, Timestamp};
use slotcron::{
    Claim, ClaimOutcome, Coordinator, CoordinatorError, InProcessCoordinator, Job, JobContext, JobState,
    ManualClock, MemoryStore, Misfire, Outcome, RunRecord, Store,
};
use slotcron_testkit::harness::Harness;
use slotcron_testkit::{Delivery, Fleet};

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

async fn ok(_ctx: JobContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn every_second() -> Vec<Job> {
    vec![Job::builder("tick").every(Duration::from_secs(1)).handler(ok).build().unwrap()]
}

/// A fleet checking clock skew, and a coordinator on the clock of a replica that never
/// runs (its clock follows the fleet's time exactly).
fn fleet(start: Timestamp) -> (Fleet, Arc<dyn Coordinator>) {
    let mut fleet = Fleet::new(start).with_clock_skew_check(true);
    let clock = fleet.add_replica("coordinator-clock", SignedDuration::ZERO, every_second());
    let coordinator = InProcessCoordinator::with_clock(fleet.replica(clock).clock().clone());
    (fleet, Arc::new(coordinator))
}

/// A store in which `tick` last handled the trigger `at` (a replica coming back after
/// downtime).
async fn store_last_handled(at: &str) -> Arc<MemoryStore> {
    let store = Arc::new(MemoryStore::new());
    let state = JobState::of(ts(at), None, false);
    store.save_state("tick", &state).await.unwrap();
    store
}

/// The successes per trigger across the fleet.
fn successes(records: &[RunRecord]) -> BTreeMap<Timestamp, usize> {
    let mut by_trigger = BTreeMap::new();
    for record in records.iter().filter(|r| r.outcome == Outcome::Succeeded) {
        *by_trigger.entry(record.trigger).or_default() += 1;
    }
    by_trigger
}

/// Failure 2: a replica 6.5 s ahead (beyond the default 5 s slack) records every
/// trigger it sees as `skipped-clock-skew`, with its offset, and runs none; the replica
/// on time runs every trigger once.
#[tokio::test]
async fn a_replica_skewed_beyond_the_slack_skips_every_trigger_and_nothing_runs_twice() {
    let start = ts("2024-05-17T00:00:00Z");
    let (mut fleet, coordinator) = fleet(start);
    let on_time = fleet.add_replica("on-time", SignedDuration::ZERO, every_second());
    let ahead = fleet.add_replica("ahead", SignedDuration::from_millis(6_500), every_second());
    fleet.start(on_time, coordinator.clone()).await;
    fleet.start(ahead, coordinator).await;
    fleet.advance(Duration::from_secs(45), Delivery::Together).await;
    fleet.stop_all().await;

    let skewed = fleet.replica(ahead).records();
    assert!(skewed.len() >= 40, "the skewed replica saw {} triggers", skewed.len());
    for record in &skewed {
        assert_eq!(record.outcome, Outcome::SkippedClockSkew, "{record:?}");
        let reason = record.error.as_deref().unwrap_or_default();
        assert!(reason.contains("+6.500s"), "the offset is recorded: {reason}");
    }
    let runs = successes(&fleet.records());
    let expected: Vec<Timestamp> = (1..=45).map(|s| start + SignedDuration::from_secs(s)).collect();
    assert_eq!(runs.keys().copied().collect::<Vec<_>>(), expected, "every trigger ran");
    assert!(runs.values().all(|n| *n == 1), "nothing ran twice: {runs:?}");
}

/// Replicas 2 s ahead and 2 s behind (within the slack): every trigger runs exactly once.
#[tokio::test]
async fn replicas_skewed_within_the_slack_run_every_trigger_once() {
    let start = ts("2024-05-17T00:00:00Z");
    let (mut fleet, coordinator) = fleet(start);
    let ahead = fleet.add_replica("ahead", SignedDuration::from_secs(2), every_second());
    let behind = fleet.add_replica("behind", SignedDuration::from_secs(-2), every_second());
    fleet.start(ahead, coordinator.clone()).await;
    fleet.start(behind, coordinator).await;
    fleet.advance(Duration::from_secs(45), Delivery::Together).await;
    fleet.stop_all().await;

    let records = fleet.records();
    assert!(records.iter().all(|r| r.outcome != Outcome::SkippedClockSkew), "within the slack");
    let runs = successes(&records);
    // The one 2 s behind saw 23:59:58 and 23:59:59 first; the one ahead, 00:00:47.
    let expected: Vec<Timestamp> = (-1..=47).map(|s| start + SignedDuration::from_secs(s)).collect();
    assert_eq!(runs.keys().copied().collect::<Vec<_>>(), expected, "no gaps");
    assert!(runs.values().all(|n| *n == 1), "nothing ran twice: {runs:?}");
}

/// The takeover delay of the shared-work fleets here.
const TAKEOVER_DELAY: Duration = Duration::from_millis(300);

/// Twelve jobs every second: with two members, each owns some (rendezvous hashing).
fn twelve_jobs() -> Vec<Job> {
    let job = |i| Job::builder(format!("job-{i}")).every(Duration::from_secs(1)).handler(ok).build().unwrap();
    (0..12).map(job).collect()
}

/// A shared-work fleet of a replica on time and one `skew` ahead, checking clock skew
/// against a coordinator on the fleet's clock, run for `skew` + 20 s: its records of the
/// triggers of fourteen seconds before the last (the replica ahead saw all of them, and
/// everything that would be taken over was), and who owns each job.
async fn owners_and_one_ahead(skew: SignedDuration) -> (Vec<RunRecord>, impl Fn(&str) -> String) {
    let start = ts("2024-05-17T00:00:00Z");
    let mut fleet = Fleet::new(start).with_clock_skew_check(true).with_shared_work(TAKEOVER_DELAY);
    let clock = fleet.add_replica("coordinator-clock", SignedDuration::ZERO, every_second());
    let coordinator: Arc<dyn Coordinator> =
        Arc::new(InProcessCoordinator::with_clock(fleet.replica(clock).clock().clone()));
    let on_time = fleet.add_replica("on-time", SignedDuration::ZERO, twelve_jobs());
    let ahead = fleet.add_replica("ahead", skew, twelve_jobs());
    fleet.start(on_time, coordinator.clone()).await;
    fleet.start(ahead, coordinator).await;
    let end = start + skew + SignedDuration::from_secs(20);
    fleet.advance_to(end, Delivery::Together).await;
    fleet.stop_all().await;
    let first = end - SignedDuration::from_secs(15);
    let seconds = first..(end - SignedDuration::from_secs(1));
    let records = fleet.records().into_iter().filter(|r| seconds.contains(&r.trigger)).collect();
    let owner = |job: &str| slotcron::job_owner(job, &["on-time", "ahead"]).expect("an owner").to_owned();
    (records, owner)
}

/// Each of the twelve jobs' triggers of the fourteen seconds succeeded exactly once.
fn assert_each_ran_once(records: &[RunRecord]) {
    let mut runs: BTreeMap<(&str, Timestamp), usize> = BTreeMap::new();
    for run in records.iter().filter(|r| r.outcome == Outcome::Succeeded) {
        *runs.entry((&run.job, run.trigger)).or_default() += 1;
    }
    assert_eq!(runs.len(), 14 * 12, "every trigger of the fourteen seconds ran: {runs:?}");
    assert!(runs.values().all(|n| *n == 1), "nothing ran twice: {runs:?}");
}

/// Fresh-eyes bug: a replica 3 s ahead of the coordinator's clock (within the slack) took
/// over its peers' triggers at its own takeover delay, ~2.7 s before their instant. It
/// now looks the takeover delay after the instant on the coordinator's clock, so every
/// trigger runs once, on its owner, and none is taken over.
#[tokio::test]
async fn a_replica_ahead_within_the_slack_takes_over_no_trigger_before_its_instant() {
    let (records, owner) = owners_and_one_ahead(SignedDuration::from_secs(3)).await;
    assert_each_ran_once(&records);
    for run in records.iter().filter(|r| r.outcome == Outcome::Succeeded) {
        assert_eq!(&*run.instance, owner(&run.job).as_str(), "run by its owner: {run:?}");
    }
}

/// Fresh-eyes bug: a replica 30 s ahead (beyond the slack) looked at its peer's claims 30
/// s early, voided its starts and recorded its triggers `skipped-clock-skew`. It now looks
/// at the same time as a replica on time, and voids nothing: it records only its own
/// triggers, `skipped-clock-skew`, and the replica on time runs every trigger once, its
/// own and (taken over) the skewed one's.
#[tokio::test]
async fn a_replica_ahead_beyond_the_slack_records_only_its_own_triggers_skipped() {
    let (records, owner) = owners_and_one_ahead(SignedDuration::from_secs(30)).await;
    assert_each_ran_once(&records);
    let skewed: Vec<&RunRecord> = records.iter().filter(|r| &*r.instance == "ahead").collect();
    assert!(!skewed.is_empty(), "the skewed replica owns some jobs and records their triggers");
    for record in skewed {
        assert_eq!(record.outcome, Outcome::SkippedClockSkew, "{record:?}");
        assert_eq!(owner(&record.job), "ahead", "only its own triggers: {record:?}");
    }
    let mut runs = records.iter().filter(|r| r.outcome == Outcome::Succeeded);
    assert!(runs.all(|r| &*r.instance == "on-time"), "every run on the replica on time");
}

/// Answers each claim after a delay that shrinks with every claim (the first waits
/// longest), as a busy network may, and hands out fencing tokens as it answers.
#[derive(Default)]
struct Slowing {
    claims: AtomicU64,
    tokens: AtomicU64,
}

#[async_trait]
impl Coordinator for Slowing {
    async fn claim(&self, _claim: &Claim<'_>) -> Result<ClaimOutcome, CoordinatorError> {
        let k = self.claims.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(100u64.saturating_sub(k * 10))).await;
        Ok(ClaimOutcome::Won { fencing_token: self.tokens.fetch_add(1, Ordering::SeqCst) + 1 })
    }

    fn name(&self) -> &'static str {
        "slowing"
    }
}

/// Failure 6: a replica catching up nine triggers after downtime (`run_all`) claims them,
/// gets their fencing tokens and starts them in trigger order, even when the coordinator
/// answers later claims sooner.
#[tokio::test(start_paused = true)]
async fn a_catch_up_claims_and_starts_in_trigger_order() {
    let store = store_last_handled("2024-05-17T00:00:00Z").await;
    let started = Arc::new(Mutex::new(Vec::new()));
    let mut h = Harness::with("2024-05-17T00:00:09.500Z", |b| {
        b.store(store.clone())
            .coordinator(Arc::new(Slowing::default()))
            .claim_timeout(Duration::from_secs(3_600))
    });
    let handler = {
        let started = started.clone();
        move |ctx: JobContext| {
            started.lock().unwrap().push(ctx.trigger());
            async { Ok::<_, std::io::Error>(()) }
        }
    };
    let job = Job::builder("tick")
        .every(Duration::from_secs(1))
        .misfire(Misfire::RunAll { cap: 100 })
        .handler(handler)
        .build()
        .unwrap();
    h.add(job);
    h.start().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut records = h.records("tick");
    records.sort_by_key(|r| r.trigger);
    let triggers: Vec<Timestamp> = records.iter().map(|r| r.trigger).collect();
    let expected: Vec<Timestamp> =
        (1..=9).map(|s| ts("2024-05-17T00:00:00Z") + SignedDuration::from_secs(s)).collect();
    assert_eq!(triggers, expected, "nine catch-up runs");
    let tokens: Vec<Option<u64>> = records.iter().map(|r| r.fencing_token).collect();
    assert_eq!(tokens, (1..=9).map(Some).collect::<Vec<_>>(), "fencing tokens in trigger order");
    assert_eq!(*started.lock().unwrap(), expected, "starts in trigger order");
    h.stop().await;
}

/// A replica whose clock is ahead of the coordinator's beyond the slack, starting after
/// downtime with `misfire = skip`, cannot tell which of the triggers it counts as missed
/// came due (some have not, on the fleet's clock): the newest is recorded
/// `skipped-clock-skew`, as a claim would be, not `missed` (which fires failure hooks).
#[tokio::test(start_paused = true)]
async fn a_skewed_replica_does_not_record_triggers_missed_at_start_up() {
    let store = store_last_handled("2024-05-17T00:00:00Z").await;
    // The fleet's time is 00:00:10; this replica's clock says 00:00:40.
    let fleet_clock = ManualClock::new(ts("2024-05-17T00:00:10Z"));
    let coordinator = InProcessCoordinator::with_clock(fleet_clock);
    let mut h = Harness::with("2024-05-17T00:00:40Z", |b| {
        b.store(store.clone()).coordinator(Arc::new(coordinator)).check_clock_skew(true)
    });
    h.add(
        Job::builder("tick")
            .every(Duration::from_secs(1))
            .misfire(Misfire::Skip)
            .handler(ok)
            .build()
            .unwrap(),
    );
    h.start().await;
    h.stop().await;

    let records = h.records("tick");
    assert!(!records.is_empty(), "the gap is recorded");
    for record in &records {
        assert_eq!(record.outcome, Outcome::SkippedClockSkew, "{record:?}");
        let reason = record.error.as_deref().unwrap_or_default();
        assert!(reason.contains("+30"), "the offset is recorded: {reason}");
    }
}
