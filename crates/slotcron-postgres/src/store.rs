use std::collections::HashMap;
use std::time::SystemTime;

use async_trait::async_trait;
use slotcron::{
    Controls, DEFINITION_CHANGES_KEPT, DefinitionChange, JobDefinition, JobState, Outcome, Store, StoreError,
};

use crate::PostgresDatabase;
use crate::codec;
use crate::controls::PostgresControls;
use slotcron::BoxError;

/// A [`Store`] in PostgreSQL, shared by every replica: job state and job definitions
/// survive any process. Each operation is one statement (one round trip). Without a
/// coordinator, pauses and idempotency keys are kept in the schema's `job_pause` and
/// `manual_request` tables (the same the coordinator uses).
#[derive(Debug, Clone)]
pub struct PostgresStore {
    database: PostgresDatabase,
    sql: Sql,
    controls: PostgresControls,
}

#[derive(Debug, Clone)]
struct Sql {
    load_states: String,
    save_state: String,
    delete_state: String,
    load_definitions: String,
    save_definition: String,
    delete_definition: String,
    next_fencing_token: String,
    lock_definition: String,
    add_change: String,
    prune_changes: String,
    load_changes: String,
}

/// [`slotcron::merge_job_state`]'s rules as one atomic upsert: an older trigger
/// changes only the last success and failure, the same trigger without an outcome (or
/// with a lost claim's) keeps the stored one, `one_shot_done` stays set, the last success
/// and failure never move backwards (`GREATEST` ignores NULLs).
const SAVE_STATE: &str = "
INSERT INTO {schema}.job_state AS stored
    (job, last_trigger, last_outcome, one_shot_done, last_success, last_failure)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (job) DO UPDATE SET
    last_outcome = CASE
        WHEN EXCLUDED.last_trigger < stored.last_trigger THEN stored.last_outcome
        WHEN EXCLUDED.last_trigger = stored.last_trigger
            AND (EXCLUDED.last_outcome IS NULL OR EXCLUDED.last_outcome = 'skipped-lost')
        THEN stored.last_outcome ELSE EXCLUDED.last_outcome END,
    one_shot_done = stored.one_shot_done
        OR (EXCLUDED.one_shot_done AND EXCLUDED.last_trigger >= stored.last_trigger),
    last_trigger = GREATEST(stored.last_trigger, EXCLUDED.last_trigger),
    last_success = GREATEST(stored.last_success, EXCLUDED.last_success),
    last_failure = GREATEST(stored.last_failure, EXCLUDED.last_failure)";

/// Every job's state; a schema older than version 13 (read by a reader) has no last
/// success or failure.
const LOAD_STATES: &str = "SELECT job, last_trigger, last_outcome, one_shot_done, last_success, last_failure FROM {schema}.job_state";
const LOAD_STATES_BEFORE_V13: &str = "SELECT job, last_trigger, last_outcome, one_shot_done, \
    NULL::timestamptz, NULL::timestamptz FROM {schema}.job_state";

impl PostgresStore {
    /// The store in `database`'s schema.
    pub fn new(database: PostgresDatabase) -> Self {
        let sql = Sql {
            load_states: database.sql(if database.version() >= 13 {
                LOAD_STATES
            } else {
                LOAD_STATES_BEFORE_V13
            }),
            save_state: database.sql(SAVE_STATE),
            delete_state: database.sql("DELETE FROM {schema}.job_state WHERE job = $1"),
            load_definitions: database
                .sql("SELECT job, definition::text FROM {schema}.job_definition ORDER BY job"),
            save_definition: database.sql(
                "INSERT INTO {schema}.job_definition (job, definition) VALUES ($1, $2::text::jsonb)
                 ON CONFLICT (job) DO UPDATE SET definition = EXCLUDED.definition",
            ),
            delete_definition: database.sql("DELETE FROM {schema}.job_definition WHERE job = $1"),
            // The coordinator's counter: one sequence of tokens per job, whoever takes them.
            next_fencing_token: database.sql(
                "INSERT INTO {schema}.fencing AS counter (job, token) VALUES ($1, 1)
                 ON CONFLICT (job) DO UPDATE SET token = counter.token + 1 RETURNING token",
            ),
            // Changes of one job wait for each other, also where it has no row to lock yet.
            lock_definition: database.sql(
                "SELECT pg_advisory_xact_lock(hashtext('slotcron.job_definition'), hashtext($1)),
                        (SELECT definition::text FROM {schema}.job_definition WHERE job = $1)",
            ),
            add_change: database
                .sql("INSERT INTO {schema}.job_definition_change (job, change) VALUES ($1, $2)"),
            prune_changes: database.sql(
                "DELETE FROM {schema}.job_definition_change WHERE job = $1 AND id NOT IN
                 (SELECT id FROM {schema}.job_definition_change WHERE job = $1 ORDER BY id DESC LIMIT $2)",
            ),
            load_changes: database.sql(
                "SELECT change FROM {schema}.job_definition_change
                 WHERE $1::text IS NULL OR job = $1 ORDER BY id DESC LIMIT $2",
            ),
        };
        Self { controls: PostgresControls::new(database.clone()), database, sql }
    }

    fn corrupt(&self, what: String, e: BoxError) -> StoreError {
        StoreError::new(format!("{}: {what}: {e}", self.database.url()))
    }
}

#[async_trait]
impl Store for PostgresStore {
    async fn load_states(&self) -> Result<HashMap<String, JobState>, StoreError> {
        let rows = self.database.query(&self.sql.load_states, &[]).await.map_err(StoreError::new)?;
        rows.iter()
            .map(|row| {
                let job: String = row.get(0);
                let decode = || -> Result<JobState, BoxError> {
                    Ok(JobState {
                        last_trigger: codec::instant(row.get(1))?,
                        last_outcome: row.get::<_, Option<&str>>(2).map(Outcome::from_name),
                        one_shot_done: row.get(3),
                        last_success: row.get::<_, Option<SystemTime>>(4).map(codec::instant).transpose()?,
                        last_failure: row.get::<_, Option<SystemTime>>(5).map(codec::instant).transpose()?,
                    })
                };
                let state = decode().map_err(|e| self.corrupt(format!("state of job {job:?}"), e))?;
                Ok((job, state))
            })
            .collect()
    }

    async fn save_state(&self, job: &str, state: &JobState) -> Result<(), StoreError> {
        let trigger: SystemTime =
            codec::timestamptz(state.last_trigger).map_err(|e| self.corrupt(format!("job {job:?}"), e))?;
        let outcome = state.last_outcome.map(Outcome::as_str);
        let optional = |at: Option<slotcron::jiff::Timestamp>| at.map(codec::timestamptz).transpose();
        let (success, failure) = optional(state.last_success)
            .and_then(|success| Ok((success, optional(state.last_failure)?)))
            .map_err(|e| self.corrupt(format!("job {job:?}"), e))?;
        let done = &state.one_shot_done;
        self.database
            .execute(&self.sql.save_state, &[&job, &trigger, &outcome, done, &success, &failure])
            .await
            .map_err(StoreError::new)?;
        Ok(())
    }

    async fn next_fencing_token(&self, job: &str) -> Result<u64, StoreError> {
        let rows =
            self.database.query(&self.sql.next_fencing_token, &[&job]).await.map_err(StoreError::new)?;
        let token: i64 = rows
            .first()
            .ok_or_else(|| StoreError::new(format!("{}: no fencing token returned", self.database.url())))?
            .get(0);
        Ok(token as u64)
    }

    async fn delete_state(&self, job: &str) -> Result<bool, StoreError> {
        Ok(self.database.execute(&self.sql.delete_state, &[&job]).await.map_err(StoreError::new)? > 0)
    }

    async fn load_definitions(&self) -> Result<Vec<JobDefinition>, StoreError> {
        let rows = self.database.query(&self.sql.load_definitions, &[]).await.map_err(StoreError::new)?;
        rows.iter()
            .map(|row| {
                let job: &str = row.get(0);
                serde_json::from_str(row.get(1))
                    .map_err(|e| self.corrupt(format!("definition of job {job:?}"), e.into()))
            })
            .collect()
    }

    async fn save_definition(&self, definition: &JobDefinition) -> Result<(), StoreError> {
        let json = serde_json::to_string(definition).map_err(StoreError::new)?;
        self.database
            .execute(&self.sql.save_definition, &[&definition.name, &json])
            .await
            .map_err(StoreError::new)?;
        Ok(())
    }

    async fn delete_definition(&self, job: &str) -> Result<bool, StoreError> {
        Ok(self.database.execute(&self.sql.delete_definition, &[&job]).await.map_err(StoreError::new)? > 0)
    }

    async fn change_definition(
        &self,
        change: DefinitionChange,
    ) -> Result<Option<DefinitionChange>, StoreError> {
        let failed = |e: tokio_postgres::Error| StoreError::new(self.database.error(&e));
        let mut client = self.database.client().await.map_err(StoreError::new)?;
        let transaction = client.transaction().await.map_err(failed)?;
        let row = transaction.query_one(&self.sql.lock_definition, &[&change.job]).await.map_err(failed)?;
        let old = row
            .get::<_, Option<&str>>(1)
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| self.corrupt(format!("definition of job {:?}", change.job), e.into()))?;
        // Dropped without a commit: rolled back, nothing changed.
        let Some(kept) = change.replacing(old) else { return Ok(None) };
        match &kept.new {
            Some(new) => {
                let json = serde_json::to_string(new).map_err(StoreError::new)?;
                transaction.execute(&self.sql.save_definition, &[&kept.job, &json]).await
            }
            None => transaction.execute(&self.sql.delete_definition, &[&kept.job]).await,
        }
        .map_err(failed)?;
        let json = serde_json::to_string(&kept).map_err(StoreError::new)?;
        transaction.execute(&self.sql.add_change, &[&kept.job, &json]).await.map_err(failed)?;
        let keep = i64::try_from(DEFINITION_CHANGES_KEPT).unwrap_or(i64::MAX);
        transaction.execute(&self.sql.prune_changes, &[&kept.job, &keep]).await.map_err(failed)?;
        transaction.commit().await.map_err(failed)?;
        Ok(Some(kept))
    }

    async fn definition_changes(
        &self,
        job: Option<&str>,
        limit: usize,
    ) -> Result<Vec<DefinitionChange>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows =
            self.database.query(&self.sql.load_changes, &[&job, &limit]).await.map_err(StoreError::new)?;
        rows.iter()
            .map(|row| {
                serde_json::from_str(row.get(0))
                    .map_err(|e| self.corrupt("a change of a job definition".into(), e.into()))
            })
            .collect()
    }

    fn controls(&self) -> Option<&dyn Controls> {
        Some(&self.controls)
    }
}
