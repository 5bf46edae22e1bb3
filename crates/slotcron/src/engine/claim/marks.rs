//! The coordinator's start marks waiting to be sent: the marks queued while the calls
//! are on their way go in the next call, together (sent by
//! [`mark_start`](super::mark_start)), at most [`MARK_CALLS_IN_FLIGHT`] calls at once.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

/// The most mark calls on their way at once: a burst's marks are not held up behind one
/// round trip at a time.
pub(crate) const MARK_CALLS_IN_FLIGHT: usize = 4;

/// The marks waiting, and how many senders are at work.
#[derive(Default)]
pub(crate) struct StartMarks(Mutex<Waiting>);

#[derive(Default)]
pub(crate) struct Waiting {
    marks: Vec<Queued>,
    senders: usize,
}

/// One mark waiting: the job, the trigger key and who waits for the answer.
pub(crate) type Queued = (Arc<str>, Box<str>, oneshot::Sender<Result<bool, String>>);

impl StartMarks {
    pub fn lock(&self) -> MutexGuard<'_, Waiting> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Waiting {
    /// Queues a mark; `true` if fewer than [`MARK_CALLS_IN_FLIGHT`] senders are at work
    /// (the caller starts one more).
    pub fn push(
        &mut self,
        job: Arc<str>,
        key: Box<str>,
        answer: oneshot::Sender<Result<bool, String>>,
    ) -> bool {
        self.marks.push((job, key, answer));
        let start = self.senders < MARK_CALLS_IN_FLIGHT;
        self.senders += usize::from(start);
        start
    }

    /// Takes up to `most` marks; none left: the sender stops (one sender fewer).
    pub fn take(&mut self, most: usize) -> Vec<Queued> {
        let take = self.marks.len().min(most);
        if take == 0 {
            self.senders -= 1;
        }
        self.marks.drain(..take).collect()
    }
}
