use std::collections::HashMap;

use async_trait::async_trait;
use slotcron::{Controls, JobDefinition, JobState, Outcome, Store, StoreError};

use crate::SqliteDatabase;
use crate::codec;
use crate::controls::SqliteControls;

/// A [`Store`] in a SQLite file: job state and job definitions survive the process, and
/// so do the pauses and idempotency keys of single-replica mode (tables `job_pause` and
/// `manual_request`; keys expire on this machine's clock).
#[derive(Debug, Clone)]
pub struct SqliteStore {
    database: SqliteDatabase,
    controls: SqliteControls,
}

impl SqliteStore {
    /// The store in `database`.
    pub fn new(database: SqliteDatabase) -> Self {
        Self { controls: SqliteControls { database: database.clone() }, database }
    }
}

/// [`slotcron::merge_job_state`]'s rules as one upsert: an older trigger changes
/// nothing, the same trigger without an outcome (or with a lost claim's) keeps the stored
/// one, `one_shot_done` stays set.
const SAVE_STATE: &str = "
INSERT INTO job_state (job, last_trigger_us, last_outcome, one_shot_done) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (job) DO UPDATE SET
    last_outcome = CASE
        WHEN excluded.last_trigger_us = last_trigger_us
            AND (excluded.last_outcome IS NULL OR excluded.last_outcome = 'skipped-lost')
        THEN last_outcome ELSE excluded.last_outcome END,
    one_shot_done = one_shot_done OR excluded.one_shot_done,
    last_trigger_us = excluded.last_trigger_us
WHERE excluded.last_trigger_us >= last_trigger_us";

#[async_trait]
impl Store for SqliteStore {
    async fn load_states(&self) -> Result<HashMap<String, JobState>, StoreError> {
        let rows = self
            .database
            .call(|c| {
                let mut statement = c.prepare_cached(
                    "SELECT job, last_trigger_us, last_outcome, one_shot_done FROM job_state",
                )?;
                let rows = statement.query_map([], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, i64>(1)?,
                        row.get::<_, Option<String>>(2)?,
                        row.get::<_, bool>(3)?,
                    ))
                })?;
                Ok(rows.collect::<Result<Vec<_>, _>>()?)
            })
            .await
            .map_err(StoreError::new)?;
        let state = |(job, trigger, outcome, done): (String, i64, Option<String>, bool)| {
            let state = JobState {
                last_trigger: codec::instant(trigger)?,
                last_outcome: outcome.map(|name| Outcome::from_name(&name)),
                one_shot_done: done,
            };
            Ok((job, state))
        };
        rows.into_iter()
            .map(state)
            .collect::<Result<_, slotcron::BoxError>>()
            .map_err(|e| StoreError::invalid_data(format!("{}: job_state: {e}", self.database.url())))
    }

    async fn save_state(&self, job: &str, state: &JobState) -> Result<(), StoreError> {
        let params = (
            job.to_owned(),
            codec::micros(state.last_trigger),
            state.last_outcome.map(|o| o.as_str()),
            state.one_shot_done,
        );
        self.database
            .call(move |c| {
                c.prepare_cached(SAVE_STATE)?.execute(params)?;
                Ok(())
            })
            .await
            .map_err(StoreError::new)
    }

    async fn next_fencing_token(&self, job: &str) -> Result<u64, StoreError> {
        let job = job.to_owned();
        let token = self
            .database
            .call(move |c| {
                let mut statement = c.prepare_cached(
                    "INSERT INTO fencing (job, token) VALUES (?1, 1)
                     ON CONFLICT (job) DO UPDATE SET token = token + 1 RETURNING token",
                )?;
                Ok(statement.query_row([&job], |row| row.get::<_, i64>(0))?)
            })
            .await
            .map_err(StoreError::new)?;
        Ok(token as u64)
    }

    async fn delete_state(&self, job: &str) -> Result<bool, StoreError> {
        let job = job.to_owned();
        self.database
            .call(move |c| Ok(c.prepare_cached("DELETE FROM job_state WHERE job = ?1")?.execute([job])? > 0))
            .await
            .map_err(StoreError::new)
    }

    async fn load_definitions(&self) -> Result<Vec<JobDefinition>, StoreError> {
        let rows = self
            .database
            .call(|c| {
                let mut statement =
                    c.prepare_cached("SELECT job, definition FROM job_definition ORDER BY job")?;
                let rows = statement.query_map([], |row| Ok((row.get::<_, String>(0)?, row.get(1)?)))?;
                Ok(rows.collect::<Result<Vec<(String, String)>, _>>()?)
            })
            .await
            .map_err(StoreError::new)?;
        rows.into_iter()
            .map(|(job, json)| {
                serde_json::from_str(&json).map_err(|e| {
                    StoreError::invalid_data(format!(
                        "{}: definition of job {job:?}: {e}",
                        self.database.url()
                    ))
                })
            })
            .collect()
    }

    async fn save_definition(&self, definition: &JobDefinition) -> Result<(), StoreError> {
        let json = serde_json::to_string(definition).map_err(StoreError::new)?;
        let job = definition.name.clone();
        self.database
            .call(move |c| {
                c.prepare_cached(
                    "INSERT INTO job_definition (job, definition) VALUES (?1, ?2)
                     ON CONFLICT (job) DO UPDATE SET definition = excluded.definition",
                )?
                .execute((job, json))?;
                Ok(())
            })
            .await
            .map_err(StoreError::new)
    }

    async fn delete_definition(&self, job: &str) -> Result<bool, StoreError> {
        let job = job.to_owned();
        self.database
            .call(move |c| {
                Ok(c.prepare_cached("DELETE FROM job_definition WHERE job = ?1")?.execute([job])? > 0)
            })
            .await
            .map_err(StoreError::new)
    }

    fn controls(&self) -> Option<&dyn Controls> {
        Some(&self.controls)
    }
}
