//! The coordinator's start marks waiting to be sent: the marks queued while one call is
//! on its way go in the next call, together (sent by
//! [`mark_start`](super::mark_start)).

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

/// The marks waiting, and whether a sender is at work.
#[derive(Default)]
pub(crate) struct StartMarks(Mutex<Waiting>);

#[derive(Default)]
pub(crate) struct Waiting {
    marks: Vec<Queued>,
    sending: bool,
}

/// One mark waiting: the job, the trigger key and who waits for the answer.
pub(crate) type Queued = (Arc<str>, Box<str>, oneshot::Sender<Result<bool, String>>);

impl StartMarks {
    pub fn lock(&self) -> MutexGuard<'_, Waiting> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Waiting {
    /// Queues a mark; `true` if no sender is at work (the caller starts one).
    pub fn push(
        &mut self,
        job: Arc<str>,
        key: Box<str>,
        answer: oneshot::Sender<Result<bool, String>>,
    ) -> bool {
        self.marks.push((job, key, answer));
        !std::mem::replace(&mut self.sending, true)
    }

    /// Takes up to `most` marks; none left: the sender stops (`sending` is cleared).
    pub fn take(&mut self, most: usize) -> Vec<Queued> {
        let take = self.marks.len().min(most);
        if take == 0 {
            self.sending = false;
        }
        self.marks.drain(..take).collect()
    }
}
