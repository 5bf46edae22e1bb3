use std::time::Duration;

use async_trait::async_trait;
use rusqlite::types::Value;
use rusqlite::{Connection, TransactionBehavior};
use slotcron::ledger::{LedgerError, Prune, PruneSchedule};
use slotcron::{Ledger, LedgerQuery, Outcome, Retention, RunRecord};

use crate::SqliteDatabase;
use crate::codec::{self, BoxError};

/// A [`Ledger`] in a SQLite file. It prunes as it appends: every
/// [`prune_every`](SqliteLedger::prune_every) appends it applies its [`Retention`] as
/// [`PruneSchedule`] says, so the file stays bounded without a timer (SQLite reuses the
/// freed pages).
///
/// Instants and durations are kept to the microsecond.
#[derive(Debug)]
pub struct SqliteLedger {
    database: SqliteDatabase,
    retention: Retention,
    prune: PruneSchedule,
}

impl SqliteLedger {
    /// The ledger in `database`, keeping what `retention` says.
    pub fn new(database: SqliteDatabase, retention: Retention) -> Self {
        Self { database, retention, prune: PruneSchedule::new(retention, PruneSchedule::DEFAULT_EVERY) }
    }

    /// Prunes every `appends` appends (at least 1; default [`PruneSchedule::DEFAULT_EVERY`]).
    #[must_use]
    pub fn prune_every(mut self, appends: u64) -> Self {
        self.prune = PruneSchedule::new(self.retention, appends);
        self
    }
}

const INSERT: &str = "INSERT INTO run_record
    (job, trigger_us, instance, outcome, fencing_token, started_us, duration_us, error)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

const COLUMNS: &str = "job, trigger_us, instance, outcome, fencing_token, started_us, duration_us, error";

/// Carries out one pruning in one transaction; the number of records deleted.
fn prune(connection: &mut Connection, prune: &Prune) -> rusqlite::Result<usize> {
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut deleted = 0;
    if let Some(cutoff) = prune.older_than {
        deleted += transaction
            .prepare_cached("DELETE FROM run_record WHERE trigger_us < ?1")?
            .execute([codec::micros(cutoff)])?;
    }
    if let Some(keep) = prune.keep_per_job {
        let keep = i64::try_from(keep).unwrap_or(i64::MAX);
        let mut statement = transaction.prepare_cached(
            "DELETE FROM run_record WHERE id IN (
                SELECT id FROM run_record WHERE job = ?1
                ORDER BY trigger_us DESC, started_us DESC LIMIT -1 OFFSET ?2)",
        )?;
        for job in &prune.jobs {
            deleted += statement.execute((&**job, keep))?;
        }
    }
    transaction.commit()?;
    Ok(deleted)
}

#[async_trait]
impl Ledger for SqliteLedger {
    async fn append(&self, record: &RunRecord) -> Result<(), LedgerError> {
        let row = (
            record.job.to_string(),
            codec::micros(record.trigger),
            record.instance.to_string(),
            record.outcome.as_str(),
            // The token's 64 bits: tokens above i64::MAX read back unchanged.
            record.fencing_token.map(|token| token as i64),
            codec::micros(record.started),
            i64::try_from(record.duration.as_micros()).unwrap_or(i64::MAX),
            record.error.clone(),
        );
        let due = self.prune.on_append(record);
        let url = self.database.url().to_owned();
        self.database
            .call(move |c| {
                c.prepare_cached(INSERT)?.execute(row)?;
                if let Some(due) = due {
                    // The record is stored; a failed pruning is retried at the next one.
                    match prune(c, &due) {
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
        let outcome = self.outcome.parse::<Outcome>()?;
        Ok(RunRecord {
            job: self.job.into(),
            trigger: codec::instant(self.trigger)?,
            instance: self.instance.into(),
            outcome,
            fencing_token: self.fencing_token.map(|token| token as u64),
            started: codec::instant(self.started)?,
            duration: Duration::from_micros(u64::try_from(self.duration)?),
            // Not stored by this schema version: one attempt for a run.
            attempts: u32::from(outcome.ran()),
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
