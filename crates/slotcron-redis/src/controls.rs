//! The fleet's pauses and idempotency keys in Redis ([`Controls`]).
//!
//! A pause is the job's key `{prefix}paused:{job}` (`{prefix}{{job}}:paused` in a
//! cluster, on the job's slot, so the claim script reads it in the same step), holding
//! the instant it was paused (in ms since the Unix epoch); the set `{prefix}index:paused` lists the paused jobs for
//! the admin API (in a cluster it lives on a slot of its own: a pause writes its key
//! first, then the set, and a resume removes them in the same order, so a claim never
//! depends on the set). An idempotency key is `{prefix}request:{job}:{key}`, set if
//! absent with its TTL. Setting if absent is one script call (`keep_first.lua`), one round
//! trip. Requests to cancel runs are one sorted set, `{prefix}index:cancels`, each member
//! `{job}:{trigger ms}:{reason}` scored by its expiry on the server's clock; adding one and
//! reading them are one script call each (`cancel.lua`). A job's streak of failed
//! triggers in a row is `{prefix}failures:{job}` (on the job's slot in a cluster),
//! counted by one script call (`streak.lua`) that also pauses the job when it reaches its
//! limit and keeps the reason in `{prefix}paused_why:{job}`; a resume deletes both.

use std::collections::HashMap;
use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use redis::{AsyncCommands, Script};
use slotcron::jiff::Timestamp;
use slotcron::{BoxError, CancelRequest, Controls, ControlsError, FailureStreak};

use crate::coordinator::RedisCoordinator;

static KEEP_FIRST: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("keep_first.lua")));
static CANCEL: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("cancel.lua")));
static STREAK: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("streak.lua")));

impl RedisCoordinator {
    /// Sets `key` to `ms` (with a TTL, if given) unless it is set: what it held.
    async fn keep_first(&self, key: &str, ms: i64, ttl: Option<Duration>) -> Result<Option<i64>, BoxError> {
        let ttl = ttl.map_or(String::new(), |ttl| ttl.as_millis().max(1).to_string());
        let mut script = KEEP_FIRST.key(key);
        script.arg(ms).arg(ttl);
        Ok(self.connection.invoke::<Option<i64>>(&script).await?)
    }
}

/// A cancel request as `cancel.lua` keeps it: `{job}:{trigger ms}:{reason}` (job names
/// hold no `:`).
fn cancel_member(request: &CancelRequest) -> String {
    format!("{}:{}:{}", request.job, request.trigger.as_millisecond(), request.reason)
}

fn cancel_request(member: &str) -> Result<CancelRequest, BoxError> {
    let mut parts = member.splitn(3, ':');
    let (Some(job), Some(ms), Some(reason)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(format!("a stored cancel request {member:?} is not JOB:MS:REASON").into());
    };
    let ms = ms.parse().map_err(|e| format!("a stored cancel request {member:?}: {e}"))?;
    Ok(CancelRequest { job: job.to_owned(), trigger: instant(ms)?, reason: reason.to_owned() })
}

fn instant(ms: i64) -> Result<Timestamp, BoxError> {
    Timestamp::from_millisecond(ms)
        .map_err(|e| format!("a stored instant {ms} ms is out of range: {e}").into())
}

#[async_trait]
impl Controls for RedisCoordinator {
    async fn set_paused(&self, job: &str, at: Option<Timestamp>) -> Result<Option<Timestamp>, ControlsError> {
        let answer: Result<_, BoxError> = async {
            let mut connection = self.connection.clone();
            let key = self.keys.paused(job);
            let index = self.keys.paused_index();
            let before: Option<i64> = match at {
                Some(at) => {
                    // The instant of an earlier pause stays.
                    let before = self.keep_first(&key, at.as_millisecond(), None).await?;
                    let _: i64 = connection.sadd(&index, job).await?;
                    before
                }
                None => {
                    let before: Option<i64> =
                        redis::cmd("GETDEL").arg(&key).query_async(&mut connection).await?;
                    // The streak and the reason: on the pause's slot.
                    let _: i64 =
                        connection.del(&[self.keys.failures(job), self.keys.pause_reason(job)]).await?;
                    let _: i64 = connection.srem(&index, job).await?;
                    before
                }
            };
            before.map(instant).transpose()
        }
        .await;
        answer.map_err(ControlsError::new)
    }

    async fn paused(&self, job: &str) -> Result<Option<Timestamp>, ControlsError> {
        let answer: Result<_, BoxError> = async {
            let value = self.connection.mget(&[&self.keys.paused(job)]).await?.pop().flatten();
            value
                .map(|ms| instant(ms.parse().map_err(|e| format!("pause of {job}: {ms:?}: {e}"))?))
                .transpose()
        }
        .await;
        answer.map_err(ControlsError::new)
    }

    async fn paused_jobs(&self) -> Result<HashMap<String, Timestamp>, ControlsError> {
        let answer: Result<_, BoxError> = async {
            let mut connection = self.connection.clone();
            let jobs: Vec<String> = connection.smembers(self.keys.paused_index()).await?;
            let mut paused = HashMap::with_capacity(jobs.len());
            for job in jobs {
                if let Some(at) = self.paused(&job).await? {
                    paused.insert(job, at);
                }
            }
            Ok(paused)
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
            let before =
                self.keep_first(&self.keys.request(job, key), trigger.as_millisecond(), Some(ttl)).await?;
            before.map(instant).transpose()
        }
        .await;
        answer.map_err(ControlsError::new)
    }

    fn counts_failures(&self) -> bool {
        true
    }

    /// One call of `streak.lua`; and, when it paused the job, an `SADD` to the index of
    /// the paused jobs.
    async fn count_failure(
        &self,
        job: &str,
        pause_after: u64,
        at: Timestamp,
        reason: &str,
    ) -> Result<FailureStreak, ControlsError> {
        let answer: Result<_, BoxError> = async {
            let mut script = STREAK.key(self.keys.failures(job));
            script.key(self.keys.paused(job)).key(self.keys.pause_reason(job));
            script.arg(pause_after).arg(at.as_millisecond()).arg(reason);
            let (failures, paused): (u64, i64) = self.connection.invoke(&script).await?;
            if paused == 1 {
                let _: i64 = self.connection.clone().sadd(self.keys.paused_index(), job).await?;
            }
            Ok(FailureStreak { failures, paused: paused == 1 })
        }
        .await;
        answer.map_err(ControlsError::new)
    }

    async fn reset_failures(&self, job: &str) -> Result<(), ControlsError> {
        let answer: Result<i64, _> = self.connection.clone().del(self.keys.failures(job)).await;
        answer.map(drop).map_err(ControlsError::new)
    }

    /// The index of the paused jobs, then one `GET` of each one's reason.
    async fn pause_reasons(&self) -> Result<HashMap<String, String>, ControlsError> {
        let answer: Result<_, BoxError> = async {
            let jobs: Vec<String> = self.connection.clone().smembers(self.keys.paused_index()).await?;
            let mut reasons = HashMap::new();
            for job in jobs {
                if let Some(reason) =
                    self.connection.mget(&[&self.keys.pause_reason(&job)]).await?.pop().flatten()
                {
                    reasons.insert(job, reason);
                }
            }
            Ok(reasons)
        }
        .await;
        answer.map_err(ControlsError::new)
    }

    async fn request_cancel(&self, request: &CancelRequest, ttl: Duration) -> Result<(), ControlsError> {
        let mut script = CANCEL.key(self.keys.cancels());
        script.arg(cancel_member(request)).arg(ttl.as_millis().max(1).to_string());
        let answer: Result<i64, _> = self.connection.invoke(&script).await;
        answer.map(|_| ()).map_err(ControlsError::new)
    }

    async fn cancel_requests(&self) -> Result<Vec<CancelRequest>, ControlsError> {
        let answer: Result<_, BoxError> = async {
            let mut script = CANCEL.key(self.keys.cancels());
            script.arg("").arg("");
            let members: Vec<String> = self.connection.invoke(&script).await?;
            members.iter().map(|member| cancel_request(member)).collect()
        }
        .await;
        answer.map_err(ControlsError::new)
    }
}
