use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use slotcron::{Claim, ClaimOutcome, Coordinator, CoordinatorError};

use crate::codec;
use crate::{DbError, PostgresDatabase};

/// A [`Coordinator`] on a claims table, so a fleet with only PostgreSQL needs no Redis.
///
/// A claim is one statement (one round trip): it inserts the row keyed by (job, trigger
/// key) if absent — or replaces it if its expiry has passed — and, only if it did, bumps
/// the job's fencing counter and returns the new token. Concurrent claims of one trigger
/// serialize on the row's key, so exactly one wins. Expiry is measured on the server's
/// clock (`now()`), so replicas' clocks do not matter; one-shot claims (no TTL) never
/// expire. A claim whose reply never arrives is an error, never a win.
///
/// Expired claims are removed every [`PostgresCoordinator::REMOVE_EXPIRED_EVERY`] claims
/// of this process (in the background), so the table stays bounded.
#[derive(Debug)]
pub struct PostgresCoordinator {
    database: PostgresDatabase,
    claim_sql: String,
    remove_expired_sql: String,
    claims: AtomicU64,
}

/// The claim: insert-if-absent-or-expired, then the fencing counter of a won claim.
const CLAIM: &str = "
WITH won AS (
    INSERT INTO {schema}.claim AS held (job, trigger_key, trigger_at, instance, claimed_at, expires_at)
    VALUES ($1, $2, $3, $4, now(), now() + $5::bigint * interval '1 microsecond')
    ON CONFLICT (job, trigger_key) DO UPDATE SET
        trigger_at = EXCLUDED.trigger_at,
        instance = EXCLUDED.instance,
        claimed_at = EXCLUDED.claimed_at,
        expires_at = EXCLUDED.expires_at
    WHERE held.expires_at <= now()
    RETURNING held.job
)
INSERT INTO {schema}.fencing AS counter (job, token)
SELECT job, 1 FROM won
ON CONFLICT (job) DO UPDATE SET token = counter.token + 1
RETURNING counter.token";

impl PostgresCoordinator {
    /// How many claims of this process between two removals of expired claims.
    pub const REMOVE_EXPIRED_EVERY: u64 = 1_000;
    /// TTLs are capped at this (a thousand years): longer is forever in practice, and
    /// the server's `timestamptz` has an end.
    pub const MAX_TTL: Duration = Duration::from_secs(1_000 * 365 * 86_400);

    /// The coordinator on `database`'s schema.
    pub fn new(database: PostgresDatabase) -> Self {
        Self {
            claim_sql: database.sql(CLAIM),
            remove_expired_sql: database.sql("DELETE FROM {schema}.claim WHERE expires_at <= now()"),
            database,
            claims: AtomicU64::new(0),
        }
    }

    /// Removes the claims whose expiry has passed (they could be taken over anyway);
    /// the number removed. One-shot claims stay.
    ///
    /// # Errors
    /// The server failed.
    pub async fn remove_expired(&self) -> Result<u64, DbError> {
        self.database.execute(&self.remove_expired_sql, &[]).await
    }

    fn remove_expired_in_background(&self) {
        let database = self.database.clone();
        let sql = self.remove_expired_sql.clone();
        tokio::spawn(async move {
            match database.execute(&sql, &[]).await {
                Ok(removed) => tracing::debug!(url = database.url(), removed, "expired claims removed"),
                Err(e) => tracing::warn!("removing expired claims: {e}"),
            }
        });
    }
}

#[async_trait]
impl Coordinator for PostgresCoordinator {
    async fn claim(&self, claim: &Claim<'_>) -> Result<ClaimOutcome, CoordinatorError> {
        let trigger: SystemTime = codec::timestamptz(claim.trigger).map_err(CoordinatorError)?;
        let ttl_us = claim.ttl.map(|ttl| ttl.min(Self::MAX_TTL).as_micros() as i64);
        let rows = self
            .database
            .query(&self.claim_sql, &[&claim.job, &claim.key, &trigger, &claim.instance, &ttl_us])
            .await
            .map_err(CoordinatorError::new)?;
        if self.claims.fetch_add(1, Ordering::Relaxed) % Self::REMOVE_EXPIRED_EVERY
            == Self::REMOVE_EXPIRED_EVERY - 1
        {
            self.remove_expired_in_background();
        }
        match rows.first() {
            Some(row) => {
                let token: i64 = row.try_get(0).map_err(CoordinatorError::new)?;
                Ok(ClaimOutcome::Won { fencing_token: token as u64 })
            }
            None => Ok(ClaimOutcome::Lost),
        }
    }

    fn name(&self) -> &'static str {
        "postgres"
    }
}
