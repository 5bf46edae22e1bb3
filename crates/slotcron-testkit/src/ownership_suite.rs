//! The suite's cases for shared work across replicas: the membership, the batched reads,
//! and whole fleets in which each trigger has one owner (see
//! ["Membership"](slotcron::Coordinator#membership)).

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use slotcron::{
    Claim, Handled, Hold, Job, JobContext, JoinError, LiveMember, MEMBERSHIP_JOIN_LOOK, MemberDetails,
    Outcome, ScheduleKind, SchedulerBuilder, TriggerRef, job_owner, trigger_key,
};

use crate::suite::{later, namespace};
use crate::{CoordinatorFactory, Delivery, Fleet, LinkState};

/// The membership TTL of the fleets here, on the coordinator's (real) clock: short, so a
/// killed replica lapses soon. The replicas heartbeat every third of it on their manual
/// clocks, that is at every step of a second.
const MEMBERSHIP_TTL: Duration = Duration::from_secs(1);

/// The takeover delay of the fleets here, on the replicas' clocks.
pub(crate) const TAKEOVER_DELAY: Duration = Duration::from_millis(300);

pub(crate) const REPLICAS: [&str; 3] = ["replica-a", "replica-b", "replica-c"];

pub(crate) async fn ok(_ctx: JobContext) -> Result<(), std::io::Error> {
    Ok(())
}

/// A run that goes on until the scheduler stops.
async fn until_stopped(ctx: JobContext) -> Result<(), std::io::Error> {
    ctx.cancellation_token().cancelled().await;
    Ok(())
}

/// Twelve jobs every second: with three members, each owns some (rendezvous hashing
/// of these names).
pub(crate) fn jobs() -> Vec<Job> {
    jobs_running(ok)
}

/// [`jobs`] with `handler`.
fn jobs_running<F, Fut>(handler: F) -> Vec<Job>
where
    F: Fn(JobContext) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), std::io::Error>> + Send + 'static,
{
    (0..12)
        .map(|i| {
            Job::builder(format!("job-{i}"))
                .every(Duration::from_secs(1))
                .handler(handler.clone())
                .build()
                .unwrap()
        })
        .collect()
}

/// The next whole second of the real clock: the coordinator's clock is the real one.
fn start() -> Timestamp {
    Timestamp::from_second(Timestamp::now().as_second() + 1).expect("a valid instant")
}

/// Three replicas sharing the work, started and agreeing on their membership.
async fn fleet(factory: &impl CoordinatorFactory, case: &str) -> Fleet {
    fleet_of(factory, &namespace(case), |builder| builder, |_| jobs()).await
}

/// [`fleet`] in namespace `ns`, with `settings` on every replica's scheduler and
/// `jobs_of(index)` on each.
pub(crate) async fn fleet_of(
    factory: &impl CoordinatorFactory,
    ns: &str,
    settings: impl Fn(SchedulerBuilder) -> SchedulerBuilder + Send + Sync + 'static,
    jobs_of: impl Fn(usize) -> Vec<Job>,
) -> Fleet {
    let mut fleet = Fleet::new(start())
        .with_shared_work(TAKEOVER_DELAY)
        .with_settings(move |builder| settings(builder.membership_ttl(MEMBERSHIP_TTL)));
    for (index, instance) in REPLICAS.iter().enumerate() {
        fleet.add_replica(instance, SignedDuration::ZERO, jobs_of(index));
    }
    for index in 0..REPLICAS.len() {
        fleet.start(index, factory.coordinator(ns).await).await;
    }
    until_members(&mut fleet, &REPLICAS).await;
    fleet
}

/// Steps the fleet a second at a time until every running replica's view is `expected`:
/// real waits between steps let a killed member's heartbeat lapse.
async fn until_members(fleet: &mut Fleet, expected: &[&str]) {
    let deadline = tokio::time::Instant::now() + Fleet::DEFAULT_TIMEOUT;
    loop {
        let views: Vec<Option<Vec<String>>> =
            fleet.replicas().iter().filter(|r| r.is_running()).map(|r| r.members()).collect();
        if views.iter().all(|view| view.as_deref().is_some_and(|m| m == expected)) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "membership views {views:?} never became {expected:?}"
        );
        fleet.advance(Duration::from_secs(1), Delivery::Together).await;
        tokio::time::sleep(MEMBERSHIP_TTL / 10).await;
    }
}

/// Every replica's job state follows the triggers the fleet handled, the ones its owners
/// ran included (a non-owner records nothing for those): a replica that restarts does
/// not take them for missed.
pub async fn a_non_owners_job_state_follows_the_triggers_their_owners_ran(factory: &impl CoordinatorFactory) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use slotcron::{MemoryStore, Store};

    let stores: Arc<Vec<Arc<MemoryStore>>> = Arc::new(REPLICAS.iter().map(|_| Arc::default()).collect());
    let (given, handed) = (stores.clone(), Arc::new(AtomicUsize::new(0)));
    let ns = namespace("state_follows");
    let mut fleet = fleet_of(
        factory,
        &ns,
        move |builder| builder.store(given[handed.fetch_add(1, Ordering::SeqCst) % given.len()].clone()),
        |_| jobs(),
    )
    .await;
    fleet.advance(Duration::from_secs(3) + 2 * TAKEOVER_DELAY, Delivery::Together).await;
    let last = Timestamp::from_second(fleet.now().as_second()).expect("a valid instant");
    fleet.stop_all().await;
    for (store, replica) in stores.iter().zip(REPLICAS) {
        let states = store.load_states().await.expect("states");
        for job in jobs() {
            let state =
                states.get(job.name()).unwrap_or_else(|| panic!("{replica}: no state of {}", job.name()));
            assert_eq!(state.last_trigger, last, "{replica}: {}", job.name());
        }
    }
}

/// The records of `replica` for triggers after `after`.
pub(crate) fn records_after(fleet: &Fleet, replica: usize, after: Timestamp) -> Vec<slotcron::RunRecord> {
    fleet.replica(replica).records().into_iter().filter(|r| r.trigger > after).collect()
}

/// The membership, batched reads and tallies without a scheduler: a heartbeat returns
/// the live members sorted, leaving removes one at once, a member that stops
/// heartbeating lapses after its TTL; `unclaimed` tells claimed triggers from the others
/// in one call; tallies add up per owner and instant, and an empty one is kept.
pub async fn membership_contract(factory: &impl CoordinatorFactory) {
    let ns = namespace("membership_contract");
    let (a, b) = (factory.coordinator(&ns).await, factory.coordinator(&ns).await);
    let minute = Duration::from_secs(60);
    let members = |m: &[&str]| Some(m.iter().map(|m| m.to_string()).collect::<Vec<_>>());
    assert_eq!(a.heartbeat("b-host", minute).await.expect("heartbeat"), members(&["b-host"]));
    assert_eq!(b.heartbeat("a-host", minute).await.expect("heartbeat"), members(&["a-host", "b-host"]));
    assert_eq!(a.heartbeat("b-host", minute).await.expect("heartbeat"), members(&["a-host", "b-host"]));
    a.leave("b-host").await.expect("leave");
    assert_eq!(b.heartbeat("a-host", minute).await.expect("heartbeat"), members(&["a-host"]));
    a.heartbeat("brief", Duration::from_millis(20)).await.expect("heartbeat");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(b.heartbeat("a-host", minute).await.expect("heartbeat"), members(&["a-host"]), "lapsed");
    let other = factory.coordinator(&namespace("membership_contract")).await;
    assert_eq!(other.heartbeat("x", minute).await.expect("heartbeat"), members(&["x"]), "namespaces apart");

    let kind = ScheduleKind::Recurring;
    let t = Timestamp::from_second(Timestamp::now().as_second()).expect("a valid instant");
    let hold = Some(Hold { slot: minute, run_budget: None, slack: Duration::ZERO });
    let keys: Vec<String> = ["j0", "j1", "j2"].iter().map(|job| trigger_key(job, kind, t)).collect();
    let claim = Claim { job: "j1", trigger: t, key: &keys[1], instance: "a-host", hold };
    a.claim(&claim).await.expect("claim");
    let triggers: Vec<TriggerRef<'_>> =
        ["j0", "j1", "j2"].iter().zip(&keys).map(|(job, key)| TriggerRef { job, key }).collect();
    assert_eq!(b.unclaimed(&triggers).await.expect("unclaimed"), [true, false, true]);
    assert_eq!(b.unclaimed(&[]).await.expect("unclaimed"), Vec::<bool>::new());

    let (h0, h1) = (Handled::of_key(&keys[0]), Handled::of_key(&keys[1]));
    a.add_handled("a-host", t, h0, minute).await.expect("tally");
    b.add_handled("a-host", t, h1, minute).await.expect("tally");
    let later = t + SignedDuration::from_secs(1);
    let tallies = b.handled(&[("a-host", t), ("b-host", t), ("a-host", later)]).await.expect("tallies");
    assert_eq!(tallies, [Some(h0.plus(h1)), None, None]);
    // An empty tally (an owner's mark that it is claiming the instant) is kept, and adds
    // nothing.
    a.add_handled("b-host", t, Handled::default(), minute).await.expect("mark");
    a.add_handled("a-host", t, Handled::default(), minute).await.expect("mark");
    let tallies = b.handled(&[("b-host", t), ("a-host", t)]).await.expect("tallies");
    assert_eq!(tallies, [Some(Handled::default()), Some(h0.plus(h1))]);
}

/// Member details: the live members are listed with their lapse and the details each
/// published (none: empty), replaced by its next publication, gone when it leaves or
/// lapses; a scheduler whose fleet setting differs from a live member's is refused at
/// join, naming both values, one that agrees (or of the same instance id, which has not
/// heartbeated again) is not, and its details are then published; one whose instance id
/// another process heartbeats under is refused; the fleet view counts each member's owned
/// jobs.
pub async fn member_details_and_the_join_check(factory: &impl CoordinatorFactory) {
    let ns = namespace("member_details");
    let (a, b) = (factory.coordinator(&ns).await, factory.coordinator(&ns).await);
    let minute = Duration::from_secs(60);
    let zone = |zone: &str| MemberDetails {
        settings: [("crontab_zone".to_owned(), zone.to_owned())].into(),
        about: [("host".to_owned(), "h1".to_owned())].into(),
        labels: vec!["region=eu".to_owned()],
    };
    let listed = |members: Vec<LiveMember>| -> Vec<(String, MemberDetails)> {
        members.into_iter().map(|m| (m.instance, m.details)).collect()
    };
    a.publish_details("a-host", &zone("UTC")).await.expect("publish");
    assert_eq!(listed(b.members().await.expect("members")), [], "not a live member yet");
    // Whole milliseconds, as the coordinators' clocks give them (Redis' TIME in ms).
    let before = Timestamp::from_millisecond(Timestamp::now().as_millisecond()).expect("now");
    b.heartbeat("silent", minute).await.expect("heartbeat");
    a.heartbeat("a-host", minute).await.expect("heartbeat");
    a.publish_details("a-host", &zone("Asia/Tokyo")).await.expect("publish again");
    let members = b.members().await.expect("members");
    assert!(members.iter().all(|m| m.lapses_at >= before + minute), "{members:?}");
    assert_eq!(
        listed(members),
        [("a-host".to_owned(), zone("Asia/Tokyo")), ("silent".to_owned(), MemberDetails::default())]
    );

    let joining = |instance: &str, zone: &str| {
        SchedulerBuilder::default()
            .coordinator(b.clone())
            .instance(instance)
            .membership_ttl(minute)
            .fleet_setting("crontab_zone", zone)
            .member_about("version", "1")
            .build()
    };
    let refused = joining("b-host", "UTC").check_join().await.expect_err("another zone");
    assert!(matches!(refused, JoinError::Disagrees(_)), "{refused}");
    assert_eq!(
        refused.to_string(),
        r#"refused to join the fleet: crontab_zone is "UTC" here but "Asia/Tokyo" on live member "a-host""#
    );
    // Its own previous process is not compared (nor refused once it has not heartbeated
    // again for half a TTL; `a-host` heartbeated with a longer TTL than this one's).
    let brief = Duration::from_millis(600);
    let restarted = SchedulerBuilder::default()
        .coordinator(b.clone())
        .instance("a-host")
        .membership_ttl(brief)
        .fleet_setting("crontab_zone", "UTC")
        .build();
    restarted.check_join().await.expect("its own previous process is not compared");
    a.publish_details("a-host", &zone("Asia/Tokyo")).await.expect("publish again");
    let b_host = joining("b-host", "Asia/Tokyo");
    b_host.check_join().await.expect("the same zone");
    b.heartbeat("b-host", minute).await.expect("heartbeat");
    for n in 0..30 {
        let job = Job::builder(format!("job-{n}")).every(Duration::from_secs(3600)).handler(ok).build();
        b_host.add(job.expect("job")).expect("add");
    }
    let fleet = b_host.fleet().await.expect("fleet").expect("a membership");
    let shown: Vec<(&str, Option<&str>)> = fleet
        .iter()
        .map(|m| (m.instance.as_str(), m.details.about.get("version").map(String::as_str)))
        .collect();
    assert_eq!(shown, [("a-host", None), ("b-host", Some("1")), ("silent", None)], "published at join");
    assert_eq!(fleet.iter().map(|m| m.owned_jobs).sum::<usize>(), 30, "every job has one owner");
    assert!(fleet.iter().all(|m| m.last_heartbeat >= before), "{fleet:?}");

    // Another process that heartbeats under the instance id: refused.
    let twin = a.clone();
    let beating = tokio::spawn(async move {
        loop {
            twin.heartbeat("twin", brief).await.expect("heartbeat");
            tokio::time::sleep(brief / 6).await;
        }
    });
    tokio::time::sleep(brief / 3).await;
    let second =
        SchedulerBuilder::default().coordinator(b.clone()).instance("twin").membership_ttl(brief).build();
    let refused = second.check_join().await.expect_err("a live process under the same id");
    beating.abort();
    assert!(matches!(refused, JoinError::Duplicate(_)), "{refused}");
    assert!(refused.to_string().contains(r#"instance "twin" is a live member of the fleet"#), "{refused}");
    a.leave("twin").await.expect("leave");

    a.leave("a-host").await.expect("leave");
    b.heartbeat("brief", Duration::from_millis(20)).await.expect("heartbeat");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let ids: Vec<String> = b.members().await.expect("members").into_iter().map(|m| m.instance).collect();
    assert_eq!(ids, ["b-host", "silent"], "left and lapsed members are not listed");
}

/// A membership TTL long enough that a settled replica's next heartbeat (a third of it
/// later) comes well after the steps of a test that looks at how views agree sooner.
const SLOW_TTL: Duration = Duration::from_secs(30);

/// A fleet whose replicas heartbeat every [`SLOW_TTL`] / 3 once their views settle,
/// with `jobs()` on each replica named in `order` (added in that order, none started).
fn slow_fleet(order: &[&str]) -> Fleet {
    let mut fleet = Fleet::new(start())
        .with_shared_work(TAKEOVER_DELAY)
        .with_settings(|builder| builder.membership_ttl(SLOW_TTL));
    for instance in order {
        fleet.add_replica(instance, SignedDuration::ZERO, jobs());
    }
    fleet
}

/// Moves the fleet's time on by `steps` takeover delays, one at a time, with a short real
/// wait after each for the heartbeats that came due.
async fn step_delays(fleet: &mut Fleet, steps: u32) {
    for _ in 0..steps {
        fleet.advance(TAKEOVER_DELAY, Delivery::Together).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits (in real time) until each replica at `indexes` has a membership view: its first
/// heartbeat has been answered, so it is in the membership the others read next.
async fn until_joined(fleet: &Fleet, indexes: &[usize]) {
    let joined = || views(fleet, indexes).iter().all(Option::is_some);
    crate::replica::wait_until(Fleet::DEFAULT_TIMEOUT, joined, || "a replica never joined".into()).await;
}

/// The membership views of the replicas at `indexes`.
fn views(fleet: &Fleet, indexes: &[usize]) -> Vec<Option<Vec<String>>> {
    indexes.iter().map(|&index| fleet.replica(index).members()).collect()
}

/// Replicas started together (each one's first heartbeat sees only those that joined
/// before it) agree on the membership within a few takeover delays — while a view has
/// not settled the next heartbeat comes a takeover delay later, not a third of the
/// membership TTL (10 s here) — and from then on no trigger is claimed by two owners:
/// no replica records one `skipped-lost`. Nothing runs twice.
pub async fn replicas_started_together_agree_on_their_owners_within_a_few_takeover_delays(
    factory: &impl CoordinatorFactory,
) {
    let ns = namespace("started_together");
    let mut fleet = slow_fleet(&REPLICAS);
    for index in 0..REPLICAS.len() {
        fleet.start(index, factory.coordinator(&ns).await).await;
    }
    until_joined(&fleet, &[0, 1, 2]).await;
    step_delays(&mut fleet, 4).await;
    let all = Some(REPLICAS.iter().map(|r| r.to_string()).collect::<Vec<_>>());
    assert_eq!(views(&fleet, &[0, 1, 2]), [all.clone(), all.clone(), all], "four takeover delays in");
    let agreed = fleet.now();
    fleet.advance(Duration::from_secs(3), Delivery::Together).await;
    for (index, instance) in REPLICAS.iter().enumerate() {
        let lost: Vec<_> = records_after(&fleet, index, agreed)
            .into_iter()
            .filter(|r| r.outcome == Outcome::SkippedLost)
            .collect();
        assert_eq!(lost, [], "{instance} lost claims of triggers it owned");
    }
    fleet.stop_all().await;
    fleet.assert_shared_exactly_once();
}

/// Replicas started one after another, each once the one before has joined, at the same
/// instant of their clocks: the first one's first heartbeat saw only itself. Each looks
/// at the membership again [`MEMBERSHIP_JOIN_LOOK`] after its first heartbeat (not a
/// takeover delay later), and then each sees the whole fleet: replicas started together
/// agree on their owners before their first instants.
pub async fn replicas_started_together_see_each_other_at_their_second_heartbeat(
    factory: &impl CoordinatorFactory,
) {
    let ns = namespace("join_look");
    let mut fleet = slow_fleet(&REPLICAS);
    for index in 0..REPLICAS.len() {
        fleet.start(index, factory.coordinator(&ns).await).await;
        until_joined(&fleet, &[index]).await;
    }
    let alone = Some(vec![REPLICAS[0].to_string()]);
    assert_eq!(views(&fleet, &[0]), [alone], "the first replica's first heartbeat saw only itself");
    fleet.advance(MEMBERSHIP_JOIN_LOOK, Delivery::Together).await;
    let all = Some(REPLICAS.iter().map(|r| r.to_string()).collect::<Vec<_>>());
    let agreed = || views(&fleet, &[0, 1, 2]).iter().all(|view| *view == all);
    crate::replica::wait_until(Fleet::DEFAULT_TIMEOUT, agreed, || {
        format!("the views {:?} a join look after the first heartbeats", views(&fleet, &[0, 1, 2]))
    })
    .await;
    fleet.stop_all().await;
    fleet.assert_shared_exactly_once();
}

/// A replica joins a fleet whose views have settled (heartbeats every 10 s here): until
/// the others see it, it and they both take themselves for the owner of its jobs. When
/// it claims first, they lose those claims, and that tells them their view is out of
/// date: each looks at the membership again a takeover delay after its last look, not
/// at its next heartbeat. Nothing runs twice.
pub async fn a_replica_that_lost_a_trigger_it_owned_looks_at_the_membership_again(
    factory: &impl CoordinatorFactory,
) {
    let ns = namespace("lost_owned");
    // The joiner is added first, so that its time is moved first (`Delivery::InTurn`):
    // its claims go out before the others'.
    let order = [REPLICAS[2], REPLICAS[0], REPLICAS[1]];
    let mut fleet = slow_fleet(&order);
    for index in [1, 2] {
        fleet.start(index, factory.coordinator(&ns).await).await;
    }
    until_joined(&fleet, &[1, 2]).await;
    step_delays(&mut fleet, 4).await;
    let two = Some(REPLICAS[..2].iter().map(|r| r.to_string()).collect::<Vec<_>>());
    assert_eq!(views(&fleet, &[1, 2]), [two.clone(), two], "the first two agree");
    fleet.start(0, factory.coordinator(&ns).await).await;
    until_joined(&fleet, &[0]).await;
    let next = Timestamp::from_second(fleet.now().as_second() + 1).expect("an instant");
    fleet.advance_to(next, Delivery::InTurn).await;
    let lost =
        |index| records_after(&fleet, index, next.checked_sub(SignedDuration::from_millis(1)).unwrap());
    let lost: usize =
        [1, 2].iter().map(|&i| lost(i).iter().filter(|r| r.outcome == Outcome::SkippedLost).count()).sum();
    assert!(lost > 0, "the first two lost none of the joiner's triggers: the case did not happen");
    step_delays(&mut fleet, 2).await;
    let all = Some(REPLICAS.iter().map(|r| r.to_string()).collect::<Vec<_>>());
    assert_eq!(views(&fleet, &[1, 2]), [all.clone(), all], "two takeover delays after their lost claims");
    fleet.advance(Duration::from_secs(2), Delivery::Together).await;
    fleet.stop_all().await;
    fleet.assert_shared_exactly_once();
}

/// A replica that dies (stops heartbeating and claiming, never leaves): its triggers run
/// on the others after the takeover delay until its membership lapses, then the others
/// own its jobs. Before it died, no replica claimed every trigger (the work was shared);
/// no trigger runs twice, including while the membership changes; each replica has one
/// record per trigger it tried to claim.
pub async fn a_dead_owners_jobs_move_within_the_membership_ttl(factory: &impl CoordinatorFactory) {
    let mut fleet = fleet(factory, "dead_owner").await;
    let shared_from = fleet.now();
    fleet.advance(Duration::from_secs(3), Delivery::Together).await;
    let total = 3 * jobs().len();
    for (replica, instance) in REPLICAS.iter().enumerate() {
        let claimed = records_after(&fleet, replica, shared_from).len();
        assert!(claimed < total, "{instance} claimed all {total} triggers: the work was not shared");
    }
    let owned_by_a = records_after(&fleet, 0, shared_from).iter().filter(|r| r.outcome.ran()).count();
    assert!(owned_by_a > 0, "replica-a owned none of the jobs");
    fleet.kill(0).await;
    until_members(&mut fleet, &REPLICAS[1..]).await;
    let moved = fleet.now();
    fleet.advance(Duration::from_secs(3), Delivery::Together).await;
    // After the move, the survivors own every job: each trigger claimed once, by its owner.
    let claims: usize = (1..3).map(|replica| records_after(&fleet, replica, moved).len()).sum();
    assert_eq!(claims, 3 * jobs().len(), "each trigger after the move claimed by one replica");
    // By the job's owner among the survivors, as the new view reckons it (not the owner
    // noted for the view before, which the others would take over from).
    for (replica, instance) in REPLICAS.iter().enumerate().skip(1) {
        for record in records_after(&fleet, replica, moved) {
            let owner = job_owner(&record.job, &REPLICAS[1..]);
            assert_eq!(owner, Some(*instance), "{record:?} claimed by a replica that is not its owner");
        }
    }
    fleet.stop_all().await;
    fleet.assert_shared_exactly_once();
}

/// An owner that is alive but cannot claim (its claims fail; it still heartbeats, so it
/// stays the owner): each of its triggers runs on another replica after the takeover
/// delay, and it records each one it tried to claim as `skipped-backend-unavailable`.
/// Once it can claim again, it runs its own triggers. Nothing runs twice.
pub async fn an_owner_that_cannot_claim_is_taken_over(factory: &impl CoordinatorFactory) {
    let mut fleet = fleet(factory, "owner_cannot_claim").await;
    let broken = fleet.now();
    fleet.replica(0).set_link(LinkState::ClaimsFail);
    fleet.advance(Duration::from_secs(3), Delivery::Together).await;
    let records = records_after(&fleet, 0, broken);
    assert!(!records.is_empty(), "replica-a owned none of the jobs");
    for record in &records {
        assert_eq!(record.outcome, Outcome::SkippedBackendUnavailable, "{record:?}");
    }
    fleet.replica(0).set_link(LinkState::Up);
    let mended = fleet.now();
    fleet.advance(Duration::from_secs(3), Delivery::Together).await;
    let ran = records_after(&fleet, 0, mended).iter().filter(|r| r.outcome.ran()).count();
    assert!(ran > 0, "replica-a runs its own triggers again");
    fleet.stop_all().await;
    fleet.assert_shared_exactly_once();
}

/// An owner whose claims are slow to be answered (its link holds them past the takeover
/// delay; no claims ahead, so it claims as its triggers come due, as on PostgreSQL):
/// while nothing says its claims are slow, the other replicas take its triggers over
/// after the takeover delay and it loses its claims when they are answered; once its
/// claims have been measured slow, it marks each instant as it claims, and the others
/// wait for its answers instead (up to the claim timeout): it runs its own triggers, and
/// the others record nothing for them. Nothing runs twice.
pub async fn a_slow_owner_that_marked_its_instant_is_not_taken_over(factory: &impl CoordinatorFactory) {
    let ns = namespace("slow_owner");
    let mut fleet = fleet_of(factory, &ns, |builder| builder.claim_ahead(Duration::ZERO), |_| jobs()).await;
    let owns = |job: &Job| job_owner(job.name(), &REPLICAS) == Some(REPLICAS[0]);
    let owned: Vec<std::sync::Arc<str>> =
        jobs().iter().filter(|job| owns(job)).map(|job| job.name().into()).collect();
    assert!(!owned.is_empty(), "replica-a owns none of the jobs");
    let records_at = |fleet: &Fleet, replica: usize, at: Timestamp| -> Vec<slotcron::RunRecord> {
        let records = fleet.replica(replica).records().into_iter();
        records.filter(|r| r.trigger == at && owned.contains(&r.job)).collect()
    };
    let next_second =
        |fleet: &Fleet| Timestamp::from_second(fleet.now().as_second() + 1).expect("an instant");

    // Its claims held for two takeover delays, before any was measured slow.
    let first = next_second(&fleet);
    fleet.replica(0).set_link(LinkState::ClaimsHeld);
    fleet.advance_to(later(first, 2 * TAKEOVER_DELAY), Delivery::Together).await;
    let taken: Vec<_> = [1, 2].into_iter().flat_map(|r| records_at(&fleet, r, first)).collect();
    assert_eq!(taken.iter().filter(|r| r.outcome.ran()).count(), owned.len(), "taken over: {taken:?}");
    fleet.replica(0).set_link(LinkState::Up);
    let lost = || records_at(&fleet, 0, first).iter().all(|r| r.outcome == Outcome::SkippedLost);
    let recorded = || records_at(&fleet, 0, first).len() == owned.len();
    crate::replica::wait_until(Fleet::DEFAULT_TIMEOUT, || recorded() && lost(), || "a lost".into()).await;

    // The next instant: held as long, and marked.
    let second = next_second(&fleet);
    fleet.replica(0).set_link(LinkState::ClaimsHeld);
    fleet.advance_to(later(second, 2 * TAKEOVER_DELAY), Delivery::Together).await;
    fleet.replica(0).set_link(LinkState::Up);
    let ran = || records_at(&fleet, 0, second).iter().filter(|r| r.outcome.ran()).count() == owned.len();
    crate::replica::wait_until(Fleet::DEFAULT_TIMEOUT, ran, || "replica-a ran its triggers".into()).await;
    fleet.advance(Duration::from_secs(2), Delivery::Together).await;
    for replica in [1, 2] {
        assert_eq!(records_at(&fleet, replica, second), [], "{} waited for the owner", REPLICAS[replica]);
    }
    fleet.stop_all().await;
    fleet.assert_shared_exactly_once();
}

/// An owner at its concurrency cap (`max_concurrent_runs` 1 on every replica; replica-a's
/// runs go on until its scheduler stops, so the first trigger it runs keeps its one slot):
/// it claims none of its later triggers and records each as `skipped-concurrency` (it
/// waited for a slot up to the grace window, then gave up), and each of those runs on
/// another replica once the takeover delay has passed. Nothing runs twice; every replica
/// has one record per trigger it tried to claim.
pub async fn an_owner_at_its_concurrency_cap_is_taken_over(factory: &impl CoordinatorFactory) {
    let capped = |builder: SchedulerBuilder| builder.max_concurrent_runs(1);
    let jobs_of = |index| if index == 0 { jobs_running(until_stopped) } else { jobs() };
    let mut fleet = fleet_of(factory, &namespace("owner_at_cap"), capped, jobs_of).await;
    let shared_from = fleet.now();
    fleet.advance(Duration::from_secs(3) + TAKEOVER_DELAY, Delivery::Together).await;
    let end = fleet.now();
    fleet.stop_all().await;
    let ran = fleet.replica(0).records().into_iter().filter(|r| r.outcome.ran()).count();
    assert!(ran <= 1, "replica-a ran {ran} triggers with one slot whose first run never ended");
    let records = records_after(&fleet, 0, shared_from);
    let at_cap: Vec<_> = records.iter().filter(|r| r.outcome == Outcome::SkippedConcurrency).collect();
    assert!(at_cap.len() + 1 >= records.len(), "replica-a at its cap: {records:?}");
    // The last instant's waiting triggers were skipped when the scheduler stopped; those
    // whose takeover delay had passed by then ran elsewhere.
    let taken_over: Vec<_> = at_cap.into_iter().filter(|r| later(r.trigger, TAKEOVER_DELAY) <= end).collect();
    assert!(!taken_over.is_empty(), "replica-a owned no trigger after its first run");
    let elsewhere: Vec<_> = (1..REPLICAS.len()).flat_map(|index| fleet.replica(index).records()).collect();
    for skipped in taken_over {
        let run = elsewhere
            .iter()
            .find(|r| r.job == skipped.job && r.trigger == skipped.trigger && r.outcome.ran())
            .unwrap_or_else(|| panic!("{}@{} ran nowhere", skipped.job, skipped.trigger));
        assert!(
            run.started >= later(skipped.trigger, TAKEOVER_DELAY),
            "{}@{} taken over at {}, before the takeover delay",
            run.job,
            run.trigger,
            run.started
        );
    }
    fleet.assert_shared_exactly_once();
}

/// A paused job's triggers under shared work: each is refused once, by its owner, which
/// records it `skipped-paused` and counts the refusal in its tally; no non-owner takes it
/// over (its tally says so, and a trigger of a paused job is not unclaimed), so none
/// records it; the other jobs' triggers run once each. Also `unclaimed` answers `false`
/// for a paused job's trigger.
pub async fn a_paused_jobs_triggers_are_refused_by_their_owner_alone(factory: &impl CoordinatorFactory) {
    let ns = namespace("paused_shared");
    let mut fleet = fleet_of(factory, &ns, |builder| builder, |_| jobs()).await;
    let steering = factory.coordinator(&ns).await;
    let paused_from = fleet.now();
    let controls = steering.controls().expect("the coordinator keeps pauses");
    controls.set_paused("job-0", Some(paused_from)).await.expect("pause");
    let key = trigger_key("job-0", ScheduleKind::Recurring, paused_from + SignedDuration::from_secs(3600));
    let free = trigger_key("job-1", ScheduleKind::Recurring, paused_from + SignedDuration::from_secs(3600));
    let triggers = [TriggerRef { job: "job-0", key: &key }, TriggerRef { job: "job-1", key: &free }];
    assert_eq!(steering.unclaimed(&triggers).await.expect("unclaimed"), [false, true]);
    fleet.advance(Duration::from_secs(3) + TAKEOVER_DELAY, Delivery::Together).await;
    fleet.stop_all().await;
    let mut refused = Vec::new();
    let mut ran = 0;
    for (replica, instance) in REPLICAS.iter().enumerate() {
        for record in records_after(&fleet, replica, paused_from) {
            if &*record.job == "job-0" {
                assert_eq!(record.outcome, Outcome::SkippedPaused, "{instance}: {record:?}");
                refused.push((*instance, record.trigger));
            } else if record.outcome.ran() {
                ran += 1;
            }
        }
    }
    refused.sort();
    assert_eq!(refused.len(), 3, "one record per trigger of the paused job across the fleet: {refused:?}");
    assert!(refused.iter().all(|(instance, _)| *instance == refused[0].0), "all by its owner: {refused:?}");
    assert_eq!(ran, 3 * (jobs().len() - 1), "the other jobs' triggers ran once each");
}
