//! A claim whose reply is lost is not a win: the coordinator reads the claim's row back
//! on another connection and compares the stored claimant token with its own. The faults
//! are real: a TCP forwarder in front of the real server loses bytes or cuts connections
//! (so the claim really commits, or really never arrives), and `pg_terminate_backend`
//! ends a claim's session. Claims are held mid-statement by an open transaction that
//! locks the job's fencing counter; the tests wait for a claim to block on a lock by
//! watching `pg_stat_activity`.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Schemas, connect, database_url, isolated};
use slotcron::{Claim, ClaimOutcome, Coordinator};
use slotcron_postgres::{PostgresCoordinator, PostgresDatabase};
use slotcron_testkit::{Fault, FaultProxy};
use tokio::task::JoinHandle;

const HOLD: Option<slotcron::Hold> =
    Some(slotcron::Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::ZERO });
const KEY: &str = "job:2024-05-17T00:00:05Z";

async fn claim(coordinator: &PostgresCoordinator, key: &str, instance: &str) -> ClaimOutcome {
    try_claim(coordinator, key, instance).await.unwrap()
}

async fn try_claim(
    coordinator: &PostgresCoordinator,
    key: &str,
    instance: &str,
) -> Result<ClaimOutcome, String> {
    let trigger = key.strip_prefix("job:").unwrap().parse().unwrap();
    let claim = Claim { job: "job", trigger, key, instance, hold: HOLD };
    coordinator.claim(&claim).await.map_err(|e| e.to_string())
}

fn won(fencing_token: u64) -> ClaimOutcome {
    ClaimOutcome::Won { fencing_token }
}

/// A schema, a proxy, and a coordinator ("proxied") through the proxy that has already
/// won one claim of the job (so its one connection is up and the claim prepared on it).
struct Setup {
    schema: String,
    proxy: FaultProxy,
    /// The database's URL through the proxy.
    proxied_url: String,
    coordinator: Arc<PostgresCoordinator>,
}

impl Setup {
    async fn new(schemas: &mut Schemas) -> Self {
        let schema = schemas.name();
        let (proxy, proxied_url) = common::proxy().await;
        let database = PostgresDatabase::open(&proxied_url, &schema).await.unwrap();
        let coordinator = Arc::new(PostgresCoordinator::new(database));
        assert_eq!(claim(&coordinator, "job:2024-05-17T00:00:00Z", "proxied").await, won(1));
        Self { schema, proxy, proxied_url, coordinator }
    }

    /// Another replica, connected straight to the server.
    async fn other_replica(&self) -> PostgresCoordinator {
        PostgresCoordinator::new(PostgresDatabase::open(&database_url(), &self.schema).await.unwrap())
    }

    async fn fencing_counter(&self, schemas: &Schemas) -> i64 {
        schemas.scalar(&self.schema, "SELECT token FROM {schema}.fencing WHERE job = 'job'").await
    }

    /// The claimant of the row of [`KEY`] and the fencing token kept in it.
    async fn holder(&self) -> (String, Option<i64>) {
        let sql =
            format!(r#"SELECT instance, fencing_token FROM "{}".claim WHERE trigger_key = $1"#, self.schema);
        let row = connect().await.query_one(&sql, &[&KEY]).await.unwrap();
        (row.get(0), row.get(1))
    }

    /// Claims [`KEY`] as "proxied" with `fault` armed; checks that the proxy lost (or held
    /// back) one message.
    async fn claim_losing(&self, fault: Fault) -> Result<ClaimOutcome, String> {
        self.proxy.inject(fault);
        let outcome = try_claim(&self.coordinator, KEY, "proxied").await;
        assert_eq!(self.proxy.lost(), 1, "{fault:?}");
        outcome
    }

    /// Claims [`KEY`] as "proxied" while the job's fencing counter is locked: once the
    /// claim waits for the lock (its row written, uncommitted), `interrupt(pid)` breaks it
    /// off (`pid`: the waiting session's); once the claim made again (or its read-back)
    /// waits in turn, the lock is released. The claim's outcome.
    async fn interrupted_claim(&self, interrupt: impl AsyncFnOnce(i32)) -> ClaimOutcome {
        let lock = self.hold_fencing().await;
        let claiming = self.claim_in_background();
        let first = self.blocked_session(&[], &claiming).await.expect("the claim waits");
        interrupt(first).await;
        self.blocked_session(&[first], &claiming).await;
        release(lock).await;
        claiming.await.unwrap()
    }

    /// Locks the job's fencing counter in an open transaction: a claim that wins its row
    /// then waits, uncommitted, until [`release`].
    async fn hold_fencing(&self) -> tokio_postgres::Client {
        let client = connect().await;
        let sql =
            format!(r#"BEGIN; SELECT token FROM "{}".fencing WHERE job = 'job' FOR UPDATE"#, self.schema);
        client.batch_execute(&sql).await.unwrap();
        client
    }

    /// Claims [`KEY`] as "proxied" in the background.
    fn claim_in_background(&self) -> JoinHandle<ClaimOutcome> {
        let coordinator = self.coordinator.clone();
        tokio::spawn(async move { claim(&coordinator, KEY, "proxied").await })
    }

    /// Waits until a session working on this schema, other than `seen`, waits for a
    /// lock, and returns its process id; `None` if `claiming` ends first (its outcome is
    /// then for the test to judge).
    async fn blocked_session(&self, seen: &[i32], claiming: &JoinHandle<ClaimOutcome>) -> Option<i32> {
        let client = connect().await;
        let sql = "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1";
        let pattern = format!("%\"{}\".%", self.schema);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let rows = client.query(sql, &[&pattern]).await.unwrap();
            if let Some(pid) = rows.iter().map(|row| row.get(0)).find(|pid| !seen.contains(pid)) {
                return Some(pid);
            }
            if claiming.is_finished() {
                return None;
            }
            assert!(Instant::now() < deadline, "no claim blocked on a lock in {}", self.schema);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

async fn release(lock: tokio_postgres::Client) {
    lock.batch_execute("COMMIT").await.unwrap();
}

#[tokio::test]
async fn a_lost_reply_to_a_won_claim_is_a_win_with_the_stored_fencing_token() {
    isolated(async |schemas: &mut Schemas| {
        let setup = Setup::new(schemas).await;
        assert_eq!(setup.claim_losing(Fault::LoseNextReply).await, Ok(won(2)));
        assert_eq!(setup.fencing_counter(schemas).await, 2, "the claim was made once");
        assert_eq!(setup.holder().await, ("proxied".to_owned(), Some(2)));
    })
    .await;
}

#[tokio::test]
async fn a_lost_reply_when_another_replica_holds_the_trigger_is_a_loss() {
    isolated(async |schemas: &mut Schemas| {
        let setup = Setup::new(schemas).await;
        let other = setup.other_replica().await;
        assert_eq!(claim(&other, KEY, "other").await, won(2));
        assert_eq!(setup.claim_losing(Fault::LoseNextReply).await, Ok(ClaimOutcome::Lost));
        assert_eq!(setup.holder().await, ("other".to_owned(), Some(2)));
    })
    .await;
}

#[tokio::test]
async fn a_lost_reply_that_cannot_be_read_back_is_an_error_not_a_win() {
    isolated(async |schemas: &mut Schemas| {
        let setup = Setup::new(schemas).await;
        setup.proxy.refuse(true);
        let error = setup.claim_losing(Fault::LoseNextReply).await.unwrap_err();
        assert!(error.starts_with(&setup.proxied_url), "{error}");
        assert!(error.contains("outcome unknown") && error.contains("reading it back failed"), "{error}");
        // The claim did commit: the trigger is taken, and nobody runs it (fail closed).
        assert_eq!(setup.holder().await, ("proxied".to_owned(), Some(2)));
    })
    .await;
}

#[tokio::test]
async fn a_lost_request_leaves_no_row_and_the_claim_is_made_again() {
    isolated(async |schemas: &mut Schemas| {
        let setup = Setup::new(schemas).await;
        assert_eq!(setup.claim_losing(Fault::LoseNextRequest).await, Ok(won(2)));
        assert_eq!(setup.fencing_counter(schemas).await, 2, "the claim was made once");
    })
    .await;
}

#[tokio::test]
async fn a_reply_that_never_comes_is_read_back_after_the_response_timeout() {
    isolated(async |schemas: &mut Schemas| {
        let setup = Setup::new(schemas).await;
        assert_eq!(setup.claim_losing(Fault::HoldNextReply).await, Ok(won(2)));
        assert_eq!(setup.holder().await, ("proxied".to_owned(), Some(2)));
    })
    .await;
}

#[tokio::test]
async fn a_session_ended_by_the_server_mid_claim_wrote_nothing_and_the_claim_is_made_again() {
    isolated(async |schemas: &mut Schemas| {
        let setup = Setup::new(schemas).await;
        let outcome = setup
            .interrupted_claim(async |first| {
                // The server answers FATAL (admin shutdown) and rolls the claim back; the
                // claim is made again, on a new session, and waits for the lock in turn.
                let terminate = format!("SELECT pg_terminate_backend({first})");
                connect().await.batch_execute(&terminate).await.unwrap();
            })
            .await;
        assert_eq!(outcome, won(2));
        assert_eq!(setup.proxy.lost(), 0);
        assert_eq!(setup.fencing_counter(schemas).await, 2, "one claim committed");
    })
    .await;
}

#[tokio::test]
async fn a_claim_cut_off_while_still_running_is_found_by_the_claim_made_again() {
    isolated(async |schemas: &mut Schemas| {
        let setup = Setup::new(schemas).await;
        // The claim has inserted its row and waits, uncommitted, for the fencing counter
        // when it is cut off. Reading back finds no committed row; the claim made again
        // (same token) waits for the first one's row. The first one commits; the second
        // finds the row its own.
        assert_eq!(setup.interrupted_claim(async |_| setup.proxy.cut()).await, won(2));
        assert_eq!(setup.fencing_counter(schemas).await, 2, "the claim was made once");
        assert_eq!(setup.holder().await, ("proxied".to_owned(), Some(2)));
    })
    .await;
}

#[tokio::test]
async fn a_takeover_cut_off_while_still_running_is_waited_for_by_the_read_back() {
    isolated(async |schemas: &mut Schemas| {
        let setup = Setup::new(schemas).await;
        let other = setup.other_replica().await;
        assert_eq!(claim(&other, KEY, "other").await, won(2));
        let expire = "UPDATE {schema}.claim SET expires_at = now() - interval '1 second'";
        schemas.execute(&setup.schema, expire).await;
        // As if the other claim had been made by a release without high-water marks, the
        // only claims that can be taken over.
        schemas.execute(&setup.schema, "DELETE FROM {schema}.claim_mark").await;
        // The claim has taken the expired row over and waits, uncommitted, for the
        // fencing counter when it is cut off. Reading back waits for the row: the other
        // replica's claim is still committed.
        assert_eq!(setup.interrupted_claim(async |_| setup.proxy.cut()).await, won(3));
        assert_eq!(setup.holder().await, ("proxied".to_owned(), Some(3)));
    })
    .await;
}

/// A batch's lost reply is read back claim by claim in one statement: the claims the
/// batch committed are won with their stored tokens, those another replica held are lost.
#[tokio::test]
async fn a_lost_reply_to_a_batch_is_read_back_claim_by_claim() {
    isolated(async |schemas: &mut Schemas| {
        let setup = Setup::new(schemas).await;
        // In 2100: ahead of the server's clock, so the mark refuses none of them.
        let keys: Vec<String> =
            (0..64).map(|k| format!("job:2100-01-01T00:{:02}:{:02}Z", k / 60, k % 60)).collect();
        let claims = |instance: &'static str| -> Vec<Claim<'_>> {
            keys.iter()
                .map(|key| {
                    let trigger = key.strip_prefix("job:").unwrap().parse().unwrap();
                    Claim { job: "job", trigger, key, instance, hold: HOLD }
                })
                .collect()
        };
        // Prepares the batch statement on the proxied connection.
        let warm_up = setup.coordinator.claim_batch(&claims("proxied")[63..]).await;
        assert_eq!(warm_up.into_iter().map(Result::unwrap).collect::<Vec<_>>(), [won(2)]);
        let other = setup.other_replica().await;
        for claim in claims("other").iter().take(63).step_by(4) {
            assert!(matches!(other.claim(claim).await.unwrap(), ClaimOutcome::Won { .. }));
        }
        setup.proxy.inject(Fault::LoseNextReply);
        let outcomes = setup.coordinator.claim_batch(&claims("proxied")[..63]).await;
        assert_eq!(setup.proxy.lost(), 1, "the batch's reply was lost");
        let mut tokens = Vec::new();
        for (k, outcome) in outcomes.into_iter().enumerate() {
            match outcome.unwrap() {
                ClaimOutcome::Won { fencing_token } if k % 4 != 0 => tokens.push(fencing_token),
                ClaimOutcome::Lost if k % 4 == 0 => {}
                other => panic!("{}: {other:?}", keys[k]),
            }
        }
        assert!(tokens.windows(2).all(|w| w[0] < w[1]), "fencing tokens in trigger order: {tokens:?}");
        assert_eq!(tokens.len(), 47);
        assert_eq!(setup.fencing_counter(schemas).await, 2 + 16 + 47, "the batch was made once");
    })
    .await;
}
