//! Run output in PostgreSQL, beside the run records.

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use slotcron::jiff::Timestamp;
use slotcron::{
    AttemptEnd, AttemptOutput, LedgerError, OutputStore, RunOutput, decode_chunks, encode_chunks,
};
use tokio_postgres::Row;

use crate::PostgresDatabase;
use crate::codec;

/// The first schema version with each attempt's output (table `run_attempt_output`).
const ATTEMPTS_SINCE: i32 = 16;

/// An [`OutputStore`] in PostgreSQL: table `run_attempt_output` (and `run_output`, which
/// older releases wrote, read as one attempt of unknown end), whose rows a database
/// trigger deletes with the run record they belong to, so output is bounded by the
/// ledger's retention.
#[derive(Debug, Clone)]
pub struct PostgresOutputs {
    database: PostgresDatabase,
    upsert: String,
    select: String,
    select_older: String,
}

impl PostgresOutputs {
    /// The run output kept in `database`'s schema.
    pub fn new(database: PostgresDatabase) -> Self {
        Self {
            upsert: database.sql(
                "INSERT INTO {schema}.run_attempt_output (job, trigger_at, instance, attempt, started_at,
                     duration_us, exit_code, signal, error, chunks, truncated)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                 ON CONFLICT (job, trigger_at, instance, attempt) DO UPDATE SET
                     started_at = EXCLUDED.started_at, duration_us = EXCLUDED.duration_us,
                     exit_code = EXCLUDED.exit_code, signal = EXCLUDED.signal, error = EXCLUDED.error,
                     chunks = EXCLUDED.chunks, truncated = EXCLUDED.truncated",
            ),
            select: database.sql(
                "SELECT instance, attempt, started_at, duration_us, exit_code, signal, error, chunks, truncated
                 FROM {schema}.run_attempt_output WHERE job = $1 AND trigger_at = $2",
            ),
            select_older: database.sql(
                "SELECT instance, output, truncated FROM {schema}.run_output WHERE job = $1 AND trigger_at = $2",
            ),
            database,
        }
    }
}

#[async_trait]
impl OutputStore for PostgresOutputs {
    async fn save_output(&self, output: &RunOutput) -> Result<(), LedgerError> {
        let trigger = codec::timestamptz(output.trigger).map_err(LedgerError::new)?;
        for attempt in &output.attempts {
            let started = attempt.started.map(codec::timestamptz).transpose().map_err(LedgerError::new)?;
            let duration = attempt.duration.map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
            let (exit, signal, error) = attempt.end.columns();
            self.database
                .execute(
                    &self.upsert,
                    &[
                        &&*output.job,
                        &trigger,
                        &&*output.instance,
                        &i64::from(attempt.attempt),
                        &started,
                        &duration,
                        &exit,
                        &signal,
                        &error,
                        &encode_chunks(&attempt.chunks),
                        &attempt.truncated,
                    ],
                )
                .await
                .map_err(LedgerError::new)?;
        }
        Ok(())
    }

    async fn output(&self, job: &str, trigger: Timestamp) -> Result<Vec<RunOutput>, LedgerError> {
        let at = codec::timestamptz(trigger).map_err(LedgerError::new)?;
        let attempts = match self.database.version() >= ATTEMPTS_SINCE {
            true => self.database.query(&self.select, &[&job, &at]).await.map_err(LedgerError::new)?,
            false => Vec::new(),
        };
        let attempts = attempts.iter().map(attempt).collect::<Result<Vec<_>, _>>()?;
        let older = self.database.query(&self.select_older, &[&job, &at]).await.map_err(LedgerError::new)?;
        let older = older
            .iter()
            .map(|row| {
                let instance: String = row.try_get(0).map_err(LedgerError::invalid_data)?;
                let output = row.try_get(1).map_err(LedgerError::invalid_data)?;
                let truncated = row.try_get(2).map_err(LedgerError::invalid_data)?;
                Ok((instance, AttemptOutput::of_older_release(output, truncated)))
            })
            .collect::<Result<Vec<_>, LedgerError>>()?;
        Ok(RunOutput::from_rows(job, trigger, attempts, older))
    }
}

/// The attempt a `run_attempt_output` row holds, with its instance.
fn attempt(row: &Row) -> Result<(String, AttemptOutput), LedgerError> {
    let bad = LedgerError::invalid_data;
    let number: i64 = row.try_get(1).map_err(bad)?;
    let started: Option<SystemTime> = row.try_get(2).map_err(bad)?;
    let duration: Option<i64> = row.try_get(3).map_err(bad)?;
    let chunks: Vec<u8> = row.try_get(7).map_err(bad)?;
    let output = AttemptOutput {
        attempt: u32::try_from(number)
            .map_err(|_| LedgerError::invalid_data(format!("run_attempt_output: attempt {number}")))?,
        started: started.map(codec::instant).transpose().map_err(LedgerError::invalid_data)?,
        duration: duration.map(|us| Duration::from_micros(us.max(0).unsigned_abs())),
        end: AttemptEnd::from_columns(
            row.try_get(4).map_err(bad)?,
            row.try_get(5).map_err(bad)?,
            row.try_get(6).map_err(bad)?,
        ),
        chunks: decode_chunks(&chunks)?,
        truncated: row.try_get(8).map_err(bad)?,
    };
    Ok((row.try_get(0).map_err(bad)?, output))
}
