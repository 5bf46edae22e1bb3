//! The coordinator on a Redis Cluster of three masters (`redis+cluster://`): the
//! conformance suite, the hash-tagged key layout (each job's keys on one node, jobs
//! spread over the nodes), a slot that moved (MOVED), a node killed and restarted, and a
//! master killed and replaced by its replica (claims on its slots fail closed, then
//! resume without reconnecting by hand).

mod support;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use slotcron::jiff::Timestamp;
use slotcron::{Claim, ClaimOutcome, Coordinator, Hold, StartMark, TriggerRef};
use slotcron_redis::{RedisConfig, RedisCoordinator};
use slotcron_testkit as testkit;
use support::cluster::RedisCluster;
use support::factory;

const HOLD: Option<Hold> =
    Some(Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::ZERO });

/// The claim of `key`: a recurring trigger's (`{job}:{trigger}`, the trigger the instant
/// in the key), or a one-shot's (the job name alone, at 2024-05-17T00:00:00Z).
fn claim<'a>(job: &'a str, key: &'a str) -> Claim<'a> {
    match key.split_once(':').and_then(|(_, at)| at.parse::<Timestamp>().ok()) {
        Some(trigger) => Claim { job, trigger, key, instance: "host-1", hold: HOLD },
        None => {
            let trigger = "2024-05-17T00:00:00Z".parse().unwrap();
            Claim { job, trigger, key, instance: "host-1", hold: None }
        }
    }
}

fn won(outcome: ClaimOutcome) -> u64 {
    match outcome {
        ClaimOutcome::Won { fencing_token } => fencing_token,
        other => panic!("{other:?}"),
    }
}

async fn connect(cluster: &RedisCluster) -> RedisCoordinator {
    RedisCoordinator::connect(RedisConfig::new(cluster.url()).key_prefix("app:")).await.unwrap()
}

/// The coordinator suite, each case on a cluster of its own.
macro_rules! suite_on_a_cluster {
    ($($case:ident),*) => {$(
        #[tokio::test]
        async fn $case() {
            let cluster = RedisCluster::start();
            testkit::$case(&factory(RedisConfig::new(cluster.url()))).await;
        }
    )*};
}

suite_on_a_cluster!(
    claim_contract,
    namespaces_are_isolated,
    skewed_clocks,
    staggered_starts,
    racing_replicas,
    one_shots_survive_restarts,
    claims_hold_until_an_absolute_instant,
    the_high_water_mark_refuses_handled_triggers,
    pauses_and_requests,
    a_cancel_asked_of_one_replica_stops_the_run_another_holds,
    membership_contract,
    member_details_and_the_join_check,
    an_owner_that_cannot_claim_is_taken_over,
    a_slow_owner_that_marked_its_instant_is_not_taken_over,
    an_owner_at_its_concurrency_cap_is_taken_over,
    a_paused_jobs_triggers_are_refused_by_their_owner_alone,
    batch_claims,
    a_batch_of_which_another_replica_won_some,
    every_claim_rule_holds_within_a_batch,
    start_marks_contract,
    counted_marks_contract,
    failure_streaks_contract
);

/// The suite over TLS (`rediss+cluster://`; the cluster bus too), trusting the test CA
/// of tests/data/tls-cluster.
#[tokio::test]
async fn racing_replicas_over_tls() {
    let certificates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tls-cluster");
    let cluster = RedisCluster::start_tls(&certificates);
    assert!(cluster.url().starts_with("rediss+cluster://"));
    let ca = std::fs::read(certificates.join("ca.crt")).unwrap();
    let config = RedisConfig::new(cluster.url()).tls_root_certificate(ca);
    testkit::racing_replicas(&factory(config)).await;
}

#[tokio::test]
async fn each_jobs_keys_carry_its_hash_tag_on_one_node_and_jobs_spread_over_the_nodes() {
    let cluster = RedisCluster::start();
    let coordinator = connect(&cluster).await;
    let jobs: Vec<String> = (0..12).map(|n| format!("job-{n}")).collect();
    let mut expected = vec![Vec::new(); 3];
    for job in &jobs {
        let key = format!("{job}:2024-05-17T00:00:00Z");
        assert_eq!(won(coordinator.claim(&claim(job, &key)).await.unwrap()), 1);
        assert_eq!(won(coordinator.claim(&claim(job, job)).await.unwrap()), 2, "a one-shot's key");
        let node = cluster.node_of(&format!("{{{job}}}"));
        expected[node].extend([
            format!("app:{{{job}}}:2024-05-17T00:00:00Z"),
            format!("app:{{{job}}}:fencing"),
            format!("app:{{{job}}}"),
            // The register of unstarted claims: neither claim is marked.
            format!("app:{{{job}}}:unstarted"),
        ]);
    }
    for keys in &mut expected {
        keys.sort();
    }
    assert_eq!(cluster.keys_by_node(), expected);
    assert!(expected.iter().filter(|keys| !keys.is_empty()).count() > 1, "{expected:?}");
}

/// The registers of unstarted claims live on their jobs' nodes: `unstarted` reads them
/// all, and one call of marks or takeovers over jobs on every node answers each claim.
#[tokio::test]
async fn start_marks_and_takeovers_of_jobs_spread_over_the_nodes() {
    let cluster = RedisCluster::start();
    let coordinator = connect(&cluster).await;
    let jobs: Vec<String> = (0..24).map(|n| format!("job-{n}")).collect();
    let keys: Vec<String> = jobs.iter().map(|job| format!("{job}:2024-05-17T00:00:00Z")).collect();
    let claims: Vec<Claim<'_>> = jobs.iter().zip(&keys).map(|(job, key)| claim(job, key)).collect();
    for outcome in coordinator.claim_batch(&claims).await {
        assert_eq!(won(outcome.unwrap()), 1);
    }
    let names: Vec<&str> = jobs.iter().map(String::as_str).collect();
    let listed = |instance: &'static str| {
        let coordinator = &coordinator;
        let names = &names;
        async move {
            let unstarted = coordinator.unstarted(instance, names).await.unwrap();
            unstarted.into_iter().map(|u| u.key).collect::<BTreeSet<String>>()
        }
    };
    assert_eq!(listed("host-1").await, keys.iter().cloned().collect());
    let (marked, taken) = keys.split_at(12);
    let marks: Vec<StartMark<'_>> =
        jobs.iter().zip(marked).map(|(job, key)| StartMark { job, key }).collect();
    assert_eq!(coordinator.mark_starts("host-1", &marks).await.unwrap(), vec![true; 12]);
    assert_eq!(listed("host-1").await, taken.iter().cloned().collect());
    let refs: Vec<TriggerRef<'_>> =
        jobs.iter().zip(&keys).map(|(job, key)| TriggerRef { job, key }).collect();
    let outcomes = coordinator.take_over("host-1", "host-2", &refs).await;
    for (k, outcome) in outcomes.into_iter().enumerate() {
        let expected = if k < 12 { ClaimOutcome::Lost } else { ClaimOutcome::Won { fencing_token: 2 } };
        assert_eq!(outcome.unwrap(), expected, "{}", keys[k]);
    }
    assert!(listed("host-1").await.is_empty());
    assert_eq!(listed("host-2").await, taken.iter().cloned().collect());
    let on_nodes =
        cluster.keys_by_node().iter().filter(|keys| keys.iter().any(|k| k.ends_with(":unstarted"))).count();
    assert!(on_nodes > 1, "the registers sit on several nodes");
}

#[tokio::test]
async fn a_claim_whose_slot_moved_is_redirected() {
    let cluster = RedisCluster::start();
    let coordinator = connect(&cluster).await;
    won(coordinator.claim(&claim("warm-up", "warm-up")).await.unwrap());
    let from = cluster.node_of("{moved}");
    cluster.move_slot_of("{moved}", (from + 1) % 3);
    let key = "moved:2024-05-17T00:00:00Z";
    assert_eq!(won(coordinator.claim(&claim("moved", key)).await.unwrap()), 1);
    assert_eq!(coordinator.claim(&claim("moved", key)).await.unwrap(), ClaimOutcome::Lost);
    assert!(cluster.keys_by_node()[(from + 1) % 3].contains(&"app:{moved}:fencing".to_owned()));
}

#[tokio::test]
async fn a_killed_node_fails_its_claims_closed_and_they_resume_once_it_is_back() {
    let mut cluster = RedisCluster::start();
    let coordinator = connect(&cluster).await;
    won(coordinator.claim(&claim("job", "job:2024-05-17T00:00:00Z")).await.unwrap());
    let node = cluster.node_of("{job}");
    cluster.stop_node(node);
    let down = coordinator.claim(&claim("job", "job:2024-05-17T00:00:01Z")).await;
    let error = down.expect_err("no claim while its node is down").to_string();
    assert!(error.contains("claim of app:{job}:2024-05-17T00:00:01Z"), "{error}");
    cluster.restart_node(node);
    // The client reconnects by itself; until it has, claims fail closed.
    let deadline = Instant::now() + Duration::from_secs(30);
    let outcome = loop {
        match coordinator.claim(&claim("job", "job:2024-05-17T00:00:02Z")).await {
            Ok(outcome) => break outcome,
            Err(e) => assert!(Instant::now() < deadline, "claims did not resume: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Nothing was persisted: the restarted node's fencing counter starts again.
    assert_eq!(outcome, ClaimOutcome::Won { fencing_token: 1 });
}

#[tokio::test]
async fn a_failover_fails_claims_closed_until_the_replica_serves_them() {
    let mut cluster = RedisCluster::start_with_replicas();
    let coordinator = connect(&cluster).await;
    won(coordinator.claim(&claim("job", "job:2024-05-17T00:00:00Z")).await.unwrap());
    let master = cluster.node_of("{job}");
    cluster.stop_node(master);
    let down = coordinator.claim(&claim("job", "job:2024-05-17T00:00:01Z")).await;
    assert!(down.is_err(), "no claim while the master is gone: {down:?}");
    // The replica takes over after the node timeout; the client finds it by itself.
    let deadline = Instant::now() + Duration::from_secs(20);
    let outcome = loop {
        match coordinator.claim(&claim("job", "job:2024-05-17T00:00:02Z")).await {
            Ok(outcome) => break outcome,
            Err(e) => assert!(
                Instant::now() < deadline,
                "claims did not resume: {e}\n{}",
                cluster.query::<String>((master + 1) % 3, redis::cmd("CLUSTER").arg("NODES"))
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(matches!(outcome, ClaimOutcome::Won { .. }), "{outcome:?}");
    assert_ne!(cluster.node_of("{job}"), master, "a replica serves the slot now");
}
