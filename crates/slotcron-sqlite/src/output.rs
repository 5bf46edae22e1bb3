//! Run output in the SQLite file, beside the run records.

use async_trait::async_trait;
use slotcron::jiff::Timestamp;
use slotcron::{LedgerError, OutputStore, RunOutput};

use crate::SqliteDatabase;
use crate::codec;

/// An [`OutputStore`] in a SQLite file: table `run_output`, whose rows a database
/// trigger deletes with the run record they belong to, so output is bounded by the
/// ledger's retention.
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

#[async_trait]
impl OutputStore for SqliteOutputs {
    async fn save_output(&self, output: &RunOutput) -> Result<(), LedgerError> {
        let row = (
            output.job.to_string(),
            codec::micros(output.trigger),
            output.instance.to_string(),
            output.output.clone(),
            output.truncated,
        );
        self.database
            .call(move |c| {
                c.prepare_cached(
                    "INSERT OR REPLACE INTO run_output (job, trigger_us, instance, output, truncated)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )?
                .execute(row)?;
                Ok(())
            })
            .await
            .map_err(LedgerError::new)
    }

    async fn output(&self, job: &str, trigger: Timestamp) -> Result<Vec<RunOutput>, LedgerError> {
        let (name, micros) = (job.to_owned(), codec::micros(trigger));
        let rows = self
            .database
            .call(move |c| {
                let mut statement = c.prepare_cached(
                    "SELECT instance, output, truncated FROM run_output
                     WHERE job = ?1 AND trigger_us = ?2 ORDER BY instance",
                )?;
                let rows = statement
                    .query_map((name, micros), |row| {
                        Ok((row.get::<_, String>(0)?, row.get(1)?, row.get(2)?))
                    })?
                    .collect::<rusqlite::Result<Vec<(String, Vec<u8>, bool)>>>()?;
                Ok(rows)
            })
            .await
            .map_err(LedgerError::new)?;
        let job: std::sync::Arc<str> = job.into();
        Ok(rows
            .into_iter()
            .map(|(instance, output, truncated)| RunOutput {
                job: job.clone(),
                trigger,
                instance: instance.into(),
                output,
                truncated,
            })
            .collect())
    }
}
