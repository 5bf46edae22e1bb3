//! Run output in PostgreSQL, beside the run records.

use async_trait::async_trait;
use slotcron::jiff::Timestamp;
use slotcron::{LedgerError, OutputStore, RunOutput};

use crate::PostgresDatabase;
use crate::codec;

/// An [`OutputStore`] in PostgreSQL: table `run_output`, whose rows a database trigger
/// deletes with the run record they belong to, so output is bounded by the ledger's
/// retention.
#[derive(Debug, Clone)]
pub struct PostgresOutputs {
    database: PostgresDatabase,
    upsert: String,
    select: String,
}

impl PostgresOutputs {
    /// The run output kept in `database`'s schema.
    pub fn new(database: PostgresDatabase) -> Self {
        Self {
            upsert: database.sql(
                "INSERT INTO {schema}.run_output (job, trigger_at, instance, output, truncated)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (job, trigger_at, instance)
                 DO UPDATE SET output = EXCLUDED.output, truncated = EXCLUDED.truncated",
            ),
            select: database.sql(
                "SELECT instance, output, truncated FROM {schema}.run_output
                 WHERE job = $1 AND trigger_at = $2 ORDER BY instance",
            ),
            database,
        }
    }
}

#[async_trait]
impl OutputStore for PostgresOutputs {
    async fn save_output(&self, output: &RunOutput) -> Result<(), LedgerError> {
        let trigger = codec::timestamptz(output.trigger).map_err(LedgerError::new)?;
        self.database
            .execute(
                &self.upsert,
                &[&&*output.job, &trigger, &&*output.instance, &output.output, &output.truncated],
            )
            .await
            .map_err(LedgerError::new)?;
        Ok(())
    }

    async fn output(&self, job: &str, trigger: Timestamp) -> Result<Vec<RunOutput>, LedgerError> {
        let at = codec::timestamptz(trigger).map_err(LedgerError::new)?;
        let rows = self.database.query(&self.select, &[&job, &at]).await.map_err(LedgerError::new)?;
        let job: std::sync::Arc<str> = job.into();
        rows.iter()
            .map(|row| {
                Ok(RunOutput {
                    job: job.clone(),
                    trigger,
                    instance: row.try_get::<_, String>(0).map_err(LedgerError::new)?.into(),
                    output: row.try_get(1).map_err(LedgerError::new)?,
                    truncated: row.try_get(2).map_err(LedgerError::new)?,
                })
            })
            .collect()
    }
}
