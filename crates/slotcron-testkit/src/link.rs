//! A replica's link to its coordinator, in a simulated fleet: it notes every claim the
//! replica sends, and can be broken — for claims only (an owner that cannot claim) or for
//! everything (a replica that died: no more heartbeats either) — or hold its claims
//! unanswered (a slow backend).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;
use slotcron::{
    AheadStart, AheadVoid, Claim, ClaimOutcome, Coordinator, CoordinatorError, Handled, Lease, LeaseGrant,
    LeaseRenewal, LiveMember, MemberDetails, StartMark, TriggerRef, Unstarted,
};
use tokio::sync::Notify;

/// What a [`Link`] lets through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum LinkState {
    /// Everything.
    Up = 0,
    /// Everything but claims, which fail as unavailable.
    ClaimsFail = 1,
    /// Nothing: every call fails as unavailable.
    Down = 2,
    /// Everything, but the claims made as their triggers come due wait, unanswered, until
    /// the link is set to another state, which then decides them (a slow backend).
    ClaimsHeld = 3,
    /// Everything, but heartbeats wait, unanswered, until the link is set to another
    /// state (a replica whose first look at the membership is slow).
    HeartbeatsHeld = 4,
}

/// Wraps a replica's coordinator: forwards every call while up, notes each claim's
/// trigger key (those it sent while up or not), and fails what its state says.
pub struct Link {
    inner: Arc<dyn Coordinator>,
    state: AtomicU8,
    /// Notified when the state changes.
    changed: Notify,
    /// The triggers whose claims wait now ([`LinkState::ClaimsHeld`]).
    held: Mutex<Vec<(Arc<str>, Timestamp)>>,
    claimed: Mutex<Vec<(Arc<str>, Timestamp)>>,
    claimed_ahead: Mutex<Vec<(Arc<str>, Timestamp)>>,
    /// How many start marks each mark call carried, in order.
    mark_calls: Mutex<Vec<usize>>,
}

impl Link {
    /// An up link to `inner`.
    pub fn new(inner: Arc<dyn Coordinator>) -> Self {
        Self {
            inner,
            state: AtomicU8::new(LinkState::Up as u8),
            changed: Notify::new(),
            held: Mutex::default(),
            claimed: Mutex::default(),
            claimed_ahead: Mutex::default(),
            mark_calls: Mutex::default(),
        }
    }

    /// Sets what the link lets through from now on.
    pub fn set(&self, state: LinkState) {
        self.state.store(state as u8, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    /// Whether the claim of `job`'s `trigger` waits on this link now.
    pub fn holds(&self, job: &str, trigger: Timestamp) -> bool {
        self.held.lock().unwrap().iter().any(|(j, t)| **j == *job && *t == trigger)
    }

    /// Waits while the link holds claims, those of `claims` noted as held meanwhile; the
    /// state it then has.
    async fn pass(&self, claims: &[Claim<'_>]) -> LinkState {
        let triggers: Vec<(Arc<str>, Timestamp)> =
            claims.iter().map(|claim| (claim.job.into(), claim.trigger)).collect();
        let mut noted = false;
        let state = loop {
            let changed = self.changed.notified();
            let state = self.state();
            if state != LinkState::ClaimsHeld {
                break state;
            }
            if !noted {
                self.held.lock().unwrap().extend(triggers.iter().cloned());
                noted = true;
            }
            changed.await;
        };
        if noted {
            self.held.lock().unwrap().retain(|held| !triggers.contains(held));
        }
        state
    }

    /// Every `(job, trigger)` the replica tried to claim through this link as it came
    /// due, in order.
    pub fn claimed(&self) -> Vec<(Arc<str>, Timestamp)> {
        self.claimed.lock().unwrap().clone()
    }

    /// Every `(job, trigger)` the replica tried to claim ahead through this link, in
    /// order.
    pub fn claimed_ahead(&self) -> Vec<(Arc<str>, Timestamp)> {
        self.claimed_ahead.lock().unwrap().clone()
    }

    /// How many start marks each mark call the replica sent through this link carried,
    /// in order.
    pub fn mark_calls(&self) -> Vec<usize> {
        self.mark_calls.lock().unwrap().clone()
    }

    /// What the link lets through now.
    pub fn state(&self) -> LinkState {
        match self.state.load(Ordering::SeqCst) {
            0 => LinkState::Up,
            1 => LinkState::ClaimsFail,
            3 => LinkState::ClaimsHeld,
            4 => LinkState::HeartbeatsHeld,
            _ => LinkState::Down,
        }
    }

    fn up(&self) -> Result<&dyn Coordinator, CoordinatorError> {
        match self.state() {
            LinkState::Down => Err(CoordinatorError::unavailable("the link is down (simulated)")),
            _ => Ok(self.inner.as_ref()),
        }
    }
}

#[async_trait]
impl Coordinator for Link {
    async fn claim(&self, claim: &Claim<'_>) -> Result<ClaimOutcome, CoordinatorError> {
        self.claimed.lock().unwrap().push((claim.job.into(), claim.trigger));
        if self.pass(std::slice::from_ref(claim)).await == LinkState::ClaimsFail {
            return Err(CoordinatorError::unavailable("claims fail on this link (simulated)"));
        }
        self.up()?.claim(claim).await
    }

    async fn claim_batch(&self, claims: &[Claim<'_>]) -> Vec<Result<ClaimOutcome, CoordinatorError>> {
        self.claimed.lock().unwrap().extend(claims.iter().map(|claim| (claim.job.into(), claim.trigger)));
        let failed = |reason: &'static str| {
            claims.iter().map(|_| Err(CoordinatorError::unavailable(reason))).collect()
        };
        match self.pass(claims).await {
            LinkState::Up | LinkState::ClaimsHeld | LinkState::HeartbeatsHeld => {
                self.inner.claim_batch(claims).await
            }
            LinkState::ClaimsFail => failed("claims fail on this link (simulated)"),
            LinkState::Down => failed("the link is down (simulated)"),
        }
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
        self.claimed_ahead
            .lock()
            .unwrap()
            .extend(claims.iter().map(|claim| (claim.job.into(), claim.trigger)));
        let failed = |reason: &'static str| {
            claims.iter().map(|_| Err(CoordinatorError::unavailable(reason))).collect()
        };
        match self.state() {
            LinkState::Up | LinkState::ClaimsHeld | LinkState::HeartbeatsHeld => {
                self.inner.claim_batch_ahead(owner, at, claims, until).await
            }
            LinkState::ClaimsFail => failed("claims fail on this link (simulated)"),
            LinkState::Down => failed("the link is down (simulated)"),
        }
    }

    /// Fails as claims do on a link whose claims fail.
    async fn start_ahead(
        &self,
        owner: &str,
        at: Timestamp,
        claims: &[TriggerRef<'_>],
        until: Timestamp,
    ) -> Result<AheadStart, CoordinatorError> {
        if self.state() == LinkState::ClaimsFail {
            return Err(CoordinatorError::unavailable("claims fail on this link (simulated)"));
        }
        self.up()?.start_ahead(owner, at, claims, until).await
    }

    async fn void_ahead(
        &self,
        owner: &str,
        at: Timestamp,
        triggers: &[TriggerRef<'_>],
        until: Timestamp,
    ) -> Result<AheadVoid, CoordinatorError> {
        self.up()?.void_ahead(owner, at, triggers, until).await
    }

    async fn acquire_lease(&self, lease: &Lease<'_>) -> Result<LeaseGrant, CoordinatorError> {
        self.up()?.acquire_lease(lease).await
    }

    async fn renew_lease(&self, lease: &Lease<'_>) -> Result<LeaseRenewal, CoordinatorError> {
        self.up()?.renew_lease(lease).await
    }

    async fn release_lease(&self, lease: &Lease<'_>) -> Result<(), CoordinatorError> {
        self.up()?.release_lease(lease).await
    }

    async fn cancel_lease(&self, job: &str) -> Result<bool, CoordinatorError> {
        self.up()?.cancel_lease(job).await
    }

    async fn time(&self) -> Result<Option<Timestamp>, CoordinatorError> {
        self.up()?.time().await
    }

    async fn heartbeat(
        &self,
        instance: &str,
        ttl: Duration,
    ) -> Result<Option<Vec<String>>, CoordinatorError> {
        loop {
            let changed = self.changed.notified();
            if self.state() != LinkState::HeartbeatsHeld {
                break;
            }
            changed.await;
        }
        self.up()?.heartbeat(instance, ttl).await
    }

    async fn leave(&self, instance: &str) -> Result<(), CoordinatorError> {
        self.up()?.leave(instance).await
    }

    async fn publish_details(&self, instance: &str, details: &MemberDetails) -> Result<(), CoordinatorError> {
        self.up()?.publish_details(instance, details).await
    }

    async fn members(&self) -> Result<Vec<LiveMember>, CoordinatorError> {
        self.up()?.members().await
    }

    async fn unclaimed(&self, triggers: &[TriggerRef<'_>]) -> Result<Vec<bool>, CoordinatorError> {
        self.up()?.unclaimed(triggers).await
    }

    async fn high_water_marks(&self, jobs: &[&str]) -> Result<Vec<Option<Timestamp>>, CoordinatorError> {
        self.up()?.high_water_marks(jobs).await
    }

    async fn add_handled(
        &self,
        owner: &str,
        at: Timestamp,
        handled: Handled,
        ttl: Duration,
    ) -> Result<(), CoordinatorError> {
        self.up()?.add_handled(owner, at, handled, ttl).await
    }

    async fn handled(&self, tallies: &[(&str, Timestamp)]) -> Result<Vec<Option<Handled>>, CoordinatorError> {
        self.up()?.handled(tallies).await
    }

    fn keeps_start_marks(&self) -> bool {
        self.inner.keeps_start_marks()
    }

    async fn mark_starts(
        &self,
        instance: &str,
        marks: &[StartMark<'_>],
    ) -> Result<Vec<bool>, CoordinatorError> {
        self.mark_calls.lock().unwrap().push(marks.len());
        self.up()?.mark_starts(instance, marks).await
    }

    async fn unstarted(&self, instance: &str, jobs: &[&str]) -> Result<Vec<Unstarted>, CoordinatorError> {
        self.up()?.unstarted(instance, jobs).await
    }

    async fn take_over(
        &self,
        from: &str,
        to: &str,
        claims: &[TriggerRef<'_>],
    ) -> Vec<Result<ClaimOutcome, CoordinatorError>> {
        match self.up() {
            Ok(inner) => inner.take_over(from, to, claims).await,
            Err(_) => claims
                .iter()
                .map(|_| Err(CoordinatorError::unavailable("the link is down (simulated)")))
                .collect(),
        }
    }

    fn name(&self) -> &'static str {
        self.inner.name()
    }
}
