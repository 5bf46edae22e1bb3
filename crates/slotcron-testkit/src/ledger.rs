//! A ledger that tells waiters when records arrive.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use jiff::Timestamp;
use slotcron::{Ledger, LedgerError, LedgerQuery, Outcome, RunRecord, same_run};
use tokio::sync::watch;

/// An unbounded in-memory ledger that counts finished records per `(job, trigger)` and
/// wakes [`WatchedLedger::changed`] waiters on every write.
#[derive(Debug)]
pub struct WatchedLedger {
    state: Mutex<State>,
    appended: watch::Sender<usize>,
}

#[derive(Debug, Default)]
struct State {
    records: Vec<RunRecord>,
    counts: HashMap<(Arc<str>, Timestamp), usize>,
}

impl Default for WatchedLedger {
    fn default() -> Self {
        Self { state: Mutex::default(), appended: watch::Sender::new(0) }
    }
}

impl WatchedLedger {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every record, in the order appended.
    pub fn records(&self) -> Vec<RunRecord> {
        self.lock().records.clone()
    }

    /// How many finished records (not [`Outcome::Running`]) there are for one trigger of
    /// one job.
    pub fn count(&self, job: &str, trigger: Timestamp) -> usize {
        let key: (Arc<str>, Timestamp) = (job.into(), trigger);
        self.lock().counts.get(&key).copied().unwrap_or(0)
    }

    /// Whether there is any record for one trigger of one job, a running one included.
    pub fn has_record(&self, job: &str, trigger: Timestamp) -> bool {
        self.lock().records.iter().any(|r| &*r.job == job && r.trigger == trigger)
    }

    /// A receiver that sees a change after every write.
    pub fn changed(&self) -> watch::Receiver<usize> {
        self.appended.subscribe()
    }
}

#[async_trait]
impl Ledger for WatchedLedger {
    async fn append(&self, record: &RunRecord) -> Result<(), LedgerError> {
        let len = {
            let mut state = self.lock();
            if record.outcome != Outcome::Running {
                *state.counts.entry((record.job.clone(), record.trigger)).or_default() += 1;
            }
            state.records.push(record.clone());
            state.records.len()
        };
        self.appended.send_replace(len);
        Ok(())
    }

    async fn update(&self, record: &RunRecord) -> Result<(), LedgerError> {
        let replaced = {
            let mut state = self.lock();
            let same = state.records.iter_mut().rev().find(|r| same_run(r, record));
            let was_running = same.as_ref().is_some_and(|r| r.outcome == Outcome::Running);
            let replaced = same.map(|same| *same = record.clone()).is_some();
            if replaced && was_running && record.outcome != Outcome::Running {
                *state.counts.entry((record.job.clone(), record.trigger)).or_default() += 1;
            }
            replaced
        };
        if replaced {
            self.appended.send_modify(|_| {});
            Ok(())
        } else {
            self.append(record).await
        }
    }

    async fn query(&self, query: &LedgerQuery) -> Result<Vec<RunRecord>, LedgerError> {
        let mut found: Vec<RunRecord> =
            self.lock().records.iter().filter(|r| query.matches(r)).cloned().collect();
        found.sort_by(|a, b| b.trigger.cmp(&a.trigger).then(b.started.cmp(&a.started)));
        found.truncate(query.limit);
        Ok(found)
    }
}
