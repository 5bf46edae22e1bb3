//! The suite's cases for claims ahead (the coordinator's
//! ["Claims ahead"](slotcron::Coordinator#claims-ahead)): the start latch without a
//! scheduler, and whole fleets whose owners claim ahead and then die or lose their link.
//! On a coordinator that takes no claims ahead the contract case checks nothing, and the
//! fleet cases check the same promises with every trigger claimed as it comes due.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use slotcron::{AheadStart, AheadVoid, Cause, ClaimOutcome, Job, JobContext, Outcome, TriggerRef};

use crate::suite::{MINUTE, claim, later, namespace, won};
use crate::{CoordinatorFactory, Delivery, Fleet, LinkState};

/// The membership TTL of the fleets here (on the coordinator's real clock), the takeover
/// delay and the claim-ahead window (on the replicas' manual clocks).
const MEMBERSHIP_TTL: Duration = Duration::from_secs(1);
const TAKEOVER_DELAY: Duration = Duration::from_millis(300);
const CLAIM_AHEAD: Duration = Duration::from_secs(1);

/// The period of the fleets' jobs: longer than the window, so each trigger after the
/// first is claimed ahead by the owner that won the one before.
const PERIOD: Duration = Duration::from_secs(2);

const REPLICAS: [&str; 3] = ["replica-a", "replica-b", "replica-c"];

async fn ok(_ctx: JobContext) -> Result<(), std::io::Error> {
    Ok(())
}

/// The start latch without a scheduler: claims ahead hold once started; a void before
/// the start drops the owner's claims ahead (another replica then wins them), refuses
/// the start and every later claim ahead of the instant; a start before the void makes
/// the void change nothing; a start is idempotent; a start or a void after `until`
/// changes nothing.
pub async fn claims_ahead_contract(factory: &impl CoordinatorFactory) {
    let ns = namespace("claims_ahead_contract");
    let (owner, other) = (factory.coordinator(&ns).await, factory.coordinator(&ns).await);
    if !owner.claims_ahead() {
        return;
    }
    let at = Timestamp::from_second(Timestamp::now().as_second() + 60).expect("a valid instant");
    let until = later(at, Duration::from_secs(60));
    let key = |job: &str| format!("{job}:{at}");
    let ahead = |job| (job, key(job));
    let (a, b) = (ahead("ahead-a"), ahead("ahead-b"));

    // Started first: the claims hold, the void changes nothing.
    let answers = owner
        .claim_batch_ahead("owner", at, &[owned_claim(a.0, &a.1, at), owned_claim(b.0, &b.1, at)], until)
        .await;
    assert!(answers.iter().all(|a| matches!(a, Ok(ClaimOutcome::Won { .. }))), "{answers:?}");
    let refs = |list: &[&(&'static str, String)]| -> Vec<(String, String)> {
        list.iter().map(|(job, key)| (job.to_string(), key.clone())).collect()
    };
    let owned = refs(&[&a, &b]);
    let triggers: Vec<TriggerRef<'_>> = owned.iter().map(|(job, key)| TriggerRef { job, key }).collect();
    // Started, and sent again: the claims given are marked, both times.
    for _ in 0..2 {
        match owner.start_ahead("owner", at, &triggers, until).await.unwrap() {
            AheadStart::Started { marked, .. } => assert_eq!(marked, [true, true]),
            AheadStart::Voided => panic!("voided"),
        }
    }
    assert_eq!(other.void_ahead("owner", at, &triggers, until).await.unwrap(), AheadVoid::Started);
    assert_eq!(other.claim(&claim(a.0, &a.1, at, MINUTE)).await.unwrap(), ClaimOutcome::Lost);

    // Voided first: the claims ahead are dropped and won by another; the start and any
    // later claim ahead of the instant are refused.
    let later_at = at + SignedDuration::from_secs(1);
    let until = later(later_at, Duration::from_secs(60));
    let key = |job: &str| format!("{job}:{later_at}");
    let (c, d) = (("ahead-c", key("ahead-c")), ("ahead-d", key("ahead-d")));

    let answers =
        owner.claim_batch_ahead("owner", later_at, &[owned_claim(c.0, &c.1, later_at)], until).await;
    assert!(matches!(answers[0], Ok(ClaimOutcome::Won { .. })), "{answers:?}");
    let owned = refs(&[&c, &d]);
    let triggers: Vec<TriggerRef<'_>> = owned.iter().map(|(job, key)| TriggerRef { job, key }).collect();
    assert_eq!(
        other.void_ahead("owner", later_at, &triggers, until).await.unwrap(),
        AheadVoid::Voided { ahead: true }
    );
    // Voided again (a second non-owner): still void.
    assert!(matches!(
        other.void_ahead("owner", later_at, &triggers, until).await.unwrap(),
        AheadVoid::Voided { .. }
    ));
    assert_eq!(owner.start_ahead("owner", later_at, &[], until).await.unwrap(), AheadStart::Voided);
    let late = owner.claim_batch_ahead("owner", later_at, &[owned_claim(d.0, &d.1, later_at)], until).await;
    assert_eq!(late[0].as_ref().unwrap(), &ClaimOutcome::Lost, "a claim ahead after the void is refused");
    let mut taken = claim(c.0, &c.1, later_at, MINUTE);
    taken.instance = "other";
    let first = won(other.claim(&taken).await.unwrap());
    assert!(first > 0, "the dropped claim ahead is won by another replica");
    let mut taken = claim(d.0, &d.1, later_at, MINUTE);
    taken.instance = "other";
    won(other.claim(&taken).await.unwrap());

    // Too late: a start after `until` is refused, a void after it changes nothing.
    let past = Timestamp::from_second(Timestamp::now().as_second() - 120).expect("a valid instant");
    let gone = later(past, Duration::from_secs(1));
    assert_eq!(owner.start_ahead("owner", past, &[], gone).await.unwrap(), AheadStart::Voided);
    let late_at = past + SignedDuration::from_secs(1);
    assert_eq!(
        other.void_ahead("owner", late_at, &[], later(late_at, Duration::from_secs(1))).await.unwrap(),
        AheadVoid::Started
    );
}

/// A claim of `job`'s trigger `at` (key `key`) by the instance `owner`.
fn owned_claim<'a>(job: &'a str, key: &'a str, at: Timestamp) -> slotcron::Claim<'a> {
    let mut claim = claim(job, key, at, MINUTE);
    claim.instance = "owner";
    claim
}

/// `count` jobs every [`PERIOD`].
fn jobs(count: usize) -> Vec<Job> {
    (0..count).map(|i| Job::builder(format!("job-{i}")).every(PERIOD).handler(ok).build().unwrap()).collect()
}

/// Three replicas that claim ahead, started and agreeing on their membership, at a
/// trigger instant; and whether their coordinator takes claims ahead.
async fn fleet(factory: &impl CoordinatorFactory, case: &str) -> (Fleet, bool) {
    let ns = namespace(case);
    let start = Timestamp::from_second(Timestamp::now().as_second() + 1).expect("a valid instant");
    let mut fleet = Fleet::new(start)
        .with_shared_work(TAKEOVER_DELAY)
        .with_settings(|builder| builder.membership_ttl(MEMBERSHIP_TTL).claim_ahead(CLAIM_AHEAD));
    for instance in REPLICAS {
        fleet.add_replica(instance, SignedDuration::ZERO, jobs(12));
    }
    let mut claims_ahead = false;
    for index in 0..REPLICAS.len() {
        let coordinator = factory.coordinator(&ns).await;
        claims_ahead = coordinator.claims_ahead();
        fleet.start(index, coordinator).await;
    }
    let deadline = tokio::time::Instant::now() + Fleet::DEFAULT_TIMEOUT;
    while !fleet.replicas().iter().all(|r| r.members().as_deref().is_some_and(|m| m == REPLICAS)) {
        assert!(tokio::time::Instant::now() < deadline, "the membership views never agreed");
        fleet.advance(PERIOD / 2, Delivery::Together).await;
        tokio::time::sleep(MEMBERSHIP_TTL / 10).await;
    }
    let next = fleet.replica(0).next_due().expect("a next trigger");
    fleet.advance_to(next, Delivery::Together).await;
    (fleet, claims_ahead)
}

/// Steps the fleet through `periods` periods, half a period at a time, so that each
/// replica wakes within the claim-ahead window of each trigger.
async fn periods(fleet: &mut Fleet, periods: u32) {
    for _ in 0..2 * periods {
        fleet.advance(PERIOD / 2, Delivery::Together).await;
    }
}

/// Owners claim ahead (where the coordinator takes claims ahead), every trigger runs
/// exactly once, and each replica records every trigger it claimed. The start of an
/// instant marks the starts of its claims ahead: a replica sends start marks only for the
/// runs it did not claim ahead.
pub async fn owners_claim_ahead(factory: &impl CoordinatorFactory) {
    let (mut fleet, claims_ahead) = fleet(factory, "owners_claim_ahead").await;
    periods(&mut fleet, 4).await;
    let ahead_claims: usize = fleet.replicas().iter().map(|r| r.claimed_ahead().len()).sum();
    if claims_ahead {
        assert!(ahead_claims > 0, "no owner claimed ahead");
    }
    fleet.stop_all().await;
    fleet.assert_shared_exactly_once();
    let keeps_marks = factory.coordinator(&namespace("owners_claim_ahead")).await.keeps_start_marks();
    for replica in fleet.replicas() {
        let ahead = replica.claimed_ahead();
        let ran_unclaimed_ahead = replica
            .records()
            .iter()
            .filter(|r| r.outcome == Outcome::Succeeded && !ahead.contains(&(r.job.clone(), r.trigger)))
            .count();
        let marked = if keeps_marks { ran_unclaimed_ahead } else { 0 };
        assert_eq!(replica.marks_sent(), marked, "{}: start marks sent", replica.instance());
    }
}

/// A job's first trigger after a replica starts is claimed ahead when the job's instant
/// before it is older than any claim or takeover of it can come (membership TTL, a
/// heartbeat, takeover delay, claim timeout and clock-skew slack: 1 + 0.33 + 0.3 + 1 + 1 s
/// here): a job every 20 s. A job every 3 s, whose instant before may still be claimed
/// when its first trigger's claim-ahead window opens, has its first trigger claimed as
/// it comes due, and later ones ahead once this replica won the one before. Each trigger
/// runs once.
pub async fn a_first_trigger_is_claimed_ahead_once_the_one_before_is_decided(
    factory: &impl CoordinatorFactory,
) {
    let ns = namespace("first_ahead");
    // Two seconds past a multiple of 20 s, ahead of the coordinator's (real) clock.
    let twenty = Timestamp::now().as_second() / 20 * 20 + 20;
    let start = Timestamp::from_second(twenty + 2).expect("a valid instant");
    let mut fleet = Fleet::new(start).with_shared_work(TAKEOVER_DELAY).with_settings(|builder| {
        builder.membership_ttl(MEMBERSHIP_TTL).claim_ahead(CLAIM_AHEAD).slack(Duration::from_secs(1))
    });
    let every =
        |name: &str, secs| Job::builder(name).every(Duration::from_secs(secs)).handler(ok).build().unwrap();
    fleet.add_replica(REPLICAS[0], SignedDuration::ZERO, vec![every("slow", 20), every("fast", 3)]);
    let coordinator = factory.coordinator(&ns).await;
    let claims_ahead = coordinator.claims_ahead();
    fleet.start(0, coordinator).await;
    let first_slow = Timestamp::from_second(twenty + 20).expect("a valid instant");
    while fleet.now() < later(first_slow, Duration::from_secs(1)) {
        fleet.advance(PERIOD / 4, Delivery::Together).await;
        tokio::time::sleep(MEMBERSHIP_TTL / 20).await;
    }
    let ahead = fleet.replica(0).claimed_ahead();
    let fast_ahead: Vec<Timestamp> =
        ahead.iter().filter(|(job, _)| &**job == "fast").map(|(_, at)| *at).collect();
    let first_fast = Timestamp::from_second((start.as_second() + 2) / 3 * 3).expect("a valid instant");
    assert!(
        !fast_ahead.contains(&first_fast),
        "fast's first trigger {first_fast} was claimed ahead: {fast_ahead:?}"
    );
    if claims_ahead {
        assert!(
            ahead.contains(&("slow".into(), first_slow)),
            "slow's first trigger was not claimed ahead: {ahead:?}"
        );
        assert!(!fast_ahead.is_empty(), "fast's later triggers were not claimed ahead");
    }
    fleet.stop_all().await;
    fleet.assert_shared_exactly_once();
}

/// A replica alone with one job every 20 s, started between two of its instants long
/// after the one before (so its first trigger may be claimed ahead): its view settles at
/// its second heartbeat, after its loop went to sleep until that first trigger, and the
/// settling wakes the loop, which claims the trigger ahead rather than as it comes due.
pub async fn a_replica_claims_ahead_once_its_view_settles(factory: &impl CoordinatorFactory) {
    let ns = namespace("ahead_once_settled");
    let twenty = Timestamp::now().as_second() / 20 * 20 + 20;
    let start = Timestamp::from_second(twenty + 10).expect("a valid instant");
    let mut fleet = Fleet::new(start).with_shared_work(TAKEOVER_DELAY).with_settings(|builder| {
        builder.membership_ttl(MEMBERSHIP_TTL).claim_ahead(CLAIM_AHEAD).slack(Duration::from_secs(1))
    });
    let slow = Job::builder("slow").every(Duration::from_secs(20)).handler(ok).build().unwrap();
    fleet.add_replica(REPLICAS[0], SignedDuration::ZERO, vec![slow]);
    let coordinator = factory.coordinator(&ns).await;
    let claims_ahead = coordinator.claims_ahead();
    fleet.start(0, coordinator).await;
    let first = Timestamp::from_second(twenty + 20).expect("a valid instant");
    while fleet.now() < later(first, Duration::from_secs(1)) {
        fleet.advance(PERIOD / 4, Delivery::Together).await;
        tokio::time::sleep(MEMBERSHIP_TTL / 20).await;
    }
    let ahead = fleet.replica(0).claimed_ahead();
    if claims_ahead {
        assert!(
            ahead.contains(&("slow".into(), first)),
            "slow's first trigger was not claimed ahead: {ahead:?}"
        );
    }
    fleet.stop_all().await;
    fleet.assert_shared_exactly_once();
}

/// An owner that dies after claiming its next triggers ahead (it never starts them):
/// the others void its start after the takeover delay and run each of those triggers
/// once; nothing runs twice; every replica has one record per trigger it saw.
pub async fn an_owner_that_dies_after_claiming_ahead_is_taken_over(factory: &impl CoordinatorFactory) {
    let (mut fleet, claims_ahead) = fleet(factory, "dies_after_claiming_ahead").await;
    periods(&mut fleet, 2).await;
    // Half a period before the next triggers: replica-a has claimed its ahead (on a busy
    // machine a period or more later: it claims a job ahead only once its start of the
    // job's trigger before, a round trip, has come back).
    fleet.advance(PERIOD / 2, Delivery::Together).await;
    for _ in 0..4 {
        if !claims_ahead || claimed_ahead_of_next(&fleet).await {
            break;
        }
        fleet.advance(PERIOD, Delivery::Together).await;
    }
    let before = fleet.replica(0).claimed_ahead().len();
    fleet.kill(0).await;
    let killed_at = fleet.now();
    periods(&mut fleet, 3).await;
    let claimed_ahead: Vec<_> =
        fleet.replica(0).claimed_ahead().into_iter().filter(|(_, at)| *at > killed_at).collect();
    if claims_ahead {
        assert!(before > 0 && !claimed_ahead.is_empty(), "replica-a claimed nothing ahead before it died");
    }
    for (job, trigger) in &claimed_ahead {
        let ran = ran_on_the_others(&fleet, job, *trigger);
        assert_eq!(
            ran.len(),
            1,
            "{job}@{trigger}, claimed ahead by the dead owner, ran once elsewhere: {ran:?}"
        );
        assert!(
            ran[0].started >= later(*trigger, TAKEOVER_DELAY),
            "taken over after the delay: {:?}",
            ran[0]
        );
        assert_eq!(ran[0].cause, Cause::TakenOver, "recorded as taken over: {:?}", ran[0]);
    }
    fleet.stop_all().await;
    fleet.assert_shared_exactly_once();
}

/// Whether replica-a has tried to claim a trigger ahead of an instant still to come,
/// waiting for it a little on the real clock (its claims go out on its runtime).
async fn claimed_ahead_of_next(fleet: &Fleet) -> bool {
    for _ in 0..20 {
        let now = fleet.now();
        if fleet.replica(0).claimed_ahead().iter().any(|(_, at)| *at > now) {
            return true;
        }
        tokio::time::sleep(MEMBERSHIP_TTL / 40).await;
    }
    false
}

/// An owner whose link fails after it claimed ahead: it cannot start, records each of
/// those triggers `skipped-backend-unavailable`, and the others run each once.
pub async fn an_owner_that_cannot_start_is_taken_over(factory: &impl CoordinatorFactory) {
    let (mut fleet, _) = fleet(factory, "cannot_start").await;
    periods(&mut fleet, 2).await;
    fleet.advance(PERIOD / 2, Delivery::Together).await;
    let broken = fleet.now();
    fleet.replica(0).set_link(LinkState::ClaimsFail);
    fleet.advance(PERIOD / 2, Delivery::Together).await;
    fleet.replica(0).set_link(LinkState::Up);
    periods(&mut fleet, 2).await;
    let skipped: Vec<_> = fleet
        .replica(0)
        .records()
        .into_iter()
        .filter(|r| r.trigger > broken && r.trigger <= later(broken, PERIOD / 2))
        .collect();
    assert!(!skipped.is_empty(), "replica-a owned none of the jobs");
    for record in &skipped {
        assert_eq!(record.outcome, Outcome::SkippedBackendUnavailable, "{record:?}");
        let ran = ran_on_the_others(&fleet, &record.job, record.trigger).len();
        assert_eq!(ran, 1, "{}@{} ran once elsewhere", record.job, record.trigger);
    }
    fleet.stop_all().await;
    fleet.assert_shared_exactly_once();
}

/// The records of `job`'s `trigger` that ran, on the replicas but replica-a.
fn ran_on_the_others(fleet: &Fleet, job: &str, trigger: Timestamp) -> Vec<slotcron::RunRecord> {
    (1..REPLICAS.len())
        .flat_map(|r| fleet.replica(r).records())
        .filter(|rec| &*rec.job == job && rec.trigger == trigger && rec.outcome.ran())
        .collect()
}
