use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use jiff::{SignedDuration, Timestamp};

use super::Clock;

/// A clock that only moves when told to: for tests and simulations.
///
/// Sleepers wake when [`ManualClock::set`] or [`ManualClock::advance`] moves the time to
/// or past their deadline. Clones share the same time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    now: Timestamp,
    next_id: u64,
    /// Pending sleeps by (deadline, id).
    sleepers: BTreeMap<(Timestamp, u64), Waker>,
}

impl ManualClock {
    /// A clock that reads `now` until moved.
    pub fn new(now: Timestamp) -> Self {
        let state = State { now, next_id: 0, sleepers: BTreeMap::new() };
        Self { state: Arc::new(Mutex::new(state)) }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave the state inconsistent.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Moves the clock to `now` (forwards or backwards) and wakes every sleeper whose
    /// deadline is at or before it.
    pub fn set(&self, now: Timestamp) {
        let woken: Vec<Waker> = {
            let mut state = self.lock();
            state.now = now;
            let later = state.sleepers.split_off(&(now, u64::MAX));
            std::mem::replace(&mut state.sleepers, later).into_values().collect()
        };
        woken.into_iter().for_each(Waker::wake);
    }

    /// Moves the clock forwards by `by` (backwards if negative); see [`ManualClock::set`].
    pub fn advance(&self, by: SignedDuration) {
        let now = self.now();
        self.set(now.saturating_add(by).unwrap_or(now));
    }

    /// The earliest deadline anyone is sleeping until, if any.
    pub fn next_deadline(&self) -> Option<Timestamp> {
        self.lock().sleepers.keys().next().map(|(deadline, _)| *deadline)
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        self.lock().now
    }

    fn sleep_until(&self, deadline: Timestamp) -> BoxFuture<'static, ()> {
        let id = {
            let mut state = self.lock();
            state.next_id += 1;
            state.next_id
        };
        ManualSleep { clock: self.clone(), deadline, id }.boxed()
    }
}

struct ManualSleep {
    clock: ManualClock,
    deadline: Timestamp,
    id: u64,
}

impl Future for ManualSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.clock.lock();
        if state.now >= self.deadline {
            state.sleepers.remove(&(self.deadline, self.id));
            return Poll::Ready(());
        }
        state.sleepers.insert((self.deadline, self.id), cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for ManualSleep {
    fn drop(&mut self) {
        self.clock.lock().sleepers.remove(&(self.deadline, self.id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[tokio::test]
    async fn sleeper_wakes_only_at_its_deadline() {
        let clock = ManualClock::new(ts("2024-01-01T00:00:00Z"));
        let sleep = tokio::spawn(clock.sleep_until(ts("2024-01-01T00:00:10Z")));
        tokio::task::yield_now().await;
        assert_eq!(clock.next_deadline(), Some(ts("2024-01-01T00:00:10Z")));
        clock.advance(SignedDuration::from_secs(9));
        tokio::task::yield_now().await;
        assert!(!sleep.is_finished());
        clock.advance(SignedDuration::from_secs(1));
        sleep.await.unwrap();
        assert_eq!(clock.next_deadline(), None);
    }

    #[tokio::test]
    async fn dropped_sleep_leaves_no_deadline() {
        let clock = ManualClock::new(ts("2024-01-01T00:00:00Z"));
        let mut sleep = clock.sleep_until(ts("2024-01-02T00:00:00Z"));
        assert!(futures_util::poll!(&mut sleep).is_pending());
        drop(sleep);
        assert_eq!(clock.next_deadline(), None);
    }
}
