//! Instance heartbeats in the PostgreSQL ledger, for the stale sweep: which instances'
//! `running` records belong to a daemon whose heartbeat has lapsed.

mod common;

use std::time::Duration;

use common::{Schemas, isolated};
use slotcron::testkit::fixtures::succeeded_run;
use slotcron::{Ledger, Outcome, RunRecord};
use slotcron_postgres::PostgresLedger;

fn running(instance: &str) -> RunRecord {
    let mut record = succeeded_run("tick", "2024-05-17T00:00:00Z");
    record.instance = instance.into();
    record.outcome = Outcome::Running;
    record
}

#[tokio::test]
async fn lapsed_instances_are_those_with_running_records_that_beat_and_stopped() {
    isolated(async |schemas: &mut Schemas| {
        let ledger = PostgresLedger::new(schemas.open().await, Default::default());
        for instance in ["beat", "never-beat", "beat-done"] {
            ledger.append(&running(instance)).await.unwrap();
        }
        let mut done = running("beat-done");
        done.outcome = Outcome::Succeeded;
        ledger.update(&done).await.unwrap();
        ledger.heartbeat("beat").await.unwrap();
        ledger.heartbeat("beat-done").await.unwrap();
        // Beaten an instant ago: lapsed for a lapse of zero, not for an hour.
        assert_eq!(ledger.lapsed_instances(Duration::ZERO).await.unwrap(), ["beat"]);
        assert_eq!(ledger.lapsed_instances(Duration::from_secs(3600)).await.unwrap(), Vec::<String>::new());
        // A later beat moves it.
        ledger.heartbeat("beat").await.unwrap();
        assert_eq!(ledger.lapsed_instances(Duration::from_secs(3600)).await.unwrap(), Vec::<String>::new());
    })
    .await;
}
