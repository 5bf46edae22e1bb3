//! On a Redis Cluster too, a claim whose reply is lost is read back, not guessed, and
//! the cluster client never sends it again by itself (which could find the claim it had
//! just made and answer "lost"). Each node announces the port of a TCP forwarder in
//! front of it, so the client reaches every node through one.

mod support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use slotcron::jiff::Timestamp;
use slotcron::{Claim, ClaimOutcome, Coordinator};
use slotcron_redis::{RedisConfig, RedisCoordinator};
use slotcron_testkit::{Fault, FaultProxy};
use support::cluster::RedisCluster;

/// A claim of `key` (`job:{trigger}`), whose trigger is the instant in the key.
fn claim(key: &str) -> Claim<'_> {
    let trigger: Timestamp = key.strip_prefix("job:").unwrap().parse().unwrap();
    let hold =
        Some(slotcron::Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::ZERO });
    Claim { job: "job", trigger, key, instance: "proxied", hold }
}

/// A cluster whose nodes sit behind proxies, the proxy in front of the node serving
/// `job`, and a coordinator that has already claimed once (connected, script loaded).
async fn setup() -> (RedisCluster, FaultProxy, RedisCoordinator, usize) {
    let proxies = Arc::new(Mutex::new(Vec::new()));
    let started = proxies.clone();
    let handle = tokio::runtime::Handle::current();
    // Off the runtime's thread, which goes on driving the proxies meanwhile.
    let cluster = tokio::task::spawn_blocking(move || {
        RedisCluster::start_announcing(|port| {
            let proxy = handle.block_on(FaultProxy::start(SocketAddr::from(([127, 0, 0, 1], port))));
            let announced = proxy.addr().port();
            started.lock().unwrap().push(proxy);
            announced
        })
    })
    .await
    .unwrap();
    // A read-back on a loaded machine (the CI runs many tests at once) may wait for the
    // node's connection to be made again: the test is about what it finds, not how fast.
    let config = RedisConfig::new(cluster.url()).response_timeout(Duration::from_secs(10));
    let coordinator = RedisCoordinator::connect(config).await.unwrap();
    let warm_up = coordinator.claim(&claim("job:2024-05-17T00:00:00Z")).await.unwrap();
    assert_eq!(warm_up, ClaimOutcome::Won { fencing_token: 1 });
    let node = cluster.node_of("{job}");
    // The proxies were started in the nodes' order; a node whose port was taken got a
    // new proxy: the last ones started are the nodes'.
    let mut proxies = std::mem::take(&mut *proxies.lock().unwrap());
    let first = proxies.len() - 3;
    let proxy = proxies.swap_remove(first + node);
    (cluster, proxy, coordinator, node)
}

fn stored(cluster: &RedisCluster, node: usize, key: &str) -> Option<String> {
    cluster.query(node, redis::cmd("GET").arg(key))
}

const KEY: &str = "job:2024-05-17T00:00:05Z";

#[tokio::test]
async fn a_lost_reply_to_a_won_claim_is_a_win_with_the_stored_fencing_token() {
    let (cluster, proxy, coordinator, node) = setup().await;
    let _: () = cluster.query(node, redis::cmd("CONFIG").arg("RESETSTAT"));
    proxy.inject(Fault::LoseNextReply);
    let outcome = coordinator.claim(&claim(KEY)).await.unwrap();
    assert_eq!(proxy.lost(), 1, "the reply was lost");
    assert_eq!(outcome, ClaimOutcome::Won { fencing_token: 2 });
    // One claim script, not sent again, then one read-back: three MGETs, the script's
    // own of the trigger key and of the job's state, and the read-back's.
    let stats: String = cluster.query(node, redis::cmd("INFO").arg("commandstats"));
    let calls = |command: &str| {
        let line = stats.lines().find(|l| l.starts_with(&format!("cmdstat_{command}:")));
        line.and_then(|l| l.split("calls=").nth(1)?.split(',').next()?.parse::<u64>().ok()).unwrap_or(0)
    };
    assert_eq!((calls("evalsha"), calls("mget"), calls("get")), (1, 3, 0), "{stats}");
    // The job's state: "{fencing token} {high-water mark}".
    let state: String = cluster.query(node, redis::cmd("GET").arg("slotcron:{job}:fencing"));
    assert!(state.starts_with("2 "), "the script ran once: {state}");
    let value = stored(&cluster, node, "slotcron:{job}:2024-05-17T00:00:05Z").unwrap();
    assert!(value.starts_with("2/") && value.ends_with(" proxied"), "{value}");
}

#[tokio::test]
async fn a_lost_reply_when_another_replica_holds_the_trigger_is_a_loss() {
    let (cluster, proxy, coordinator, node) = setup().await;
    let other = RedisCoordinator::connect(RedisConfig::new(cluster.url())).await.unwrap();
    let mut theirs = claim(KEY);
    theirs.instance = "other";
    assert_eq!(other.claim(&theirs).await.unwrap(), ClaimOutcome::Won { fencing_token: 2 });
    proxy.inject(Fault::LoseNextReply);
    let outcome = coordinator.claim(&claim(KEY)).await.unwrap();
    assert_eq!(proxy.lost(), 1, "the reply was lost");
    assert_eq!(outcome, ClaimOutcome::Lost);
    let value = stored(&cluster, node, "slotcron:{job}:2024-05-17T00:00:05Z").unwrap();
    assert!(value.ends_with(" other"), "{value}");
}
