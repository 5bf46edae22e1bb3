//! The cost of `overlap = "forbid"` per trigger next to `allow`, for the backends'
//! benchmarks: what the engine asks the coordinator for one trigger of a short run.
//!
//! With `allow` a trigger is one claim. With `forbid` (and `buffer_one`, `replace`) it
//! is the claim, the lease's acquisition and its release: three calls, each one round
//! trip in the Redis and PostgreSQL coordinators (one script call, one statement). A run
//! longer than a third of the lease's TTL adds one renewal per third.

use std::time::{Duration, Instant};

use jiff::Timestamp;
use slotcron::{Claim, ClaimOutcome, Coordinator, Hold, Lease, LeaseGrant, ScheduleKind, trigger_key};

/// Microseconds per trigger, one trigger at a time, of one policy.
#[derive(Debug, Clone, Copy)]
pub struct Cost {
    /// Calls to the coordinator (round trips) per trigger.
    pub round_trips: u32,
    /// Mean wall time per trigger, in microseconds.
    pub micros: f64,
}

/// Runs `triggers` triggers of one job as `allow` would (a claim each), then as
/// `forbid` would (claim, acquire, release), on new triggers of `job`; returns
/// `(allow, forbid)`.
///
/// # Panics
/// If a claim is lost or the lease held: the coordinator must be otherwise unused.
pub async fn forbid_cost(coordinator: &dyn Coordinator, job: &str, triggers: u32) -> (Cost, Cost) {
    let start: Timestamp = "2024-05-17T00:00:00Z".parse().expect("an instant");
    let hold = Some(Hold { slot: Duration::from_secs(3_600), run_budget: None, slack: Duration::ZERO });
    let claim = async |k: u32| {
        let trigger = start + Duration::from_secs(u64::from(k));
        let key = trigger_key(job, ScheduleKind::Recurring, trigger);
        let claim = Claim { job, trigger, key: &key, instance: "bench", hold };
        let won = coordinator.claim(&claim).await.expect("claim");
        assert!(matches!(won, ClaimOutcome::Won { .. }), "claim of {key} lost");
        key
    };
    let began = Instant::now();
    for k in 0..triggers {
        claim(k).await;
    }
    let allow = began.elapsed().as_secs_f64() * 1e6 / f64::from(triggers);
    let began = Instant::now();
    for k in triggers..2 * triggers {
        let key = claim(k).await;
        let owner = format!("bench {key}");
        let lease = Lease { job, owner: &owner, ttl: Duration::from_secs(15) };
        assert_eq!(coordinator.acquire_lease(&lease).await.expect("acquire"), LeaseGrant::Acquired);
        coordinator.release_lease(&lease).await.expect("release");
    }
    let forbid = began.elapsed().as_secs_f64() * 1e6 / f64::from(triggers);
    (Cost { round_trips: 1, micros: allow }, Cost { round_trips: 3, micros: forbid })
}
