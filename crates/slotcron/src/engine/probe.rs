//! What tests observe of a running scheduler, in one place (as tokio keeps its test
//! hooks): the engine's own files carry no test-only code. The test kit
//! (`slotcron-testkit`) reads these through [`Scheduler::probe`]; they are not part of
//! the documented API.

use std::sync::Mutex;
use std::sync::atomic::Ordering;

use jiff::Timestamp;

use super::Scheduler;

/// What the engine's loop last said of itself: awake (`None`), or asleep until an
/// instant (`Some(Some(at))`) or until woken (`Some(None)`).
#[derive(Default)]
pub(crate) struct LoopWatch(Mutex<Option<Option<Timestamp>>>);

impl LoopWatch {
    fn set(&self, state: Option<Option<Timestamp>>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = state;
    }

    /// The loop is at work.
    pub fn awake(&self) {
        self.set(None);
    }

    /// The loop goes to sleep until `deadline` (`None`: until woken).
    pub fn asleep_until(&self, deadline: Option<Timestamp>) {
        self.set(Some(deadline));
    }

    fn asleep_at(&self, now: Timestamp) -> bool {
        match *self.0.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(Some(until)) => until > now,
            Some(None) => true,
            None => false,
        }
    }
}

/// A view of a scheduler's insides for tests; see [`Scheduler::probe`].
#[doc(hidden)]
pub struct Probe<'a> {
    scheduler: &'a Scheduler,
}

impl Scheduler {
    /// What tests observe of this scheduler (the test kit's fleets wait on it); not part
    /// of the documented API.
    #[doc(hidden)]
    pub fn probe(&self) -> Probe<'_> {
        Probe { scheduler: self }
    }
}

impl Probe<'_> {
    /// Whether no `run()` is going on, its shutdown included.
    pub fn is_stopped(&self) -> bool {
        let shared = &self.scheduler.shared;
        !shared.running.load(Ordering::SeqCst) && shared.lifecycle.try_lock().is_ok()
    }

    /// Whether `job`'s `trigger` waits here for its owner, another replica, to claim it
    /// (in the table's lane of the triggers others own, or taken from it).
    pub fn awaits_takeover(&self, job: &str, trigger: Timestamp) -> bool {
        let fleet = self.scheduler.fleet.as_ref();
        self.scheduler.shared.table().lags(job, trigger)
            || fleet.is_some_and(|fleet| {
                fleet.takeovers.waits(job, trigger) || fleet.recorder_looks.next_look(job, trigger).is_some()
            })
    }

    /// When this replica next looks whether `job`'s `trigger`, which waits here for its
    /// owner (or, as the recorder of a placed job, for its carriers), is still unclaimed,
    /// while it waits for that look.
    pub fn next_takeover_look(&self, job: &str, trigger: Timestamp) -> Option<Timestamp> {
        let fleet = self.scheduler.fleet.as_ref()?;
        fleet.takeovers.next_look(job, trigger).or_else(|| fleet.recorder_looks.next_look(job, trigger))
    }

    /// Whether the engine's loop sleeps with nothing to do at `now`: it went to sleep
    /// until an instant after `now` (or until woken), having handled what was due before,
    /// and its claims ahead have their answers.
    pub fn idle_at(&self, now: Timestamp) -> bool {
        let answered = self.scheduler.fleet.as_ref().is_none_or(|fleet| fleet.ahead.answered());
        self.scheduler.shared.probe.asleep_at(now) && answered
    }

    /// Whether this replica lacks the labels `job` is placed on: it claims none of its
    /// triggers (unless no live member carries them: see `Outcome::SkippedNoMember`).
    pub fn lacks_labels_of(&self, job: &str) -> bool {
        let shared = &self.scheduler.shared;
        let job = shared.table().job(job);
        job.is_some_and(|job| !job.placement.is_met_by(&shared.settings.labels))
    }

    /// Whether `job`'s `trigger` waits here for a slot of the concurrency cap.
    pub fn awaits_slot(&self, job: &str, trigger: Timestamp) -> bool {
        self.scheduler.shared.cap.as_ref().is_some_and(|cap| cap.waits(job, trigger))
    }
}
