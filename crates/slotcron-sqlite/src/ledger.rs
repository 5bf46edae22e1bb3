use std::sync::{Arc, LazyLock};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::Connection;
use rusqlite::types::Value;
use slotcron::jiff::Timestamp;
use slotcron::{Cause, Ledger, LedgerQuery, Outcome, Retention, RunProcess, RunRecord};
use slotcron::{LedgerBatchError, LedgerError, LedgerWrite, Prune, PruneSchedule};

use crate::SqliteDatabase;
use crate::codec;
use slotcron::BoxError;

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

/// Inserts a record unless one of the same run (job, trigger, instance and start) is
/// stored.
const INSERT: &str = "INSERT INTO run_record
    (job, trigger_us, instance, outcome, fencing_token, started_us, duration_us, error,
     cause, attempts, process_host, process_id, process_start)
    SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13
    WHERE NOT EXISTS (SELECT 1 FROM run_record
                      WHERE job = ?1 AND trigger_us = ?2 AND instance = ?3 AND started_us = ?6)";

/// Replaces the newest record of the same run (job, trigger, instance and start).
/// A stored `interrupted` that the run's real end replaces stays in the error
/// ([`slotcron::ended_after_presumed_lost`]).
const UPDATE: &str = "UPDATE run_record SET
    outcome = ?4, fencing_token = ?5, duration_us = ?7,
    error = CASE WHEN outcome = 'interrupted' AND ?4 <> 'interrupted'
                 THEN coalesce(?8 || '; ', '') || 'presumed lost meanwhile: ' || coalesce(error, '')
                 WHEN outcome = ?4 AND substr(error, 1, length(coalesce(?8 || '; ', '') || 'presumed lost meanwhile: '))
                                       = coalesce(?8 || '; ', '') || 'presumed lost meanwhile: '
                 THEN error
                 ELSE ?8 END,
    cause = ?9, attempts = ?10, process_host = ?11, process_id = ?12, process_start = ?13
    WHERE id = (SELECT id FROM run_record
                WHERE job = ?1 AND trigger_us = ?2 AND instance = ?3 AND started_us = ?6
                ORDER BY id DESC LIMIT 1)";

const COLUMNS: &str = "job, trigger_us, instance, outcome, fencing_token, started_us, duration_us, error,
    cause, attempts, process_host, process_id, process_start";

/// The same columns in a file of schema version 1 (opened for reading only, so not
/// migrated): the columns of version 2 read as NULL.
const COLUMNS_V1: &str = "job, trigger_us, instance, outcome, fencing_token, started_us, duration_us, error,
    NULL, NULL, NULL, NULL, NULL";

/// The condition (on the columns of the `run_record` row being deleted) of a record that
/// pruning keeps whatever its age and rank: a `running` record (a run's start mark), and
/// the job's newest success and newest failure ([`Prune::kept_outcomes`]): a record of one
/// of those classes with no newer record (trigger, then start, then id) of its class.
static KEPT: LazyLock<String> = LazyLock::new(|| {
    let classes = kept_outcomes();
    format!(
        "outcome = 'running' OR (outcome IN ({classes}) AND NOT EXISTS (
            SELECT 1 FROM run_record AS newer
            WHERE newer.job = run_record.job AND newer.trigger_us >= run_record.trigger_us
                AND newer.outcome IN ({classes})
                AND (newer.outcome = 'succeeded') = (run_record.outcome = 'succeeded')
                AND (newer.trigger_us, newer.started_us, newer.id)
                    > (run_record.trigger_us, run_record.started_us, run_record.id)))"
    )
});

/// [`Prune::kept_outcomes`] as an SQL list.
fn kept_outcomes() -> String {
    Prune::kept_outcomes().map(|o| format!("'{o}'")).collect::<Vec<_>>().join(", ")
}

/// Deletes the records whose trigger is older than `?1`, but those [`KEPT`].
static PRUNE_BY_AGE: LazyLock<String> =
    LazyLock::new(|| format!("DELETE FROM run_record WHERE trigger_us < ?1 AND NOT ({})", *KEPT));

/// Deletes the records of job `?1` past its newest `?2`, but those [`KEPT`].
static PRUNE_JOB: LazyLock<String> = LazyLock::new(|| {
    format!(
        "DELETE FROM run_record WHERE id IN (
            SELECT id FROM run_record WHERE job = ?1
            ORDER BY trigger_us DESC, started_us DESC LIMIT -1 OFFSET ?2)
        AND NOT ({})",
        *KEPT
    )
});

/// Carries out one pruning in one savepoint (a transaction of its own, or part of the
/// batch it runs in); the number of records deleted.
fn prune(connection: &mut Connection, prune: &Prune) -> rusqlite::Result<usize> {
    let transaction = connection.savepoint()?;
    let mut deleted = 0;
    if let Some(cutoff) = prune.older_than {
        deleted += transaction.prepare_cached(&PRUNE_BY_AGE)?.execute([codec::micros(cutoff)])?;
    }
    if let Some(keep) = prune.keep_per_job {
        let keep = i64::try_from(keep).unwrap_or(i64::MAX);
        let mut statement = transaction.prepare_cached(&PRUNE_JOB)?;
        for job in &prune.jobs {
            deleted += statement.execute((&**job, keep))?;
        }
        drop(statement);
    }
    transaction.commit()?;
    Ok(deleted)
}

/// A record's row, owned (to cross to the connection's thread).
type Params = (
    String,
    i64,
    String,
    &'static str,
    Option<i64>,
    i64,
    i64,
    Option<String>,
    &'static str,
    i64,
    Option<String>,
    Option<i64>,
    Option<i64>,
);

fn params(record: &RunRecord) -> Params {
    let process = record.process.as_ref();
    (
        record.job.to_string(),
        codec::micros(record.trigger),
        record.instance.to_string(),
        record.outcome.as_str(),
        // The token's 64 bits: tokens above i64::MAX read back unchanged.
        record.fencing_token.map(|token| token as i64),
        codec::micros(record.started),
        i64::try_from(record.duration.as_micros()).unwrap_or(i64::MAX),
        record.error.clone(),
        record.cause.as_str(),
        i64::from(record.attempts),
        process.map(|p| p.host.to_string()),
        process.map(|p| i64::from(p.pid)),
        // The start time's 64 bits, as the token's.
        process.map(|p| p.start_time as i64),
    )
}

/// One write, ready for the connection's thread.
enum Write {
    Append(Params),
    Update(Params),
}

fn execute(c: &Connection, write: Write) -> rusqlite::Result<()> {
    match write {
        Write::Append(row) => {
            c.prepare_cached(INSERT)?.execute(row)?;
        }
        Write::Update(row) => {
            if c.prepare_cached(UPDATE)?.execute(row.clone())? == 0 {
                c.prepare_cached(INSERT)?.execute(row)?;
            }
        }
    }
    Ok(())
}

impl SqliteLedger {
    /// Carries out `writes` in one transaction, then the pruning due, if any.
    async fn write_all(&self, writes: &[LedgerWrite]) -> Result<(), LedgerError> {
        let rows: Vec<Write> = writes
            .iter()
            .map(|write| match write {
                LedgerWrite::Append(record) => Write::Append(params(record)),
                LedgerWrite::Update(record) => Write::Update(params(record)),
            })
            .collect();
        let due = self.prune.on_appends(writes.iter().filter_map(LedgerWrite::appended));
        let url = self.database.url().to_owned();
        self.database
            .call(move |c| {
                let transaction = c.savepoint()?;
                for row in rows {
                    execute(&transaction, row)?;
                }
                transaction.commit()?;
                if let Some(due) = due {
                    // The records are stored; a failed pruning is retried at the next one.
                    match prune(c, &due) {
                        Ok(deleted) => tracing::debug!(url, deleted, "ledger pruned"),
                        Err(e) => tracing::warn!(url, "ledger pruning failed: {e}"),
                    }
                }
                Ok(())
            })
            .await
            .map_err(LedgerError::new)
    }
}

#[async_trait]
impl Ledger for SqliteLedger {
    async fn append(&self, record: &RunRecord) -> Result<(), LedgerError> {
        self.write_all(&[LedgerWrite::Append(record.clone())]).await
    }

    async fn update(&self, record: &RunRecord) -> Result<(), LedgerError> {
        self.write_all(&[LedgerWrite::Update(record.clone())]).await
    }

    /// One transaction: all of `writes` or none.
    async fn write_batch(&self, writes: &[LedgerWrite]) -> Result<(), LedgerBatchError> {
        self.write_all(writes).await.map_err(|error| LedgerBatchError { written: 0, error })
    }

    /// Prunes every job the ledger holds, in one savepoint.
    async fn prune(&self, now: Timestamp) -> Result<u64, LedgerError> {
        let retention = self.retention;
        let deleted = self
            .database
            .call(move |c| {
                let jobs = c
                    .prepare_cached("SELECT DISTINCT job FROM run_record")?
                    .query_map([], |row| row.get::<_, String>(0))?
                    .map(|job| job.map(Arc::from))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(prune(c, &retention.prune_at(now, jobs))?)
            })
            .await
            .map_err(LedgerError::new)?;
        Ok(u64::try_from(deleted).unwrap_or(u64::MAX))
    }

    async fn query(&self, query: &LedgerQuery) -> Result<Vec<RunRecord>, LedgerError> {
        let (sql, params) = select(query, self.database.version());
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
                        cause: row.get(8)?,
                        attempts: row.get(9)?,
                        process_host: row.get(10)?,
                        process_id: row.get(11)?,
                        process_start: row.get(12)?,
                    })
                })?;
                Ok(rows.collect::<Result<Vec<_>, _>>()?)
            })
            .await
            .map_err(LedgerError::new)?;
        rows.into_iter()
            .map(Row::decode)
            .collect::<Result<_, _>>()
            .map_err(|e| LedgerError::invalid_data(format!("{}: run_record: {e}", self.database.url())))
    }
}

/// A `run_record` row as stored. Rows of schema version 1 have no cause, attempts or
/// process: they read as scheduled, with one attempt if the handler ran.
struct Row {
    job: String,
    trigger: i64,
    instance: String,
    outcome: String,
    fencing_token: Option<i64>,
    started: i64,
    duration: i64,
    error: Option<String>,
    cause: Option<String>,
    attempts: Option<i64>,
    process_host: Option<String>,
    process_id: Option<i64>,
    process_start: Option<i64>,
}

impl Row {
    fn decode(self) -> Result<RunRecord, BoxError> {
        let outcome = Outcome::from_name(&self.outcome);
        let process = match (self.process_host, self.process_id, self.process_start) {
            (Some(host), Some(pid), Some(start)) => {
                Some(RunProcess { host: host.into(), pid: u32::try_from(pid)?, start_time: start as u64 })
            }
            _ => None,
        };
        Ok(RunRecord {
            job: self.job.into(),
            trigger: codec::instant(self.trigger)?,
            instance: self.instance.into(),
            cause: self.cause.as_deref().map_or(Cause::Scheduled, Cause::from_name),
            attempts: match self.attempts {
                Some(attempts) => u32::try_from(attempts)?,
                None => u32::from(outcome.ran()),
            },
            outcome,
            fencing_token: self.fencing_token.map(|token| token as u64),
            started: codec::instant(self.started)?,
            duration: Duration::from_micros(u64::try_from(self.duration)?),
            error: self.error,
            process,
        })
    }
}

/// The statement and parameters of `query`: one statement text per combination of
/// filters, so each is prepared once and uses the right index.
fn select(query: &LedgerQuery, version: i64) -> (String, Vec<Value>) {
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
    if let Some(instance) = &query.instance {
        conditions.push("instance = ?");
        params.push(Value::Text(instance.clone()));
    }
    let filter =
        if conditions.is_empty() { String::new() } else { format!(" WHERE {}", conditions.join(" AND ")) };
    params.push(Value::Integer(i64::try_from(query.limit).unwrap_or(i64::MAX)));
    let columns = if version < 2 { COLUMNS_V1 } else { COLUMNS };
    let sql =
        format!("SELECT {columns} FROM run_record{filter} ORDER BY trigger_us DESC, started_us DESC LIMIT ?");
    (sql, params)
}
