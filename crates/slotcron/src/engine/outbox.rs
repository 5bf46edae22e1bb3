//! The outbox: ledger writes and failed job-state writes, queued and written in order by
//! one task, in batches. It **never drops** a write (docs/design.md, "Ledger"): a run's
//! `running` record (its start mark) is waited for ([`Outbox::push_marks`]) before the run
//! starts, so a burst's marks go to the ledger together, a batch per round trip; and
//! when more writes wait than the buffer's capacity, the engine claims nothing new until
//! the ledger has taken some ([`Outbox::room`]): back-pressure, never loss.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use metrics::{counter, gauge};
use tokio::sync::{Notify, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::clock::later;
use crate::context::RecordSink;
use crate::error::BackendErrorKind;
use crate::ledger::{Ledger, LedgerWrite, MAX_WRITES_PER_BATCH, RunRecord};
use crate::metrics::{BACKEND_ERRORS_TOTAL, LEDGER_BACKPRESSURE_TOTAL, LEDGER_QUEUED_WRITES};
use crate::store::{JobState, Store, merge_job_state};

/// The first wait before writing again after a failure; it doubles up to [`RETRY_MAX`].
const RETRY_MIN: Duration = Duration::from_millis(100);
/// The longest wait between two tries while a backend is down.
const RETRY_MAX: Duration = Duration::from_secs(5);
/// How long a stopping scheduler keeps trying to write what is buffered.
pub(crate) const FLUSH_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) struct Outbox {
    ledger: Arc<dyn Ledger>,
    store: Arc<dyn Store>,
    capacity: usize,
    pending: Mutex<Pending>,
    wake: Notify,
    /// How many writes, from the first ever queued, the ledger has taken.
    written_to: watch::Sender<u64>,
    /// Whether the outbox's metrics are counted ([`SchedulerBuilder::metrics`](crate::SchedulerBuilder::metrics)).
    count_metrics: bool,
}

#[derive(Default)]
struct Pending {
    writes: VecDeque<LedgerWrite>,
    /// The sequence number of `writes[0]`: how many writes left the front so far.
    front: u64,
    /// Job-state writes that failed, the newest per job (merged as the store merges).
    states: BTreeMap<Arc<str>, JobState>,
    /// Whether the engine is holding back claims for a full buffer (logged once).
    holding: bool,
    /// Who waits for which group of writes to be taken ([`Outbox::push_marks`]): the
    /// sequence numbers of its first and last writes, in write order.
    marks: VecDeque<(u64, u64, oneshot::Sender<()>)>,
    /// Whether the last try failed (an outage is going on).
    failing: bool,
}

impl Outbox {
    pub fn new(ledger: Arc<dyn Ledger>, store: Arc<dyn Store>, capacity: usize, count_metrics: bool) -> Self {
        Self {
            ledger,
            store,
            capacity: capacity.max(1),
            pending: Mutex::default(),
            wake: Notify::new(),
            written_to: watch::Sender::new(0),
            count_metrics,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues a ledger write, whatever the buffer holds: the engine keeps it from growing
    /// past its capacity with [`Outbox::room`].
    pub fn push(&self, write: LedgerWrite) {
        self.lock().writes.push_back(write);
        self.wake.notify_one();
    }

    /// Queues ledger writes that someone waits for (a batch of runs' start marks), in
    /// order: the receiver fires once the ledger has taken the last of them (so all), and
    /// never if it was not taken (the scheduler stopped first). Writes pushed together
    /// are written together, in one batch (one call of [`Ledger::write_batch`]) when they
    /// fit in one.
    pub fn push_marks(&self, writes: Vec<LedgerWrite>) -> oneshot::Receiver<()> {
        let (taken, receiver) = oneshot::channel();
        let mut pending = self.lock();
        let first = pending.front + pending.writes.len() as u64;
        pending.writes.extend(writes);
        let last = (pending.front + pending.writes.len() as u64).saturating_sub(1);
        pending.marks.push_back((first.min(last), last, taken));
        drop(pending);
        self.wake.notify_one();
        receiver
    }

    /// Waits while the buffer holds its capacity or more (the ledger is down, or slower
    /// than the fleet), or until `cancel` fires: the engine claims no trigger whose
    /// record could not be kept. Logged once per spell and counted in
    /// [`LEDGER_BACKPRESSURE_TOTAL`].
    pub async fn room(&self, cancel: &CancellationToken) {
        let mut written_to = self.written_to.subscribe();
        loop {
            {
                let mut pending = self.lock();
                let queued = pending.writes.len();
                if queued < self.capacity {
                    if std::mem::take(&mut pending.holding) {
                        tracing::info!(queued, "the ledger caught up: claiming again");
                    }
                    return;
                }
                if !std::mem::replace(&mut pending.holding, true) {
                    if self.count_metrics {
                        counter!(LEDGER_BACKPRESSURE_TOTAL).increment(1);
                    }
                    tracing::warn!(
                        queued,
                        capacity = self.capacity,
                        "the ledger is behind: holding back new claims until it takes the records waiting \
                         (back-pressure: no record is dropped; triggers due meanwhile run late or by the misfire \
                         policy)"
                    );
                }
            }
            tokio::select! {
                changed = written_to.changed() => if changed.is_err() { return },
                () = cancel.cancelled() => return,
            }
        }
    }

    /// Saves a job's state: at once, unless an earlier state of the job is still waiting
    /// (it is merged with it then); a failed write is kept and tried again later.
    pub async fn save_state(&self, job: &Arc<str>, state: JobState) {
        {
            let mut pending = self.lock();
            if let Some(waiting) = pending.states.get(job) {
                if let Some(merged) = merge_job_state(Some(waiting), &state) {
                    pending.states.insert(job.clone(), merged);
                }
                return;
            }
        }
        if let Err(e) = self.store.save_state(job, &state).await {
            tracing::warn!(job = %job, trigger = %state.last_trigger, "{e}; the state is kept to be written later");
            self.queue_state(job, state);
        }
    }

    /// Queues a job's state for the writer (merged with one still waiting), without
    /// writing it here: for states noted by the thousand, which must not each wait on
    /// the store.
    pub fn queue_state(&self, job: &Arc<str>, state: JobState) {
        let mut pending = self.lock();
        let merged = match pending.states.get(job) {
            Some(waiting) => merge_job_state(Some(waiting), &state),
            None => Some(state),
        };
        if let Some(merged) = merged {
            pending.states.insert(job.clone(), merged);
        }
        drop(pending);
        self.wake.notify_one();
    }

    /// How many ledger writes and job states wait to be written.
    pub fn len(&self) -> (usize, usize) {
        let pending = self.lock();
        (pending.writes.len(), pending.states.len())
    }

    /// Writes what is buffered, in order, until `stop` fires and nothing is left, or
    /// [`FLUSH_TIMEOUT`] after `stop` fired; then reports what could not be written.
    pub async fn deliver(self: Arc<Self>, clock: Arc<dyn Clock>, stop: CancellationToken) {
        let mut retry = RETRY_MIN;
        let mut flush_by = None;
        loop {
            let woken = self.wake.notified();
            let wrote = self.write_some().await;
            let (writes, states) = self.len();
            if stop.is_cancelled() {
                let deadline = *flush_by.get_or_insert_with(|| later(clock.now(), FLUSH_TIMEOUT));
                if writes + states == 0 || clock.now() >= deadline {
                    if writes + states > 0 {
                        tracing::error!(
                            records = writes,
                            job_states = states,
                            "stopping with writes the backends did not take: they are lost"
                        );
                    }
                    return;
                }
            }
            if !wrote {
                let deadline = later(clock.now(), retry);
                retry = (retry * 2).min(RETRY_MAX);
                let limit = flush_by.map_or(deadline, |by| deadline.min(by));
                tokio::select! {
                    () = clock.sleep_until(limit) => {}
                    () = stop.cancelled(), if flush_by.is_none() => {}
                }
                continue;
            }
            retry = RETRY_MIN;
            if writes + states > 0 {
                continue;
            }
            tokio::select! {
                () = woken => {}
                () = stop.cancelled(), if flush_by.is_none() => {}
            }
        }
    }

    /// One try: the waiting job states, then a batch of ledger writes. `false` if a
    /// backend failed.
    async fn write_some(&self) -> bool {
        let states: Vec<(Arc<str>, JobState)> =
            self.lock().states.iter().map(|(job, state)| (job.clone(), state.clone())).collect();
        for (job, state) in states {
            if let Err(e) = self.store.save_state(&job, &state).await {
                self.failed(&format!("job state of {job}: {e}"), e.kind());
                return false;
            }
            let mut pending = self.lock();
            // A newer state that arrived meanwhile stays to be written.
            if pending.states.get(&job) == Some(&state) {
                pending.states.remove(&job);
            }
        }
        let (first, batch): (u64, Vec<LedgerWrite>) = {
            let pending = self.lock();
            let take = pending.batch_len();
            (pending.front, pending.writes.iter().take(take).cloned().collect())
        };
        if batch.is_empty() {
            self.recovered();
            return true;
        }
        let result = self.ledger.write_batch(&batch).await;
        let written = result.as_ref().map_or_else(|e| e.written, |()| batch.len());
        {
            let mut pending = self.lock();
            debug_assert_eq!(pending.front, first, "only this task takes writes from the front");
            let remove = written.min(pending.writes.len());
            pending.writes.drain(..remove);
            pending.front += remove as u64;
            while pending.marks.front().is_some_and(|(_, last, _)| *last < pending.front) {
                if let Some((_, _, taken)) = pending.marks.pop_front() {
                    // The run may have given up waiting: nothing to tell then.
                    let _ = taken.send(());
                }
            }
            if self.count_metrics {
                gauge!(LEDGER_QUEUED_WRITES).set(pending.writes.len() as f64);
            }
            self.written_to.send_replace(pending.front);
        }
        match result {
            Ok(()) => {
                self.recovered();
                true
            }
            Err(e) => {
                self.failed(&e.to_string(), e.error.kind());
                false
            }
        }
    }

    /// Whether the last try to write failed: an outage of the ledger or the store is
    /// going on.
    pub fn is_failing(&self) -> bool {
        self.lock().failing
    }

    /// A write failed with `error`, of `kind`: counted in
    /// [`BACKEND_ERRORS_TOTAL`] (`backend="state"`), and logged once per outage.
    fn failed(&self, error: &str, kind: BackendErrorKind) {
        if self.count_metrics {
            counter!(BACKEND_ERRORS_TOTAL, "backend" => "state", "kind" => kind.as_str()).increment(1);
        }
        let mut pending = self.lock();
        if !pending.failing {
            pending.failing = true;
            tracing::warn!(
                records = pending.writes.len(),
                job_states = pending.states.len(),
                "{error}; buffering the run records and job states until the backend takes them"
            );
        }
    }

    fn recovered(&self) {
        let mut pending = self.lock();
        if std::mem::take(&mut pending.failing) {
            tracing::info!("the backends are back: every buffered record and job state was written");
        }
    }
}

impl Pending {
    /// How many writes from the front the next batch takes: at most
    /// [`MAX_WRITES_PER_BATCH`], and not part of a group pushed together that the batch
    /// could not hold whole (unless the group is the batch's first write: larger than a
    /// batch, it goes in several).
    fn batch_len(&self) -> usize {
        let most = self.writes.len().min(MAX_WRITES_PER_BATCH);
        let end = self.front + most as u64;
        let cut =
            self.marks.iter().find(|(first, last, _)| *first > self.front && *first < end && *last >= end);
        cut.map_or(most, |(first, _, _)| (first - self.front) as usize)
    }
}

impl RecordSink for Outbox {
    fn update(&self, record: RunRecord) {
        self.push(LedgerWrite::Update(record));
    }
}
