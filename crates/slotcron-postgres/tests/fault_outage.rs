//! Fault suite, failure 5 of issue 8: state and claims on PostgreSQL behind a proxy that
//! refuses every connection for 5 triggers. Every trigger of the window ends in exactly
//! one record, the outage's `skipped-backend-unavailable` ones included, and the job state
//! written during the outage (a one-shot done) reaches the store once it is back.
//!
//! The scheduler runs on a manual clock, one trigger a step; each step waits (bounded)
//! until the scheduler has tried to claim that step's trigger. Once the proxy forwards
//! again, steps go on until the records of the outage are in the database (or 20 steps).

mod common;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use common::{Schemas, connect, isolated};
use slotcron::jiff::{SignedDuration, Timestamp};
use slotcron::{
    CancellationToken, Claim, ClaimOutcome, Coordinator, CoordinatorError, Job, ManualClock, Retention,
    Scheduler,
};
use slotcron_postgres::{PostgresCoordinator, PostgresDatabase, PostgresLedger, PostgresStore};
use slotcron_testkit::harness::{ok, ts};
use tokio::sync::watch;

/// The longest a step may take.
const PATIENCE: Duration = Duration::from_secs(30);

const T0: &str = "2024-05-17T00:00:00Z";

fn at(seconds: i64) -> Timestamp {
    ts(T0) + SignedDuration::from_secs(seconds)
}

/// The PostgreSQL coordinator, telling the test which triggers the scheduler has tried to
/// claim (whether the claim reached the server or not): once a claim has answered, the
/// trigger's record is in the scheduler's hands.
struct Attempts {
    inner: PostgresCoordinator,
    tried: Mutex<HashSet<Timestamp>>,
    changed: watch::Sender<usize>,
}

impl Attempts {
    /// Waits until the claim of `trigger` was tried.
    async fn wait_for(&self, trigger: Timestamp) {
        let mut changed = self.changed.subscribe();
        tokio::time::timeout(PATIENCE, async {
            while !self.tried.lock().unwrap().contains(&trigger) {
                changed.changed().await.unwrap();
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{trigger} not claimed within {PATIENCE:?}"));
    }
}

#[async_trait]
impl Coordinator for Attempts {
    async fn claim(&self, claim: &Claim<'_>) -> Result<ClaimOutcome, CoordinatorError> {
        let result = self.inner.claim(claim).await;
        self.tried.lock().unwrap().insert(claim.trigger);
        self.changed.send_modify(|n| *n += 1);
        result
    }

    fn name(&self) -> &'static str {
        self.inner.name()
    }
}

/// `(job, trigger, outcome)` of every record in `schema`, oldest trigger first.
async fn stored(schema: &str) -> Vec<(String, Timestamp, String)> {
    let sql =
        format!(r#"SELECT job, trigger_at, outcome FROM "{schema}".run_record ORDER BY job, trigger_at"#);
    let rows = connect().await.query(&sql, &[]).await.unwrap();
    rows.iter()
        .map(|row| {
            let at: std::time::SystemTime = row.get(1);
            (row.get(0), Timestamp::try_from(at).unwrap(), row.get(2))
        })
        .collect()
}

#[tokio::test]
async fn an_outage_loses_no_record_and_no_job_state() {
    isolated(async |schemas: &mut Schemas| {
        let schema = schemas.name();
        let (proxy, proxied_url) = common::proxy().await;
        let database = PostgresDatabase::open(&proxied_url, &schema).await.unwrap();
        let claims = Arc::new(Attempts {
            inner: PostgresCoordinator::new(database.clone()),
            tried: Mutex::default(),
            changed: watch::Sender::new(0),
        });
        let clock = ManualClock::new(ts(T0));
        let scheduler = Scheduler::builder()
            .clock(clock.clone())
            .instance("replica")
            .coordinator(claims.clone())
            .store(Arc::new(PostgresStore::new(database.clone())))
            .ledger(Arc::new(PostgresLedger::new(database.clone(), Retention::default())))
            .claim_timeout(Duration::from_secs(5))
            .build();
        // Claimed, so skipped during the outage.
        scheduler
            .add(Job::builder("tick").every(Duration::from_secs(1)).handler(ok).build().unwrap())
            .unwrap();
        // Not claimed: it runs during the outage, and its state must be kept.
        let once = Job::builder("once").at(at(6)).on_every_replica(true).handler(ok).build().unwrap();
        scheduler.add(once).unwrap();
        let cancel = CancellationToken::new();
        let run = tokio::spawn({
            let scheduler = scheduler.clone();
            let cancel = cancel.clone();
            async move { scheduler.run(cancel).await }
        });
        tokio::time::timeout(PATIENCE, async {
            while clock.next_deadline().is_none() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the scheduler waits for its first trigger");
        // Up for triggers 1..=3, down for 4..=8 (the one-shot at 6), up again from 9.
        for k in 1..=20 {
            if k == 4 {
                proxy.refuse(true);
                proxy.cut();
            }
            if k == 9 {
                proxy.refuse(false);
            }
            clock.set(at(k));
            claims.wait_for(at(k)).await;
            let records = stored(&schema).await;
            let of_outage = records.iter().filter(|(_, trigger, _)| *trigger <= at(8)).count();
            if k >= 9 && of_outage == 9 {
                break;
            }
        }
        cancel.cancel();
        run.await.unwrap();

        let records: Vec<_> = stored(&schema).await.into_iter().filter(|(_, t, _)| *t <= at(8)).collect();
        let mut expected = vec![("once".to_owned(), at(6), "succeeded".to_owned())];
        for k in 1..=8 {
            let outcome = if k < 4 { "succeeded" } else { "skipped-backend-unavailable" };
            expected.push(("tick".to_owned(), at(k), outcome.to_owned()));
        }
        assert_eq!(records, expected, "one record per trigger, none lost in the outage");
        let done: bool = connect()
            .await
            .query_one(&format!(r#"SELECT one_shot_done FROM "{schema}".job_state WHERE job = 'once'"#), &[])
            .await
            .expect("the one-shot's state is stored")
            .get(0);
        assert!(done, "the one-shot is stored done");
    })
    .await;
}
