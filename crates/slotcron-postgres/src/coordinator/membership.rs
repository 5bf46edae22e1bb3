//! The fleet's [membership](slotcron::Coordinator#membership) on PostgreSQL: the
//! `member` and `handled` tables of schema version 8, each operation one statement (one
//! round trip), every expiry on the server's clock (`now()`).

use std::time::{Duration, SystemTime};

use slotcron::CoordinatorError;
use slotcron::jiff::Timestamp;
use slotcron::{Handled, LiveMember, MemberDetails, TriggerRef};

use super::{PostgresCoordinator, ttl_us};
use crate::PostgresDatabase;
use crate::codec;
use slotcron::error_chain;

/// The membership statements, on the schema.
#[derive(Debug)]
pub(super) struct MembershipSql {
    heartbeat: String,
    leave: String,
    publish_details: String,
    members: String,
    unclaimed: String,
    add_handled: String,
    handled: String,
}

impl MembershipSql {
    pub(super) fn new(database: &PostgresDatabase) -> Self {
        Self {
            // Removes the lapsed members and tallies (those another heartbeat is removing
            // now are skipped, so concurrent heartbeats never wait for, or deadlock on,
            // each other), renews $1 until $2 µs from now, and returns the live members,
            // $1 included, in byte order (as Rust sorts them). The SELECT sees the rows as
            // they were before the statement: the others still live, and $1 added by the
            // UNION.
            heartbeat: database.sql(
                "WITH lapsed AS (
                     DELETE FROM {schema}.member WHERE instance IN (
                         SELECT instance FROM {schema}.member
                         WHERE expires_at <= now() AND instance <> $1 FOR UPDATE SKIP LOCKED)
                 ), lapsed_tallies AS (
                     DELETE FROM {schema}.handled WHERE (owner, trigger_at) IN (
                         SELECT owner, trigger_at FROM {schema}.handled
                         WHERE expires_at <= now() FOR UPDATE SKIP LOCKED)
                 ), beat AS (
                     INSERT INTO {schema}.member (instance, expires_at)
                     VALUES ($1, now() + $2::bigint * interval '1 microsecond')
                     ON CONFLICT (instance) DO UPDATE SET expires_at = EXCLUDED.expires_at
                 )
                 SELECT instance FROM (
                     SELECT instance FROM {schema}.member WHERE expires_at > now() AND instance <> $1
                     UNION ALL SELECT $1::text
                 ) AS live ORDER BY instance COLLATE \"C\"",
            ),
            leave: database.sql(
                "WITH details AS (DELETE FROM {schema}.member_detail WHERE instance = $1)
                 DELETE FROM {schema}.member WHERE instance = $1",
            ),
            publish_details: database.sql(
                "INSERT INTO {schema}.member_detail (instance, details) VALUES ($1, $2)
                 ON CONFLICT (instance) DO UPDATE SET details = EXCLUDED.details",
            ),
            // The live members, their lapse and details, in byte order.
            members: database.sql(
                "SELECT m.instance, m.expires_at, d.details FROM {schema}.member m
                 LEFT JOIN {schema}.member_detail d ON d.instance = m.instance
                 WHERE m.expires_at > now()
                 ORDER BY m.instance COLLATE \"C\"",
            ),
            // By position: whether no claim holds the (job, trigger key).
            unclaimed: database.sql(
                "SELECT coalesce(array_agg(NOT EXISTS (
                     SELECT FROM {schema}.claim c
                     WHERE c.job = t.job AND c.trigger_key = t.trigger_key
                       AND (c.expires_at IS NULL OR c.expires_at > now())
                 ) AND NOT EXISTS (SELECT FROM {schema}.job_pause p WHERE p.job = t.job)
                 ORDER BY t.ord), '{}')
                 FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(job, trigger_key, ord)",
            ),
            // A lapsed tally not yet removed counts as none: the new one starts afresh.
            add_handled: database.sql(
                "INSERT INTO {schema}.handled AS tally (owner, trigger_at, count, fingerprint, expires_at)
                 VALUES ($1, $2, $3, $4, now() + $5::bigint * interval '1 microsecond')
                 ON CONFLICT (owner, trigger_at) DO UPDATE SET
                     count = EXCLUDED.count
                         + CASE WHEN tally.expires_at > now() THEN tally.count ELSE 0 END,
                     fingerprint = EXCLUDED.fingerprint
                         + CASE WHEN tally.expires_at > now() THEN tally.fingerprint ELSE 0 END,
                     expires_at = EXCLUDED.expires_at",
            ),
            // By position: the live tally of each (owner, trigger instant), NULLs for none.
            handled: database.sql(
                "SELECT h.count, h.fingerprint
                 FROM unnest($1::text[], $2::timestamptz[]) WITH ORDINALITY AS t(owner, trigger_at, ord)
                 LEFT JOIN {schema}.handled h
                     ON h.owner = t.owner AND h.trigger_at = t.trigger_at AND h.expires_at > now()
                 ORDER BY t.ord",
            ),
        }
    }
}

/// A tally's field as a `bigint`; beyond it the write fails (non-owners then read each
/// trigger), as [`Handled`] describes.
fn bigint(n: u64) -> Result<i64, CoordinatorError> {
    i64::try_from(n).map_err(|_| CoordinatorError::unavailable(format!("tally field {n} beyond a bigint")))
}

impl PostgresCoordinator {
    pub(super) async fn renew_member(
        &self,
        instance: &str,
        ttl: Duration,
    ) -> Result<Vec<String>, CoordinatorError> {
        let what = "membership heartbeat";
        let rows = self.query_for(&self.membership.heartbeat, &[&instance, &ttl_us(ttl)], what).await?;
        rows.iter().map(|row| row.try_get(0).map_err(|e| self.not_understood(what, &e))).collect()
    }

    pub(super) async fn remove_member(&self, instance: &str) -> Result<(), CoordinatorError> {
        self.query_for(&self.membership.leave, &[&instance], "leaving the membership").await.map(drop)
    }

    pub(super) async fn publish(
        &self,
        instance: &str,
        details: &MemberDetails,
    ) -> Result<(), CoordinatorError> {
        let what = format!("publishing the details of {instance:?}");
        self.query_for(&self.membership.publish_details, &[&instance, &details.to_json()], &what)
            .await
            .map(drop)
    }

    pub(super) async fn read_members(&self) -> Result<Vec<LiveMember>, CoordinatorError> {
        let what = "reading the members";
        let rows = self.query_for(&self.membership.members, &[], what).await?;
        rows.iter()
            .map(|row| {
                let instance: String = row.try_get(0).map_err(|e| self.not_understood(what, &e))?;
                let lapses: SystemTime = row.try_get(1).map_err(|e| self.not_understood(what, &e))?;
                let json: Option<String> = row.try_get(2).map_err(|e| self.not_understood(what, &e))?;
                let lapses_at = codec::instant(lapses)
                    .map_err(|e| CoordinatorError::unavailable(format!("{what}: {e}")))?;
                let details = match json {
                    Some(json) => MemberDetails::from_json(&instance, &json)?,
                    None => MemberDetails::default(),
                };
                Ok(LiveMember { instance, lapses_at, details })
            })
            .collect()
    }

    pub(super) async fn read_unclaimed(
        &self,
        triggers: &[TriggerRef<'_>],
    ) -> Result<Vec<bool>, CoordinatorError> {
        let what = format!("reading {} trigger keys", triggers.len());
        let jobs: Vec<&str> = triggers.iter().map(|t| t.job).collect();
        let keys: Vec<&str> = triggers.iter().map(|t| t.key).collect();
        let rows = self.query_for(&self.membership.unclaimed, &[&jobs, &keys], &what).await?;
        let answers: Vec<bool> = match rows.first() {
            Some(row) => row.try_get(0).map_err(|e| self.not_understood(&what, &e))?,
            None => Vec::new(),
        };
        if answers.len() != triggers.len() {
            let cause = format!("{what}: {} answers", answers.len());
            return Err(CoordinatorError::unavailable(format!("{}: {cause}", self.database.url())));
        }
        Ok(answers)
    }

    pub(super) async fn add_tally(
        &self,
        owner: &str,
        at: Timestamp,
        handled: Handled,
        ttl: Duration,
    ) -> Result<(), CoordinatorError> {
        let what = format!("tally of {owner} at {at}");
        let at: SystemTime = codec::timestamptz(at).map_err(CoordinatorError::unavailable)?;
        let (count, fingerprint) = (bigint(handled.count)?, bigint(handled.fingerprint)?);
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] =
            [&owner, &at, &count, &fingerprint, &ttl_us(ttl)];
        self.query_for(&self.membership.add_handled, &params, &what).await.map(drop)
    }

    pub(super) async fn read_tallies(
        &self,
        tallies: &[(&str, Timestamp)],
    ) -> Result<Vec<Option<Handled>>, CoordinatorError> {
        let what = format!("reading {} tallies", tallies.len());
        let owners: Vec<&str> = tallies.iter().map(|(owner, _)| *owner).collect();
        let at = tallies
            .iter()
            .map(|(_, at)| codec::timestamptz(*at))
            .collect::<Result<Vec<SystemTime>, _>>()
            .map_err(CoordinatorError::unavailable)?;
        let rows = self.query_for(&self.membership.handled, &[&owners, &at], &what).await?;
        if rows.len() != tallies.len() {
            let cause = format!("{what}: {} rows", rows.len());
            return Err(CoordinatorError::unavailable(format!("{}: {cause}", self.database.url())));
        }
        rows.iter()
            .map(|row| {
                let count: Option<i64> = row.try_get(0).map_err(|e| self.not_understood(&what, &e))?;
                let fingerprint: Option<i64> = row.try_get(1).map_err(|e| self.not_understood(&what, &e))?;
                Ok(count.zip(fingerprint).map(|(count, fingerprint)| Handled {
                    count: count as u64,
                    fingerprint: fingerprint as u64,
                }))
            })
            .collect()
    }

    /// A reply of `what` whose columns were not what the statement selects.
    pub(super) fn not_understood(&self, what: &str, e: &tokio_postgres::Error) -> CoordinatorError {
        CoordinatorError::unavailable(format!("{}: {what}: {}", self.database.url(), error_chain(e)))
    }
}
