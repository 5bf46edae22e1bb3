//! Time as the engine sees it: a [`Clock`] to read the wall clock and to sleep until an
//! instant. Production uses [`SystemClock`]; tests use [`ManualClock`], which makes
//! whole-scheduler tests deterministic and instant.

mod manual;
mod system;

pub use manual::ManualClock;
pub use system::SystemClock;

use std::time::Duration;

use futures_util::future::BoxFuture;
use jiff::Timestamp;

/// `duration` after `at`, or the last representable instant: a huge setting waits
/// forever rather than overflowing.
pub(crate) fn later(at: Timestamp, duration: Duration) -> Timestamp {
    at.checked_add(duration).unwrap_or(Timestamp::MAX)
}

/// `duration` before `at`, or the first representable instant.
pub(crate) fn earlier(at: Timestamp, duration: Duration) -> Timestamp {
    at.checked_sub(duration).unwrap_or(Timestamp::MIN)
}

/// The source of "now" and of timed waits for a scheduler.
///
/// All instants are UTC [`Timestamp`]s; time zones only matter to schedules.
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> Timestamp;

    /// A future that completes at or after `deadline`, as this clock reads it.
    ///
    /// It may complete early (a timer that wakes a little before the instant); callers
    /// must compare [`Clock::now`] with the deadline again before acting, as the engine
    /// does.
    fn sleep_until(&self, deadline: Timestamp) -> BoxFuture<'static, ()>;
}
