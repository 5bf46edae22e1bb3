//! A claim whose reply is lost is not a win: the coordinator reads the trigger key back
//! and compares the stored token with its own. The faults come from a TCP forwarder in
//! front of a real `redis-server`, so the script really runs (or really never arrives).

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use redis::Commands;
use slotcron::jiff::Timestamp;
use slotcron::testkit::{Fault, FaultProxy};
use slotcron::{Claim, ClaimOutcome, Coordinator};
use slotcron_redis::{RedisConfig, RedisCoordinator};
use support::{Listen, RedisServer};

const HOLD: Option<slotcron::Hold> =
    Some(slotcron::Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::ZERO });

/// A claim of `key` (`job:{trigger}`), whose trigger is the instant in the key.
fn claim<'a>(key: &'a str, instance: &'a str) -> Claim<'a> {
    let trigger: Timestamp = key.strip_prefix("job:").unwrap().parse().unwrap();
    Claim { job: "job", trigger, key, instance, hold: HOLD }
}

/// A server, a proxy in front of it, and a coordinator through the proxy that has
/// already made one claim (so its connection is up and the script loaded).
async fn setup() -> (RedisServer, FaultProxy, RedisCoordinator) {
    let server = RedisServer::tcp();
    let Listen::Tcp(port) = *server.listen() else { unreachable!() };
    let proxy = FaultProxy::start(SocketAddr::from(([127, 0, 0, 1], port))).await;
    let coordinator =
        RedisCoordinator::connect(RedisConfig::new(format!("redis://{}", proxy.addr()))).await.unwrap();
    let warm_up = coordinator.claim(&claim("job:2024-05-17T00:00:00Z", "proxied")).await.unwrap();
    assert_eq!(warm_up, ClaimOutcome::Won { fencing_token: 1 });
    (server, proxy, coordinator)
}

fn stored(server: &RedisServer, key: &str) -> Option<String> {
    server.admin_connection().unwrap().get(key).unwrap()
}

fn fencing_counter(server: &RedisServer) -> u64 {
    server.admin_connection().unwrap().get("slotcron:fencing:job").unwrap()
}

const KEY: &str = "job:2024-05-17T00:00:05Z";

#[tokio::test]
async fn a_lost_reply_to_a_won_claim_is_a_win_with_the_stored_fencing_token() {
    let (server, proxy, coordinator) = setup().await;
    proxy.inject(Fault::LoseNextReply);
    let outcome = coordinator.claim(&claim(KEY, "proxied")).await.unwrap();
    assert_eq!(proxy.lost(), 1, "the reply was lost");
    assert_eq!(outcome, ClaimOutcome::Won { fencing_token: 2 });
    assert_eq!(fencing_counter(&server), 2, "the script ran once");
    let value = stored(&server, &format!("slotcron:{KEY}")).unwrap();
    assert!(value.starts_with("2 ") && value.ends_with(" proxied"), "{value}");
}

#[tokio::test]
async fn a_lost_reply_when_another_replica_holds_the_trigger_is_a_loss() {
    let (server, proxy, coordinator) = setup().await;
    let other = RedisCoordinator::connect(server.config()).await.unwrap();
    assert_eq!(other.claim(&claim(KEY, "other")).await.unwrap(), ClaimOutcome::Won { fencing_token: 2 });
    proxy.inject(Fault::LoseNextReply);
    let outcome = coordinator.claim(&claim(KEY, "proxied")).await.unwrap();
    assert_eq!(proxy.lost(), 1, "the reply was lost");
    assert_eq!(outcome, ClaimOutcome::Lost);
    assert!(stored(&server, &format!("slotcron:{KEY}")).unwrap().ends_with(" other"));
}

#[tokio::test]
async fn a_lost_reply_that_cannot_be_read_back_is_an_error_not_a_win() {
    let (server, proxy, coordinator) = setup().await;
    proxy.inject(Fault::LoseNextReply);
    proxy.refuse(true);
    let error = coordinator.claim(&claim(KEY, "proxied")).await.unwrap_err().to_string();
    assert_eq!(proxy.lost(), 1, "the reply was lost");
    assert!(error.contains("outcome unknown") && error.contains("reading it back failed"), "{error}");
    // The script did run: the trigger is taken, and nobody runs it (fail closed).
    let value = stored(&server, &format!("slotcron:{KEY}")).unwrap();
    assert!(value.starts_with("2 ") && value.ends_with(" proxied"), "{value}");
}

#[tokio::test]
async fn a_lost_request_leaves_no_key_and_the_claim_is_made_again() {
    let (server, proxy, coordinator) = setup().await;
    proxy.inject(Fault::LoseNextRequest);
    let outcome = coordinator.claim(&claim(KEY, "proxied")).await.unwrap();
    assert_eq!(proxy.lost(), 1, "the request was lost");
    assert_eq!(outcome, ClaimOutcome::Won { fencing_token: 2 });
    assert_eq!(fencing_counter(&server), 2, "the script ran once");
}
