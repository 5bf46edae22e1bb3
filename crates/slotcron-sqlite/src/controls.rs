//! A single replica's pauses and idempotency keys in its SQLite file ([`Controls`]): the
//! tables `job_pause` and `manual_request` (expiry on this machine's clock).

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::OptionalExtension;
use slotcron::jiff::Timestamp;
use slotcron::{BoxError, Controls, ControlsError};

use crate::SqliteDatabase;
use crate::codec;

/// The pauses and idempotency keys of one SQLite file.
#[derive(Debug, Clone)]
pub(crate) struct SqliteControls {
    pub(crate) database: SqliteDatabase,
}

#[async_trait]
impl Controls for SqliteControls {
    async fn set_paused(&self, job: &str, at: Option<Timestamp>) -> Result<Option<Timestamp>, ControlsError> {
        let answer: Result<_, BoxError> = async {
            let job = job.to_owned();
            let before = self
                .database
                .call(move |c| {
                    let before = c
                        .prepare_cached("SELECT paused_us FROM job_pause WHERE job = ?1")?
                        .query_row([&job], |row| row.get::<_, i64>(0))
                        .optional()?;
                    match at {
                    Some(at) => c
                        .prepare_cached(
                            "INSERT INTO job_pause (job, paused_us) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                        )?
                        .execute((&job, codec::micros(at)))?,
                    None => c.prepare_cached("DELETE FROM job_pause WHERE job = ?1")?.execute([&job])?,
                };
                    Ok(before)
                })
                .await?;
            before.map(codec::instant).transpose()
        }
        .await;
        answer.map_err(ControlsError::new)
    }

    async fn paused(&self, job: &str) -> Result<Option<Timestamp>, ControlsError> {
        let answer: Result<_, BoxError> = async { Ok(self.paused_jobs().await?.remove(job)) }.await;
        answer.map_err(ControlsError::new)
    }

    async fn paused_jobs(&self) -> Result<HashMap<String, Timestamp>, ControlsError> {
        let answer: Result<_, BoxError> = async {
            let rows = self
                .database
                .call(|c| {
                    let mut statement = c.prepare_cached("SELECT job, paused_us FROM job_pause")?;
                    let rows = statement
                        .query_map([], |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)))?;
                    Ok(rows.collect::<Result<Vec<_>, _>>()?)
                })
                .await?;
            rows.into_iter().map(|(job, at)| Ok((job, codec::instant(at)?))).collect()
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
        let now = codec::micros(Timestamp::now());
        let expires = now.saturating_add(i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX));
        let (job, key) = (job.to_owned(), key.to_owned());
        let first = self
            .database
            .call(move |c| {
                c.prepare_cached("DELETE FROM manual_request WHERE expires_us <= ?1")?.execute([now])?;
                let first = c
                    .prepare_cached("SELECT trigger_us FROM manual_request WHERE job = ?1 AND request_key = ?2")?
                    .query_row([&job, &key], |row| row.get::<_, i64>(0))
                    .optional()?;
                if first.is_none() {
                    c.prepare_cached(
                        "INSERT INTO manual_request (job, request_key, trigger_us, expires_us) VALUES (?1, ?2, ?3, ?4)",
                    )?
                    .execute((&job, &key, codec::micros(trigger), expires))?;
                }
                Ok(first)
            })
            .await?;
        first.map(codec::instant).transpose()
        }
        .await;
        answer.map_err(ControlsError::new)
    }
}
