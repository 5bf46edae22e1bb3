//! The fleet's pauses, idempotency keys and cancel requests in PostgreSQL ([`Controls`]):
//! the tables `job_pause` (one row per paused job, read by the claim statement) and
//! `manual_request` (one row per remembered idempotency key, with its expiry on the
//! server's clock; and one per request to cancel a run, whose `request_key` is
//! `cancel:{trigger ms}:{reason}` — an idempotency key holds no `:` — and `trigger_at` the
//! run's trigger, so that they need no table of their own), and `failure_streak` (one row
//! per job with failed triggers in a row; a pause its failures made keeps its reason in
//! `job_pause.reason`, schema version 17). Shared by [`PostgresCoordinator`](crate::PostgresCoordinator) and
//! [`PostgresStore`](crate::PostgresStore): the same rows, whichever a scheduler uses.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use slotcron::jiff::Timestamp;
use slotcron::{BoxError, CancelRequest, Controls, ControlsError, FailureStreak};

use crate::PostgresDatabase;
use crate::codec;

/// The pause and idempotency statements, on a schema.
#[derive(Debug, Clone)]
pub(crate) struct PostgresControls {
    database: PostgresDatabase,
    pause: String,
    resume: String,
    paused: String,
    paused_jobs: String,
    count_failure: String,
    reset_failures: String,
    pause_reasons: String,
    remember: String,
    remembered: String,
    request_cancel: String,
    cancel_requests: String,
}

/// The start of a cancel request's `request_key`.
const CANCEL_KEY: &str = "cancel:";

impl PostgresControls {
    pub(crate) fn new(database: PostgresDatabase) -> Self {
        Self {
            // The instant of an earlier pause stays; the one before this statement is
            // answered.
            pause: database.sql(
                "WITH before AS (SELECT paused_at FROM {schema}.job_pause WHERE job = $1),
                      pausing AS (INSERT INTO {schema}.job_pause (job, paused_at) VALUES ($1, $2)
                                  ON CONFLICT (job) DO NOTHING)
                 SELECT paused_at FROM before",
            ),
            // The job's streak ends with its pause.
            resume: database.sql(
                "WITH streak AS (DELETE FROM {schema}.failure_streak WHERE job = $1)
                 DELETE FROM {schema}.job_pause WHERE job = $1 RETURNING paused_at",
            ),
            paused: database.sql("SELECT paused_at FROM {schema}.job_pause WHERE job = $1"),
            paused_jobs: database.sql("SELECT job, paused_at FROM {schema}.job_pause"),
            // The streak counted, and the job paused when it reaches $3 (a job paused
            // already keeps its pause): the streak and whether this statement paused it.
            count_failure: database.sql(
                "WITH streak AS (
                     INSERT INTO {schema}.failure_streak AS s (job, failures) VALUES ($1, 1)
                     ON CONFLICT (job) DO UPDATE SET failures = s.failures + 1
                     RETURNING failures
                 ), pausing AS (
                     INSERT INTO {schema}.job_pause (job, paused_at, reason)
                     SELECT $1, $2, $4 FROM streak WHERE failures >= $3
                     ON CONFLICT (job) DO NOTHING
                     RETURNING 1
                 )
                 SELECT (SELECT failures FROM streak), EXISTS (SELECT FROM pausing)",
            ),
            reset_failures: database.sql("DELETE FROM {schema}.failure_streak WHERE job = $1"),
            pause_reasons: database
                .sql("SELECT job, reason FROM {schema}.job_pause WHERE reason IS NOT NULL"),
            // Inserted, or taking over an expired row: a row comes back. Of two concurrent
            // inserts the second waits for the first and then finds its row unexpired.
            // The job's other expired keys go in the same statement.
            remember: database.sql(
                "WITH gone AS (DELETE FROM {schema}.manual_request
                               WHERE job = $1 AND request_key <> $2 AND expires_at <= now())
                 INSERT INTO {schema}.manual_request AS held (job, request_key, trigger_at, expires_at)
                 VALUES ($1, $2, $3, now() + $4::bigint * interval '1 microsecond')
                 ON CONFLICT (job, request_key) DO UPDATE SET
                     trigger_at = EXCLUDED.trigger_at, expires_at = EXCLUDED.expires_at
                 WHERE held.expires_at <= now()
                 RETURNING 1",
            ),
            remembered: database
                .sql("SELECT trigger_at FROM {schema}.manual_request WHERE job = $1 AND request_key = $2"),
            // Expired cancel requests, and those for the same run with another reason, go in
            // the same statement (never the row inserted: a row deleted and inserted in one
            // statement would conflict with itself).
            request_cancel: database.sql(
                "WITH gone AS (DELETE FROM {schema}.manual_request
                               WHERE request_key LIKE 'cancel:%' AND request_key <> $2
                                 AND (expires_at <= now() OR (job = $1 AND trigger_at = $3)))
                 INSERT INTO {schema}.manual_request (job, request_key, trigger_at, expires_at)
                 VALUES ($1, $2, $3, now() + $4::bigint * interval '1 microsecond')
                 ON CONFLICT (job, request_key) DO UPDATE SET expires_at = EXCLUDED.expires_at",
            ),
            cancel_requests: database.sql(
                "SELECT job, trigger_at, request_key FROM {schema}.manual_request
                 WHERE request_key LIKE 'cancel:%' AND expires_at > now()",
            ),
            database,
        }
    }

    /// The first column of the first row, an instant, if there is a row.
    async fn instant(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Option<Timestamp>, BoxError> {
        let rows = self.database.query(sql, params).await?;
        rows.first().map(|row| codec::instant(row.try_get::<_, SystemTime>(0)?)).transpose()
    }
}

#[async_trait]
impl Controls for PostgresControls {
    async fn set_paused(&self, job: &str, at: Option<Timestamp>) -> Result<Option<Timestamp>, ControlsError> {
        let answer: Result<_, BoxError> = async {
            match at {
                Some(at) => self.instant(&self.pause, &[&job, &codec::timestamptz(at)?]).await,
                None => self.instant(&self.resume, &[&job]).await,
            }
        }
        .await;
        answer.map_err(ControlsError::new)
    }

    async fn paused(&self, job: &str) -> Result<Option<Timestamp>, ControlsError> {
        let answer: Result<_, BoxError> = async { self.instant(&self.paused, &[&job]).await }.await;
        answer.map_err(ControlsError::new)
    }

    async fn paused_jobs(&self) -> Result<HashMap<String, Timestamp>, ControlsError> {
        let answer: Result<_, BoxError> = async {
            let rows = self.database.query(&self.paused_jobs, &[]).await?;
            rows.iter().map(|row| Ok((row.try_get(0)?, codec::instant(row.try_get(1)?)?))).collect()
        }
        .await;
        answer.map_err(ControlsError::new)
    }

    fn counts_failures(&self) -> bool {
        true
    }

    /// One statement: the job's row of `failure_streak` counted, and its row of
    /// `job_pause` inserted (with the reason) when the streak reaches `pause_after`.
    async fn count_failure(
        &self,
        job: &str,
        pause_after: u64,
        at: Timestamp,
        reason: &str,
    ) -> Result<FailureStreak, ControlsError> {
        let answer: Result<_, BoxError> = async {
            let limit = i64::try_from(pause_after).unwrap_or(i64::MAX);
            let at = codec::timestamptz(at)?;
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] = [&job, &at, &limit, &reason];
            let rows = self.database.query(&self.count_failure, &params).await?;
            let row = rows.first().ok_or("counting a failure answered no row")?;
            let failures: i64 = row.try_get(0)?;
            Ok(FailureStreak { failures: failures.max(0) as u64, paused: row.try_get(1)? })
        }
        .await;
        answer.map_err(ControlsError::new)
    }

    async fn reset_failures(&self, job: &str) -> Result<(), ControlsError> {
        let answer: Result<_, BoxError> = async {
            self.database.query(&self.reset_failures, &[&job]).await?;
            Ok(())
        }
        .await;
        answer.map_err(ControlsError::new)
    }

    async fn pause_reasons(&self) -> Result<HashMap<String, String>, ControlsError> {
        let answer: Result<_, BoxError> = async {
            let rows = self.database.query(&self.pause_reasons, &[]).await?;
            rows.iter().map(|row| Ok((row.try_get(0)?, row.try_get(1)?))).collect()
        }
        .await;
        answer.map_err(ControlsError::new)
    }

    async fn remember_request(
        &self,
        job: &str,
        key: &str,
        trigger: Timestamp,
        ttl: Duration,
    ) -> Result<Option<Timestamp>, ControlsError> {
        let answer: Result<_, BoxError> = async {
            let ttl_us = i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX);
            let inserted = self
                .database
                .query(&self.remember, &[&job, &key, &codec::timestamptz(trigger)?, &ttl_us])
                .await?;
            if !inserted.is_empty() {
                return Ok(None);
            }
            match self.instant(&self.remembered, &[&job, &key]).await? {
                Some(first) => Ok(Some(first)),
                None => {
                    Err(format!("idempotency key {key:?} of job {job:?} expired while read: try again")
                        .into())
                }
            }
        }
        .await;
        answer.map_err(ControlsError::new)
    }

    async fn request_cancel(&self, request: &CancelRequest, ttl: Duration) -> Result<(), ControlsError> {
        let answer: Result<_, BoxError> = async {
            let ttl_us = i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX);
            let key = format!("{CANCEL_KEY}{}:{}", request.trigger.as_millisecond(), request.reason);
            let trigger = codec::timestamptz(request.trigger)?;
            self.database.query(&self.request_cancel, &[&request.job, &key, &trigger, &ttl_us]).await?;
            Ok(())
        }
        .await;
        answer.map_err(ControlsError::new)
    }

    async fn cancel_requests(&self) -> Result<Vec<CancelRequest>, ControlsError> {
        let answer: Result<_, BoxError> = async {
            let rows = self.database.query(&self.cancel_requests, &[]).await?;
            rows.iter()
                .map(|row| {
                    let key: String = row.try_get(2)?;
                    let reason = key.strip_prefix(CANCEL_KEY).and_then(|rest| rest.split_once(':'));
                    let reason = reason.map_or_else(|| key.clone(), |(_, reason)| reason.to_owned());
                    let trigger = codec::instant(row.try_get(1)?)?;
                    Ok(CancelRequest { job: row.try_get(0)?, trigger, reason })
                })
                .collect()
        }
        .await;
        answer.map_err(ControlsError::new)
    }
}
