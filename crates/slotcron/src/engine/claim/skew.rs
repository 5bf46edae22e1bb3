//! The clock-skew guard (docs/design.md, "Exactly once across replicas"): a replica whose
//! clock is off its coordinator's by more than the slack fails closed for every trigger
//! (`skipped-clock-skew`) rather than risk a double run, and says so at most once a
//! minute with the measured offset.
//!
//! The offset is measured with one read of the coordinator's clock
//! ([`Coordinator::time`]) at most every [`SKEW_SAMPLE_EVERY`], and only when a trigger
//! is about to be claimed: no extra round trip per trigger, none when nothing is due.
//! The coordinator's time is compared with the midpoint of this replica's clock before
//! and after the read, so the round trip's own length counts for half at most.

use std::sync::Mutex;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use super::timeout;
use crate::clock::Clock;
use crate::coordinator::{Coordinator, CoordinatorError, SKEW_SAMPLE_EVERY};

/// What the guard found before a claim.
pub(crate) enum Skew {
    /// Within the slack, or the coordinator has no clock: claim.
    Within,
    /// Beyond the slack: skip the trigger. The offset (this replica minus the
    /// coordinator).
    Beyond(SignedDuration),
}

/// One replica's last measurement of its offset, and its last warning.
#[derive(Default)]
pub(crate) struct SkewGuard {
    /// When (this replica's clock) the offset was measured, and the offset.
    sample: tokio::sync::Mutex<Option<(Timestamp, SignedDuration)>>,
    warned: Mutex<Option<Timestamp>>,
}

impl SkewGuard {
    /// The most one warning a minute.
    const WARN_EVERY: SignedDuration = SignedDuration::from_secs(60);

    /// Measures the offset if the last measurement is older than [`SKEW_SAMPLE_EVERY`]
    /// (or this clock stepped back since), reading the coordinator's clock within
    /// `claim_timeout` on `clock`, and judges it against `slack`.
    ///
    /// # Errors
    /// Reading the coordinator's clock failed or took longer than the claim timeout.
    pub async fn check(
        &self,
        clock: &dyn Clock,
        claim_timeout: Duration,
        slack: Duration,
        coordinator: &dyn Coordinator,
    ) -> Result<Skew, CoordinatorError> {
        match self.offset(clock, claim_timeout, coordinator).await? {
            Some(offset) if offset.unsigned_abs() > slack => {
                self.warn(clock, coordinator, offset, slack);
                Ok(Skew::Beyond(offset))
            }
            _ => Ok(Skew::Within),
        }
    }

    /// This replica's offset from the coordinator's clock (this replica minus the
    /// coordinator), measured again if the last measurement is older than
    /// [`SKEW_SAMPLE_EVERY`] (or this clock stepped back since); `None` for a coordinator
    /// without a clock.
    ///
    /// # Errors
    /// Reading the coordinator's clock failed or took longer than the claim timeout.
    pub async fn offset(
        &self,
        clock: &dyn Clock,
        claim_timeout: Duration,
        coordinator: &dyn Coordinator,
    ) -> Result<Option<SignedDuration>, CoordinatorError> {
        let mut sample = self.sample.lock().await;
        let now = clock.now();
        let fresh = sample.filter(|(at, _)| {
            now >= *at
                && now.duration_since(*at) < SignedDuration::try_from(SKEW_SAMPLE_EVERY).unwrap_or_default()
        });
        if let Some((_, offset)) = fresh {
            return Ok(Some(offset));
        }
        let before = clock.now();
        let time = timeout::within(clock, claim_timeout, coordinator.time()).await?;
        let after = clock.now();
        let midpoint = before + before.duration_until(after) / 2;
        let offset = time.map(|time| midpoint.duration_since(time));
        *sample = offset.map(|offset| (after, offset));
        Ok(offset)
    }

    fn warn(
        &self,
        clock: &dyn Clock,
        coordinator: &dyn Coordinator,
        offset: SignedDuration,
        slack: Duration,
    ) {
        let now = clock.now();
        let mut warned = self.warned.lock().unwrap_or_else(|p| p.into_inner());
        if warned.is_some_and(|at| now >= at && now.duration_since(at) < Self::WARN_EVERY) {
            return;
        }
        *warned = Some(now);
        tracing::warn!(
            offset = %format_offset(offset),
            slack = ?slack,
            coordinator = coordinator.name(),
            "this replica's clock is off the coordinator's by more than the clock-skew slack: every trigger \
             is skipped (skipped-clock-skew) until it is back within"
        );
    }
}

/// `+6.500s`: how far this replica's clock is ahead of the coordinator's (negative:
/// behind), to the millisecond.
pub(crate) fn format_offset(offset: SignedDuration) -> String {
    format!("{:+.3}s", offset.as_secs_f64())
}

/// The reason a trigger was skipped for the skew, as recorded.
pub(crate) fn reason(coordinator: &dyn Coordinator, offset: SignedDuration, slack: Duration) -> String {
    format!(
        "this replica's clock is {} off the {} coordinator's, beyond the clock-skew slack of {slack:?}",
        format_offset(offset),
        coordinator.name()
    )
}
