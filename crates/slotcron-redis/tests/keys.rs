//! What a claim leaves in Redis: keys under the prefix, the TTLs, the stored claimant,
//! and one round trip per claim.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use redis::Commands;
use slotcron::jiff::Timestamp;
use slotcron::{AheadStart, Claim, ClaimOutcome, Coordinator, Hold, RequestClaim, StartMark, TriggerRef};
use slotcron_redis::RedisCoordinator;
use support::RedisServer;

/// A claim of `key`, whose trigger is the instant after the job's name in the key (as the
/// engine's trigger keys have it), or 2024-05-17T00:00:00Z.
fn claim<'a>(job: &'a str, key: &'a str, hold: Option<Hold>) -> Claim<'a> {
    let instant = key.split_once(':').and_then(|(_, at)| at.parse().ok());
    let trigger: Timestamp = instant.unwrap_or_else(|| "2024-05-17T00:00:00Z".parse().unwrap());
    Claim { job, trigger, key, instance: "host-1 pid 42", hold }
}

fn won(outcome: ClaimOutcome) -> u64 {
    match outcome {
        ClaimOutcome::Won { fencing_token } => fencing_token,
        other => panic!("{other:?}"),
    }
}

fn keys(server: &RedisServer) -> BTreeSet<String> {
    server.admin_connection().unwrap().keys("*").unwrap()
}

#[tokio::test]
async fn prefixes_isolate_applications_sharing_one_redis() {
    let server = RedisServer::tcp();
    let default = RedisCoordinator::connect(server.config()).await.unwrap();
    let a = RedisCoordinator::connect(server.config().key_prefix("app-a:")).await.unwrap();
    let b = RedisCoordinator::connect(server.config().key_prefix("app-b:")).await.unwrap();
    let key = "job:2024-05-17T00:00:00Z";
    let ttl = Some(Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::ZERO });
    for coordinator in [&default, &a, &b] {
        assert_eq!(won(coordinator.claim(&claim("job", key, ttl)).await.unwrap()), 1);
    }
    let expected: BTreeSet<String> = ["slotcron:", "app-a:", "app-b:"]
        .into_iter()
        .flat_map(|p| {
            [format!("{p}{key}"), format!("{p}fencing:job"), format!("{p}fleet:unstarted:host-1 pid 42")]
        })
        .collect();
    assert_eq!(keys(&server), expected);
}

#[tokio::test]
async fn recurring_claims_expire_a_slot_and_the_slack_after_a_late_claim_and_one_shot_claims_never_unless_retained()
 {
    let server = RedisServer::tcp();
    let plain = RedisCoordinator::connect(server.config()).await.unwrap();
    let retained = RedisCoordinator::connect(
        server.config().key_prefix("retained:").one_shot_retention(Duration::from_secs(30 * 24 * 3600)),
    )
    .await
    .unwrap();
    won(plain
        .claim(&claim(
            "tick",
            "tick:2024-05-17T00:00:00Z",
            Some(Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::from_secs(5) }),
        ))
        .await
        .unwrap());
    won(plain.claim(&claim("once", "once", None)).await.unwrap());
    won(retained.claim(&claim("once", "once", None)).await.unwrap());
    let mut admin = server.admin_connection().unwrap();
    let pttl = |admin: &mut redis::Connection, key: &str| -> i64 { admin.pttl(key).unwrap() };
    let tick = pttl(&mut admin, "slotcron:tick:2024-05-17T00:00:00Z");
    assert!(tick > 0 && tick <= 65_000, "the slot plus the slack after the (late) claim: {tick} ms");
    assert_eq!(pttl(&mut admin, "slotcron:once"), -1, "a one-shot claim never expires");
    let once = pttl(&mut admin, "retained:once");
    assert!(once > 0 && once <= 30 * 24 * 3600 * 1000, "the configured retention: {once} ms");
    assert_eq!(pttl(&mut admin, "slotcron:fencing:tick"), -1, "fencing counters are kept");
}

#[tokio::test]
async fn a_won_claim_stores_its_fencing_token_random_token_and_instance() {
    let server = RedisServer::tcp();
    let coordinator = RedisCoordinator::connect(server.config()).await.unwrap();
    let key = "job:2024-05-17T00:00:00Z";
    let token = won(coordinator.claim(&claim("job", key, None)).await.unwrap());
    let value: String = server.admin_connection().unwrap().get(format!("slotcron:{key}")).unwrap();
    let (fencing, claimant) = value.split_once('/').unwrap();
    let (random, instance) = claimant.split_once(' ').unwrap();
    assert_eq!(fencing, token.to_string());
    assert!(random.len() == 16 && random.chars().all(|c| c.is_ascii_hexdigit()), "{value}");
    assert_eq!(instance, "host-1 pid 42");
}

#[tokio::test]
async fn each_claim_is_one_round_trip() {
    let server = RedisServer::tcp();
    let coordinator = RedisCoordinator::connect(server.config()).await.unwrap();
    // The first claim on a fresh server also loads the script.
    won(coordinator.claim(&claim("job", "job:warm-up", None)).await.unwrap());
    let mut admin = server.admin_connection().unwrap();
    redis::cmd("CONFIG").arg("RESETSTAT").exec(&mut admin).unwrap();
    let keys: Vec<String> = (0..50).map(|k| format!("job:2024-05-17T00:00:{k:02}Z")).collect();
    for key in &keys {
        won(coordinator
            .claim(&claim(
                "job",
                key,
                Some(Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::ZERO }),
            ))
            .await
            .unwrap());
    }
    for key in &keys[..10] {
        let lost = coordinator
            .claim(&claim(
                "job",
                key,
                Some(Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::ZERO }),
            ))
            .await
            .unwrap();
        assert_eq!(lost, ClaimOutcome::Lost);
    }
    let stats: String = redis::cmd("INFO").arg("commandstats").query(&mut admin).unwrap();
    // Redis counts the script's own commands too: an MGET of the trigger key for each of
    // the 60; TIME and an MGET of the job's state for the 50 claims that find no key (the
    // first also reads the mark an older release kept, since the state has none yet); a
    // SET of the trigger key, an MSET of the job's state and an HSET of its register of
    // unstarted claims for the 50 wins. The client sent nothing but the 60 EVALSHA (no
    // GET of its own, no SCRIPT LOAD).
    let expected =
        [("evalsha", 60), ("mget", 60 + 50 + 1), ("time", 50), ("set", 50), ("mset", 50), ("hset", 50)];
    assert_eq!(command_calls(&stats), sorted(&expected), "{stats}");
}

/// A batch of claims is one round trip (one EVALSHA) and, inside Redis, one SET per won
/// claim and a few commands for the whole batch.
#[tokio::test]
async fn a_batch_is_one_round_trip_and_a_won_claim_one_set() {
    let server = RedisServer::tcp();
    let coordinator = RedisCoordinator::connect(server.config()).await.unwrap();
    won(coordinator.claim(&claim("warm-up", "warm-up", None)).await.unwrap());
    let hold = Some(Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::ZERO });
    let (jobs, keys): (Vec<String>, Vec<String>) =
        (0..50).map(|k| (format!("job-{k}"), format!("job-{k}:2024-05-17T00:00:00Z"))).unzip();
    let claims: Vec<Claim<'_>> = jobs.iter().zip(&keys).map(|(job, key)| claim(job, key, hold)).collect();
    let mut admin = server.admin_connection().unwrap();
    redis::cmd("CONFIG").arg("RESETSTAT").exec(&mut admin).unwrap();
    for outcome in coordinator.claim_batch(&claims).await {
        assert_eq!(won(outcome.unwrap()), 1);
    }
    let again = coordinator.claim_batch(&claims[..10]).await;
    assert!(again.into_iter().all(|o| o.unwrap() == ClaimOutcome::Lost));
    let stats: String = redis::cmd("INFO").arg("commandstats").query(&mut admin).unwrap();
    // Won: MGET of the trigger keys, TIME, MGET of the states and of the marks older
    // releases kept (new jobs), a SET per claim, one MSET of the states, one HSET of the
    // claimant's register of unstarted claims (one server: one register per instance).
    // Lost: the MGET.
    let expected = [("evalsha", 2), ("mget", 3 + 1), ("time", 1), ("set", 50), ("mset", 1), ("hset", 1)];
    assert_eq!(command_calls(&stats), sorted(&expected), "{stats}");
}

/// A batch of claims of many jobs writes its holder's register once, and their start
/// marks are one round trip: an MGET of the trigger keys and one HDEL of the register,
/// the claims' keys left as they are: a won claim costs one command of its own.
#[tokio::test]
async fn a_batch_of_start_marks_is_one_round_trip() {
    let server = RedisServer::tcp();
    let coordinator = RedisCoordinator::connect(server.config()).await.unwrap();
    won(coordinator.claim(&claim("warm-up", "warm-up", None)).await.unwrap());
    let mark_ahead = StartMark { job: "warm-up", key: "warm-up" };
    assert_eq!(coordinator.mark_starts("host-1 pid 42", &[mark_ahead]).await.unwrap(), [true], "loads");
    let hold = Some(Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::ZERO });
    let (jobs, keys): (Vec<String>, Vec<String>) =
        (0..50).map(|k| (format!("job-{k}"), format!("job-{k}:2100-01-01T00:00:00Z"))).unzip();
    let claims: Vec<Claim<'_>> = jobs.iter().zip(&keys).map(|(job, key)| claim(job, key, hold)).collect();
    let mut admin = server.admin_connection().unwrap();
    redis::cmd("CONFIG").arg("RESETSTAT").exec(&mut admin).unwrap();
    for outcome in coordinator.claim_batch(&claims).await {
        won(outcome.unwrap());
    }
    let marks: Vec<StartMark<'_>> = jobs.iter().zip(&keys).map(|(job, key)| StartMark { job, key }).collect();
    assert!(coordinator.mark_starts("host-1 pid 42", &marks).await.unwrap().into_iter().all(|m| m));
    let stats: String = redis::cmd("INFO").arg("commandstats").query(&mut admin).unwrap();
    // The claims as above, then the marks: one EVALSHA, an MGET and an HDEL.
    let expected =
        [("evalsha", 2), ("mget", 3 + 1), ("time", 1), ("set", 50), ("mset", 1), ("hset", 1), ("hdel", 1)];
    assert_eq!(command_calls(&stats), sorted(&expected), "{stats}");
}

/// The claims ahead of an instant and their start marks: one script call for the claims,
/// and one for the instant's start, which marks them all with one `HMGET` and one `HDEL`
/// of the owner's register: no command per claim at the instant.
#[tokio::test]
async fn the_claims_ahead_of_an_instant_are_marked_by_one_start() {
    let server = RedisServer::tcp();
    let coordinator = RedisCoordinator::connect(server.config()).await.unwrap();
    won(coordinator.claim(&claim("warm-up", "warm-up", None)).await.unwrap());
    let at: Timestamp = "2100-01-01T00:00:00Z".parse().unwrap();
    let until: Timestamp = "2100-01-01T00:01:00Z".parse().unwrap();
    // Loads the scripts.
    coordinator.start_ahead("warm-up", at, &[], until).await.unwrap();
    let hold = Some(Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::ZERO });
    let (jobs, keys): (Vec<String>, Vec<String>) =
        (0..50).map(|k| (format!("job-{k}"), format!("job-{k}:{at}"))).unzip();
    let claims: Vec<Claim<'_>> = jobs.iter().zip(&keys).map(|(job, key)| claim(job, key, hold)).collect();
    let mut admin = server.admin_connection().unwrap();
    redis::cmd("CONFIG").arg("RESETSTAT").exec(&mut admin).unwrap();
    for outcome in coordinator.claim_batch_ahead("host-1 pid 42", at, &claims, until).await {
        won(outcome.unwrap());
    }
    let refs: Vec<TriggerRef<'_>> =
        jobs.iter().zip(&keys).map(|(job, key)| TriggerRef { job, key }).collect();
    let started = coordinator.start_ahead("host-1 pid 42", at, &refs, until).await.unwrap();
    assert_eq!(started, AheadStart::Started { paused: vec![], marked: vec![true; 50] });
    let stats: String = redis::cmd("INFO").arg("commandstats").query(&mut admin).unwrap();
    // The claims: the latch's GET and SET, then as a batch's. The start: TIME, the
    // latch's GET and SET, an HMGET and an HDEL of the register, SMEMBERS of the paused.
    let expected = [
        ("evalsha", 2),
        ("get", 2),
        ("set", 50 + 2),
        ("mget", 3),
        ("time", 2),
        ("mset", 1),
        ("hset", 1),
        ("hmget", 1),
        ("hdel", 1),
        ("smembers", 1),
    ];
    assert_eq!(command_calls(&stats), sorted(&expected), "{stats}");
    let unstarted = coordinator.unstarted("host-1 pid 42", &[]).await.unwrap();
    let unstarted: Vec<&str> = unstarted.iter().map(|u| u.key.as_str()).collect();
    assert_eq!(unstarted, ["warm-up"], "the claims ahead are marked by the start");
}

/// A paused job's claims in a batch are refused within the one script call: the pause is
/// read in the `MGET` of the job's state, and nothing is written. A request claim (which
/// no pause refuses) takes the job's next fencing token from the same state key and
/// leaves the job's high-water mark in it, so tokens go on growing after the resume.
#[tokio::test]
async fn a_pause_costs_no_command_of_its_own_and_a_request_claim_keeps_the_jobs_state() {
    let server = RedisServer::tcp();
    let coordinator = RedisCoordinator::connect(server.config()).await.unwrap();
    let hold = Some(Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::ZERO });
    assert_eq!(won(coordinator.claim(&claim("job", "job:2024-05-17T00:00:00Z", hold)).await.unwrap()), 1);
    let mark_ms = "2024-05-17T00:00:00Z".parse::<Timestamp>().unwrap().as_millisecond();
    let state = |server: &RedisServer| -> String {
        server.admin_connection().unwrap().get("slotcron:fencing:job").unwrap()
    };
    assert_eq!(state(&server), format!("1 {mark_ms}"));
    let controls = coordinator.controls().expect("controls");
    controls.set_paused("job", Some(Timestamp::now())).await.unwrap();
    let keys = ["job:2024-05-17T00:01:00Z", "job:2024-05-17T00:02:00Z"];
    let claims: Vec<Claim<'_>> = keys.iter().map(|key| claim("job", key, hold)).collect();
    let mut admin = server.admin_connection().unwrap();
    redis::cmd("CONFIG").arg("RESETSTAT").exec(&mut admin).unwrap();
    for outcome in coordinator.claim_batch(&claims).await {
        assert_eq!(outcome.unwrap(), ClaimOutcome::Paused);
    }
    let stats: String = redis::cmd("INFO").arg("commandstats").query(&mut admin).unwrap();
    // MGET of the trigger keys, TIME, MGET of the job's state and pause; no write.
    let expected = [("evalsha", 1), ("mget", 2), ("time", 1)];
    assert_eq!(command_calls(&stats), sorted(&expected), "{stats}");
    assert_eq!(state(&server), format!("1 {mark_ms}"), "a refused claim changes nothing");

    let manual = "job:manual2024-05-17T00:05:00Z";
    let trigger = "2024-05-17T00:05:00Z".parse().unwrap();
    let request = RequestClaim {
        job: "job",
        trigger,
        key: manual,
        instance: "host-1 pid 42",
        ttl: Duration::from_secs(60),
    };
    assert_eq!(
        won(coordinator.claim_request(&request).await.unwrap()),
        2,
        "the job's next token, paused or not"
    );
    assert_eq!(state(&server), format!("2 {mark_ms}"), "the token grew, the mark stayed");
    let ttl: i64 = admin.pttl(format!("slotcron:{manual}")).unwrap();
    assert!(ttl > 0 && ttl <= 60_000, "a request claim holds for its TTL: {ttl} ms");
    controls.set_paused("job", None).await.unwrap();
    assert_eq!(won(coordinator.claim_batch(&claims).await.remove(0).unwrap()), 3);
}

/// The calls per command in `INFO commandstats`, but for CONFIG and INFO, sorted.
fn command_calls(stats: &str) -> Vec<(String, u64)> {
    let mut calls: Vec<(String, u64)> = stats
        .lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest.strip_prefix("calls=")?.split(',').next()?.parse().ok()?;
            Some((name.to_owned(), calls))
        })
        .filter(|(name, _)| !name.starts_with("config") && !name.starts_with("info"))
        .collect();
    calls.sort();
    calls
}

fn sorted(expected: &[(&str, u64)]) -> Vec<(String, u64)> {
    let mut expected: Vec<(String, u64)> = expected.iter().map(|&(n, c)| (n.to_owned(), c)).collect();
    expected.sort();
    expected
}

#[tokio::test]
async fn the_coordinators_clock_is_the_servers() {
    let server = RedisServer::tcp();
    let coordinator = RedisCoordinator::connect(server.config()).await.unwrap();
    let before = Timestamp::now();
    let time = coordinator.time().await.unwrap().expect("the server's clock");
    // The server runs on this machine: its clock is this one's.
    let off = before.duration_until(time).abs();
    assert!(off < slotcron::jiff::SignedDuration::from_secs(1), "{before} vs {time}");
}
