//! The PostgreSQL coordinator on the real server: exactly one winner, fencing, expiry,
//! one-shots, isolation by schema, and errors that are never wins.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Schemas, isolated};
use slotcron::jiff::Timestamp;
use slotcron::{Claim, ClaimOutcome, Coordinator, Hold, StartMark, Unstarted};
use slotcron_postgres::{PostgresCoordinator, PostgresDatabase};

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

/// Claims `job`'s trigger at `trigger` as `instance` with `hold` (`None`: a one-shot).
async fn claim(
    coordinator: &PostgresCoordinator,
    job: &str,
    trigger: &str,
    instance: &str,
    hold: Option<Hold>,
) -> ClaimOutcome {
    let trigger = ts(trigger);
    let key = trigger_key(job, trigger);
    coordinator.claim(&Claim { job, trigger, key: &key, instance, hold }).await.unwrap()
}

/// The trigger key, as the engine makes it for a recurring job.
fn trigger_key(job: &str, trigger: Timestamp) -> String {
    format!("{job}:{trigger}")
}

fn won(fencing_token: u64) -> ClaimOutcome {
    ClaimOutcome::Won { fencing_token }
}

const MINUTE: Option<Hold> =
    Some(Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::ZERO });

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_one_of_several_replicas_wins_each_trigger() {
    isolated(async |schemas: &mut Schemas| {
        let schema = schemas.name();
        let mut replicas = Vec::new();
        for _ in 0..6 {
            let database = PostgresDatabase::open(&common::database_url(), &schema).await.unwrap();
            replicas.push(Arc::new(PostgresCoordinator::new(database)));
        }
        for second in 0..30 {
            let trigger = Timestamp::from_second(1_715_904_000 + second).unwrap();
            let key = trigger_key("tick", trigger);
            let contenders: Vec<_> = replicas
                .iter()
                .enumerate()
                .map(|(i, replica)| {
                    let (replica, key) = (replica.clone(), key.clone());
                    tokio::spawn(async move {
                        let instance = format!("replica-{i}");
                        let claim =
                            Claim { job: "tick", trigger, key: &key, instance: &instance, hold: MINUTE };
                        replica.claim(&claim).await.unwrap()
                    })
                })
                .collect();
            let mut winners = Vec::new();
            for contender in contenders {
                if let ClaimOutcome::Won { fencing_token } = contender.await.unwrap() {
                    winners.push(fencing_token);
                }
            }
            assert_eq!(winners, [second as u64 + 1], "trigger {trigger}: one winner, the next token");
        }
    })
    .await;
}

#[tokio::test]
async fn fencing_tokens_grow_with_every_won_claim_of_a_job() {
    isolated(async |schemas: &mut Schemas| {
        let coordinator = PostgresCoordinator::new(schemas.open().await);
        assert_eq!(coordinator.name(), "postgres");
        assert_eq!(claim(&coordinator, "a", "2024-05-17T00:00:00Z", "r1", MINUTE).await, won(1));
        assert_eq!(claim(&coordinator, "a", "2024-05-17T00:01:00Z", "r1", MINUTE).await, won(2));
        assert_eq!(claim(&coordinator, "b", "2024-05-17T00:01:00Z", "r1", MINUTE).await, won(1));
        // A lost claim does not use up a token.
        assert_eq!(claim(&coordinator, "a", "2024-05-17T00:01:00Z", "r2", MINUTE).await, ClaimOutcome::Lost);
        assert_eq!(claim(&coordinator, "a", "2024-05-17T00:02:00Z", "r2", MINUTE).await, won(3));
    })
    .await;
}

#[tokio::test]
async fn an_expired_claim_is_not_taken_over_the_high_water_mark_refuses_it() {
    isolated(async |schemas: &mut Schemas| {
        let database = schemas.open().await;
        let schema = schemas.names()[0].clone();
        let coordinator = PostgresCoordinator::new(database);
        let trigger = "2024-05-17T00:00:00Z";
        assert_eq!(claim(&coordinator, "tick", trigger, "r1", MINUTE).await, won(1));
        assert_eq!(claim(&coordinator, "tick", trigger, "r2", MINUTE).await, ClaimOutcome::Lost);
        // The minute passes on the server's clock.
        schemas.execute(&schema, "UPDATE {schema}.claim SET expires_at = now() - interval '1 second'").await;
        assert_eq!(claim(&coordinator, "tick", trigger, "r2", MINUTE).await, ClaimOutcome::BehindMark);
        assert_eq!(
            schemas.scalar(&schema, "SELECT count(*) FROM {schema}.claim WHERE instance = 'r1'").await,
            1
        );
        assert_eq!(claim(&coordinator, "tick", "2024-05-17T00:01:00Z", "r3", MINUTE).await, won(2));
    })
    .await;
}

#[tokio::test]
async fn a_one_shot_claim_never_expires_and_expired_claims_are_removed() {
    isolated(async |schemas: &mut Schemas| {
        let database = schemas.open().await;
        let schema = schemas.names()[0].clone();
        let coordinator = PostgresCoordinator::new(database);
        assert_eq!(claim(&coordinator, "migrate", "2024-05-17T00:00:00Z", "r1", None).await, won(1));
        assert_eq!(claim(&coordinator, "tick", "2024-05-17T00:00:00Z", "r1", MINUTE).await, won(1));
        // Their runs start; a third job's claim is never marked (its holder died first).
        let tick = trigger_key("tick", ts("2024-05-17T00:00:00Z"));
        let marks = [
            StartMark { job: "migrate", key: "migrate:2024-05-17T00:00:00Z" },
            StartMark { job: "tick", key: &tick },
        ];
        assert_eq!(coordinator.mark_starts("r1", &marks).await.unwrap(), [true, true]);
        assert_eq!(claim(&coordinator, "tock", "2024-05-17T00:00:00Z", "r1", MINUTE).await, won(1));
        // A century passes on the server's clock.
        schemas
            .execute(
                &schema,
                "UPDATE {schema}.claim SET claimed_at = claimed_at - interval '100 years',
                 expires_at = expires_at - interval '100 years'",
            )
            .await;
        assert_eq!(coordinator.remove_expired().await.unwrap(), 1, "the interval job's started claim");
        assert_eq!(coordinator.remove_expired().await.unwrap(), 0);
        let tock = trigger_key("tock", ts("2024-05-17T00:00:00Z"));
        assert_eq!(
            coordinator.unstarted("r1", &[]).await.unwrap(),
            [Unstarted { job: "tock".into(), key: tock }],
            "an expired claim never started stays, listed"
        );
        assert_eq!(
            claim(&coordinator, "migrate", "2024-05-17T00:00:00Z", "r2", None).await,
            ClaimOutcome::Lost
        );
        let again = claim(&coordinator, "tick", "2024-05-17T00:00:00Z", "r2", MINUTE).await;
        assert_eq!(again, ClaimOutcome::BehindMark, "removed, but the high-water mark remembers it");
    })
    .await;
}

/// A removal goes through more expired claims than one statement deletes, and skips a
/// row another transaction holds (a claim taking it over, another replica's removal)
/// rather than waiting for it: removals never wait on each other, so they cannot
/// deadlock, nor hold a burst's claims up.
#[tokio::test]
async fn a_removal_of_expired_claims_goes_in_chunks_and_skips_rows_another_transaction_holds() {
    isolated(async |schemas: &mut Schemas| {
        let database = schemas.open().await;
        let schema = schemas.names()[0].clone();
        let coordinator = PostgresCoordinator::new(database);
        let expired = 2 * PostgresCoordinator::REMOVE_EXPIRED_CHUNK + 500;
        schemas
            .execute(
                &schema,
                &format!(
                    "INSERT INTO {{schema}}.claim (job, trigger_key, trigger_at, instance, claimed_at, expires_at, started_at)
                     SELECT 'job-' || i, 'job-' || i || ':0', now(), 'r1', now() - interval '2 hours',
                            now() - interval '1 hour', now() - interval '2 hours'
                     FROM generate_series(1, {expired}) AS i"
                ),
            )
            .await;
        // Another transaction holds one of the expired rows, and keeps it while the
        // removal runs.
        let holder = common::connect().await;
        holder.batch_execute("BEGIN").await.unwrap();
        let held = format!("SELECT 1 FROM \"{schema}\".claim WHERE job = 'job-1' FOR UPDATE");
        assert_eq!(holder.query(&held, &[]).await.unwrap().len(), 1);
        assert_eq!(coordinator.remove_expired().await.unwrap(), expired - 1, "all but the held row");
        holder.batch_execute("COMMIT").await.unwrap();
        assert_eq!(coordinator.remove_expired().await.unwrap(), 1, "the row once released");
        assert_eq!(schemas.scalar(&schema, "SELECT count(*) FROM {schema}.claim").await, 0);
    })
    .await;
}

#[tokio::test]
async fn schemas_keep_fleets_apart() {
    isolated(async |schemas: &mut Schemas| {
        let first = PostgresCoordinator::new(schemas.open().await);
        let second = PostgresCoordinator::new(schemas.open().await);
        assert_eq!(claim(&first, "tick", "2024-05-17T00:00:00Z", "r1", MINUTE).await, won(1));
        assert_eq!(claim(&second, "tick", "2024-05-17T00:00:00Z", "r1", MINUTE).await, won(1));
        assert_eq!(claim(&first, "tick", "2024-05-17T00:00:00Z", "r2", MINUTE).await, ClaimOutcome::Lost);
    })
    .await;
}

#[tokio::test]
async fn a_claim_that_fails_is_an_error_never_a_win() {
    isolated(async |schemas: &mut Schemas| {
        let database = schemas.open().await;
        let schema = schemas.names()[0].clone();
        let coordinator = PostgresCoordinator::new(database);
        schemas.execute(&schema, "DROP TABLE {schema}.fencing").await;
        let trigger = ts("2024-05-17T00:00:00Z");
        let key = trigger_key("tick", trigger);
        let claim = Claim { job: "tick", trigger, key: &key, instance: "r1", hold: MINUTE };
        let err = coordinator.claim(&claim).await.unwrap_err().to_string();
        assert!(err.starts_with("postgres://postgres@"), "{err}");
        assert!(err.ends_with(&format!("relation \"{schema}.fencing\" does not exist")), "{err}");
        // An error from the server rolled the claim back: nothing to read back.
        assert!(!err.contains("outcome unknown"), "{err}");
        let rows = "SELECT count(*) FROM {schema}.claim";
        assert_eq!(schemas.scalar(&schema, rows).await, 0, "the claim was rolled back");
    })
    .await;
}

#[tokio::test]
async fn the_coordinators_clock_is_the_servers() {
    isolated(async |schemas: &mut Schemas| {
        let coordinator = PostgresCoordinator::new(schemas.open().await);
        let before = Timestamp::now();
        let time = coordinator.time().await.unwrap().expect("the server's clock");
        // The server runs on this machine: its clock is this one's.
        let off = before.duration_until(time).abs();
        assert!(off < slotcron::jiff::SignedDuration::from_secs(1), "{before} vs {time}");
    })
    .await;
}
