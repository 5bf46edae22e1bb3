//! The suite's cases for placement: jobs placed on labels
//! ([`JobBuilder::on`](slotcron::JobBuilder::on)) in fleets whose members carry different
//! labels ([`SchedulerBuilder::labels`](slotcron::SchedulerBuilder::labels)), published in
//! the membership.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use jiff::Timestamp;
use slotcron::{Job, Labels, Outcome, RunRecord, SchedulerBuilder, job_owner};

use crate::ownership_suite::{REPLICAS, TAKEOVER_DELAY, fleet_of, jobs, ok, records_after};
use crate::suite::{later, namespace};
use crate::{CoordinatorFactory, Delivery, Fleet};

/// The labels of each replica of [`REPLICAS`] in [`placed_jobs_run_only_on_members_carrying_their_labels`].
const LABELS: [&[&str]; 3] = [&["region=eu", "gpu=a100"], &["region=eu"], &["region=us"]];

/// A job every second, placed on `on`.
fn placed(name: &str, on: &[&str]) -> Job {
    Job::builder(name).every(Duration::from_secs(1)).on(on).handler(ok).build().expect("a valid job")
}

/// A scheduler setting that gives the replicas `labels[0]`, `labels[1]`... in the order
/// they start (the fleet starts them in index order).
fn labelled(
    labels: [&'static [&'static str]; 3],
) -> impl Fn(SchedulerBuilder) -> SchedulerBuilder + Send + Sync {
    let started = Arc::new(AtomicUsize::new(0));
    move |builder| {
        let index = started.fetch_add(1, Ordering::SeqCst) % labels.len();
        builder.labels(Labels::parse(labels[index]).expect("valid labels"))
    }
}

/// Steps the fleet past the members' first reads of each other's labels (a read at join
/// may come before another member published its details; the next comes a membership TTL
/// later), then three seconds and two takeover delays more; returns the fleet's time
/// between the two.
async fn warmed_up_then_three_seconds(fleet: &mut Fleet) -> Timestamp {
    fleet.advance(Duration::from_secs(2), Delivery::Together).await;
    let from = fleet.now();
    // Two takeover delays: a trigger no member runs is recorded then.
    fleet.advance(Duration::from_secs(3) + 2 * TAKEOVER_DELAY, Delivery::Together).await;
    fleet.stop_all().await;
    from
}

/// Replica-a carries `region=eu` and `gpu=a100`, replica-b `region=eu`, replica-c
/// `region=us`. Jobs placed on `region=eu` run once per trigger, on replica-a or
/// replica-b; the job placed on `gpu` runs on replica-a alone; unplaced jobs run
/// anywhere. A member without a job's labels records (and claims) none of its triggers,
/// and a run that started before its trigger's takeover delay had passed is its owner's:
/// the rendezvous owner among the members carrying the job's labels, as every replica
/// computes it (a member that claimed later took the trigger over from a slow owner).
pub async fn placed_jobs_run_only_on_members_carrying_their_labels(factory: &impl CoordinatorFactory) {
    let all_jobs = || {
        let eu = (0..8).map(|i| placed(&format!("eu-{i}"), &["region=eu"]));
        let gpu = placed("render", &["gpu"]);
        let anywhere = (0..4).map(|i| placed(&format!("any-{i}"), &[]));
        eu.chain([gpu]).chain(anywhere).collect::<Vec<_>>()
    };
    let ns = namespace("placement_runs");
    let mut fleet = fleet_of(factory, &ns, labelled(LABELS), |_| all_jobs()).await;
    let from = warmed_up_then_three_seconds(&mut fleet).await;
    let carriers = |job: &Job| -> Vec<&str> {
        let carries = |labels: &[&str]| job.placement().is_met_by(&Labels::parse(labels).expect("labels"));
        REPLICAS
            .iter()
            .zip(LABELS)
            .filter(|(_, labels)| carries(labels))
            .map(|(replica, _)| *replica)
            .collect()
    };
    let mut ran = Vec::new();
    for (index, instance) in REPLICAS.iter().enumerate() {
        let replica = fleet.replica(index);
        for (job, trigger) in replica.claimed().into_iter().chain(replica.claimed_ahead()) {
            let job = all_jobs().into_iter().find(|j| j.name() == &*job).expect("its job");
            assert!(carriers(&job).contains(instance), "{instance} claimed {}@{trigger}", job.name());
        }
        for record in records_after(&fleet, index, from) {
            let job = all_jobs().into_iter().find(|job| job.name() == &*record.job).expect("its job");
            let carrying = carriers(&job);
            assert!(carrying.contains(instance), "a member without the labels recorded {record:?}");
            if !record.outcome.ran() {
                continue;
            }
            // Before the takeover delay (on the replicas' clocks) only the owner claims.
            let owner = job_owner(job.name(), &carrying).expect("a member carries the labels");
            if record.started < later(record.trigger, TAKEOVER_DELAY) {
                assert_eq!(*instance, owner, "only the owner among the carriers claims at once: {record:?}");
            }
            ran.push((record.job.clone(), record.trigger));
        }
    }
    ran.sort();
    ran.dedup();
    assert_eq!(ran.len(), 3 * all_jobs().len(), "every trigger of every job ran: {ran:?}");
    let render: Vec<&(Arc<str>, Timestamp)> = ran.iter().filter(|(job, _)| &**job == "render").collect();
    assert_eq!(render.len(), 3, "the gpu job ran on replica-a");
    fleet.assert_shared_exactly_once();
}

/// No member carries `gpu`: each trigger of the job placed on it is claimed once across
/// the fleet, two takeover delays after its instant, by the job's rendezvous owner among
/// all the members, and recorded
/// `skipped-no-member` with the labels it needs; no other replica records it, and it
/// never runs. The other jobs run once per trigger.
pub async fn a_job_no_live_member_can_run_is_recorded_skipped_no_member(factory: &impl CoordinatorFactory) {
    let all_jobs = || jobs().into_iter().chain([placed("render", &["gpu"])]).collect::<Vec<_>>();
    let labels: [&[&str]; 3] = [&["region=eu"], &["region=eu"], &[]];
    let ns = namespace("placement_no_member");
    let mut fleet = fleet_of(factory, &ns, labelled(labels), |_| all_jobs()).await;
    let from = warmed_up_then_three_seconds(&mut fleet).await;
    let recorder = job_owner("render", &REPLICAS).expect("a member");
    let mut skipped: Vec<(&str, RunRecord)> = Vec::new();
    let mut ran = 0;
    for (index, instance) in REPLICAS.iter().enumerate() {
        for record in records_after(&fleet, index, from) {
            if &*record.job == "render" {
                skipped.push((instance, record));
            } else if record.outcome.ran() {
                ran += 1;
            }
        }
    }
    assert_eq!(skipped.len(), 3, "one record per trigger across the fleet: {skipped:?}");
    for (instance, record) in &skipped {
        assert_eq!((*instance, record.outcome), (recorder, Outcome::SkippedNoMember), "{record:?}");
        let reason = record.error.as_deref().unwrap_or_default();
        assert!(reason.contains("no live member carries the labels the job is placed on (gpu)"), "{reason}");
    }
    assert_eq!(ran, 3 * jobs().len(), "the other jobs' triggers ran once each");
}

/// Replica-a alone carries `gpu`, and dies (a crash: its entry stays in the membership
/// until it lapses, on the coordinator's clock, which the fleet's steps do not move).
/// Every trigger of the job placed on `gpu` after the crash is still recorded once across
/// the fleet: `skipped-no-member`, by the job's rendezvous owner among the members without
/// the label, because no carrier claimed it within two takeover delays. None is run, none
/// is left without a record. (Once the entry has lapsed, no live member carries the label:
/// [`a_job_no_live_member_can_run_is_recorded_skipped_no_member`].)
pub async fn a_trigger_whose_only_carrier_died_is_recorded_skipped_no_member(
    factory: &impl CoordinatorFactory,
) {
    let all_jobs = || jobs().into_iter().chain([placed("render", &["gpu"])]).collect::<Vec<_>>();
    let labels: [&[&str]; 3] = [&["gpu"], &[], &[]];
    let ns = namespace("placement_carrier_died");
    let mut fleet = fleet_of(factory, &ns, labelled(labels), |_| all_jobs()).await;
    fleet.advance(Duration::from_secs(2), Delivery::Together).await;
    fleet.kill(0).await;
    let killed = fleet.now();
    fleet.advance(Duration::from_secs(4) + 2 * TAKEOVER_DELAY, Delivery::Together).await;
    // The last trigger whose recorder has looked: two takeover delays after it.
    let looked = fleet.now().checked_sub(2 * TAKEOVER_DELAY).expect("a valid instant");
    let last = Timestamp::from_second(looked.as_second()).expect("a valid instant");
    fleet.stop_all().await;
    let recorder = job_owner("render", &REPLICAS[1..]).expect("a member");
    let mut recorded: Vec<(Timestamp, &str, RunRecord)> = Vec::new();
    for (index, instance) in REPLICAS.iter().enumerate().skip(1) {
        let render = records_after(&fleet, index, killed).into_iter().filter(|r| &*r.job == "render");
        recorded.extend(render.map(|record| (record.trigger, *instance, record)));
    }
    recorded.sort_by_key(|(trigger, ..)| *trigger);
    let triggers: Vec<Timestamp> = recorded.iter().map(|(trigger, ..)| *trigger).collect();
    let first = Timestamp::from_second(killed.as_second() + 1).expect("a valid instant");
    let expected: Vec<Timestamp> = (first.as_second()..=last.as_second())
        .map(|second| Timestamp::from_second(second).expect("a valid instant"))
        .collect();
    assert_eq!(triggers, expected, "each trigger after the crash recorded once: {recorded:?}");
    for (_, instance, record) in &recorded {
        assert_eq!((*instance, record.outcome), (recorder, Outcome::SkippedNoMember), "{record:?}");
    }
    for (_, _, record) in &recorded {
        let reason = record.error.as_deref().unwrap_or_default();
        assert!(reason.contains("the members carrying them (replica-a) may have died"), "{record:?}");
    }
}
