//! Redis stopped mid-run: every replica skips (fail closed) and none runs; once Redis is
//! back on the same address, claims succeed again without restarting the schedulers.

mod support;

use std::time::Duration;

use slotcron::jiff::{SignedDuration, Timestamp};
use slotcron::{Job, JobContext, Outcome, RunRecord};
use slotcron_testkit::{Delivery, Fleet};
use support::{RedisServer, factory};

async fn ok(_ctx: JobContext) -> Result<(), std::io::Error> {
    Ok(())
}

/// The outcomes of the triggers in `(from, until]`, by trigger: per trigger, the
/// outcome of each replica sorted by name.
fn outcomes(records: &[RunRecord], from: Timestamp, until: Timestamp) -> Vec<(Timestamp, Vec<Outcome>)> {
    let mut triggers: Vec<Timestamp> =
        records.iter().map(|r| r.trigger).filter(|t| *t > from && *t <= until).collect();
    triggers.sort();
    triggers.dedup();
    triggers
        .into_iter()
        .map(|t| {
            let mut of: Vec<&RunRecord> = records.iter().filter(|r| r.trigger == t).collect();
            of.sort_by(|a, b| a.instance.cmp(&b.instance));
            (t, of.into_iter().map(|r| r.outcome).collect())
        })
        .collect()
}

/// One success and two lost claims, in some order.
fn ran_once(outcomes: &[Outcome]) -> bool {
    let won = outcomes.iter().filter(|o| **o == Outcome::Succeeded).count();
    let lost = outcomes.iter().filter(|o| **o == Outcome::SkippedLost).count();
    outcomes.len() == 3 && won == 1 && lost == 2
}

#[tokio::test]
async fn a_stopped_redis_skips_every_trigger_on_every_replica_and_claims_resume_when_it_is_back() {
    // A Unix socket: the restarted server gets the same address without racing other
    // tests for a port.
    let mut server = RedisServer::unix();
    let build = factory(server.config());
    let start: Timestamp = "2024-05-17T00:00:00Z".parse().unwrap();
    let mut fleet = Fleet::new(start);
    for instance in ["replica-0", "replica-1", "replica-2"] {
        let job = Job::builder("tick").every(Duration::from_secs(1)).handler(ok).build().unwrap();
        let index = fleet.add_replica(instance, SignedDuration::ZERO, vec![job]);
        fleet.start(index, build("outage".into()).await).await;
    }
    fleet.advance(Duration::from_secs(5), Delivery::Together).await;
    let stopped_at = fleet.now();
    server.stop();
    fleet.advance(Duration::from_secs(3), Delivery::Together).await;
    let restarted_at = fleet.now();
    server.restart();
    fleet.advance(Duration::from_secs(5), Delivery::Together).await;
    fleet.stop_all().await;

    let records = fleet.records();
    let before = outcomes(&records, start, stopped_at);
    let down = outcomes(&records, stopped_at, restarted_at);
    let after = outcomes(&records, restarted_at, fleet.now());
    assert_eq!((before.len(), down.len(), after.len()), (5, 3, 5), "{records:#?}");
    for (trigger, outcomes) in before.iter().chain(&after) {
        assert!(ran_once(outcomes), "{trigger}: {outcomes:?}");
    }
    for (trigger, outcomes) in &down {
        assert_eq!(
            outcomes,
            &[Outcome::SkippedBackendUnavailable; 3],
            "{trigger}: none runs without a claim"
        );
    }
    let reasons = records.iter().filter(|r| r.outcome == Outcome::SkippedBackendUnavailable);
    for record in reasons {
        let reason = record.error.as_deref().unwrap_or_default();
        assert!(
            reason.starts_with("redis coordinator (unavailable): ")
                || reason.starts_with("redis coordinator (outcome-unknown): "),
            "{reason}"
        );
    }
}
