use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use jiff::Timestamp;

use super::Clock;

/// The longest single timer the system clock arms.
///
/// Timers run on the monotonic clock, which does not follow steps of the wall clock
/// (NTP corrections, a suspended machine). Waking at least this often lets the engine
/// notice such a step within this bound while staying idle otherwise.
const MAX_TIMER: Duration = Duration::from_secs(60);

/// The operating system's wall clock, with tokio timers for sleeping.
///
/// A sleep longer than one minute is split, so a wall-clock step or a resumed machine
/// is noticed within a minute.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }

    fn sleep_until(&self, deadline: Timestamp) -> BoxFuture<'static, ()> {
        let wait = Timestamp::now().duration_until(deadline);
        // A negative or zero wait completes at once.
        let wait = Duration::try_from(wait).unwrap_or(Duration::ZERO).min(MAX_TIMER);
        tokio::time::sleep(wait).boxed()
    }
}
