//! The ledger: the run history, one [`RunRecord`] per trigger per replica that saw it.

mod memory;
mod prune;
mod record;

pub use memory::MemoryLedger;
pub use prune::{Prune, PruneSchedule};
pub use record::{Outcome, RunRecord};

use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;

use crate::job::BoxError;

/// Where run records go. The engine appends one record per trigger it handled
/// (including skipped and missed triggers).
#[async_trait]
pub trait Ledger: Send + Sync + 'static {
    /// Appends one record.
    ///
    /// # Errors
    /// The backend failed; the engine logs a warning and goes on.
    async fn append(&self, record: &RunRecord) -> Result<(), LedgerError>;

    /// The records matching `query`, newest trigger first, at most `query.limit`.
    ///
    /// # Errors
    /// The backend failed.
    async fn query(&self, query: &LedgerQuery) -> Result<Vec<RunRecord>, LedgerError>;
}

/// A ledger query: every filter is optional.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerQuery {
    /// Only this job's records.
    pub job: Option<String>,
    /// Only triggers at or after this instant.
    pub since: Option<Timestamp>,
    /// Only triggers strictly before this instant.
    pub until: Option<Timestamp>,
    /// Only records with this outcome.
    pub outcome: Option<Outcome>,
    /// At most this many records.
    pub limit: usize,
}

impl Default for LedgerQuery {
    fn default() -> Self {
        Self { job: None, since: None, until: None, outcome: None, limit: Self::DEFAULT_LIMIT }
    }
}

impl LedgerQuery {
    /// The default limit of [`LedgerQuery::new`]: 100 records.
    pub const DEFAULT_LIMIT: usize = 100;

    /// A query for the newest [`Self::DEFAULT_LIMIT`] records of every job, any outcome;
    /// narrow it with the methods below:
    ///
    /// ```
    /// use slotcron::{LedgerQuery, Outcome};
    ///
    /// let query = LedgerQuery::new().job("backup").outcome(Outcome::Failed).limit(10);
    /// assert_eq!(query.job.as_deref(), Some("backup"));
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Only `job`'s records (default: every job's).
    pub fn job(mut self, job: impl Into<String>) -> Self {
        self.job = Some(job.into());
        self
    }

    /// Only triggers at or after `since` (default: no lower bound).
    pub fn since(mut self, since: Timestamp) -> Self {
        self.since = Some(since);
        self
    }

    /// Only triggers strictly before `until` (default: no upper bound).
    pub fn until(mut self, until: Timestamp) -> Self {
        self.until = Some(until);
        self
    }

    /// Only records with `outcome` (default: any).
    pub fn outcome(mut self, outcome: Outcome) -> Self {
        self.outcome = Some(outcome);
        self
    }

    /// At most `limit` records, the newest triggers (default [`Self::DEFAULT_LIMIT`]).
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Whether `record` passes the filters (not the limit).
    pub fn matches(&self, record: &RunRecord) -> bool {
        self.job.as_deref().is_none_or(|job| *record.job == *job)
            && self.since.is_none_or(|since| record.trigger >= since)
            && self.until.is_none_or(|until| record.trigger < until)
            && self.outcome.is_none_or(|outcome| record.outcome == outcome)
    }
}

/// How much history a durable ledger keeps; it prunes as it appends (see
/// [`PruneSchedule`]), so the database stays bounded without a timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Drop records whose trigger is older than this.
    pub max_age: Option<Duration>,
    /// Keep at most this many records per job (the newest triggers).
    pub max_records_per_job: Option<u64>,
}

impl Default for Retention {
    /// 30 days, and at most 10,000 records per job.
    fn default() -> Self {
        Self { max_age: Some(Duration::from_secs(30 * 86_400)), max_records_per_job: Some(10_000) }
    }
}

/// A ledger backend failure.
#[derive(Debug, thiserror::Error)]
#[error("ledger: {0}")]
pub struct LedgerError(#[source] pub BoxError);
