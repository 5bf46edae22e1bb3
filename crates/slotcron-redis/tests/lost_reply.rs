//! A claim whose reply is lost is not a win: the coordinator reads the trigger key back
//! and compares the stored token with its own. A start mark or a takeover whose reply is
//! lost is sent once more (both are idempotent). The faults come from a TCP forwarder in
//! front of a real `redis-server`, so the script really runs (or really never arrives).

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use redis::Commands;
use slotcron::jiff::Timestamp;
use slotcron::{Claim, ClaimOutcome, Coordinator};
use slotcron_redis::{RedisConfig, RedisCoordinator};
use slotcron_testkit::{Fault, FaultProxy};
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

/// The job's fencing counter, from its state `{fencing token} {high-water mark}`.
fn fencing_counter(server: &RedisServer) -> u64 {
    let state: String = server.admin_connection().unwrap().get("slotcron:fencing:job").unwrap();
    state.split(' ').next().unwrap().parse().unwrap()
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
    assert!(value.starts_with("2/") && value.ends_with(" proxied"), "{value}");
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
    assert!(value.starts_with("2/") && value.ends_with(" proxied"), "{value}");
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

/// 64 triggers of the job a second apart, in 2100: ahead of the server's clock, so that
/// the high-water mark (which another replica's claims move up) refuses none of them.
fn batch_keys() -> Vec<String> {
    (0..64).map(|k| format!("job:2100-01-01T00:{:02}:{:02}Z", k / 60, k % 60)).collect()
}

/// A batch's lost reply is read back claim by claim in one round trip: the claims the
/// script made are won with their stored tokens, those another replica held are lost.
#[tokio::test]
async fn a_lost_reply_to_a_batch_is_read_back_claim_by_claim() {
    let (server, proxy, coordinator) = setup().await;
    let other = RedisCoordinator::connect(server.config()).await.unwrap();
    let keys = batch_keys();
    let claims: Vec<Claim<'_>> = keys.iter().map(|key| claim(key, "proxied")).collect();
    // Another replica won every fourth trigger first.
    for key in keys.iter().step_by(4) {
        assert!(matches!(other.claim(&claim(key, "other")).await.unwrap(), ClaimOutcome::Won { .. }));
    }
    proxy.inject(Fault::LoseNextReply);
    let outcomes = coordinator.claim_batch(&claims).await;
    assert_eq!(proxy.lost(), 1, "the batch's reply was lost");
    let mut tokens = Vec::new();
    for (k, (key, outcome)) in keys.iter().zip(outcomes).enumerate() {
        let value = stored(&server, &format!("slotcron:{key}")).unwrap();
        match outcome.unwrap() {
            ClaimOutcome::Won { fencing_token } => {
                assert!(k % 4 != 0, "{key} was the other replica's");
                assert!(
                    value.starts_with(&format!("{fencing_token}/")) && value.ends_with(" proxied"),
                    "{value}"
                );
                tokens.push(fencing_token);
            }
            ClaimOutcome::Lost => assert!(k % 4 == 0 && value.ends_with(" other"), "{key}: {value}"),
            other @ (ClaimOutcome::BehindMark | ClaimOutcome::Paused) => panic!("{key}: {other:?}"),
        }
    }
    assert_eq!(tokens.len(), 48);
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "fencing tokens in trigger order: {tokens:?}");
    assert_eq!(fencing_counter(&server), 1 + 16 + 48, "the script ran once");
}

/// A batch whose request was lost left no claims: read back as nobody's, made once more.
#[tokio::test]
async fn a_lost_batch_request_is_made_again() {
    let (server, proxy, coordinator) = setup().await;
    let keys = batch_keys();
    let claims: Vec<Claim<'_>> = keys.iter().map(|key| claim(key, "proxied")).collect();
    proxy.inject(Fault::LoseNextRequest);
    let outcomes = coordinator.claim_batch(&claims).await;
    assert_eq!(proxy.lost(), 1, "the request was lost");
    let tokens: Vec<u64> = outcomes
        .into_iter()
        .map(|o| match o.unwrap() {
            ClaimOutcome::Won { fencing_token } => fencing_token,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(tokens, (2..66).collect::<Vec<u64>>());
    assert_eq!(fencing_counter(&server), 65, "the script ran once");
}

/// A start mark whose reply was lost is sent once more: the mark is idempotent, so the
/// second call finds it made and answers marked.
#[tokio::test]
async fn a_lost_reply_to_a_start_mark_is_sent_again() {
    let (server, proxy, coordinator) = setup().await;
    assert_eq!(
        coordinator.claim(&claim(KEY, "proxied")).await.unwrap(),
        ClaimOutcome::Won { fencing_token: 2 }
    );
    proxy.inject(Fault::LoseNextReply);
    let marks = [slotcron::StartMark { job: "job", key: KEY }];
    assert_eq!(coordinator.mark_starts("proxied", &marks).await.unwrap(), [true]);
    assert_eq!(proxy.lost(), 1, "the reply was lost");
    let value = stored(&server, &format!("slotcron:{KEY}")).unwrap();
    assert!(value.starts_with("2/") && value.ends_with(" proxied"), "{value}");
    let listed: bool = redis::Commands::hexists(
        &mut server.admin_connection().unwrap(),
        "slotcron:fleet:unstarted:proxied",
        KEY,
    )
    .unwrap();
    assert!(!listed, "marked: its holder's register no longer lists it");
}

/// A takeover whose reply was lost is sent once more and finds its own takeover: won,
/// with the token the first call gave, and the job's counter incremented once.
#[tokio::test]
async fn a_lost_reply_to_a_takeover_is_sent_again_and_finds_its_own_takeover() {
    let (server, proxy, coordinator) = setup().await;
    let holder = RedisCoordinator::connect(server.config()).await.unwrap();
    assert_eq!(holder.claim(&claim(KEY, "gone")).await.unwrap(), ClaimOutcome::Won { fencing_token: 2 });
    proxy.inject(Fault::LoseNextReply);
    let refs = [slotcron::TriggerRef { job: "job", key: KEY }];
    let taken = coordinator.take_over("gone", "proxied", &refs).await.remove(0).unwrap();
    assert_eq!(proxy.lost(), 1, "the reply was lost");
    assert_eq!(taken, ClaimOutcome::Won { fencing_token: 3 });
    assert_eq!(fencing_counter(&server), 3, "taken over once");
    assert!(stored(&server, &format!("slotcron:{KEY}")).unwrap().starts_with("3/"));
}

/// A start mark whose reply cannot be had at all is an error of unknown outcome: the
/// runs do not start (fail closed).
#[tokio::test]
async fn a_start_mark_that_gets_no_reply_is_an_error_of_unknown_outcome() {
    let (_server, proxy, coordinator) = setup().await;
    proxy.inject(Fault::LoseNextReply);
    proxy.refuse(true);
    let marks = [slotcron::StartMark { job: "job", key: "job:2024-05-17T00:00:00Z" }];
    let error = coordinator.mark_starts("proxied", &marks).await.unwrap_err();
    assert_eq!(error.kind(), slotcron::CoordinatorErrorKind::OutcomeUnknown, "{error}");
}
