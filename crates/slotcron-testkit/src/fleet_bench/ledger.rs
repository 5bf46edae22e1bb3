//! [`Timed`]: the ledger the fleet bench's replicas write to, the in-memory ledger they
//! would have by default, with its batches of writes timed ([`Stages`]).

use std::sync::Arc;

use async_trait::async_trait;
use jiff::Timestamp;
use slotcron::{
    Ledger, LedgerBatchError, LedgerError, LedgerQuery, LedgerWrite, MemoryLedger, Outcome, RunRecord,
};

use super::stages::{Stage, Stages};

/// A [`MemoryLedger`] whose batches of writes are timed: the `running` records of a
/// burst's start (each run's start mark in the ledger) and the records of its runs' end.
pub(crate) struct Timed {
    inner: MemoryLedger,
    stages: Arc<Stages>,
}

impl Timed {
    pub(crate) fn new(stages: Arc<Stages>) -> Self {
        Self { inner: MemoryLedger::default(), stages }
    }
}

/// The stage of a write: a run's start (its `running` record appended) or any other
/// record (an end, a skip).
fn stage_of(write: &LedgerWrite) -> Stage {
    match write {
        LedgerWrite::Append(record) if record.outcome == Outcome::Running => Stage::RunningRecords,
        _ => Stage::EndRecords,
    }
}

#[async_trait]
impl Ledger for Timed {
    async fn append(&self, record: &RunRecord) -> Result<(), LedgerError> {
        self.inner.append(record).await
    }

    async fn update(&self, record: &RunRecord) -> Result<(), LedgerError> {
        self.inner.update(record).await
    }

    async fn write_batch(&self, writes: &[LedgerWrite]) -> Result<(), LedgerBatchError> {
        let sent = Timestamp::now();
        let written = self.inner.write_batch(writes).await;
        let key = |write: &LedgerWrite| (stage_of(write), write.record().trigger);
        for group in writes.chunk_by(|a, b| key(a) == key(b)) {
            let (stage, instant) = key(&group[0]);
            self.stages.note(stage, instant, sent, group.len());
        }
        written
    }

    async fn query(&self, query: &LedgerQuery) -> Result<Vec<RunRecord>, LedgerError> {
        self.inner.query(query).await
    }

    async fn prune(&self, now: Timestamp) -> Result<u64, LedgerError> {
        self.inner.prune(now).await
    }
}
