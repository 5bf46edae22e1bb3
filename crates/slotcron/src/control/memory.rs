use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;

use super::{CancelRequest, Controls, ControlsError, FailureStreak};
use crate::clock::Clock;
use crate::clock::later;

/// [`Controls`] in memory, on a clock (idempotency keys expire on it): the in-process
/// coordinator's and the memory store's. Clones share their pauses and keys.
#[derive(Clone)]
pub struct MemoryControls {
    clock: Arc<dyn Clock>,
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
struct Inner {
    paused: HashMap<String, Timestamp>,
    /// (job, key) → (trigger, expiry).
    requests: HashMap<(String, String), (Timestamp, Timestamp)>,
    /// (job, trigger) → (reason, expiry).
    cancels: HashMap<(String, Timestamp), (String, Timestamp)>,
    /// Job → its failed triggers in a row.
    streaks: HashMap<String, u64>,
    /// Job → the reason kept beside its pause, for a pause that has one.
    reasons: HashMap<String, String>,
}

impl std::fmt::Debug for MemoryControls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryControls").finish_non_exhaustive()
    }
}

impl MemoryControls {
    /// Empty controls on `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self { clock, inner: Arc::default() }
    }

    /// Whether `job` is paused, without waiting.
    pub(crate) fn is_paused(&self, job: &str) -> bool {
        self.lock().paused.contains_key(job)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl Controls for MemoryControls {
    async fn set_paused(&self, job: &str, at: Option<Timestamp>) -> Result<Option<Timestamp>, ControlsError> {
        let mut inner = self.lock();
        Ok(match at {
            Some(at) => {
                let before = inner.paused.get(job).copied();
                inner.paused.entry(job.to_owned()).or_insert(at);
                before
            }
            None => {
                inner.streaks.remove(job);
                inner.reasons.remove(job);
                inner.paused.remove(job)
            }
        })
    }

    fn counts_failures(&self) -> bool {
        true
    }

    async fn count_failure(
        &self,
        job: &str,
        pause_after: u64,
        at: Timestamp,
        reason: &str,
    ) -> Result<FailureStreak, ControlsError> {
        let mut inner = self.lock();
        let failures = inner.streaks.entry(job.to_owned()).or_default();
        *failures += 1;
        let failures = *failures;
        let paused = failures >= pause_after && !inner.paused.contains_key(job);
        if paused {
            inner.paused.insert(job.to_owned(), at);
            inner.reasons.insert(job.to_owned(), reason.to_owned());
        }
        Ok(FailureStreak { failures, paused })
    }

    async fn reset_failures(&self, job: &str) -> Result<(), ControlsError> {
        self.lock().streaks.remove(job);
        Ok(())
    }

    async fn pause_reasons(&self) -> Result<HashMap<String, String>, ControlsError> {
        Ok(self.lock().reasons.clone())
    }

    async fn paused(&self, job: &str) -> Result<Option<Timestamp>, ControlsError> {
        Ok(self.lock().paused.get(job).copied())
    }

    async fn paused_jobs(&self) -> Result<HashMap<String, Timestamp>, ControlsError> {
        Ok(self.lock().paused.clone())
    }

    async fn remember_request(
        &self,
        job: &str,
        key: &str,
        trigger: Timestamp,
        ttl: Duration,
    ) -> Result<Option<Timestamp>, ControlsError> {
        let now = self.clock.now();
        let mut inner = self.lock();
        inner.requests.retain(|_, (_, expires)| *expires > now);
        let entry = inner.requests.entry((job.to_owned(), key.to_owned()));
        match entry {
            std::collections::hash_map::Entry::Occupied(first) => Ok(Some(first.get().0)),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert((trigger, later(now, ttl)));
                Ok(None)
            }
        }
    }

    async fn request_cancel(&self, request: &CancelRequest, ttl: Duration) -> Result<(), ControlsError> {
        let now = self.clock.now();
        let mut inner = self.lock();
        inner.cancels.retain(|_, (_, expires)| *expires > now);
        let run = (request.job.clone(), request.trigger);
        inner.cancels.insert(run, (request.reason.clone(), later(now, ttl)));
        Ok(())
    }

    async fn cancel_requests(&self) -> Result<Vec<CancelRequest>, ControlsError> {
        let now = self.clock.now();
        let inner = self.lock();
        let live = inner.cancels.iter().filter(|(_, (_, expires))| *expires > now);
        let requests = live.map(|((job, trigger), (reason, _))| CancelRequest {
            job: job.clone(),
            trigger: *trigger,
            reason: reason.clone(),
        });
        Ok(requests.collect())
    }
}
