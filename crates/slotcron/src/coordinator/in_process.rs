use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;

use super::{
    Claim, ClaimOutcome, Coordinator, CoordinatorError, CountedAnswer, CountedMark, Handled, Lease,
    LeaseGrant, LeaseRenewal, LiveMember, MemberDetails, RequestClaim, StartMark, TriggerRef, Unstarted,
};
use crate::clock::{Clock, SystemClock};
use crate::control::{Controls, MemoryControls};

/// The coordinator of the schedulers of one process: claims, their expiry and each
/// job's high-water mark (see [`Hold`](super::Hold)) kept in memory, on its own clock.
/// A scheduler alone wins every trigger once; schedulers sharing one (a clone shares
/// its claims) arbitrate between them as a networked fleet would. Fencing tokens count
/// each job's won claims since this coordinator was made. Leases, the fleet's
/// [membership](super::Coordinator#membership) and the owners' [`Handled`] tallies live in memory too
/// and expire on the same clock. Pauses and idempotency keys too ([`MemoryControls`]), and
/// the runs counted for `max_runs` ([`Coordinator::mark_counted_starts`]).
#[derive(Clone)]
pub struct InProcessCoordinator {
    clock: Arc<dyn Clock>,
    claims: Arc<Mutex<Claims>>,
    leases: Arc<Mutex<HashMap<String, HeldLease>>>,
    controls: MemoryControls,
    members: Arc<Mutex<Members>>,
}

/// The membership and the owners' tallies.
#[derive(Default)]
struct Members {
    /// Instance → when its membership lapses.
    expiry: HashMap<String, Timestamp>,
    /// (owner, trigger instant) → its tally and when it lapses.
    handled: HashMap<(String, Timestamp), (Handled, Timestamp)>,
    /// Instance → the details it published, until it leaves.
    details: HashMap<String, MemberDetails>,
}

struct HeldLease {
    owner: String,
    expires: Timestamp,
    cancel: bool,
}

#[derive(Default)]
struct Claims {
    /// Trigger key → its claim.
    held: HashMap<String, Held>,
    /// Job → (last fencing token, high-water mark).
    jobs: HashMap<String, (u64, Option<Timestamp>)>,
    /// Job → the trigger keys whose start mark counted a run (`max_runs`).
    runs: HashMap<String, HashSet<String>>,
    /// Claims since expired ones were last removed.
    since_sweep: usize,
}

/// One claim: its expiry (`None`: never), holder, job, fencing token and start mark.
struct Held {
    expiry: Option<Timestamp>,
    holder: Arc<str>,
    job: Arc<str>,
    fencing: u64,
    started: bool,
}

impl Held {
    fn new(claim_job: &str, holder: &str, fencing: u64, expiry: Option<Timestamp>) -> Self {
        Self { expiry, holder: holder.into(), job: claim_job.into(), fencing, started: false }
    }

    fn holds_at(&self, now: Timestamp) -> bool {
        self.expiry.is_none_or(|at| at > now)
    }
}

impl Claims {
    /// Expired claims are removed every this many claims, so memory stays bounded.
    const SWEEP_EVERY: usize = 1024;

    /// Counts a claim at `now` (the coordinator's clock) and removes the expired claims
    /// every [`Claims::SWEEP_EVERY`] claims (not those without a start mark, which stay
    /// listed until marked or taken over); whether a claim holds `key` now.
    fn held_at(&mut self, key: &str, now: Timestamp) -> bool {
        self.since_sweep += 1;
        if self.since_sweep >= Self::SWEEP_EVERY {
            self.since_sweep = 0;
            self.held.retain(|_, held| held.holds_at(now) || !held.started);
        }
        self.held.get(key).is_some_and(|held| held.holds_at(now))
    }

    /// The job's next fencing token, counted.
    fn next_fencing(&mut self, job: &str) -> u64 {
        let entry = self.jobs.entry(job.to_owned()).or_default();
        entry.0 += 1;
        entry.0
    }

    /// Marks `instance`'s claim of `mark`, counting a run of its job, as
    /// [`Coordinator::mark_counted_starts`] says.
    fn mark_counted(&mut self, instance: &str, mark: &CountedMark<'_>) -> CountedAnswer {
        let Some(held) = self.held.get_mut(mark.mark.key).filter(|held| *held.holder == *instance) else {
            return CountedAnswer::Lost;
        };
        held.started = true;
        let counted = self.runs.entry(mark.mark.job.to_owned()).or_default();
        if counted.contains(mark.mark.key) {
            return CountedAnswer::Marked;
        }
        if counted.len() as u64 >= mark.max_runs {
            return CountedAnswer::MaxRunsReached;
        }
        counted.insert(mark.mark.key.to_owned());
        CountedAnswer::Marked
    }

    /// Moves `key`'s unmarked claim from `from` to `to`, as
    /// [`Coordinator::take_over`] says.
    fn take_over(&mut self, from: &str, to: &str, claim: &TriggerRef<'_>) -> ClaimOutcome {
        match self.held.get(claim.key) {
            Some(held) if held.started => ClaimOutcome::Lost,
            Some(held) if *held.holder == *to => ClaimOutcome::Won { fencing_token: held.fencing },
            Some(held) if *held.holder == *from => {
                let (expiry, job) = (held.expiry, held.job.clone());
                let fencing_token = self.next_fencing(&job);
                self.held.insert(claim.key.to_owned(), Held::new(&job, to, fencing_token, expiry));
                ClaimOutcome::Won { fencing_token }
            }
            _ => ClaimOutcome::Lost,
        }
    }

    /// Claims one trigger at `now` (the coordinator's clock); `paused` tells whether a
    /// job is paused (then an unheld trigger is refused, [`ClaimOutcome::Paused`]).
    fn claim(&mut self, claim: &Claim<'_>, now: Timestamp, paused: impl Fn(&str) -> bool) -> ClaimOutcome {
        if self.held_at(claim.key, now) {
            return ClaimOutcome::Lost;
        }
        if paused(claim.job) {
            return ClaimOutcome::Paused;
        }
        let (fencing, mark) = self.jobs.get(claim.job).copied().unwrap_or_default();
        let expiry = match claim.hold {
            Some(hold) if hold.refused_by_mark(mark, claim.trigger, now) => return ClaimOutcome::BehindMark,
            Some(hold) => Some(hold.expires_at(claim.trigger, now)),
            None => None,
        };
        let mark = match claim.hold {
            Some(_) => mark.max(Some(claim.trigger)),
            None => mark,
        };
        self.held.insert(claim.key.to_owned(), Held::new(claim.job, claim.instance, fencing + 1, expiry));
        self.jobs.insert(claim.job.to_owned(), (fencing + 1, mark));
        ClaimOutcome::Won { fencing_token: fencing + 1 }
    }
}

impl std::fmt::Debug for InProcessCoordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcessCoordinator").finish_non_exhaustive()
    }
}

impl Default for InProcessCoordinator {
    fn default() -> Self {
        Self::new()
    }
}

impl InProcessCoordinator {
    /// A coordinator on the [`SystemClock`].
    pub fn new() -> Self {
        Self::with_clock(SystemClock)
    }

    /// A coordinator on `clock`: the "coordinator's clock" that claims expire on and
    /// that schedulers measure their skew against.
    pub fn with_clock(clock: impl Clock) -> Self {
        Self::on_shared_clock(Arc::new(clock))
    }

    /// A coordinator on a clock shared with its scheduler.
    pub(crate) fn on_shared_clock(clock: Arc<dyn Clock>) -> Self {
        Self {
            controls: MemoryControls::new(clock.clone()),
            clock,
            claims: Arc::default(),
            leases: Arc::default(),
            members: Arc::default(),
        }
    }

    /// The membership and tallies without the lapsed ones, under the lock.
    fn with_members<T>(&self, f: impl FnOnce(&mut Members, Timestamp) -> T) -> T {
        let now = self.clock.now();
        let mut members = self.members.lock().unwrap_or_else(|p| p.into_inner());
        members.expiry.retain(|_, lapses| *lapses > now);
        members.handled.retain(|_, (_, lapses)| *lapses > now);
        f(&mut members, now)
    }

    fn claims(&self) -> std::sync::MutexGuard<'_, Claims> {
        self.claims.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The job's unexpired lease, under the lock.
    fn with_lease<T>(&self, job: &str, f: impl FnOnce(&mut Option<HeldLease>, Timestamp) -> T) -> T {
        let now = self.clock.now();
        let mut leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
        let mut held = leases.remove(job).filter(|held| held.expires > now);
        let answer = f(&mut held, now);
        if let Some(held) = held {
            leases.insert(job.to_owned(), held);
        }
        answer
    }
}

#[async_trait]
impl Coordinator for InProcessCoordinator {
    async fn claim(&self, claim: &Claim<'_>) -> Result<ClaimOutcome, CoordinatorError> {
        Ok(self.claims().claim(claim, self.clock.now(), |job| self.controls.is_paused(job)))
    }

    /// One lock and one reading of the clock for the whole batch.
    async fn claim_batch(&self, claims: &[Claim<'_>]) -> Vec<Result<ClaimOutcome, CoordinatorError>> {
        let now = self.clock.now();
        let mut held = self.claims();
        claims.iter().map(|claim| Ok(held.claim(claim, now, |job| self.controls.is_paused(job)))).collect()
    }

    async fn claim_request(&self, claim: &RequestClaim<'_>) -> Result<ClaimOutcome, CoordinatorError> {
        let now = self.clock.now();
        let mut claims = self.claims();
        if claims.held_at(claim.key, now) {
            return Ok(ClaimOutcome::Lost);
        }
        let fencing_token = claims.next_fencing(claim.job);
        let expiry = Some(crate::clock::later(now, claim.ttl));
        claims.held.insert(claim.key.to_owned(), Held::new(claim.job, claim.instance, fencing_token, expiry));
        Ok(ClaimOutcome::Won { fencing_token })
    }

    fn controls(&self) -> Option<&dyn Controls> {
        Some(&self.controls)
    }

    fn keeps_start_marks(&self) -> bool {
        true
    }

    async fn mark_starts(
        &self,
        instance: &str,
        marks: &[StartMark<'_>],
    ) -> Result<Vec<bool>, CoordinatorError> {
        let mut claims = self.claims();
        let mut mark = |key: &str| match claims.held.get_mut(key) {
            Some(held) if *held.holder == *instance => {
                held.started = true;
                true
            }
            _ => false,
        };
        Ok(marks.iter().map(|m| mark(m.key)).collect())
    }

    fn counts_runs(&self) -> bool {
        true
    }

    async fn mark_counted_starts(
        &self,
        instance: &str,
        marks: &[CountedMark<'_>],
    ) -> Result<Vec<CountedAnswer>, CoordinatorError> {
        let mut claims = self.claims();
        Ok(marks.iter().map(|mark| claims.mark_counted(instance, mark)).collect())
    }

    async fn run_counts(&self, jobs: &[&str]) -> Result<Vec<u64>, CoordinatorError> {
        let claims = self.claims();
        Ok(jobs.iter().map(|job| claims.runs.get(*job).map_or(0, |keys| keys.len() as u64)).collect())
    }

    async fn unstarted(&self, instance: &str, _jobs: &[&str]) -> Result<Vec<Unstarted>, CoordinatorError> {
        let claims = self.claims();
        let unstarted = claims.held.iter().filter(|(_, held)| !held.started && *held.holder == *instance);
        Ok(unstarted.map(|(key, held)| Unstarted { job: held.job.to_string(), key: key.clone() }).collect())
    }

    async fn take_over(
        &self,
        from: &str,
        to: &str,
        claims: &[TriggerRef<'_>],
    ) -> Vec<Result<ClaimOutcome, CoordinatorError>> {
        let mut held = self.claims();
        claims.iter().map(|claim| Ok(held.take_over(from, to, claim))).collect()
    }

    async fn acquire_lease(&self, lease: &Lease<'_>) -> Result<LeaseGrant, CoordinatorError> {
        Ok(self.with_lease(lease.job, |held, now| {
            let expires = crate::clock::later(now, lease.ttl);
            match held {
                Some(held) if held.owner != lease.owner => LeaseGrant::Held,
                Some(held) => {
                    held.expires = expires;
                    LeaseGrant::Acquired
                }
                None => {
                    *held = Some(HeldLease { owner: lease.owner.to_owned(), expires, cancel: false });
                    LeaseGrant::Acquired
                }
            }
        }))
    }

    async fn renew_lease(&self, lease: &Lease<'_>) -> Result<LeaseRenewal, CoordinatorError> {
        Ok(self.with_lease(lease.job, |held, now| match held {
            Some(held) if held.owner == lease.owner => {
                held.expires = crate::clock::later(now, lease.ttl);
                if held.cancel { LeaseRenewal::CancelRequested } else { LeaseRenewal::Renewed }
            }
            _ => LeaseRenewal::Lost,
        }))
    }

    async fn release_lease(&self, lease: &Lease<'_>) -> Result<(), CoordinatorError> {
        self.with_lease(lease.job, |held, _| {
            if held.as_ref().is_some_and(|held| held.owner == lease.owner) {
                *held = None;
            }
        });
        Ok(())
    }

    async fn cancel_lease(&self, job: &str) -> Result<bool, CoordinatorError> {
        Ok(self.with_lease(job, |held, _| match held {
            Some(held) => {
                held.cancel = true;
                true
            }
            None => false,
        }))
    }

    async fn time(&self) -> Result<Option<Timestamp>, CoordinatorError> {
        Ok(Some(self.clock.now()))
    }

    async fn heartbeat(
        &self,
        instance: &str,
        ttl: Duration,
    ) -> Result<Option<Vec<String>>, CoordinatorError> {
        Ok(Some(self.with_members(|members, now| {
            members.expiry.insert(instance.to_owned(), crate::clock::later(now, ttl));
            let mut live: Vec<String> = members.expiry.keys().cloned().collect();
            live.sort();
            live
        })))
    }

    async fn leave(&self, instance: &str) -> Result<(), CoordinatorError> {
        self.with_members(|members, _| {
            members.expiry.remove(instance);
            members.details.remove(instance);
        });
        Ok(())
    }

    async fn publish_details(&self, instance: &str, details: &MemberDetails) -> Result<(), CoordinatorError> {
        self.with_members(|members, _| members.details.insert(instance.to_owned(), details.clone()));
        Ok(())
    }

    async fn members(&self) -> Result<Vec<LiveMember>, CoordinatorError> {
        Ok(self.with_members(|members, _| {
            let mut live: Vec<LiveMember> = (members.expiry.iter())
                .map(|(instance, lapses_at)| LiveMember {
                    instance: instance.clone(),
                    lapses_at: *lapses_at,
                    details: members.details.get(instance).cloned().unwrap_or_default(),
                })
                .collect();
            live.sort_by(|a, b| a.instance.cmp(&b.instance));
            live
        }))
    }

    async fn high_water_marks(&self, jobs: &[&str]) -> Result<Vec<Option<Timestamp>>, CoordinatorError> {
        let claims = self.claims.lock().unwrap_or_else(|p| p.into_inner());
        Ok(jobs.iter().map(|job| claims.jobs.get(*job).and_then(|(_, mark)| *mark)).collect())
    }

    async fn unclaimed(&self, triggers: &[TriggerRef<'_>]) -> Result<Vec<bool>, CoordinatorError> {
        let now = self.clock.now();
        let claims = self.claims.lock().unwrap_or_else(|p| p.into_inner());
        let held = |key: &str| claims.held.get(key).is_some_and(|held| held.holds_at(now));
        let paused = |job: &str| self.controls.is_paused(job);
        Ok(triggers.iter().map(|trigger| !held(trigger.key) && !paused(trigger.job)).collect())
    }

    async fn add_handled(
        &self,
        owner: &str,
        at: Timestamp,
        handled: Handled,
        ttl: Duration,
    ) -> Result<(), CoordinatorError> {
        self.with_members(|members, now| {
            let lapses = crate::clock::later(now, ttl);
            let entry = members.handled.entry((owner.to_owned(), at)).or_default();
            *entry = (entry.0.plus(handled), lapses);
        });
        Ok(())
    }

    async fn handled(&self, tallies: &[(&str, Timestamp)]) -> Result<Vec<Option<Handled>>, CoordinatorError> {
        Ok(self.with_members(|members, _| {
            tallies
                .iter()
                .map(|(owner, at)| members.handled.get(&((*owner).to_owned(), *at)).map(|(tally, _)| *tally))
                .collect()
        }))
    }

    fn name(&self) -> &'static str {
        "in-process"
    }
}
