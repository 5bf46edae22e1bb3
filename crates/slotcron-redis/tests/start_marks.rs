//! What start marks and takeovers leave in Redis (one server): the claim's value and its
//! TTL, kept by a mark, the holder's register of unstarted claims (the mark itself), a
//! claim whose hold ended before its mark, claims ahead that their owner's start marks or
//! that a void drops or must keep, and a claim an older release marked in place.

mod support;

use std::time::Duration;

use redis::Commands;
use slotcron::jiff::{SignedDuration, Timestamp};
use slotcron::{
    AheadStart, AheadVoid, Claim, ClaimOutcome, Coordinator, Hold, StartMark, TriggerRef, Unstarted,
};
use slotcron_redis::RedisCoordinator;
use support::RedisServer;

const MINUTE: Option<Hold> =
    Some(Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::ZERO });

/// A hold that ends 2 ms after a claim of a trigger in the past.
const BRIEF: Option<Hold> =
    Some(Hold { slot: Duration::from_millis(1), run_budget: None, slack: Duration::from_millis(1) });

fn won(outcome: ClaimOutcome) -> u64 {
    match outcome {
        ClaimOutcome::Won { fencing_token } => fencing_token,
        other => panic!("{other:?}"),
    }
}

/// An instant `seconds` from now, whole seconds.
fn in_seconds(seconds: i64) -> Timestamp {
    Timestamp::from_second(Timestamp::now().as_second() + seconds).unwrap()
}

fn get(server: &RedisServer, key: &str) -> Option<String> {
    server.admin_connection().unwrap().get(key).unwrap()
}

/// The register of unstarted claims of `instance` (one server: one for all its jobs).
fn register(server: &RedisServer, instance: &str) -> std::collections::HashMap<String, String> {
    server.admin_connection().unwrap().hgetall(format!("slotcron:fleet:unstarted:{instance}")).unwrap()
}

fn pttl(server: &RedisServer, key: &str) -> i64 {
    server.admin_connection().unwrap().pttl(key).unwrap()
}

#[tokio::test]
async fn a_mark_keeps_the_claim_its_value_and_its_ttl_and_empties_the_register() {
    let server = RedisServer::tcp();
    let coordinator = RedisCoordinator::connect(server.config()).await.unwrap();
    let key = format!("tick:{}", in_seconds(60));
    let claim =
        Claim { job: "tick", trigger: in_seconds(60), key: &key, instance: "host-1 pid 7", hold: MINUTE };
    let token = won(coordinator.claim(&claim).await.unwrap());
    assert_eq!(register(&server, "host-1 pid 7").get(&key).map(String::as_str), Some("host-1 pid 7"));
    let stored = format!("slotcron:{key}");
    let before = pttl(&server, &stored);
    let claimed = get(&server, &stored).unwrap();

    let marks = [StartMark { job: "tick", key: &key }];
    assert_eq!(coordinator.mark_starts("host-1 pid 7", &marks).await.unwrap(), [true]);
    let value = get(&server, &stored).unwrap();
    assert!(value.starts_with(&format!("{token}/")) && value.ends_with(" host-1 pid 7"), "{value}");
    assert_eq!(value, claimed, "the mark leaves the claim's value as it was");
    let after = pttl(&server, &stored);
    assert!(after > 0 && after <= before, "the TTL is kept: {before} then {after} ms");
    let keys: Vec<String> = server.admin_connection().unwrap().keys("slotcron:fleet:unstarted:*").unwrap();
    assert!(keys.is_empty(), "an empty register is no key: {keys:?}");
    assert!(coordinator.unstarted("host-1 pid 7", &["tick"]).await.unwrap().is_empty());
    // Another claim of the marked trigger loses, and the takeover of a marked claim too.
    assert_eq!(coordinator.claim(&Claim { instance: "host-2", ..claim }).await.unwrap(), ClaimOutcome::Lost);
    let refs = [TriggerRef { job: "tick", key: &key }];
    assert_eq!(
        coordinator.take_over("host-1 pid 7", "host-2", &refs).await[0].as_ref().ok(),
        Some(&ClaimOutcome::Lost)
    );
}

/// A recurring claim of a trigger a minute past, held 2 ms: its key is gone once we look.
async fn expired_claim(coordinator: &RedisCoordinator, key: &str) -> u64 {
    let trigger = in_seconds(-60);
    let claim = Claim { job: "late", trigger, key, instance: "holder", hold: BRIEF };
    let token = won(coordinator.claim(&claim).await.unwrap());
    tokio::time::sleep(Duration::from_millis(50)).await;
    token
}

#[tokio::test]
async fn a_claim_whose_hold_ended_unmarked_is_taken_over_afresh_with_the_mark_kept() {
    let server = RedisServer::tcp();
    let coordinator = RedisCoordinator::connect(server.config()).await.unwrap();
    let key = format!("late:{}", in_seconds(-60));
    let token = expired_claim(&coordinator, &key).await;
    let stored = format!("slotcron:{key}");
    assert_eq!(get(&server, &stored), None, "the claim's hold ended");
    let listed = coordinator.unstarted("holder", &["late"]).await.unwrap();
    assert_eq!(listed, [Unstarted { job: "late".into(), key: key.clone() }]);
    let state = get(&server, "slotcron:fencing:late").unwrap();
    let mark = state.split_once(' ').unwrap().1.to_owned();

    let refs = [TriggerRef { job: "late", key: &key }];
    let taken = won(coordinator.take_over("holder", "taker", &refs).await.remove(0).unwrap());
    assert_eq!(taken, token + 1);
    assert_eq!(get(&server, "slotcron:fencing:late").unwrap(), format!("{taken} {mark}"), "the mark stays");
    assert!(get(&server, &stored).unwrap().ends_with(" taker"));
    let ttl = pttl(&server, &stored);
    assert!(ttl > 23 * 3600 * 1000 && ttl <= 24 * 3600 * 1000, "made afresh for a day: {ttl} ms");
    assert_eq!(register(&server, "taker").get(&key).map(String::as_str), Some("taker"));
    assert!(register(&server, "holder").is_empty(), "the entry moved to the taker's register");
    let again = coordinator.take_over("holder", "taker", &refs).await.remove(0).unwrap();
    assert_eq!(again, ClaimOutcome::Won { fencing_token: taken }, "idempotent");
    assert_eq!(coordinator.take_over("holder", "third", &refs).await.remove(0).unwrap(), ClaimOutcome::Lost);
}

#[tokio::test]
async fn a_claim_whose_hold_ended_unmarked_is_still_its_holders_to_mark() {
    let server = RedisServer::tcp();
    let coordinator = RedisCoordinator::connect(server.config()).await.unwrap();
    let key = format!("late:{}", in_seconds(-60));
    expired_claim(&coordinator, &key).await;
    let marks = [StartMark { job: "late", key: &key }];
    assert_eq!(coordinator.mark_starts("taker", &marks).await.unwrap(), [false], "not the taker's");
    assert_eq!(coordinator.mark_starts("holder", &marks).await.unwrap(), [true]);
    let value = get(&server, &format!("slotcron:{key}")).unwrap();
    assert!(value.ends_with(" holder"), "made again: {value}");
    assert!(register(&server, "holder").is_empty(), "and marked");
    assert_eq!(coordinator.mark_starts("holder", &marks).await.unwrap(), [true], "idempotent");
    let refs = [TriggerRef { job: "late", key: &key }];
    assert_eq!(coordinator.take_over("holder", "taker", &refs).await.remove(0).unwrap(), ClaimOutcome::Lost);
}

#[tokio::test]
async fn one_call_marks_live_claims_and_claims_whose_hold_ended_and_refuses_anothers_each_in_order() {
    let server = RedisServer::tcp();
    let coordinator = RedisCoordinator::connect(server.config()).await.unwrap();
    let gone = format!("late:{}", in_seconds(-60));
    expired_claim(&coordinator, &gone).await;
    let (live, others) = (format!("tick:{}", in_seconds(60)), format!("tock:{}", in_seconds(60)));
    let claim = |job, key, instance| Claim { job, trigger: in_seconds(60), key, instance, hold: MINUTE };
    won(coordinator.claim(&claim("tick", &live, "holder")).await.unwrap());
    won(coordinator.claim(&claim("tock", &others, "another")).await.unwrap());
    let marks = [
        StartMark { job: "tock", key: &others },
        StartMark { job: "late", key: &gone },
        StartMark { job: "tick", key: &live },
    ];
    assert_eq!(coordinator.mark_starts("holder", &marks).await.unwrap(), [false, true, true]);
    assert!(get(&server, &format!("slotcron:{gone}")).unwrap().ends_with(" holder"), "made again");
    assert!(register(&server, "holder").is_empty(), "both of the holder's marked");
    assert_eq!(register(&server, "another").len(), 1, "another's claim stays unmarked");
}

#[tokio::test]
async fn a_void_drops_unmarked_claims_ahead_with_their_register_entries_and_keeps_marked_ones() {
    let server = RedisServer::tcp();
    let coordinator = RedisCoordinator::connect(server.config()).await.unwrap();
    let at = in_seconds(30);
    let until = at + SignedDuration::from_secs(60);
    let (a, b) = (format!("ahead-a:{at}"), format!("ahead-b:{at}"));
    let claims = [
        Claim { job: "ahead-a", trigger: at, key: &a, instance: "owner", hold: MINUTE },
        Claim { job: "ahead-b", trigger: at, key: &b, instance: "owner", hold: MINUTE },
    ];
    for answer in coordinator.claim_batch_ahead("owner", at, &claims, until).await {
        won(answer.unwrap());
    }
    let marks = [StartMark { job: "ahead-b", key: &b }];
    assert_eq!(coordinator.mark_starts("owner", &marks).await.unwrap(), [true]);
    let value = get(&server, &format!("slotcron:{b}")).unwrap();
    assert!(value.contains("/^") && value.ends_with(" owner"), "a marked claim ahead: {value}");
    assert_eq!(
        register(&server, "owner").keys().collect::<Vec<_>>(),
        [&a],
        "only the unmarked one is listed"
    );

    let refs = [TriggerRef { job: "ahead-a", key: &a }, TriggerRef { job: "ahead-b", key: &b }];
    let voided = coordinator.void_ahead("owner", at, &refs, until).await.unwrap();
    assert_eq!(voided, AheadVoid::Voided { ahead: true });
    assert_eq!(get(&server, &format!("slotcron:{a}")), None, "the unmarked claim ahead is dropped");
    assert!(register(&server, "owner").is_empty(), "and its register entry");
    assert_eq!(get(&server, &format!("slotcron:{b}")), Some(value), "the marked one stays");
    assert!(coordinator.unstarted("owner", &["ahead-a", "ahead-b"]).await.unwrap().is_empty());
}

#[tokio::test]
async fn the_owners_start_marks_the_claims_ahead_it_is_given_and_refuses_one_taken_over() {
    let server = RedisServer::tcp();
    let coordinator = RedisCoordinator::connect(server.config()).await.unwrap();
    let at = in_seconds(30);
    let until = at + SignedDuration::from_secs(60);
    let (c, d) = (format!("ahead-c:{at}"), format!("ahead-d:{at}"));
    let claims = [
        Claim { job: "ahead-c", trigger: at, key: &c, instance: "owner", hold: MINUTE },
        Claim { job: "ahead-d", trigger: at, key: &d, instance: "owner", hold: MINUTE },
    ];
    for answer in coordinator.claim_batch_ahead("owner", at, &claims, until).await {
        won(answer.unwrap());
    }
    assert_eq!(register(&server, "owner").len(), 2, "listed unstarted until the start");
    // Taken over before the start (its owner seemed gone).
    let d_ref = [TriggerRef { job: "ahead-d", key: &d }];
    assert!(matches!(coordinator.take_over("owner", "taker", &d_ref).await[0], Ok(ClaimOutcome::Won { .. })));

    let refs = [TriggerRef { job: "ahead-c", key: &c }, TriggerRef { job: "ahead-d", key: &d }];
    let started = coordinator.start_ahead("owner", at, &refs, until).await.unwrap();
    assert_eq!(started, AheadStart::Started { paused: vec![], marked: vec![true, false] });
    assert!(register(&server, "owner").is_empty(), "the start marked the one still the owner's");
    let value = get(&server, &format!("slotcron:{c}")).unwrap();
    // Sent again: the same answer, nothing changed.
    let again = coordinator.start_ahead("owner", at, &refs, until).await.unwrap();
    assert_eq!(again, AheadStart::Started { paused: vec![], marked: vec![true, false] });

    let c_ref = [TriggerRef { job: "ahead-c", key: &c }];
    assert!(matches!(coordinator.take_over("owner", "taker", &c_ref).await[0], Ok(ClaimOutcome::Lost)));
    assert_eq!(coordinator.void_ahead("owner", at, &refs, until).await.unwrap(), AheadVoid::Started);
    assert_eq!(get(&server, &format!("slotcron:{c}")), Some(value), "the marked claim stands as it was");
}

/// A server, a coordinator on it, and the key of a claim of job `old` (a minute ahead)
/// stored as an older release wrote it, `value`: `(server, coordinator, trigger key,
/// stored key)`.
async fn older_release_claim(value: &str) -> (RedisServer, RedisCoordinator, String, String) {
    let server = RedisServer::tcp();
    let coordinator = RedisCoordinator::connect(server.config()).await.unwrap();
    let key = format!("old:{}", in_seconds(60));
    let stored = format!("slotcron:{key}");
    let _: () = server.admin_connection().unwrap().set(&stored, value).unwrap();
    (server, coordinator, key, stored)
}

/// A claim an older release marked in place (`!` before its token, no register entry)
/// counts as marked: its holder's mark answers yes, and no takeover takes it. One it made
/// and did not mark (listed in its per-job register, which this release does not read) is
/// not taken over either: a fleet of mixed releases may miss it, never run it twice.
#[tokio::test]
async fn a_claim_an_older_release_made_is_never_taken_over() {
    let (server, coordinator, key, stored) = older_release_claim("7 00000000000000aa holder").await;
    let _: () = server.admin_connection().unwrap().hset("slotcron:unstarted:old", &key, "holder").unwrap();
    let refs = [TriggerRef { job: "old", key: &key }];
    assert_eq!(coordinator.take_over("holder", "taker", &refs).await.remove(0).unwrap(), ClaimOutcome::Lost);
    assert!(coordinator.unstarted("holder", &["old"]).await.unwrap().is_empty());
    assert_eq!(get(&server, &stored).as_deref(), Some("7 00000000000000aa holder"), "nothing written");
    let claim = Claim { job: "old", trigger: in_seconds(60), key: &key, instance: "taker", hold: MINUTE };
    assert_eq!(coordinator.claim(&claim).await.unwrap(), ClaimOutcome::Lost, "and it is held");
}

/// See above: a claim an older release marked.
#[tokio::test]
async fn a_claim_an_older_release_marked_in_place_stays_marked() {
    let (server, coordinator, key, stored) = older_release_claim("7 !00000000000000aa holder").await;
    let refs = [TriggerRef { job: "old", key: &key }];
    assert_eq!(coordinator.take_over("holder", "taker", &refs).await.remove(0).unwrap(), ClaimOutcome::Lost);
    let marks = [StartMark { job: "old", key: &key }];
    assert_eq!(coordinator.mark_starts("holder", &marks).await.unwrap(), [true]);
    assert_eq!(coordinator.mark_starts("taker", &marks).await.unwrap(), [false]);
    assert_eq!(get(&server, &stored).as_deref(), Some("7 !00000000000000aa holder"), "nothing written");
}
