//! Run output in the SQLite file, beside the run records.

use std::time::Duration;

use async_trait::async_trait;
use slotcron::jiff::Timestamp;
use slotcron::{
    AttemptEnd, AttemptOutput, LedgerError, OutputStore, RunOutput, decode_chunks, encode_chunks,
};

use crate::SqliteDatabase;
use crate::codec;

/// The first schema version with each attempt's output (table `run_attempt_output`).
const ATTEMPTS_SINCE: i64 = 8;

/// An [`OutputStore`] in a SQLite file: table `run_attempt_output` (and `run_output`,
/// which older releases wrote, read as one attempt of unknown end), whose rows a
/// database trigger deletes with the run record they belong to, so output is bounded by
/// the ledger's retention.
#[derive(Debug, Clone)]
pub struct SqliteOutputs {
    database: SqliteDatabase,
}

impl SqliteOutputs {
    /// The run output kept in `database`.
    pub fn new(database: SqliteDatabase) -> Self {
        Self { database }
    }
}

/// One `run_attempt_output` row as read: the instance, then the attempt's columns.
type AttemptRow =
    (String, u32, Option<i64>, Option<i64>, Option<i32>, Option<String>, Option<String>, Vec<u8>, bool);

#[async_trait]
impl OutputStore for SqliteOutputs {
    async fn save_output(&self, output: &RunOutput) -> Result<(), LedgerError> {
        let key = (output.job.to_string(), codec::micros(output.trigger), output.instance.to_string());
        let rows: Vec<_> = output
            .attempts
            .iter()
            .map(|a| {
                let (exit, signal, error) = a.end.columns();
                let duration = a.duration.map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
                let end = (exit, signal.map(str::to_owned), error.map(str::to_owned));
                (
                    a.attempt,
                    a.started.map(codec::micros),
                    duration,
                    end,
                    encode_chunks(&a.chunks),
                    a.truncated,
                )
            })
            .collect();
        self.database
            .call(move |c| {
                // Each call runs in a savepoint of its batch's transaction: all or nothing.
                let mut insert = c.prepare_cached(
                    "INSERT OR REPLACE INTO run_attempt_output (job, trigger_us, instance, attempt, started_us,
                         duration_us, exit_code, signal, error, chunks, truncated)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                )?;
                for (attempt, started, duration, (exit, signal, error), chunks, truncated) in rows {
                    let (job, trigger, instance) = (&key.0, key.1, &key.2);
                    insert.execute(rusqlite::params![
                        job, trigger, instance, attempt, started, duration, exit, signal, error, chunks, truncated
                    ])?;
                }
                Ok(())
            })
            .await
            .map_err(LedgerError::new)
    }

    async fn output(&self, job: &str, trigger: Timestamp) -> Result<Vec<RunOutput>, LedgerError> {
        let (name, micros) = (job.to_owned(), codec::micros(trigger));
        let with_attempts = self.database.version() >= ATTEMPTS_SINCE;
        let (attempts, older) = self
            .database
            .call(move |c| {
                let mut attempts: Vec<AttemptRow> = Vec::new();
                if with_attempts {
                    let mut statement = c.prepare_cached(
                        "SELECT instance, attempt, started_us, duration_us, exit_code, signal, error, chunks,
                             truncated
                         FROM run_attempt_output WHERE job = ?1 AND trigger_us = ?2",
                    )?;
                    let rows = statement.query_map((&name, micros), |r| {
                        Ok((
                            r.get(0)?,
                            r.get(1)?,
                            r.get(2)?,
                            r.get(3)?,
                            r.get(4)?,
                            r.get(5)?,
                            r.get(6)?,
                            r.get(7)?,
                            r.get(8)?,
                        ))
                    })?;
                    attempts = rows.collect::<rusqlite::Result<_>>()?;
                }
                let mut statement = c.prepare_cached(
                    "SELECT instance, output, truncated FROM run_output WHERE job = ?1 AND trigger_us = ?2",
                )?;
                let older = statement
                    .query_map((&name, micros), |r| Ok((r.get::<_, String>(0)?, r.get(1)?, r.get(2)?)))?
                    .collect::<rusqlite::Result<Vec<(String, Vec<u8>, bool)>>>()?;
                Ok((attempts, older))
            })
            .await
            .map_err(LedgerError::new)?;
        let attempts = attempts.into_iter().map(attempt).collect::<Result<Vec<_>, _>>()?;
        let older = older
            .into_iter()
            .map(|(i, output, truncated)| (i, AttemptOutput::of_older_release(output, truncated)));
        Ok(RunOutput::from_rows(job, trigger, attempts, older))
    }
}

/// The attempt a `run_attempt_output` row holds, with its instance.
fn attempt(row: AttemptRow) -> Result<(String, AttemptOutput), LedgerError> {
    let (instance, attempt, started, duration, exit, signal, error, chunks, truncated) = row;
    let started = started.map(codec::instant).transpose().map_err(LedgerError::invalid_data)?;
    let duration = duration.map(|us| Duration::from_micros(us.max(0).unsigned_abs()));
    let output = AttemptOutput {
        attempt,
        started,
        duration,
        end: AttemptEnd::from_columns(exit, signal, error),
        chunks: decode_chunks(&chunks)?,
        truncated,
    };
    Ok((instance, output))
}
