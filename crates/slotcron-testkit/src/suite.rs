//! The suite's cases: each one a promise of docs/design.md's "Exactly once across replicas".

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use futures_util::future::join_all;
use jiff::{SignedDuration, Timestamp};
use slotcron::{Claim, ClaimOutcome, Hold, Job, JobContext, Outcome, ScheduleKind, trigger_key};

use crate::{CoordinatorFactory, Delivery, Fleet};

/// A namespace no earlier run used: the case's name and a random suffix.
pub(crate) fn namespace(case: &str) -> String {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let seed = (std::process::id(), nanos, SEQUENCE.fetch_add(1, Ordering::Relaxed));
    let suffix = RandomState::new().hash_one(seed);
    format!("{case}_{suffix:016x}")
}

fn ts(s: &str) -> Timestamp {
    s.parse().expect("a valid instant")
}

/// The fleet's start: the next whole minute of the real clock plus `offset`. The
/// coordinator's clock is the real one (Redis `TIME`, PostgreSQL `now()`), so a fleet
/// starting now sees its claims expire, and the high-water mark judge them, as a real
/// fleet would; the replicas' manual clocks then run ahead of it, never behind.
fn fleet_start(offset: SignedDuration) -> Timestamp {
    let now = Timestamp::now().as_second();
    Timestamp::from_second(now - now.rem_euclid(60) + 60).expect("a valid instant") + offset
}

/// The real clock now, rounded down to the millisecond (the precision of every
/// coordinator's instants).
pub(crate) fn real_now() -> Timestamp {
    Timestamp::from_millisecond(Timestamp::now().as_millisecond()).expect("a valid instant")
}

/// `duration` after `at`, or the last representable instant (as the engine reckons a
/// hold's end: a huge duration reaches [`Timestamp::MAX`] rather than overflowing).
pub(crate) fn later(at: Timestamp, duration: Duration) -> Timestamp {
    at.checked_add(duration).unwrap_or(Timestamp::MAX)
}

fn ms(ms: i64) -> SignedDuration {
    SignedDuration::from_millis(ms)
}

async fn ok(_ctx: JobContext) -> Result<(), std::io::Error> {
    Ok(())
}

/// A handler that works for 5 ms of real time.
async fn busy(_ctx: JobContext) -> Result<(), std::io::Error> {
    tokio::time::sleep(Duration::from_millis(5)).await;
    Ok(())
}

fn every_second(name: &str) -> Job {
    Job::builder(name).every(Duration::from_secs(1)).handler(ok).build().expect("a valid job")
}

fn succeeded(fleet: &Fleet, job: &str) -> Vec<Timestamp> {
    let mut triggers: Vec<Timestamp> = fleet
        .records()
        .into_iter()
        .filter(|r| &*r.job == job && r.outcome == Outcome::Succeeded)
        .map(|r| r.trigger)
        .collect();
    triggers.sort();
    triggers
}

fn seconds(from: Timestamp, count: i64) -> Vec<Timestamp> {
    (0..count).map(|k| from + SignedDuration::from_secs(k)).collect()
}

/// A claim on `job`'s trigger at `trigger`, by the instance `suite`.
pub(crate) fn claim<'a>(job: &'a str, key: &'a str, trigger: Timestamp, hold: Option<Hold>) -> Claim<'a> {
    Claim { job, trigger, key, instance: "suite", hold }
}

/// A hold of a one-minute slot with no run budget and no slack.
pub(crate) const MINUTE: Option<Hold> =
    Some(Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::ZERO });

/// A hold of 2 ms after the claim (1 ms slot, 1 ms slack), so that a real wait of
/// [`EXPIRED`] lets the claim expire.
pub(crate) fn brief(run_budget: Option<Duration>) -> Option<Hold> {
    Some(Hold { slot: Duration::from_millis(1), run_budget, slack: Duration::from_millis(1) })
}

/// Longer than a [`brief`] hold without a run budget.
pub(crate) const EXPIRED: Duration = Duration::from_millis(50);

pub(crate) fn won(outcome: ClaimOutcome) -> u64 {
    match outcome {
        ClaimOutcome::Won { fencing_token } => fencing_token,
        other => panic!("expected a won claim, got {other:?}"),
    }
}

/// The coordinator contract without a scheduler: the first claim of a trigger wins and
/// every later one loses, from any coordinator; fencing tokens grow per job; a one-shot
/// claim (no TTL) holds; of many simultaneous claims exactly one wins.
pub async fn claim_contract(factory: &impl CoordinatorFactory) {
    let ns = namespace("claim_contract");
    let (a, b) = (factory.coordinator(&ns).await, factory.coordinator(&ns).await);
    let ttl = MINUTE;
    let kind = ScheduleKind::Recurring;
    let t1 = ts("2024-05-17T00:00:01Z");
    let t2 = ts("2024-05-17T00:00:02Z");
    let (k1, k2) = (trigger_key("job", kind, t1), trigger_key("job", kind, t2));

    let first = won(a.claim(&claim("job", &k1, t1, ttl)).await.expect("claim"));
    for coordinator in [&a, &b] {
        let again = coordinator.claim(&claim("job", &k1, t1, ttl)).await.expect("claim");
        assert_eq!(again, ClaimOutcome::Lost, "a claimed trigger stays taken");
    }
    let second = won(b.claim(&claim("job", &k2, t2, ttl)).await.expect("claim"));
    assert!(second > first, "fencing tokens grow per job: {first} then {second}");
    let other = trigger_key("other", kind, t1);
    won(a.claim(&claim("other", &other, t1, ttl)).await.expect("another job's claim"));

    let once = trigger_key("once", ScheduleKind::At(t1), t1);
    won(a.claim(&claim("once", &once, t1, None)).await.expect("one-shot claim"));
    let again = b.claim(&claim("once", &once, t1, None)).await.expect("one-shot claim");
    assert_eq!(again, ClaimOutcome::Lost, "a one-shot claim holds");

    let racers = join_all((0..8).map(|_| factory.coordinator(&ns))).await;
    let t3 = ts("2024-05-17T00:00:03Z");
    let k3 = trigger_key("job", kind, t3);
    let race = claim("job", &k3, t3, ttl);
    let outcomes = join_all(racers.iter().map(|c| c.claim(&race))).await;
    let winners: Vec<u64> = outcomes
        .into_iter()
        .filter_map(|o| match o.expect("claim") {
            ClaimOutcome::Won { fencing_token } => Some(fencing_token),
            ClaimOutcome::Lost | ClaimOutcome::BehindMark | ClaimOutcome::Paused => None,
        })
        .collect();
    assert_eq!(winners.len(), 1, "exactly one of 8 simultaneous claims wins: {winners:?}");
    assert!(winners[0] > second, "fencing tokens grow per job");
}

/// Coordinators on different namespaces share no claims.
pub async fn namespaces_are_isolated(factory: &impl CoordinatorFactory) {
    let (ns_a, ns_b) = (namespace("isolated_a"), namespace("isolated_b"));
    let a = factory.coordinator(&ns_a).await;
    let b = factory.coordinator(&ns_b).await;
    let t = ts("2024-05-17T00:00:00Z");
    let key = trigger_key("job", ScheduleKind::Recurring, t);
    let c = claim("job", &key, t, MINUTE);
    won(a.claim(&c).await.expect("claim in the first namespace"));
    won(b.claim(&c).await.expect("claim in the second namespace"));
    for ns in [&ns_a, &ns_b] {
        let again = factory.coordinator(ns).await.claim(&c).await.expect("claim");
        assert_eq!(again, ClaimOutcome::Lost, "namespace {ns} holds its own claim");
    }
}

/// Three schedulers with clocks skewed by 0, +400 ms and −700 ms run an interval (1 s),
/// a cron (`* * * * * *`), an `at` and an `after` job over 10 simulated minutes: every
/// trigger runs exactly once across them, none is missing, and fencing tokens strictly
/// increase per job in the order the claims were won (with a skew spread of 1.1 s, the
/// fast replica wins 00:00:01 before the slow one wins 00:00:00, the trigger only it saw).
pub async fn skewed_clocks(factory: &impl CoordinatorFactory) {
    let ns = namespace("skewed_clocks");
    let start = fleet_start(SignedDuration::ZERO);
    let jobs = || {
        vec![
            every_second("interval"),
            Job::builder("cron").cron("* * * * * *").handler(ok).build().expect("a valid job"),
            Job::builder("at").at(start + Duration::from_secs(300)).handler(ok).build().expect("a valid job"),
            Job::builder("after").after(Duration::from_secs(90)).handler(ok).build().expect("a valid job"),
        ]
    };
    let mut fleet = Fleet::new(start);
    for (instance, skew) in [("replica-0", 0), ("replica-plus-400", 400), ("replica-minus-700", -700)] {
        let index = fleet.add_replica(instance, ms(skew), jobs());
        fleet.start(index, factory.coordinator(&ns).await).await;
    }
    fleet.advance(Duration::from_secs(600), Delivery::Together).await;
    fleet.assert_exactly_once();
    // The −700 ms replica saw 00:00:00, the +400 ms one 00:10:00.
    for job in ["interval", "cron"] {
        assert_eq!(succeeded(&fleet, job), seconds(start, 601), "job {job}");
    }
    assert_eq!(succeeded(&fleet, "at"), [start + Duration::from_secs(300)]);
    assert_eq!(succeeded(&fleet, "after").len(), 1);
    fleet.stop_all().await;
}

/// Replicas started 300 ms apart run a 1 s job whose handler takes 5 ms; each replica
/// claims a trigger only after the previous one finished running it: still one run per
/// trigger (a claim released after a fast run would let every later replica run).
pub async fn staggered_starts(factory: &impl CoordinatorFactory) {
    let ns = namespace("staggered_starts");
    let start = fleet_start(ms(800));
    let job = || {
        vec![Job::builder("tick").every(Duration::from_secs(1)).handler(busy).build().expect("a valid job")]
    };
    let mut fleet = Fleet::new(start);
    for (k, instance) in ["replica-0", "replica-1", "replica-2"].into_iter().enumerate() {
        if k > 0 {
            fleet.advance(Duration::from_millis(300), Delivery::InTurn).await;
        }
        let index = fleet.add_replica(instance, SignedDuration::ZERO, job());
        fleet.start(index, factory.coordinator(&ns).await).await;
    }
    fleet.advance(Duration::from_secs(120), Delivery::InTurn).await;
    fleet.assert_exactly_once();
    let first = start + ms(200);
    assert_eq!(succeeded(&fleet, "tick"), seconds(first, 121));
    // From 00:00:02 on every replica saw every trigger: one ran it, two lost the claim.
    let lost = fleet.records().into_iter().filter(|r| r.outcome == Outcome::SkippedLost && r.trigger > first);
    assert_eq!(lost.count(), 2 * 120);
    fleet.stop_all().await;
}

/// Three schedulers on the same clock race for the same triggers of eight jobs for
/// one simulated minute: one run per trigger.
pub async fn racing_replicas(factory: &impl CoordinatorFactory) {
    let ns = namespace("racing_replicas");
    let start = fleet_start(SignedDuration::ZERO);
    let jobs = || (0..8).map(|k| every_second(&format!("job-{k}"))).collect::<Vec<_>>();
    let mut fleet = Fleet::new(start);
    for instance in ["replica-0", "replica-1", "replica-2"] {
        let index = fleet.add_replica(instance, SignedDuration::ZERO, jobs());
        fleet.start(index, factory.coordinator(&ns).await).await;
    }
    fleet.advance(Duration::from_secs(60), Delivery::Together).await;
    fleet.assert_exactly_once();
    for k in 0..8 {
        assert_eq!(succeeded(&fleet, &format!("job-{k}")), seconds(start + Duration::from_secs(1), 60));
    }
    fleet.stop_all().await;
}

/// An `at` and an `after` job run once across three replicas, and still once after
/// every replica restarts (with a new coordinator connection) once they ran: the
/// restarted replicas find the claims taken.
pub async fn one_shots_survive_restarts(factory: &impl CoordinatorFactory) {
    let ns = namespace("one_shots_restart");
    let start = fleet_start(SignedDuration::ZERO);
    let at = start + Duration::from_secs(10);
    let jobs = || {
        vec![
            Job::builder("at").at(at).handler(ok).build().expect("a valid job"),
            Job::builder("after").after(Duration::from_secs(5)).handler(ok).build().expect("a valid job"),
            every_second("tick"),
        ]
    };
    let mut fleet = Fleet::new(start);
    let skews = [("replica-0", 0), ("replica-plus-400", 400), ("replica-minus-700", -700)];
    for (instance, skew) in skews {
        let index = fleet.add_replica(instance, ms(skew), jobs());
        fleet.start(index, factory.coordinator(&ns).await).await;
    }
    fleet.advance(Duration::from_secs(20), Delivery::Together).await;
    assert_eq!(succeeded(&fleet, "at"), [at]);
    assert_eq!(succeeded(&fleet, "after").len(), 1);
    for index in 0..skews.len() {
        fleet.stop(index).await;
        fleet.start(index, factory.coordinator(&ns).await).await;
    }
    fleet.advance(Duration::from_secs(20), Delivery::Together).await;
    fleet.assert_exactly_once();
    assert_eq!(succeeded(&fleet, "at"), [at], "the restarted replicas found `at` claimed");
    assert_eq!(succeeded(&fleet, "after").len(), 1, "and `after`, whose key is its name");
    let lost_after_restart = fleet
        .records()
        .into_iter()
        .filter(|r| &*r.job != "tick" && r.outcome == Outcome::SkippedLost)
        .count();
    assert_eq!(lost_after_restart, 2 * 2 + 3 * 2, "2 losers before, 3 restarted replicas after, 2 jobs");
    fleet.stop_all().await;
}

/// A recurring claim holds until an absolute instant on the coordinator's clock: a claim
/// made long after its trigger (catch-up) still holds for its slot, and one whose run
/// budget outlasts its slot holds for the budget. Told apart by what a second claim
/// meets: the claim (lost), or, once the claim has expired, the job's high-water mark.
pub async fn claims_hold_until_an_absolute_instant(factory: &impl CoordinatorFactory) {
    let ns = namespace("absolute_expiry");
    let (a, b) = (factory.coordinator(&ns).await, factory.coordinator(&ns).await);
    let kind = ScheduleKind::Recurring;
    let hour_ago = real_now() - SignedDuration::from_hours(1);
    let key = trigger_key("late", kind, hour_ago);
    won(a.claim(&claim("late", &key, hour_ago, MINUTE)).await.expect("claim"));
    let again = b.claim(&claim("late", &key, hour_ago, MINUTE)).await.expect("claim");
    assert_eq!(again, ClaimOutcome::Lost, "a claim made an hour late holds for a slot from the claim");

    let recent = real_now() - SignedDuration::from_secs(10);
    let (long, short) = (trigger_key("long", kind, recent), trigger_key("short", kind, recent));
    let budget = brief(Some(Duration::from_secs(3_600)));
    won(a.claim(&claim("long", &long, recent, budget)).await.expect("claim"));
    won(a.claim(&claim("short", &short, recent, brief(None))).await.expect("claim"));
    tokio::time::sleep(EXPIRED).await;
    let again = b.claim(&claim("long", &long, recent, budget)).await.expect("claim");
    assert_eq!(again, ClaimOutcome::Lost, "a claim holds for its run budget after its trigger");
    let again = b.claim(&claim("short", &short, recent, brief(None))).await.expect("claim");
    assert_eq!(again, ClaimOutcome::BehindMark, "without a budget it expired, and the mark refuses it");
}

/// The job's high-water mark: a replica catching up triggers another replica ran, once
/// their claims have expired, is refused every one; a catch-up of an old trigger nobody
/// ran loses to another replica's claim of the current trigger if that came first (the
/// mark's cost) and wins if it came first itself; a fleet that was entirely down catches
/// up in trigger order with growing fencing tokens; and a trigger behind the mark but
/// younger than its hold — one only a slow replica saw — is still decided by its claim.
pub async fn the_high_water_mark_refuses_handled_triggers(factory: &impl CoordinatorFactory) {
    let ns = namespace("high_water_mark");
    let (a, b) = (factory.coordinator(&ns).await, factory.coordinator(&ns).await);
    let kind = ScheduleKind::Recurring;
    let base = real_now() - SignedDuration::from_mins(10);
    let at = |s: i64| base + SignedDuration::from_secs(s);
    let key = |job: &str, t: Timestamp| trigger_key(job, kind, t);

    // b ran five triggers while a was down; their claims expired.
    for s in 0..5 {
        won(b.claim(&claim("ran", &key("ran", at(s)), at(s), brief(None))).await.expect("claim"));
    }
    tokio::time::sleep(EXPIRED).await;
    for s in 0..5 {
        let caught_up = a.claim(&claim("ran", &key("ran", at(s)), at(s), brief(None))).await.expect("claim");
        assert_eq!(caught_up, ClaimOutcome::BehindMark, "trigger {} ran on b", at(s));
    }

    // The race of a catch-up with a claim of the current trigger.
    let now = real_now();
    won(b.claim(&claim("race", &key("race", now), now, MINUTE)).await.expect("claim"));
    let old = a.claim(&claim("race", &key("race", at(1)), at(1), MINUTE)).await.expect("claim");
    assert_eq!(old, ClaimOutcome::BehindMark, "nobody ran it, but the mark has passed it: fail closed");
    won(a.claim(&claim("race2", &key("race2", at(1)), at(1), MINUTE)).await.expect("catch-up first"));
    won(b.claim(&claim("race2", &key("race2", now), now, MINUTE)).await.expect("then the current trigger"));

    // The whole fleet was down after at(0): a catches up at(1)..at(10) in order.
    won(b.claim(&claim("down", &key("down", at(0)), at(0), MINUTE)).await.expect("claim"));
    let mut tokens = Vec::new();
    for s in 1..=10 {
        tokens.push(won(a.claim(&claim("down", &key("down", at(s)), at(s), MINUTE)).await.expect("claim")));
    }
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "fencing tokens follow the triggers: {tokens:?}");
    for s in 1..=10 {
        let again = b.claim(&claim("down", &key("down", at(s)), at(s), MINUTE)).await.expect("claim");
        assert_eq!(again, ClaimOutcome::Lost, "b catching up too finds a's claim of {}", at(s));
    }

    // A fast replica claimed the next trigger; the slow one's own trigger is still young.
    let (t, next) = (real_now(), real_now() + SignedDuration::from_secs(1));
    won(a.claim(&claim("skew", &key("skew", next), next, MINUTE)).await.expect("claim"));
    won(b.claim(&claim("skew", &key("skew", t), t, MINUTE)).await.expect("a young trigger behind the mark"));

    // The marks read back (to the millisecond): the newest trigger granted per job, none
    // for a job never claimed.
    let marks = a.high_water_marks(&["ran", "down", "never"]).await.expect("marks");
    let ms: Vec<Option<i64>> = marks.into_iter().map(|m| m.map(|m| m.as_millisecond())).collect();
    assert_eq!(ms, [Some(at(4).as_millisecond()), Some(at(10).as_millisecond()), None]);
}
