//! The PostgreSQL membership on the real server, beyond the suite's contract: lapsed
//! members and tallies do not stay in their tables, and a lapsed tally starts afresh.

mod common;

use std::time::Duration;

use common::{Schemas, isolated};
use slotcron::Coordinator;
use slotcron::Handled;
use slotcron::jiff::Timestamp;
use slotcron_postgres::{PostgresCoordinator, PostgresDatabase};

const MINUTE: Duration = Duration::from_secs(60);
const BRIEF: Duration = Duration::from_millis(20);

#[tokio::test]
async fn heartbeats_remove_lapsed_members_and_tallies() {
    isolated(async |schemas: &mut Schemas| {
        let schema = schemas.name();
        let database = PostgresDatabase::open(&common::database_url(), &schema).await.unwrap();
        let coordinator = PostgresCoordinator::new(database);
        let at = Timestamp::from_second(1_715_904_000).unwrap();
        coordinator.heartbeat("gone", BRIEF).await.unwrap();
        coordinator.add_handled("gone", at, Handled::of_key("j:1"), BRIEF).await.unwrap();
        coordinator.add_handled("live", at, Handled::of_key("j:2"), MINUTE).await.unwrap();
        // Real time: the server's clock decides the expiry.
        tokio::time::sleep(BRIEF * 5).await;
        let members = coordinator.heartbeat("live", MINUTE).await.unwrap();
        assert_eq!(members, Some(vec!["live".to_owned()]));
        let rows = "SELECT count(*) FROM {schema}.member";
        assert_eq!(schemas.scalar(&schema, rows).await, 1, "the lapsed member's row is gone");
        let rows = "SELECT count(*) FROM {schema}.handled";
        assert_eq!(schemas.scalar(&schema, rows).await, 1, "the lapsed tally's row is gone");
        let tallies = coordinator.handled(&[("gone", at), ("live", at)]).await.unwrap();
        assert_eq!(tallies, [None, Some(Handled::of_key("j:2"))]);
    })
    .await;
}

#[tokio::test]
async fn a_lapsed_tally_starts_afresh() {
    isolated(async |schemas: &mut Schemas| {
        let database = schemas.open().await;
        let coordinator = PostgresCoordinator::new(database);
        let at = Timestamp::from_second(1_715_904_000).unwrap();
        coordinator.add_handled("owner", at, Handled::of_key("j:1"), BRIEF).await.unwrap();
        tokio::time::sleep(BRIEF * 5).await;
        assert_eq!(coordinator.handled(&[("owner", at)]).await.unwrap(), [None], "lapsed, not yet removed");
        coordinator.add_handled("owner", at, Handled::of_key("j:2"), MINUTE).await.unwrap();
        assert_eq!(coordinator.handled(&[("owner", at)]).await.unwrap(), [Some(Handled::of_key("j:2"))]);
    })
    .await;
}

#[tokio::test]
async fn a_tally_beyond_a_bigint_is_refused_and_nothing_written() {
    isolated(async |schemas: &mut Schemas| {
        let database = schemas.open().await;
        let coordinator = PostgresCoordinator::new(database);
        let at = Timestamp::from_second(1_715_904_000).unwrap();
        let huge = Handled { count: 1, fingerprint: u64::MAX };
        let err = coordinator.add_handled("owner", at, huge, MINUTE).await.unwrap_err();
        assert!(err.to_string().contains("beyond a bigint"), "{err}");
        assert_eq!(coordinator.handled(&[("owner", at)]).await.unwrap(), [None]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_heartbeats_removing_lapsed_rows_all_succeed() {
    isolated(async |schemas: &mut Schemas| {
        let schema = schemas.name();
        let mut replicas = Vec::new();
        for _ in 0..6 {
            let database = PostgresDatabase::open(&common::database_url(), &schema).await.unwrap();
            replicas.push(std::sync::Arc::new(PostgresCoordinator::new(database)));
        }
        for second in 0..200 {
            let at = Timestamp::from_second(1_715_904_000 + second).unwrap();
            replicas[0].add_handled("gone", at, Handled::of_key("j:1"), BRIEF).await.unwrap();
            replicas[0].heartbeat(&format!("gone-{second}"), BRIEF).await.unwrap();
        }
        tokio::time::sleep(BRIEF * 5).await;
        let beats: Vec<_> = replicas
            .iter()
            .enumerate()
            .map(|(i, replica)| {
                let replica = replica.clone();
                tokio::spawn(async move { replica.heartbeat(&format!("r{i}"), MINUTE).await })
            })
            .collect();
        for beat in beats {
            beat.await.unwrap().expect("every heartbeat succeeds");
        }
        let rows = "SELECT count(*) FROM {schema}.handled";
        assert_eq!(schemas.scalar(&schema, rows).await, 0, "the lapsed tallies are gone");
        let members = replicas[0].heartbeat("r0", MINUTE).await.unwrap().unwrap();
        assert_eq!(members, ["r0", "r1", "r2", "r3", "r4", "r5"]);
    })
    .await;
}
