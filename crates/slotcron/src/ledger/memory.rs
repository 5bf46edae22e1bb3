use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;

use super::{Ledger, LedgerError, LedgerQuery, RunRecord, same_run};

/// A bounded in-memory ledger: the newest `capacity` records. The library's default.
#[derive(Debug)]
pub struct MemoryLedger {
    capacity: usize,
    records: Mutex<VecDeque<RunRecord>>,
}

impl MemoryLedger {
    /// The default capacity, in records.
    pub const DEFAULT_CAPACITY: usize = 10_000;

    /// Keeps the newest `capacity` records (at least one).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self { capacity, records: Mutex::new(VecDeque::with_capacity(capacity.min(1024))) }
    }

    /// Every record held, oldest appended first.
    pub fn records(&self) -> Vec<RunRecord> {
        self.lock().iter().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<RunRecord>> {
        self.records.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Default for MemoryLedger {
    fn default() -> Self {
        Self::new(Self::DEFAULT_CAPACITY)
    }
}

#[async_trait]
impl Ledger for MemoryLedger {
    async fn append(&self, record: &RunRecord) -> Result<(), LedgerError> {
        let mut records = self.lock();
        if records.len() == self.capacity {
            records.pop_front();
        } else if records.len() == records.capacity() {
            // Grow by doubling, but never past the capacity.
            let more = records.len().max(16).min(self.capacity - records.len());
            records.reserve_exact(more);
        }
        records.push_back(record.clone());
        Ok(())
    }

    async fn update(&self, record: &RunRecord) -> Result<(), LedgerError> {
        let found = self
            .lock()
            .iter_mut()
            .rev()
            .find(|r| same_run(r, record))
            .map(|stored| *stored = super::record::ended_after_presumed_lost(stored, record));
        match found {
            Some(()) => Ok(()),
            None => self.append(record).await,
        }
    }

    async fn query(&self, query: &LedgerQuery) -> Result<Vec<RunRecord>, LedgerError> {
        let mut found: Vec<RunRecord> = self.lock().iter().filter(|r| query.matches(r)).cloned().collect();
        found.sort_by(|a, b| b.trigger.cmp(&a.trigger).then(b.started.cmp(&a.started)));
        found.truncate(query.limit);
        Ok(found)
    }
}
