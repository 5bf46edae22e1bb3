use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::Mutex;

use foldhash::fast::FixedState;

use async_trait::async_trait;

use super::{Ledger, LedgerError, LedgerQuery, RunRecord, same_run};

/// A bounded in-memory ledger: the newest `capacity` records. The library's default.
///
/// An update finds its run's record through an index (the run's key, [`same_run`], to its
/// place), not by a scan: a burst's `running` records and their ends cost the same
/// whether the ledger holds ten records or its capacity.
#[derive(Debug)]
pub struct MemoryLedger {
    capacity: usize,
    records: Mutex<Records>,
}

/// The records held and where each run's newest record is.
#[derive(Debug, Default)]
struct Records {
    held: VecDeque<RunRecord>,
    /// How many records were dropped from the front since the first: the place of
    /// `held[i]` is `dropped + i`.
    dropped: u64,
    /// A run's key's hash ([`run_hash`]) to the place of its newest record. Two runs whose
    /// keys share a hash share an entry: an update that finds another run's record there
    /// looks for its own by a scan.
    index: HashMap<u64, u64, FixedState>,
}

/// The hash of a record's run key: job, trigger, instance and start ([`same_run`]), by a
/// fast hash (foldhash's): the index is a process's own, never shared or stored.
fn run_hash(record: &RunRecord) -> u64 {
    FixedState::default().hash_one((&*record.job, record.trigger, &*record.instance, record.started))
}

impl Records {
    /// Appends `record`, dropping the oldest when `capacity` records are held.
    fn push(&mut self, record: RunRecord, capacity: usize) {
        if self.held.len() == capacity
            && let Some(oldest) = self.held.pop_front()
        {
            let hash = run_hash(&oldest);
            if self.index.get(&hash) == Some(&self.dropped) {
                self.index.remove(&hash);
            }
            self.dropped += 1;
        } else if self.held.len() == self.held.capacity() {
            // Grow by doubling, but never past the capacity.
            let more = self.held.len().max(16).min(capacity - self.held.len());
            self.held.reserve_exact(more);
        }
        self.index.insert(run_hash(&record), self.dropped + self.held.len() as u64);
        self.held.push_back(record);
    }

    /// The newest record of `record`'s run, if held.
    fn find(&mut self, record: &RunRecord) -> Option<&mut RunRecord> {
        let indexed = self.index.get(&run_hash(record)).map(|place| (place - self.dropped) as usize);
        let at = match indexed {
            Some(at) if self.held.get(at).is_some_and(|held| same_run(held, record)) => Some(at),
            _ => self.held.iter().rposition(|held| same_run(held, record)),
        }?;
        self.held.get_mut(at)
    }
}

impl MemoryLedger {
    /// The default capacity, in records.
    pub const DEFAULT_CAPACITY: usize = 10_000;

    /// Keeps the newest `capacity` records (at least one).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        let held = VecDeque::with_capacity(capacity.min(1024));
        Self { capacity, records: Mutex::new(Records { held, ..Records::default() }) }
    }

    /// Every record held, oldest appended first.
    pub fn records(&self) -> Vec<RunRecord> {
        self.lock().held.iter().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Records> {
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
        self.lock().push(record.clone(), self.capacity);
        Ok(())
    }

    async fn update(&self, record: &RunRecord) -> Result<(), LedgerError> {
        let mut records = self.lock();
        match records.find(record) {
            Some(stored) => *stored = super::record::ended_after_presumed_lost(stored, record),
            None => records.push(record.clone(), self.capacity),
        }
        Ok(())
    }

    async fn query(&self, query: &LedgerQuery) -> Result<Vec<RunRecord>, LedgerError> {
        let mut found: Vec<RunRecord> =
            self.lock().held.iter().filter(|r| query.matches(r)).cloned().collect();
        found.sort_by(|a, b| b.trigger.cmp(&a.trigger).then(b.started.cmp(&a.started)));
        found.truncate(query.limit);
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::ledger::{Cause, Outcome};

    fn running(job: &str, at: &str) -> RunRecord {
        RunRecord {
            job: Arc::from(job),
            trigger: at.parse().unwrap(),
            instance: Arc::from("test"),
            cause: Cause::Scheduled,
            attempts: 1,
            outcome: Outcome::Running,
            fencing_token: None,
            started: at.parse().unwrap(),
            duration: Duration::ZERO,
            error: None,
            process: None,
        }
    }

    fn ended(record: &RunRecord) -> RunRecord {
        RunRecord { outcome: Outcome::Succeeded, duration: Duration::from_secs(1), ..record.clone() }
    }

    fn outcomes(ledger: &MemoryLedger) -> Vec<(String, Outcome)> {
        ledger.records().into_iter().map(|r| (r.job.to_string(), r.outcome)).collect()
    }

    #[tokio::test]
    async fn an_update_ends_its_runs_record_in_place_and_one_dropped_is_appended_again() {
        let ledger = MemoryLedger::new(3);
        let [a, b, c, d] = ["a", "b", "c", "d"].map(|job| running(job, "2024-01-01T00:00:00Z"));
        for record in [&a, &b, &c] {
            ledger.append(record).await.unwrap();
        }
        ledger.update(&ended(&b)).await.unwrap();
        assert_eq!(
            outcomes(&ledger),
            [
                ("a".into(), Outcome::Running),
                ("b".into(), Outcome::Succeeded),
                ("c".into(), Outcome::Running)
            ]
        );
        ledger.append(&d).await.unwrap();
        ledger.update(&ended(&c)).await.unwrap();
        ledger.update(&ended(&a)).await.unwrap();
        assert_eq!(
            outcomes(&ledger),
            [
                ("c".into(), Outcome::Succeeded),
                ("d".into(), Outcome::Running),
                ("a".into(), Outcome::Succeeded)
            ],
            "a was dropped (capacity 3): its end is appended, and b, the oldest, goes"
        );
    }

    #[tokio::test]
    async fn an_update_of_a_run_with_two_records_ends_the_newer() {
        let ledger = MemoryLedger::new(10);
        let a = running("a", "2024-01-01T00:00:00Z");
        ledger.append(&a).await.unwrap();
        ledger.append(&a).await.unwrap();
        ledger.update(&ended(&a)).await.unwrap();
        assert_eq!(outcomes(&ledger), [("a".into(), Outcome::Running), ("a".into(), Outcome::Succeeded)]);
    }
}
