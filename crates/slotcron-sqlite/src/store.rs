use std::collections::HashMap;

use async_trait::async_trait;
use rusqlite::OptionalExtension;
use slotcron::{
    Controls, DEFINITION_CHANGES_KEPT, DefinitionChange, JobDefinition, JobState, Outcome, Store, StoreError,
};

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

/// [`slotcron::merge_job_state`]'s rules as one upsert: an older trigger changes only
/// the last success and failure, the same trigger without an outcome (or with a lost
/// claim's) keeps the stored one, `one_shot_done` stays set, the last success and
/// failure never move backwards (SQLite's two-argument `max` is NULL if either is).
const SAVE_STATE: &str = "
INSERT INTO job_state (job, last_trigger_us, last_outcome, one_shot_done, last_success_us, last_failure_us)
VALUES (?1, ?2, ?3, ?4, ?5, ?6)
ON CONFLICT (job) DO UPDATE SET
    last_outcome = CASE
        WHEN excluded.last_trigger_us < last_trigger_us THEN last_outcome
        WHEN excluded.last_trigger_us = last_trigger_us
            AND (excluded.last_outcome IS NULL OR excluded.last_outcome = 'skipped-lost')
        THEN last_outcome ELSE excluded.last_outcome END,
    one_shot_done = one_shot_done OR (excluded.one_shot_done AND excluded.last_trigger_us >= last_trigger_us),
    last_trigger_us = max(last_trigger_us, excluded.last_trigger_us),
    last_success_us = coalesce(max(last_success_us, excluded.last_success_us), last_success_us, excluded.last_success_us),
    last_failure_us = coalesce(max(last_failure_us, excluded.last_failure_us), last_failure_us, excluded.last_failure_us)";

/// Every job's state; a file older than schema version 6 (read by a reader) has no last
/// success or failure.
const LOAD_STATES: &str = "SELECT job, last_trigger_us, last_outcome, one_shot_done, last_success_us, last_failure_us FROM job_state";
const LOAD_STATES_BEFORE_V6: &str =
    "SELECT job, last_trigger_us, last_outcome, one_shot_done, NULL, NULL FROM job_state";

/// Stores a definition (job, JSON), replacing the one of the same name.
const SAVE_DEFINITION: &str = "INSERT INTO job_definition (job, definition) VALUES (?1, ?2)
    ON CONFLICT (job) DO UPDATE SET definition = excluded.definition";
/// Deletes a job's definition.
const DELETE_DEFINITION: &str = "DELETE FROM job_definition WHERE job = ?1";
/// Keeps only the newest ?2 changes of the job ?1.
const PRUNE_CHANGES: &str = "DELETE FROM job_definition_change WHERE job = ?1 AND id NOT IN
    (SELECT id FROM job_definition_change WHERE job = ?1 ORDER BY id DESC LIMIT ?2)";
/// The newest ?2 changes, of the job ?1 or (NULL) of all.
const LOAD_CHANGES: &str =
    "SELECT change FROM job_definition_change WHERE ?1 IS NULL OR job = ?1 ORDER BY id DESC LIMIT ?2";

/// A `job_state` row: job, last trigger, outcome, done, last success, last failure.
type StateRow = (String, i64, Option<String>, bool, Option<i64>, Option<i64>);

#[async_trait]
impl Store for SqliteStore {
    async fn load_states(&self) -> Result<HashMap<String, JobState>, StoreError> {
        let sql = if self.database.version() >= 6 { LOAD_STATES } else { LOAD_STATES_BEFORE_V6 };
        let rows = self
            .database
            .call(move |c| {
                let mut statement = c.prepare_cached(sql)?;
                let rows = statement.query_map([], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?))
                })?;
                Ok(rows.collect::<Result<Vec<StateRow>, _>>()?)
            })
            .await
            .map_err(StoreError::new)?;
        let state = |(job, trigger, outcome, done, success, failure): StateRow| {
            let state = JobState {
                last_trigger: codec::instant(trigger)?,
                last_outcome: outcome.map(|name| Outcome::from_name(&name)),
                one_shot_done: done,
                last_success: success.map(codec::instant).transpose()?,
                last_failure: failure.map(codec::instant).transpose()?,
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
            state.last_success.map(codec::micros),
            state.last_failure.map(codec::micros),
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
                c.prepare_cached(SAVE_DEFINITION)?.execute((job, json))?;
                Ok(())
            })
            .await
            .map_err(StoreError::new)
    }

    async fn delete_definition(&self, job: &str) -> Result<bool, StoreError> {
        let job = job.to_owned();
        self.database
            .call(move |c| Ok(c.prepare_cached(DELETE_DEFINITION)?.execute([job])? > 0))
            .await
            .map_err(StoreError::new)
    }

    async fn change_definition(
        &self,
        change: DefinitionChange,
    ) -> Result<Option<DefinitionChange>, StoreError> {
        let url = self.database.url().to_owned();
        self.database
            .call(move |c| {
                // Inside the batch's transaction or on its own: both or neither.
                let savepoint = c.savepoint()?;
                let old: Option<String> = savepoint
                    .prepare_cached("SELECT definition FROM job_definition WHERE job = ?1")?
                    .query_row([&change.job], |row| row.get(0))
                    .optional()?;
                let old = old
                    .map(|json| serde_json::from_str(&json))
                    .transpose()
                    .map_err(|e| format!("{url}: definition of job {:?}: {e}", change.job))?;
                let Some(kept) = change.replacing(old) else { return Ok(None) };
                match &kept.new {
                    Some(new) => savepoint
                        .prepare_cached(SAVE_DEFINITION)?
                        .execute((&kept.job, serde_json::to_string(new)?))?,
                    None => savepoint.prepare_cached(DELETE_DEFINITION)?.execute([&kept.job])?,
                };
                savepoint
                    .prepare_cached("INSERT INTO job_definition_change (job, change) VALUES (?1, ?2)")?
                    .execute((&kept.job, serde_json::to_string(&kept)?))?;
                let keep = i64::try_from(DEFINITION_CHANGES_KEPT).unwrap_or(i64::MAX);
                savepoint.prepare_cached(PRUNE_CHANGES)?.execute((&kept.job, keep))?;
                savepoint.commit()?;
                Ok(Some(kept))
            })
            .await
            .map_err(StoreError::new)
    }

    async fn definition_changes(
        &self,
        job: Option<&str>,
        limit: usize,
    ) -> Result<Vec<DefinitionChange>, StoreError> {
        let job = job.map(str::to_owned);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self
            .database
            .call(move |c| {
                let mut statement = c.prepare_cached(LOAD_CHANGES)?;
                let rows = statement.query_map((job, limit), |row| row.get::<_, String>(0))?;
                Ok(rows.collect::<Result<Vec<String>, _>>()?)
            })
            .await
            .map_err(StoreError::new)?;
        rows.iter()
            .map(|json| {
                serde_json::from_str(json).map_err(|e| {
                    StoreError::invalid_data(format!(
                        "{}: a change of a job definition: {e}",
                        self.database.url()
                    ))
                })
            })
            .collect()
    }

    fn controls(&self) -> Option<&dyn Controls> {
        Some(&self.controls)
    }
}
