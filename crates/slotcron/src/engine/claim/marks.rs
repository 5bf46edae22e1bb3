//! The starts waiting to be marked, taken a batch at a time by the senders of
//! [`mark_start`](super::mark_start): the starts queued while the senders are at work go in
//! their next batches, together, with at most [`MARK_CALLS_IN_FLIGHT`] senders at once.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use crate::ledger::{Outcome, RunRecord};

/// Why a run's start could not be marked: it does not start, and is recorded with this
/// outcome and reason.
pub(crate) type Unmarked = (Outcome, String);

/// The most senders at work at once: a burst's marks are not held up behind one round
/// trip at a time.
pub(crate) const MARK_CALLS_IN_FLIGHT: usize = 4;

/// The starts waiting, and how many senders are at work.
#[derive(Default)]
pub(crate) struct StartMarks(Mutex<Waiting>);

#[derive(Default)]
pub(crate) struct Waiting {
    marks: Vec<Queued>,
    senders: usize,
}

/// One start waiting to be marked: its run's `running` record (none for a claim settled
/// without a run), its claim in the coordinator (none when there is none to mark there),
/// and who waits for the answer.
pub(crate) struct Queued {
    pub record: Option<RunRecord>,
    pub claim: Option<ClaimMark>,
    pub answer: oneshot::Sender<Result<(), Unmarked>>,
}

/// A claim in the coordinator whose start to mark: its job, its trigger key, and the
/// job's `max_runs` when the mark counts a run ([`limits`](crate::engine::limits)).
pub(crate) struct ClaimMark {
    pub job: Arc<str>,
    pub key: Box<str>,
    pub max_runs: Option<u64>,
}

impl StartMarks {
    pub fn lock(&self) -> MutexGuard<'_, Waiting> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Waiting {
    /// Queues a start; `true` if fewer than [`MARK_CALLS_IN_FLIGHT`] senders are at work
    /// (the caller starts one more).
    pub fn push(&mut self, queued: Queued) -> bool {
        self.marks.push(queued);
        let start = self.senders < MARK_CALLS_IN_FLIGHT;
        self.senders += usize::from(start);
        start
    }

    /// Takes up to `most` starts; none left: the sender stops (one sender fewer).
    pub fn take(&mut self, most: usize) -> Vec<Queued> {
        let take = self.marks.len().min(most);
        if take == 0 {
            self.senders -= 1;
        }
        self.marks.drain(..take).collect()
    }
}
