use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rusqlite::types::Value;
use rusqlite::{Connection, TransactionBehavior};
use slotcron::ledger::LedgerError;
use slotcron::{Ledger, LedgerQuery, Retention, RunRecord};

use crate::SqliteDatabase;
use crate::codec::{self, BoxError};

/// A [`Ledger`] in a SQLite file. It prunes as it appends: every
/// [`prune_every`](SqliteLedger::prune_every) appends it applies its [`Retention`], so the
/// file stays bounded without a timer (SQLite reuses the freed pages).
///
/// Instants and durations are kept to the microsecond.
#[derive(Debug)]
pub struct SqliteLedger {
    database: SqliteDatabase,
    retention: Retention,
    prune_every: u64,
    pending: Mutex<Pending>,
}

/// What was appended since the last pruning.
#[derive(Debug, Default)]
struct Pending {
    appends: u64,
    jobs: HashSet<Arc<str>>,
}

/// One pruning: by age from `cutoff`, by count for `jobs`.
struct Prune {
    /// Records whose trigger is older than this (µs since the epoch) go.
    cutoff: Option<i64>,
    /// Each of these jobs keeps its newest `keep` records.
    jobs: Vec<Arc<str>>,
    keep: Option<u64>,
}

impl SqliteLedger {
    /// The default number of appends between two prunings.
    pub const DEFAULT_PRUNE_EVERY: u64 = 100;

    /// The ledger in `database`, keeping what `retention` says.
    pub fn new(database: SqliteDatabase, retention: Retention) -> Self {
        Self { database, retention, prune_every: Self::DEFAULT_PRUNE_EVERY, pending: Mutex::default() }
    }

    /// Prunes every `appends` appends (at least 1; default [`Self::DEFAULT_PRUNE_EVERY`]).
    /// A pruning drops, for every job, the records whose trigger is older than the
    /// appended record's start minus `max_age` (the scheduler's clock, not the host's),
    /// and keeps the newest `max_records_per_job` records of each job appended to since
    /// the previous pruning.
    #[must_use]
    pub fn prune_every(mut self, appends: u64) -> Self {
        self.prune_every = appends.max(1);
        self
    }

    /// Counts an append of `record`; the pruning that is due with it, if any.
    fn due(&self, record: &RunRecord) -> Option<Prune> {
        let Retention { max_age, max_records_per_job } = self.retention;
        if max_age.is_none() && max_records_per_job.is_none() {
            return None;
        }
        let mut pending = self.pending.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        pending.appends += 1;
        if max_records_per_job.is_some() {
            pending.jobs.insert(record.job.clone());
        }
        if pending.appends < self.prune_every {
            return None;
        }
        pending.appends = 0;
        let max_age = max_age.map(|age| i64::try_from(age.as_micros()).unwrap_or(i64::MAX));
        Some(Prune {
            cutoff: max_age.map(|age| codec::micros(record.started).saturating_sub(age)),
            jobs: pending.jobs.drain().collect(),
            keep: max_records_per_job,
        })
    }
}

const INSERT: &str = "INSERT INTO run_record
    (job, trigger_us, instance, outcome, fencing_token, started_us, duration_us, error)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

const COLUMNS: &str = "job, trigger_us, instance, outcome, fencing_token, started_us, duration_us, error";

impl Prune {
    fn run(&self, connection: &mut Connection) -> rusqlite::Result<usize> {
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut deleted = 0;
        if let Some(cutoff) = self.cutoff {
            deleted += transaction
                .prepare_cached("DELETE FROM run_record WHERE trigger_us < ?1")?
                .execute([cutoff])?;
        }
        if let Some(keep) = self.keep {
            let keep = i64::try_from(keep).unwrap_or(i64::MAX);
            let mut statement = transaction.prepare_cached(
                "DELETE FROM run_record WHERE id IN (
                    SELECT id FROM run_record WHERE job = ?1
                    ORDER BY trigger_us DESC, started_us DESC LIMIT -1 OFFSET ?2)",
            )?;
            for job in &self.jobs {
                deleted += statement.execute((&**job, keep))?;
            }
        }
        transaction.commit()?;
        Ok(deleted)
    }
}

#[async_trait]
impl Ledger for SqliteLedger {
    async fn append(&self, record: &RunRecord) -> Result<(), LedgerError> {
        let row = (
            record.job.to_string(),
            codec::micros(record.trigger),
            record.instance.to_string(),
            record.outcome.as_str(),
            record.fencing_token.map(codec::token_column).transpose().map_err(LedgerError)?,
            codec::micros(record.started),
            codec::duration_micros(record.duration).map_err(LedgerError)?,
            record.error.clone(),
        );
        let prune = self.due(record);
        let url = self.database.url().to_owned();
        self.database
            .call(move |c| {
                c.prepare_cached(INSERT)?.execute(row)?;
                if let Some(prune) = prune {
                    // The record is stored; a failed pruning is retried at the next one.
                    match prune.run(c) {
                        Ok(deleted) => tracing::debug!(url, deleted, "ledger pruned"),
                        Err(e) => tracing::warn!(url, "ledger pruning failed: {e}"),
                    }
                }
                Ok(())
            })
            .await
            .map_err(|e| LedgerError(e.into()))
    }

    async fn query(&self, query: &LedgerQuery) -> Result<Vec<RunRecord>, LedgerError> {
        let (sql, params) = select(query);
        let rows = self
            .database
            .call(move |c| {
                let mut statement = c.prepare_cached(&sql)?;
                let rows = statement.query_map(rusqlite::params_from_iter(params), |row| {
                    Ok(Row {
                        job: row.get(0)?,
                        trigger: row.get(1)?,
                        instance: row.get(2)?,
                        outcome: row.get(3)?,
                        fencing_token: row.get(4)?,
                        started: row.get(5)?,
                        duration: row.get(6)?,
                        error: row.get(7)?,
                    })
                })?;
                Ok(rows.collect::<Result<Vec<_>, _>>()?)
            })
            .await
            .map_err(|e| LedgerError(e.into()))?;
        rows.into_iter()
            .map(Row::decode)
            .collect::<Result<_, _>>()
            .map_err(|e| LedgerError(format!("{}: run_record: {e}", self.database.url()).into()))
    }
}

/// A `run_record` row as stored.
struct Row {
    job: String,
    trigger: i64,
    instance: String,
    outcome: String,
    fencing_token: Option<i64>,
    started: i64,
    duration: i64,
    error: Option<String>,
}

impl Row {
    fn decode(self) -> Result<RunRecord, BoxError> {
        Ok(RunRecord {
            job: self.job.into(),
            trigger: codec::instant(self.trigger)?,
            instance: self.instance.into(),
            outcome: codec::outcome(&self.outcome)?,
            fencing_token: self.fencing_token.map(codec::token).transpose()?,
            started: codec::instant(self.started)?,
            duration: codec::duration(self.duration)?,
            error: self.error,
        })
    }
}

/// The statement and parameters of `query`: one statement text per combination of
/// filters, so each is prepared once and uses the right index.
fn select(query: &LedgerQuery) -> (String, Vec<Value>) {
    let mut conditions = Vec::new();
    let mut params = Vec::new();
    if let Some(job) = &query.job {
        conditions.push("job = ?");
        params.push(Value::Text(job.clone()));
    }
    if let Some(since) = query.since {
        conditions.push("trigger_us >= ?");
        params.push(Value::Integer(codec::micros(since)));
    }
    if let Some(until) = query.until {
        conditions.push("trigger_us < ?");
        params.push(Value::Integer(codec::micros(until)));
    }
    if let Some(outcome) = query.outcome {
        conditions.push("outcome = ?");
        params.push(Value::Text(outcome.as_str().to_owned()));
    }
    let filter =
        if conditions.is_empty() { String::new() } else { format!(" WHERE {}", conditions.join(" AND ")) };
    params.push(Value::Integer(i64::try_from(query.limit).unwrap_or(i64::MAX)));
    let sql =
        format!("SELECT {COLUMNS} FROM run_record{filter} ORDER BY trigger_us DESC, started_us DESC LIMIT ?");
    (sql, params)
}
