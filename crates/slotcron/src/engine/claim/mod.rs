//! The claim path: how a trigger's claim is made and what its answer means — the hold
//! a claim asks for ([`hold`]), the clock-skew guard in front of every claim ([`skew`]),
//! the claim's bounded round trip, the record of a claim that was not won, and the start
//! mark that makes a won claim's run durable before it starts ([`mark_start`]). A trigger
//! nothing claims (single-replica mode, an `on_every_replica` job) gets a local fencing
//! token instead.

mod hold;
pub(crate) mod marks;
pub(crate) mod skew;
mod start_mark;
mod timeout;

pub(crate) use hold::{claim_hold, job_run_budget, request_ttl};
pub(crate) use start_mark::{mark_group, mark_records, mark_start, settle_start, taken_over};

use std::sync::atomic::Ordering;
use std::time::Duration;

use jiff::Timestamp;

use crate::coordinator::{
    Claim, ClaimOutcome, Coordinator, CoordinatorError, CoordinatorErrorKind, RequestClaim,
};
use crate::engine::shared::Shared;
use crate::job::Job;
use crate::ledger::{Cause, Outcome, RunRecord};
use crate::metrics::ClaimResult;
use skew::Skew;

/// What the claim decided for one trigger: its fencing token, to run it with, or the
/// record of why it does not run here.
pub(crate) type Claimed = Result<u64, Box<RunRecord>>;

/// Learns the answers of claims as they are decided (an owner's tally of an instant).
pub(crate) trait ClaimNote: Send + Sync {
    /// The claim of trigger key `key` was decided as `claimed`.
    fn note(&self, key: &str, claimed: &Claimed);
}

/// The trigger key of `job`'s `trigger`.
pub(crate) fn key_of(job: &Job, trigger: Timestamp) -> Box<str> {
    crate::key::trigger_key(&job.name, job.kind, trigger).into_boxed_str()
}

/// The claim of `job`'s `trigger` (key `key`, next trigger `next`) by this scheduler.
pub(crate) fn claim_of<'a>(
    shared: &'a Shared,
    job: &'a Job,
    trigger: Timestamp,
    next: Option<Timestamp>,
    key: &'a str,
) -> Claim<'a> {
    let settings = &shared.settings;
    let budget = job_run_budget(job, settings.cancel_grace, settings.slack);
    let hold = claim_hold(trigger, next, job.kind.is_one_shot(), budget, settings.slack);
    Claim { job: &job.name, trigger, key, instance: &shared.instance, hold }
}

/// Why the clock-skew guard lets no claim through.
pub(crate) enum SkewSkip {
    /// This replica's clock is off by more than the slack.
    Beyond(jiff::SignedDuration),
    /// The coordinator's clock could not be read.
    Unread(CoordinatorError),
}

impl SkewSkip {
    /// The record of `job`'s `trigger` skipped for it.
    pub fn record(
        &self,
        shared: &Shared,
        coordinator: &dyn Coordinator,
        job: &Job,
        trigger: Timestamp,
        cause: Cause,
    ) -> RunRecord {
        match self {
            Self::Beyond(offset) => {
                let reason = skew::reason(coordinator, *offset, shared.settings.slack);
                shared.skipped(job, trigger, cause, Outcome::SkippedClockSkew, Some(reason))
            }
            Self::Unread(e) => unclaimed(shared, coordinator, job, trigger, cause, e),
        }
    }
}

/// The clock-skew guard before a claim (or a batch of claims), if it is on.
pub(crate) async fn skew_gate(shared: &Shared, coordinator: &dyn Coordinator) -> Result<(), SkewSkip> {
    if !shared.settings.check_clock_skew {
        return Ok(());
    }
    let settings = &shared.settings;
    let clock = shared.clock.as_ref();
    match shared.skew.check(clock, settings.claim_timeout, settings.slack, coordinator).await {
        Ok(Skew::Within) => Ok(()),
        Ok(Skew::Beyond(offset)) => Err(SkewSkip::Beyond(offset)),
        Err(e) => {
            shared.health.coordinator_failed(&e, clock.now());
            shared.metrics.backend_error("coordinator", e.kind().as_str());
            Err(SkewSkip::Unread(e))
        }
    }
}

/// How far this replica's clock is ahead of the coordinator's, when the clock-skew guard
/// is on and the coordinator's clock could be read (zero when behind, off or unread):
/// what a wait for an instant on the coordinator's clock adds on this replica's.
pub(crate) async fn ahead_of_coordinator(shared: &Shared, coordinator: &dyn Coordinator) -> Duration {
    if !shared.settings.check_clock_skew {
        return Duration::ZERO;
    }
    let (clock, timeout) = (shared.clock.as_ref(), shared.settings.claim_timeout);
    match shared.skew.offset(clock, timeout, coordinator).await {
        Ok(Some(offset)) if offset.is_positive() => offset.unsigned_abs(),
        _ => Duration::ZERO,
    }
}

/// Claims the trigger: the fencing token if won, else the record of the skip.
pub(crate) async fn claim(
    shared: &Shared,
    coordinator: &dyn Coordinator,
    job: &Job,
    trigger: Timestamp,
    next: Option<Timestamp>,
    cause: Cause,
    key: &str,
) -> Claimed {
    let claim = claim_of(shared, job, trigger, next, key);
    if let Err(skip) = skew_gate(shared, coordinator).await {
        return Err(Box::new(skip.record(shared, coordinator, job, trigger, cause)));
    }
    let asked = shared.clock.now();
    let claimed = within_claim_timeout(shared, coordinator.claim(&claim)).await;
    let latency = Duration::try_from(asked.duration_until(shared.clock.now())).unwrap_or_default();
    decide(shared, coordinator, job, trigger, cause, claimed, latency)
}

/// Claims a requested run under its own key: no skew check (it holds from when it is
/// made, on the coordinator's clock), no pause, no high-water mark.
pub(crate) async fn claim_requested(
    shared: &Shared,
    coordinator: &dyn Coordinator,
    job: &Job,
    trigger: Timestamp,
    cause: Cause,
    key: &str,
) -> Claimed {
    let settings = &shared.settings;
    let ttl = request_ttl(job, cause, trigger, settings.cancel_grace, settings.slack);
    let claim = RequestClaim { job: &job.name, trigger, key, instance: &shared.instance, ttl };
    let asked = shared.clock.now();
    let claimed = within_claim_timeout(shared, coordinator.claim_request(&claim)).await;
    let latency = Duration::try_from(asked.duration_until(shared.clock.now())).unwrap_or_default();
    decide(shared, coordinator, job, trigger, cause, claimed, latency)
}

/// What a claim's answer (which took `latency`) means for its trigger: the fencing token
/// if won, else the record of the skip; counted in the claim metrics and the health.
pub(crate) fn decide(
    shared: &Shared,
    coordinator: &dyn Coordinator,
    job: &Job,
    trigger: Timestamp,
    cause: Cause,
    claimed: Result<ClaimOutcome, CoordinatorError>,
    latency: Duration,
) -> Claimed {
    let result = match &claimed {
        Ok(ClaimOutcome::Won { .. }) => ClaimResult::Won,
        Ok(ClaimOutcome::Lost | ClaimOutcome::BehindMark | ClaimOutcome::Paused) => ClaimResult::Lost,
        Err(e) => {
            shared.health.coordinator_failed(e, shared.clock.now());
            shared.metrics.backend_error("coordinator", e.kind().as_str());
            ClaimResult::Error
        }
    };
    if claimed.is_ok() {
        shared.health.coordinator.store(true, Ordering::Relaxed);
    }
    shared.metrics.claim(result, latency);
    let skipped = |outcome, reason| Box::new(shared.skipped(job, trigger, cause, outcome, reason));
    match claimed {
        Ok(ClaimOutcome::Won { fencing_token }) => Ok(fencing_token),
        Ok(ClaimOutcome::Lost) => Err(skipped(Outcome::SkippedLost, None)),
        Ok(ClaimOutcome::BehindMark) => {
            let reason = "the job's high-water mark refused the claim: the fleet has handled this trigger \
                          or a later one, and this trigger's claim may have expired, so it is never \
                          claimed again"
                .to_owned();
            Err(skipped(Outcome::SkippedLost, Some(reason)))
        }
        Ok(ClaimOutcome::Paused) => Err(skipped(
            Outcome::SkippedPaused,
            Some(format!("the job is paused in the {} coordinator", coordinator.name())),
        )),
        Err(e) => Err(Box::new(unclaimed(shared, coordinator, job, trigger, cause, &e))),
    }
}

/// Awaits a call to the coordinator for at most the claim timeout; its end is the
/// [`TimedOut`](CoordinatorErrorKind::TimedOut) kind.
pub(crate) async fn within_claim_timeout<T>(
    shared: &Shared,
    call: impl Future<Output = Result<T, CoordinatorError>>,
) -> Result<T, CoordinatorError> {
    timeout::within(shared.clock.as_ref(), shared.settings.claim_timeout, call).await
}

/// The record of a claim without an answer. Every kind fails closed: a missed run can
/// be re-issued, a double run cannot be undone (docs/design.md).
pub(crate) fn unclaimed(
    shared: &Shared,
    coordinator: &dyn Coordinator,
    job: &Job,
    trigger: Timestamp,
    cause: Cause,
    error: &CoordinatorError,
) -> RunRecord {
    let outcome = match error.kind() {
        CoordinatorErrorKind::Unavailable
        | CoordinatorErrorKind::TimedOut
        | CoordinatorErrorKind::OutcomeUnknown
        | CoordinatorErrorKind::Unauthorized => Outcome::SkippedBackendUnavailable,
    };
    let reason = format!("{} coordinator ({}): {error}", coordinator.name(), error.kind());
    shared.skipped(job, trigger, cause, outcome, Some(reason))
}

/// The next fencing token of a run that claims nothing: from the store, so tokens go on
/// growing after a restart. Without a store, or if it fails (logged), one more than the
/// last this process handed out (or took from the store).
pub(crate) async fn local_fencing_token(shared: &Shared, job: &Job) -> u64 {
    if shared.persist_state {
        match shared.store.next_fencing_token(&job.name).await {
            Ok(token) => {
                job.local_fencing.fetch_max(token, Ordering::Relaxed);
                return token;
            }
            Err(e) => tracing::warn!(job = %job.name, "{e}; fencing token counted in memory"),
        }
    }
    job.local_fencing.fetch_add(1, Ordering::Relaxed) + 1
}
