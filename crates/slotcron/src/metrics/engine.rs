//! The scheduler's metrics without a `job` label: counted in stripes (a job's runs all
//! count in its stripe, so runs of different jobs rarely share a cache line), summed and
//! handed to the recorder at each flush.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, counter, gauge, histogram};

use super::histogram::{Drained, LocalHistogram};
use super::{CLAIM_DURATION_SECONDS, CLAIMS_TOTAL, RUNNING_RUNS, STRIPES, TRIGGER_LATENESS_SECONDS};

/// A claim's answer, for [`EngineSeries::claim`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum ClaimResult {
    Won,
    Lost,
    Error,
}

impl ClaimResult {
    const ALL: [ClaimResult; 3] = [ClaimResult::Won, ClaimResult::Lost, ClaimResult::Error];

    fn as_str(self) -> &'static str {
        match self {
            ClaimResult::Won => "won",
            ClaimResult::Lost => "lost",
            ClaimResult::Error => "error",
        }
    }
}

/// One stripe's counts since the last flush (aligned to its own cache lines).
#[derive(Debug, Default)]
#[repr(align(64))]
struct Stripe {
    /// Handlers started minus handlers ended: not reset by a flush.
    running: AtomicI64,
    claims: [AtomicU64; 3],
    lateness: LocalHistogram,
    claim_duration: LocalHistogram,
}

/// The scheduler's counts in [`STRIPES`] stripes.
#[derive(Debug, Default)]
pub(crate) struct EngineSeries {
    stripes: [Stripe; STRIPES],
}

/// The scheduler's series, registered at the first flush.
pub(crate) struct EngineHandles {
    lateness: Histogram,
    running: Gauge,
    claims: [Counter; 3],
    claim_duration: Histogram,
}

impl EngineHandles {
    pub fn new() -> Self {
        Self {
            lateness: histogram!(TRIGGER_LATENESS_SECONDS),
            running: gauge!(RUNNING_RUNS),
            claims: ClaimResult::ALL.map(|result| counter!(CLAIMS_TOTAL, "result" => result.as_str())),
            claim_duration: histogram!(CLAIM_DURATION_SECONDS),
        }
    }
}

impl EngineSeries {
    /// A handler of a job of `stripe` started, `lateness` after its trigger's scheduled
    /// instant.
    pub fn run_started(&self, stripe: usize, lateness: Duration) {
        let stripe = &self.stripes[stripe];
        stripe.lateness.record(lateness);
        stripe.running.fetch_add(1, Ordering::Relaxed);
    }

    /// A handler that [`EngineSeries::run_started`] counted in `stripe` has ended.
    pub fn run_ended(&self, stripe: usize) {
        self.stripes[stripe].running.fetch_sub(1, Ordering::Relaxed);
    }

    /// A claim of a job of `stripe` answered after `latency`.
    pub fn claim(&self, stripe: usize, result: ClaimResult, latency: Duration) {
        let stripe = &self.stripes[stripe];
        stripe.claims[result as usize].fetch_add(1, Ordering::Relaxed);
        stripe.claim_duration.record(latency);
    }

    /// Hands the counts since the last flush to `handles`.
    pub fn flush(&self, handles: &EngineHandles) {
        let (mut lateness, mut claim_duration) = (Drained::default(), Drained::default());
        let mut claims = [0; 3];
        let mut running = 0;
        for stripe in &self.stripes {
            running += stripe.running.load(Ordering::Relaxed);
            for (sum, claimed) in claims.iter_mut().zip(&stripe.claims) {
                if claimed.load(Ordering::Relaxed) != 0 {
                    *sum += claimed.swap(0, Ordering::Relaxed);
                }
            }
            stripe.lateness.drain_into(&mut lateness);
            stripe.claim_duration.drain_into(&mut claim_duration);
        }
        handles.running.set(running.max(0) as f64);
        for (counter, n) in handles.claims.iter().zip(claims) {
            counter.increment(n);
        }
        lateness.feed(&handles.lateness);
        claim_duration.feed(&handles.claim_duration);
    }
}
