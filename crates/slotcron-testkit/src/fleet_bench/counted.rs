//! [`Counted`]: the coordinator the fleet bench's replicas call. It counts their calls
//! and times those on a burst's path ([`Stages`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;
use slotcron::{
    AheadStart, AheadVoid, Claim, ClaimOutcome, Coordinator, CoordinatorError, Handled, Lease, LeaseGrant,
    LeaseRenewal, MAX_CLAIMS_PER_ROUND_TRIP, StartMark, TriggerRef, Unstarted,
};

use super::stages::{Stage, Stages};

/// A coordinator that counts the calls made to the one it wraps: one round trip each
/// in the Redis and PostgreSQL coordinators (unless a reply was lost and read back); a
/// batch of claims counts one per [`MAX_CLAIMS_PER_ROUND_TRIP`] claims, as a single Redis
/// server or PostgreSQL takes it (a Redis Cluster: one per hash slot).
pub struct Counted {
    /// The coordinator asked.
    pub inner: Arc<dyn Coordinator>,
    /// Calls so far.
    pub calls: Arc<AtomicU64>,
    /// Where the calls on a burst's path are timed.
    pub(crate) stages: Arc<Stages>,
}

impl Counted {
    fn count(&self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a batch of `n` (one round trip per [`MAX_CLAIMS_PER_ROUND_TRIP`]).
    fn count_batch(&self, n: usize) {
        self.calls.fetch_add(n.div_ceil(MAX_CLAIMS_PER_ROUND_TRIP) as u64, Ordering::Relaxed);
    }

    /// Notes a batch of claims sent at `sent` under `stage`, by instant (a batch's claims
    /// share one, but for a late trigger now and then).
    fn note_claims(&self, stage: Stage, claims: &[Claim<'_>], sent: Timestamp) {
        for group in claims.chunk_by(|a, b| a.trigger == b.trigger) {
            self.stages.note(stage, group[0].trigger, sent, group.len());
        }
    }

    /// Notes start marks sent at `sent`, by the instant their trigger keys
    /// (`{job}:{instant}`) name.
    fn note_marks(&self, marks: &[StartMark<'_>], sent: Timestamp) {
        for group in marks.chunk_by(|a, b| instant_of(a.key) == instant_of(b.key)) {
            if let Ok(at) = instant_of(group[0].key).parse::<Timestamp>() {
                self.stages.note(Stage::MarkStarts, at, sent, group.len());
            }
        }
    }
}

/// The instant text of trigger key `{job}:{instant}` ("" for a key without one).
fn instant_of(key: &str) -> &str {
    key.split_once(':').map_or("", |(_, instant)| instant)
}

#[async_trait]
impl Coordinator for Counted {
    async fn claim(&self, claim: &Claim<'_>) -> Result<ClaimOutcome, CoordinatorError> {
        self.count();
        self.inner.claim(claim).await
    }

    async fn claim_batch(&self, claims: &[Claim<'_>]) -> Vec<Result<ClaimOutcome, CoordinatorError>> {
        self.count_batch(claims.len());
        let sent = Timestamp::now();
        let answers = self.inner.claim_batch(claims).await;
        self.note_claims(Stage::Claim, claims, sent);
        answers
    }

    fn claims_ahead(&self) -> bool {
        self.inner.claims_ahead()
    }

    async fn claim_batch_ahead(
        &self,
        owner: &str,
        at: Timestamp,
        claims: &[Claim<'_>],
        until: Timestamp,
    ) -> Vec<Result<ClaimOutcome, CoordinatorError>> {
        self.count_batch(claims.len());
        let sent = Timestamp::now();
        let answers = self.inner.claim_batch_ahead(owner, at, claims, until).await;
        self.note_claims(Stage::ClaimAhead, claims, sent);
        answers
    }

    async fn start_ahead(
        &self,
        owner: &str,
        at: Timestamp,
        claims: &[TriggerRef<'_>],
        until: Timestamp,
    ) -> Result<AheadStart, CoordinatorError> {
        self.count();
        let sent = Timestamp::now();
        let answer = self.inner.start_ahead(owner, at, claims, until).await;
        self.stages.note(Stage::StartAhead, at, sent, claims.len());
        answer
    }

    async fn void_ahead(
        &self,
        owner: &str,
        at: Timestamp,
        triggers: &[TriggerRef<'_>],
        until: Timestamp,
    ) -> Result<AheadVoid, CoordinatorError> {
        self.count();
        self.inner.void_ahead(owner, at, triggers, until).await
    }

    async fn acquire_lease(&self, lease: &Lease<'_>) -> Result<LeaseGrant, CoordinatorError> {
        self.count();
        self.inner.acquire_lease(lease).await
    }

    async fn renew_lease(&self, lease: &Lease<'_>) -> Result<LeaseRenewal, CoordinatorError> {
        self.count();
        self.inner.renew_lease(lease).await
    }

    async fn release_lease(&self, lease: &Lease<'_>) -> Result<(), CoordinatorError> {
        self.count();
        self.inner.release_lease(lease).await
    }

    async fn cancel_lease(&self, job: &str) -> Result<bool, CoordinatorError> {
        self.count();
        self.inner.cancel_lease(job).await
    }

    async fn time(&self) -> Result<Option<Timestamp>, CoordinatorError> {
        self.count();
        self.inner.time().await
    }

    async fn heartbeat(
        &self,
        instance: &str,
        ttl: Duration,
    ) -> Result<Option<Vec<String>>, CoordinatorError> {
        self.count();
        self.inner.heartbeat(instance, ttl).await
    }

    async fn leave(&self, instance: &str) -> Result<(), CoordinatorError> {
        self.count();
        self.inner.leave(instance).await
    }

    async fn high_water_marks(&self, jobs: &[&str]) -> Result<Vec<Option<Timestamp>>, CoordinatorError> {
        self.count();
        self.inner.high_water_marks(jobs).await
    }

    async fn unclaimed(&self, triggers: &[TriggerRef<'_>]) -> Result<Vec<bool>, CoordinatorError> {
        self.count();
        self.inner.unclaimed(triggers).await
    }

    async fn add_handled(
        &self,
        owner: &str,
        at: Timestamp,
        handled: Handled,
        ttl: Duration,
    ) -> Result<(), CoordinatorError> {
        self.count();
        self.inner.add_handled(owner, at, handled, ttl).await
    }

    async fn handled(&self, tallies: &[(&str, Timestamp)]) -> Result<Vec<Option<Handled>>, CoordinatorError> {
        self.count();
        self.inner.handled(tallies).await
    }

    fn keeps_start_marks(&self) -> bool {
        self.inner.keeps_start_marks()
    }

    async fn mark_starts(
        &self,
        instance: &str,
        marks: &[StartMark<'_>],
    ) -> Result<Vec<bool>, CoordinatorError> {
        self.count_batch(marks.len());
        let sent = Timestamp::now();
        let answers = self.inner.mark_starts(instance, marks).await;
        self.note_marks(marks, sent);
        answers
    }

    async fn unstarted(&self, instance: &str, jobs: &[&str]) -> Result<Vec<Unstarted>, CoordinatorError> {
        self.count();
        self.inner.unstarted(instance, jobs).await
    }

    async fn take_over(
        &self,
        from: &str,
        to: &str,
        claims: &[TriggerRef<'_>],
    ) -> Vec<Result<ClaimOutcome, CoordinatorError>> {
        self.count();
        self.inner.take_over(from, to, claims).await
    }

    fn name(&self) -> &'static str {
        self.inner.name()
    }
}
