//! The ledger: the run history, one [`RunRecord`] per trigger per replica that saw it.

mod memory;
mod name;
mod output;
mod prune;
mod record;

pub use memory::MemoryLedger;
pub use name::UnknownName;
pub use output::{
    AttemptEnd, AttemptOutput, MAX_OUTPUT_BYTES, MemoryOutputs, OutputChunk, OutputStore, OutputStream,
    RunOutput, decode_chunks, encode_chunks,
};
pub use prune::{Prune, PruneSchedule};
pub(crate) use record::lock;
pub use record::{Cause, LastRun, Outcome, RunProcess, RunRecord, UnknownOutcome, ended_after_presumed_lost};

use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;

/// Where run records go: one record per trigger per replica that handled it (including
/// skipped and missed triggers). A run's record is appended when it starts
/// ([`Outcome::Running`], the run's start mark: the engine starts the run only once the
/// ledger has taken it) and [updated](Ledger::update) when it ends, so a crash leaves a
/// `running` record that the stale sweep marks [`Outcome::Interrupted`].
///
/// The engine hands its writes to an outbox that writes them in order, in batches
/// ([`Ledger::write_batch`]), and keeps those that fail until the ledger takes them; it
/// never drops one (a full outbox holds back new claims instead).
#[async_trait]
pub trait Ledger: Send + Sync + 'static {
    /// Appends one record. A networked backend, whose write may take effect without its
    /// reply arriving (and is then written again), appends nothing if it holds a record
    /// of the same run already ([`same_run`]).
    ///
    /// # Errors
    /// The backend failed; the engine keeps the record and writes it again later.
    async fn append(&self, record: &RunRecord) -> Result<(), LedgerError>;

    /// Replaces the record of the same run ([`same_run`]: its `running` record, which
    /// this completes or adds to, e.g. its process) with `record` — keeping, in its
    /// error, that a stored `interrupted` was presumed ([`ended_after_presumed_lost`]) —
    /// or appends `record` if there is none. Written twice, it leaves the same one record.
    ///
    /// # Errors
    /// The backend failed; the engine keeps the record and writes it again later.
    async fn update(&self, record: &RunRecord) -> Result<(), LedgerError>;

    /// Carries out `writes` in order. The default makes one call each; a backend that can
    /// write several at once (one transaction) overrides it.
    ///
    /// # Errors
    /// The backend failed; [`LedgerBatchError::written`] says how many of `writes` (from the
    /// first) took effect.
    async fn write_batch(&self, writes: &[LedgerWrite]) -> Result<(), LedgerBatchError> {
        for (written, write) in writes.iter().enumerate() {
            let result = match write {
                LedgerWrite::Append(record) => self.append(record).await,
                LedgerWrite::Update(record) => self.update(record).await,
            };
            result.map_err(|error| LedgerBatchError { written, error })?;
        }
        Ok(())
    }

    /// The records matching `query`, newest trigger first, at most `query.limit`.
    ///
    /// # Errors
    /// The backend failed.
    async fn query(&self, query: &LedgerQuery) -> Result<Vec<RunRecord>, LedgerError>;

    /// Applies the ledger's [`Retention`] to every job now, `now` being the scheduler's
    /// clock: for a ledger that has had no appends for a while (a durable ledger prunes
    /// as it appends otherwise). The number of records dropped; the default, for a
    /// ledger without a retention, drops none.
    ///
    /// # Errors
    /// The backend failed; nothing is lost, the next pruning tries again.
    async fn prune(&self, now: Timestamp) -> Result<u64, LedgerError> {
        let _ = now;
        Ok(0)
    }
}

/// The most writes the engine hands [`Ledger::write_batch`] at once: a burst's start
/// marks go to the ledger a thousand at a time.
pub const MAX_WRITES_PER_BATCH: usize = 1_024;

/// One write to a ledger, as [`Ledger::write_batch`] takes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LedgerWrite {
    /// [`Ledger::append`].
    Append(RunRecord),
    /// [`Ledger::update`].
    Update(RunRecord),
}

impl LedgerWrite {
    /// The record written.
    pub fn record(&self) -> &RunRecord {
        match self {
            Self::Append(record) | Self::Update(record) => record,
        }
    }

    /// The record appended, if this is an append (what counts towards a
    /// [`PruneSchedule`]).
    pub fn appended(&self) -> Option<&RunRecord> {
        match self {
            Self::Append(record) => Some(record),
            Self::Update(_) => None,
        }
    }
}

/// A [`Ledger::write_batch`] that failed part way.
#[derive(Debug, thiserror::Error)]
#[error("{error} (after {written} write(s) of the batch)")]
pub struct LedgerBatchError {
    /// How many writes, from the first, took effect.
    pub written: usize,
    /// Why the next one failed.
    #[source]
    pub error: LedgerError,
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
    /// Only records of this scheduler instance.
    pub instance: Option<String>,
    /// At most this many records.
    pub limit: usize,
}

impl Default for LedgerQuery {
    fn default() -> Self {
        Self {
            job: None,
            since: None,
            until: None,
            outcome: None,
            instance: None,
            limit: Self::DEFAULT_LIMIT,
        }
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

    /// Only records of the scheduler instance `instance` (default: every instance's).
    pub fn instance(mut self, instance: impl Into<String>) -> Self {
        self.instance = Some(instance.into());
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
            && self.instance.as_deref().is_none_or(|instance| *record.instance == *instance)
    }
}

/// Whether two records are of the same run: the same job, trigger, instance and start
/// (the key [`Ledger::update`] finds a record by). A durable ledger compares the start at
/// the precision it keeps.
pub fn same_run(a: &RunRecord, b: &RunRecord) -> bool {
    a.trigger == b.trigger && a.started == b.started && a.job == b.job && a.instance == b.instance
}

/// How much history a durable ledger keeps; it prunes as it appends (see
/// [`PruneSchedule`]), so the database stays bounded without a timer, and when asked
/// ([`Ledger::prune`]), so a quiet one is pruned too.
///
/// Pruning never drops a job's newest success nor its newest failure
/// ([`Outcome::is_failure`]), however old, nor a `running` record (a run's start mark):
/// a job may keep up to two records beyond either limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Drop records whose trigger is older than this (measured on the scheduler's clock).
    pub max_age: Option<Duration>,
    /// Keep at most this many records per job (the newest triggers).
    pub max_records_per_job: Option<u64>,
}

impl Retention {
    /// The default [`Retention::max_age`]: 30 days.
    pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(30 * 86_400);
    /// The default [`Retention::max_records_per_job`]: 10,000 records.
    pub const DEFAULT_MAX_RECORDS_PER_JOB: u64 = 10_000;

    /// The pruning that applies this retention at `now` to `jobs` (every job a ledger
    /// holds, for a pruning of the whole ledger): the age cutoff `now - max_age` (none
    /// for an age too large to subtract) and the count limit.
    pub fn prune_at(&self, now: Timestamp, jobs: Vec<std::sync::Arc<str>>) -> Prune {
        Prune {
            older_than: self
                .max_age
                .and_then(|age| jiff::SignedDuration::try_from(age).ok())
                .and_then(|age| now.checked_sub(age).ok()),
            keep_per_job: self.max_records_per_job,
            jobs,
        }
    }
}

impl Default for Retention {
    /// [`Retention::DEFAULT_MAX_AGE`] and [`Retention::DEFAULT_MAX_RECORDS_PER_JOB`].
    fn default() -> Self {
        Self {
            max_age: Some(Self::DEFAULT_MAX_AGE),
            max_records_per_job: Some(Self::DEFAULT_MAX_RECORDS_PER_JOB),
        }
    }
}

crate::error::backend_error!(
    /// A ledger backend failure: its [`kind`](LedgerError::kind) and the backend's error.
    LedgerError,
    "ledger"
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::BackendErrorKind;

    #[test]
    fn a_backend_error_says_its_kind_and_the_backends_message() {
        let down = LedgerError::new("connection refused");
        assert_eq!(
            (down.kind(), down.to_string()),
            (BackendErrorKind::Unavailable, "ledger: connection refused".into())
        );
        let bad = crate::store::StoreError::invalid_data("job_state: not a state");
        assert_eq!(
            (bad.kind(), bad.to_string()),
            (BackendErrorKind::InvalidData, "store: job_state: not a state".into())
        );
    }
}
