//! The scheduler's metrics without a `job` label, counted in stripes: each thread counts
//! in its own (so the runtime's workers never write the same cache line), and a flush
//! sums them and hands the sums to the recorder.

use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, counter, gauge, histogram};

use super::histogram::{Drained, LocalHistogram};
use super::job::{OUTCOMES, Unlabeled};
use super::{
    BACKEND_ERRORS_TOTAL, BUILD_INFO, CLAIM_DURATION_SECONDS, CLAIMS_TOTAL, LEDGER_BACKPRESSURE_TOTAL,
    RUN_DURATION_SECONDS, RUNNING_RUNS, STRIPES, TAKEOVER_FOUND_CLAIMED_TOTAL, TAKEOVERS_TOTAL,
    TRIGGER_LATENESS_SECONDS,
};

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

/// One stripe's counts since the last flush, on cache lines of its own.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Stripe {
    /// Handlers started minus handlers ended here (a run may end on another thread than
    /// it started on: only the sum over the stripes means something). Not reset.
    running: AtomicI64,
    claims: [AtomicU64; 3],
    lateness: LocalHistogram,
    claim_duration: LocalHistogram,
    /// Run records by outcome, when series carry no `job` label.
    runs: [AtomicU64; OUTCOMES],
    /// Handler durations, of every job.
    duration: LocalHistogram,
}

/// The scheduler's counts in [`STRIPES`] stripes.
#[derive(Debug, Default)]
pub(crate) struct EngineSeries {
    stripes: Box<[Stripe; STRIPES]>,
}

/// The scheduler's series, registered at the first flush.
pub(crate) struct EngineHandles {
    lateness: Histogram,
    duration: Histogram,
    running: Gauge,
    claims: [Counter; 3],
    claim_duration: Histogram,
}

impl EngineHandles {
    pub fn new() -> Self {
        // Counted straight at the recorder when they happen (rarely), and registered here
        // so that a scrape shows them at zero before the first one.
        let _ = (counter!(TAKEOVERS_TOTAL), counter!(TAKEOVER_FOUND_CLAIMED_TOTAL));
        let _ = counter!(LEDGER_BACKPRESSURE_TOTAL);
        for backend in ["coordinator", "state"] {
            let _ = counter!(BACKEND_ERRORS_TOTAL, "backend" => backend, "kind" => "unavailable");
        }
        gauge!(BUILD_INFO, "version" => env!("CARGO_PKG_VERSION")).set(1.0);
        Self {
            lateness: histogram!(TRIGGER_LATENESS_SECONDS),
            duration: histogram!(RUN_DURATION_SECONDS),
            running: gauge!(RUNNING_RUNS),
            claims: ClaimResult::ALL.map(|result| counter!(CLAIMS_TOTAL, "result" => result.as_str())),
            claim_duration: histogram!(CLAIM_DURATION_SECONDS),
        }
    }
}

/// The stripe of the calling thread: threads take the stripes in turn.
fn stripe_index() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: Cell<Option<usize>> = const { Cell::new(None) };
    }
    STRIPE.with(|stripe| {
        stripe.get().unwrap_or_else(|| {
            let index = NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES;
            stripe.set(Some(index));
            index
        })
    })
}

impl EngineSeries {
    fn stripe(&self) -> &Stripe {
        &self.stripes[stripe_index()]
    }

    /// A handler started, `lateness` after its trigger's scheduled instant.
    pub fn run_started(&self, lateness: Duration) {
        let stripe = self.stripe();
        stripe.lateness.record(lateness);
        stripe.running.fetch_add(1, Ordering::Relaxed);
    }

    /// A handler that [`EngineSeries::run_started`] counted has ended.
    pub fn run_ended(&self) {
        self.stripe().running.fetch_sub(1, Ordering::Relaxed);
    }

    /// A claim answered after `latency`.
    pub fn claim(&self, result: ClaimResult, latency: Duration) {
        let stripe = self.stripe();
        stripe.claims[result as usize].fetch_add(1, Ordering::Relaxed);
        stripe.claim_duration.record(latency);
    }

    /// A run record of the outcome at `outcome` (an index into
    /// [`Outcome::ALL`](crate::Outcome::ALL)), when series carry no `job` label.
    pub fn run_recorded(&self, outcome: usize) {
        self.stripe().runs[outcome].fetch_add(1, Ordering::Relaxed);
    }

    /// A handler ran for `duration` (any job).
    pub fn run_duration(&self, duration: Duration) {
        self.stripe().duration.record(duration);
    }

    /// Handlers running now (started and not ended).
    pub fn running(&self) -> u64 {
        let running: i64 = self.stripes.iter().map(|stripe| stripe.running.load(Ordering::Relaxed)).sum();
        running.max(0) as u64
    }

    /// Hands the counts since the last flush to `handles`, and adds the unlabeled run
    /// records to `unlabeled`.
    pub fn flush(&self, handles: &EngineHandles, unlabeled: &mut Unlabeled) {
        let (mut lateness, mut claim_duration, mut duration) = <[Drained; 3]>::default().into();
        let mut claims = [0; 3];
        for stripe in self.stripes.iter() {
            take(&stripe.claims, &mut claims);
            take(&stripe.runs, &mut unlabeled.runs);
            stripe.lateness.drain_into(&mut lateness);
            stripe.claim_duration.drain_into(&mut claim_duration);
            stripe.duration.drain_into(&mut duration);
        }
        handles.running.set(self.running() as f64);
        for (counter, n) in handles.claims.iter().zip(claims) {
            counter.increment(n);
        }
        lateness.feed(&handles.lateness);
        duration.feed(&handles.duration);
        claim_duration.feed(&handles.claim_duration);
    }
}

/// Adds `counts` to `into` and zeroes them.
fn take(counts: &[AtomicU64], into: &mut [u64]) {
    for (count, sum) in counts.iter().zip(into) {
        if count.load(Ordering::Relaxed) != 0 {
            *sum += count.swap(0, Ordering::Relaxed);
        }
    }
}
