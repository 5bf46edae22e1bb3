//! Start marks and takeover on the real server (schema version 11): what the suite's
//! `start_marks_contract` cannot see — claims made before the migration, or by an older
//! release during a rolling upgrade, count as started; a new claim of an expired row starts
//! unmarked; a takeover's fencing tokens and hold; a mark racing a takeover.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use common::{Schemas, database_url, isolated};
use slotcron::jiff::Timestamp;
use slotcron::{Claim, ClaimOutcome, Coordinator, Hold, RequestClaim, StartMark, TriggerRef, Unstarted};
use slotcron_postgres::{PostgresCoordinator, PostgresDatabase};

const MINUTE: Option<Hold> =
    Some(Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::ZERO });

/// A trigger a minute from now, so that its claim holds.
fn soon(seconds: i64) -> Timestamp {
    Timestamp::from_second(Timestamp::now().as_second() + 60 + seconds).unwrap()
}

/// Claims `job`'s trigger `at` (key `{job}:{at}`) for `instance`, held a minute; its token.
async fn won(coordinator: &PostgresCoordinator, job: &str, at: Timestamp, instance: &str) -> u64 {
    let key = format!("{job}:{at}");
    match coordinator.claim(&Claim { job, trigger: at, key: &key, instance, hold: MINUTE }).await.unwrap() {
        ClaimOutcome::Won { fencing_token } => fencing_token,
        other => panic!("{key}: {other:?}"),
    }
}

/// The keys `instance` holds unmarked.
async fn unstarted(coordinator: &PostgresCoordinator, instance: &str) -> BTreeSet<String> {
    let listed = coordinator.unstarted(instance, &[]).await.unwrap();
    listed.into_iter().map(|Unstarted { key, .. }| key).collect()
}

#[tokio::test]
async fn claims_made_before_version_11_count_as_started() {
    isolated(async |schemas: &mut Schemas| {
        let schema = schemas.name();
        // Version 1 with three claims of `old-replica` (see the fixture's header), migrated
        // through every version to this one.
        let fixture = include_str!("data/schema_v1.sql").replace("slotcron_v1_fixture", &schema);
        schemas.execute(&schema, &fixture).await;
        let coordinator =
            PostgresCoordinator::new(PostgresDatabase::open(&database_url(), &schema).await.unwrap());
        let started = "SELECT count(*) FROM {schema}.claim WHERE started_at = claimed_at";
        assert_eq!(schemas.scalar(&schema, started).await, 3, "each marked when it was claimed");
        assert!(unstarted(&coordinator, "old-replica").await.is_empty());
        let tick = TriggerRef { job: "tick", key: "tick:2024-05-17T00:01:00Z" };
        let migrate = TriggerRef { job: "migrate", key: "migrate" };
        let taken = coordinator.take_over("old-replica", "new-replica", &[tick, migrate]).await;
        assert!(taken.iter().all(|t| matches!(t, Ok(ClaimOutcome::Lost))), "never taken over: {taken:?}");
        let mark = [StartMark { job: "migrate", key: "migrate" }];
        assert_eq!(coordinator.mark_starts("old-replica", &mark).await.unwrap(), [true], "still its own");

        // A claim this release makes starts unmarked.
        let at = soon(0);
        won(&coordinator, "tick", at, "new-replica").await;
        assert_eq!(unstarted(&coordinator, "new-replica").await, BTreeSet::from([format!("tick:{at}")]));
    })
    .await;
}

/// A requested run's claim of `key` for `instance`, held a minute.
fn request<'a>(key: &'a str, instance: &'a str, trigger: Timestamp) -> RequestClaim<'a> {
    RequestClaim { job: "tick", trigger, key, instance, ttl: Duration::from_secs(60) }
}

#[tokio::test]
async fn an_older_releases_claims_count_as_started() {
    isolated(async |schemas: &mut Schemas| {
        let coordinator = PostgresCoordinator::new(schemas.open().await);
        let schema = schemas.names()[0].clone();
        // A replica of the release before calls the claim functions themselves: one claim,
        // a batch (set-based), and a requested run.
        let statements = [
            "SELECT {schema}.claim_trigger('job', 'a', now(), 'old', NULL, NULL, 6)",
            "SELECT {schema}.claim_triggers(ARRAY['job', 'job'], ARRAY['b', 'c'], ARRAY[now(), now()], 'old',
                 ARRAY[NULL, NULL]::bigint[], ARRAY[NULL, NULL]::bigint[], ARRAY[7, 8]::bigint[])",
            "SELECT {schema}.claim_trigger('job', 'd', now(), 'old', 60000000, 9)",
        ];
        for statement in statements {
            schemas.execute(&schema, statement).await;
        }
        let claims = "SELECT count(*) FROM {schema}.claim WHERE instance = 'old' AND started_at IS NOT NULL";
        assert_eq!(schemas.scalar(&schema, claims).await, 4, "all made");
        assert!(unstarted(&coordinator, "old").await.is_empty(), "none listed: never taken over");
    })
    .await;
}

#[tokio::test]
async fn a_new_claim_of_an_expired_row_starts_unmarked_unless_an_older_release_made_it() {
    isolated(async |schemas: &mut Schemas| {
        let coordinator = PostgresCoordinator::new(schemas.open().await);
        let schema = schemas.names()[0].clone();
        // This release's claims, one marked, the other not (its holder died), expire.
        let (first, second) = (soon(0), soon(1));
        let (first_key, second_key) = (format!("tick:{first}"), format!("tick:{second}"));
        won(&coordinator, "tick", first, "dead").await;
        won(&coordinator, "tick", second, "dead").await;
        let marked = [StartMark { job: "tick", key: &second_key }];
        assert_eq!(coordinator.mark_starts("dead", &marked).await.unwrap(), [true]);
        let expire = "UPDATE {schema}.claim SET expires_at = now() - interval '1 second'";
        schemas.execute(&schema, expire).await;
        // Claimed again under the same keys (as requested runs: no high-water mark).
        for key in [&first_key, &second_key] {
            let again = coordinator.claim_request(&request(key, "new", first)).await;
            assert!(matches!(again, Ok(ClaimOutcome::Won { .. })), "{key}: {again:?}");
        }
        assert!(unstarted(&coordinator, "dead").await.is_empty(), "both claimed again");
        let both = BTreeSet::from([first_key.clone(), second_key.clone()]);
        assert_eq!(unstarted(&coordinator, "new").await, both, "the marked one too starts afresh");

        // An older release's claim of an expired row counts as started.
        schemas.execute(&schema, expire).await;
        let old =
            format!("SELECT {{schema}}.claim_trigger('tick', '{first_key}', now(), 'old', 60000000, 9)");
        assert!(schemas.scalar(&schema, &old).await > 0, "won by the older release");
        assert!(unstarted(&coordinator, "old").await.is_empty(), "started");
        assert_eq!(unstarted(&coordinator, "new").await, BTreeSet::from([second_key]));
    })
    .await;
}

#[tokio::test]
async fn a_takeover_bumps_each_jobs_counter_once_in_trigger_order_and_holds_again() {
    isolated(async |schemas: &mut Schemas| {
        let coordinator = PostgresCoordinator::new(schemas.open().await);
        let schema = schemas.names()[0].clone();
        let at: Vec<Timestamp> = (0..4).map(soon).collect();
        for (i, &t) in at.iter().enumerate() {
            won(&coordinator, "a", t, if i == 3 { "live" } else { "dead" }).await;
        }
        won(&coordinator, "b", at[0], "dead").await;
        let key = |job: &str, i: usize| format!("{job}:{}", at[i]);
        let (a0, a1, a2, a3, b0) = (key("a", 0), key("a", 1), key("a", 2), key("a", 3), key("b", 0));
        assert_eq!(
            coordinator.mark_starts("dead", &[StartMark { job: "a", key: &a1 }]).await.unwrap(),
            [true]
        );
        // a2's hold, a minute long, ended a minute ago.
        let ended = format!(
            "UPDATE {{schema}}.claim SET claimed_at = now() - interval '2 minutes',
             expires_at = now() - interval '1 minute' WHERE trigger_key = '{a2}'"
        );
        schemas.execute(&schema, &ended).await;
        let refs: Vec<TriggerRef<'_>> =
            [("a", &a2), ("a", &a0), ("a", &a1), ("b", &b0), ("a", &a3), ("a", &a0)]
                .into_iter()
                .map(|(job, key)| TriggerRef { job, key })
                .chain([TriggerRef { job: "a", key: "a:none" }])
                .collect();
        let expected = [Some(6), Some(5), None, Some(2), None, Some(5), None].map(|token| match token {
            Some(fencing_token) => ClaimOutcome::Won { fencing_token },
            None => ClaimOutcome::Lost,
        });
        for attempt in ["first", "asked again"] {
            let taken: Vec<ClaimOutcome> =
                coordinator.take_over("dead", "taker", &refs).await.into_iter().map(Result::unwrap).collect();
            assert_eq!(taken, expected, "{attempt}");
            let counters =
                "SELECT string_agg(job || '=' || token, ' ' ORDER BY job)::text FROM {schema}.fencing";
            let client = common::connect().await;
            let counters: String = client
                .query_one(&counters.replace("{schema}", &format!("\"{schema}\"")), &[])
                .await
                .unwrap()
                .get(0);
            assert_eq!(counters, "a=6 b=2", "{attempt}: each counter bumped once");
        }
        let holds = format!(
            "SELECT count(*) FROM {{schema}}.claim WHERE trigger_key = '{a2}'
             AND expires_at BETWEEN now() + interval '50 seconds' AND now() + interval '1 minute'"
        );
        assert_eq!(schemas.scalar(&schema, &holds).await, 1, "held again for a minute from the takeover");
        let again = Claim { job: "a", trigger: at[2], key: &a2, instance: "live", hold: MINUTE };
        assert_eq!(coordinator.claim(&again).await.unwrap(), ClaimOutcome::Lost, "held by the taker");
        assert_eq!(unstarted(&coordinator, "taker").await, BTreeSet::from([a0, a2, b0]));
        assert!(unstarted(&coordinator, "dead").await.is_empty());
    })
    .await;
}

/// Marks the claims `keys` of job `job` for `holder`: by key, whether marked.
async fn mark_all(coordinator: Arc<PostgresCoordinator>, job: &str, keys: &[String]) -> Vec<bool> {
    let marks: Vec<StartMark<'_>> = keys.iter().map(|key| StartMark { job, key }).collect();
    coordinator.mark_starts("holder", &marks).await.unwrap()
}

/// Takes the claims `keys` of job `job` over from `holder` for `taker`: by key, whether won.
async fn take_all(coordinator: Arc<PostgresCoordinator>, job: &str, keys: &[String]) -> Vec<bool> {
    let refs: Vec<TriggerRef<'_>> = keys.iter().map(|key| TriggerRef { job, key }).collect();
    let taken = coordinator.take_over("holder", "taker", &refs).await;
    taken.into_iter().map(|t| matches!(t.unwrap(), ClaimOutcome::Won { .. })).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mark_and_a_takeover_of_one_claim_never_both_succeed_nor_deadlock() {
    isolated(async |schemas: &mut Schemas| {
        let database = schemas.open().await;
        let (holder, taker) = (
            Arc::new(PostgresCoordinator::new(database.clone())),
            Arc::new(PostgresCoordinator::new(database)),
        );
        for round in 0..10 {
            let keys: Vec<String> = (0..40).map(|i| format!("race:{round}:{i:02}")).collect();
            let claims: Vec<Claim<'_>> = keys
                .iter()
                .map(|key| Claim { job: "race", trigger: soon(round), key, instance: "holder", hold: None })
                .collect();
            let won = holder.claim_batch(&claims).await;
            assert!(won.iter().all(|w| matches!(w, Ok(ClaimOutcome::Won { .. }))), "{won:?}");
            // The holder marks in two batches, backwards; the taker takes over in two others.
            let backwards: Vec<String> = keys.iter().rev().cloned().collect();
            let wrapped = [&keys[30..], &keys[..10]].concat();
            let (m1, m2, t1, t2) = tokio::join!(
                mark_all(holder.clone(), "race", &backwards[..20]),
                mark_all(holder.clone(), "race", &backwards[20..]),
                take_all(taker.clone(), "race", &keys[10..30]),
                take_all(taker.clone(), "race", &wrapped),
            );
            let marked: BTreeSet<&String> =
                backwards.iter().zip(m1.iter().chain(&m2)).filter(|(_, m)| **m).map(|(k, _)| k).collect();
            let order: Vec<&String> = keys[10..30].iter().chain(&keys[30..]).chain(&keys[..10]).collect();
            let taken: BTreeSet<&String> =
                order.into_iter().zip(t1.iter().chain(&t2)).filter(|(_, t)| **t).map(|(k, _)| k).collect();
            assert!(marked.is_disjoint(&taken), "round {round}: both for {:?}", marked.intersection(&taken));
            assert_eq!(marked.len() + taken.len(), keys.len(), "round {round}: one of the two for each");
        }
    })
    .await;
}

#[tokio::test]
async fn a_role_that_is_not_a_superuser_migrates_its_own_schema_and_its_claims_start_unmarked() {
    isolated(async |schemas: &mut Schemas| {
        let schema = schemas.name();
        // The role of a managed database: it owns its schema, and is no superuser.
        let owner = common::SchemaOwner::new(&schema).await;
        let opened = PostgresDatabase::open(&owner.url, &schema).await;
        let coordinator = PostgresCoordinator::new(opened.expect("a schema owner migrates it"));
        let at = soon(0);
        won(&coordinator, "tick", at, "r1").await;
        assert_eq!(unstarted(&coordinator, "r1").await, BTreeSet::from([format!("tick:{at}")]));
        drop(coordinator);
        owner.drop_all().await;
    })
    .await;
}
