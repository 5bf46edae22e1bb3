//! The retry budget: how many attempts a trigger gets, the backoff between them, and
//! which failures are worth another attempt (docs/design.md, "Run policies").
//!
//! Retries run on the replica that won the claim, under the same trigger, key and
//! fencing token; the engine composes [`Retry::run`] around one attempt of the handler.

use std::future::Future;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::error::BoxError;
use crate::ledger::Outcome;

/// A job's retry budget: `attempts` in all (the first included), with a backoff before
/// each retry that starts at `backoff` and grows by `multiplier` up to `max_backoff`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retry {
    attempts: u32,
    backoff: Duration,
    multiplier: f64,
    max_backoff: Option<Duration>,
}

impl Default for Retry {
    fn default() -> Self {
        Self::once()
    }
}

impl Retry {
    /// The default number of attempts: one, no retry (as cron).
    pub const DEFAULT_ATTEMPTS: u32 = 1;
    /// The default backoff between attempts: none.
    pub const DEFAULT_BACKOFF: Duration = Duration::ZERO;
    /// The default backoff multiplier: 1, a fixed backoff.
    pub const DEFAULT_MULTIPLIER: f64 = 1.0;

    /// `self` behind an `Arc`; [`Retry::once`], the default, is one every such job
    /// shares (no allocation per job).
    pub(crate) fn into_shared(self) -> Arc<Self> {
        static ONCE: LazyLock<Arc<Retry>> = LazyLock::new(|| Arc::new(Retry::once()));
        if self == Self::once() { ONCE.clone() } else { Arc::new(self) }
    }

    /// One attempt, no retry.
    pub fn once() -> Self {
        Self {
            attempts: Self::DEFAULT_ATTEMPTS,
            backoff: Self::DEFAULT_BACKOFF,
            multiplier: Self::DEFAULT_MULTIPLIER,
            max_backoff: None,
        }
    }

    /// `attempts` in all (at least 1), `backoff` before each retry (fixed).
    pub fn fixed(attempts: u32, backoff: Duration) -> Self {
        Self { attempts: attempts.max(1), backoff, ..Self::once() }
    }

    /// Makes the backoff exponential: each retry waits `multiplier` times the one before
    /// (at least 1), never more than `max_backoff` if given.
    pub fn exponential(self, multiplier: f64, max_backoff: Option<Duration>) -> Self {
        let multiplier = if multiplier.is_finite() { multiplier.max(1.0) } else { 1.0 };
        Self { multiplier, max_backoff, ..self }
    }

    /// How many attempts in all, the first included.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The budget left once `made` attempts were made (an interrupted run's, for its
    /// rerun), at least one attempt.
    pub(crate) fn after(self, made: u32) -> Self {
        Self { attempts: self.attempts.saturating_sub(made).max(1), ..self }
    }

    /// The wait before the first retry.
    pub fn backoff(&self) -> Duration {
        self.backoff
    }

    /// The factor each later wait grows by (1: fixed).
    pub fn multiplier(&self) -> f64 {
        self.multiplier
    }

    /// The longest wait between attempts, if capped.
    pub fn max_backoff(&self) -> Option<Duration> {
        self.max_backoff
    }

    /// The wait before attempt `attempt` (2 for the first retry); zero for the first.
    pub fn backoff_before(&self, attempt: u32) -> Duration {
        if attempt < 2 {
            return Duration::ZERO;
        }
        let grown = self.backoff.as_secs_f64() * self.multiplier.powi((attempt - 2) as i32);
        let grown = Duration::try_from_secs_f64(grown).unwrap_or(Duration::MAX);
        self.max_backoff.map_or(grown, |max| grown.min(max))
    }

    /// The sum of every wait between attempts, for
    /// [`run_budget`](crate::policy::run_budget).
    pub fn total_backoff(&self) -> Duration {
        (2..=self.attempts).fold(Duration::ZERO, |sum, k| sum.saturating_add(self.backoff_before(k)))
    }

    /// Runs `attempt` (given the attempt number, from 1) until it ends in something not
    /// worth retrying or the attempts are spent, sleeping the backoff between attempts on
    /// `clock`. A retry due after `stopping` (the scheduler stops) or `cancelled` (the
    /// run was stopped: its lease lost, or replaced) fired is not started: the trigger
    /// ends `failed` with the attempts made.
    pub(crate) async fn run<F, Fut>(
        &self,
        clock: &dyn Clock,
        stopping: &CancellationToken,
        cancelled: Option<&CancellationToken>,
        mut attempt: F,
    ) -> Attempted
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = AttemptResult>,
    {
        let mut number = 1;
        loop {
            let result = attempt(number).await;
            if !result.retryable || number >= self.attempts {
                return Attempted { result, attempts: number };
            }
            number += 1;
            let wake = crate::clock::later(clock.now(), self.backoff_before(number));
            let cancelled = async {
                match cancelled {
                    Some(token) => token.cancelled().await,
                    None => std::future::pending().await,
                }
            };
            let stopped = tokio::select! {
                biased;
                () = stopping.cancelled() => Some("the scheduler is shutting down"),
                () = cancelled => Some("the run was cancelled"),
                () = clock.sleep_until(wake) => None,
            };
            if let Some(why) = stopped {
                let error = format!(
                    "{}; retry not started: {why}",
                    result.error.as_deref().unwrap_or(result.outcome.as_str())
                );
                let result = AttemptResult { outcome: Outcome::Failed, error: Some(error), retryable: false };
                return Attempted { result, attempts: number - 1 };
            }
        }
    }
}

/// How one attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AttemptResult {
    pub outcome: Outcome,
    pub error: Option<String>,
    /// Whether another attempt may succeed: a failure or timeout whose error is not
    /// [`Permanent`]. Panics (a bug) and aborts are never retried.
    pub retryable: bool,
}

impl AttemptResult {
    /// An attempt that did not start, with `outcome` and why: never retried.
    pub fn not_started(outcome: Outcome, reason: String) -> Self {
        Self { outcome, error: Some(reason), retryable: false }
    }
}

/// The last attempt's result and how many attempts were made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Attempted {
    pub result: AttemptResult,
    pub attempts: u32,
}

/// A handler error that another attempt cannot cure (bad input, a refused
/// authorisation): the trigger ends `failed` at once, whatever attempts are left.
///
/// Every other handler error is transient and retried while attempts remain. The engine
/// tells them apart by type (`Permanent` at the top of the error), never by message
/// text.
///
/// ```
/// use slotcron::Permanent;
/// # fn check() -> Result<(), slotcron::BoxError> {
/// Err(Permanent::new(std::io::Error::other("no such account")))?
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Permanent(pub BoxError);

impl Permanent {
    /// Marks `error` as permanent.
    pub fn new(error: impl Into<BoxError>) -> Self {
        Self(error.into())
    }

    /// Whether a handler's error is marked permanent.
    pub fn marks(error: &BoxError) -> bool {
        error.is::<Permanent>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn jobs_with_the_default_retry_share_one_and_others_keep_their_own() {
        use crate::{Job, JobBuilder};
        let build = |builder: JobBuilder| {
            builder.every(S).handler(|_ctx| async { Ok::<(), std::io::Error>(()) }).build().unwrap()
        };
        let (a, b) = (build(Job::builder("a")), build(Job::builder("b").attempts(1)));
        let c = build(Job::builder("c").attempts(3));
        assert!(Arc::ptr_eq(&a.retry, &b.retry));
        assert_eq!((a.retry(), b.retry()), (Retry::once(), Retry::once()));
        assert_eq!(c.retry().attempts(), 3);
    }

    #[test]
    fn a_fixed_backoff_waits_the_same_before_every_retry() {
        let retry = Retry::fixed(3, 10 * S);
        assert_eq!([1, 2, 3].map(|k| retry.backoff_before(k)), [Duration::ZERO, 10 * S, 10 * S]);
        assert_eq!(retry.total_backoff(), 20 * S);
        assert_eq!(Retry::once().total_backoff(), Duration::ZERO);
        assert_eq!(Retry::fixed(0, S).attempts(), 1);
    }

    #[test]
    fn an_exponential_backoff_grows_up_to_its_cap() {
        let retry = Retry::fixed(5, 2 * S).exponential(2.0, Some(10 * S));
        assert_eq!([2, 3, 4, 5].map(|k| retry.backoff_before(k)), [2 * S, 4 * S, 8 * S, 10 * S]);
        assert_eq!(retry.total_backoff(), 24 * S);
        let huge = Retry::fixed(u32::MAX, Duration::MAX).exponential(10.0, None);
        assert_eq!(huge.backoff_before(100), Duration::MAX);
    }

    #[test]
    fn permanent_errors_are_told_by_type() {
        let permanent: BoxError = Box::new(Permanent::new("no such account"));
        let transient: BoxError = "no such account".into();
        assert!(Permanent::marks(&permanent));
        assert!(!Permanent::marks(&transient));
        assert_eq!(permanent.to_string(), "no such account");
    }
}
