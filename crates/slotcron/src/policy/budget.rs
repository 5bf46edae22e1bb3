//! The run budget: the one formula for how long a run of a job may take (docs/design.md,
//! "Run policies"). Every bound that depends on how long a run may last — how long a
//! claim holds, the most a lease may be renewed — comes from [`run_budget`].

use std::time::Duration;

/// How long one trigger's run may take, all attempts included:
/// `attempts × (timeout + kill_grace) + backoffs + slack`, where `backoffs` is the sum of
/// the waits between attempts (`(attempts − 1) × backoff` for a fixed backoff).
///
/// `None` when the run is unbounded (no per-attempt `timeout`). `attempts` below 1
/// counts as 1. Saturates at [`Duration::MAX`] rather than overflowing.
pub fn run_budget(
    attempts: u32,
    timeout: Option<Duration>,
    kill_grace: Duration,
    backoffs: Duration,
    slack: Duration,
) -> Option<Duration> {
    let per_attempt = timeout?.saturating_add(kill_grace);
    Some(per_attempt.saturating_mul(attempts.max(1)).saturating_add(backoffs).saturating_add(slack))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn the_formula_counts_every_attempt_its_kill_grace_the_backoffs_and_the_slack() {
        // 3 × (10 s + 5 s) + 2 × 4 s + 5 s
        assert_eq!(run_budget(3, Some(10 * S), 5 * S, 8 * S, 5 * S), Some(58 * S));
        assert_eq!(run_budget(1, Some(10 * S), 5 * S, Duration::ZERO, 5 * S), Some(20 * S));
        assert_eq!(run_budget(0, Some(10 * S), 5 * S, Duration::ZERO, 5 * S), Some(20 * S));
    }

    #[test]
    fn a_run_without_a_timeout_is_unbounded_and_huge_values_saturate() {
        assert_eq!(run_budget(3, None, 5 * S, S, S), None);
        assert_eq!(run_budget(u32::MAX, Some(Duration::MAX), S, S, S), Some(Duration::MAX));
    }
}
