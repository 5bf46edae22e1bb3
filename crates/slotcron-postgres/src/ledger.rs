use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use slotcron::ledger::{LedgerError, Prune, PruneSchedule};
use slotcron::{Ledger, LedgerQuery, Outcome, Retention, RunRecord};
use tokio_postgres::types::ToSql;

use crate::PostgresDatabase;
use crate::codec::{self, BoxError};

/// A [`Ledger`] in PostgreSQL, shared by every replica. It prunes as it appends: every
/// [`prune_every`](PostgresLedger::prune_every) appends it applies its [`Retention`] as
/// [`PruneSchedule`] says, so the table stays bounded without a timer.
///
/// Instants and durations are kept to the microsecond.
#[derive(Debug)]
pub struct PostgresLedger {
    database: PostgresDatabase,
    retention: Retention,
    prune: PruneSchedule,
    insert: String,
    prune_by_age: String,
    prune_job: String,
}

const COLUMNS: &str = "job, trigger_at, instance, outcome, fencing_token, started_at, duration_us, error";

impl PostgresLedger {
    /// The ledger in `database`'s schema, keeping what `retention` says.
    pub fn new(database: PostgresDatabase, retention: Retention) -> Self {
        Self {
            insert: database.sql(&format!(
                "INSERT INTO {{schema}}.run_record ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
            )),
            prune_by_age: database.sql("DELETE FROM {schema}.run_record WHERE trigger_at < $1"),
            prune_job: database.sql(
                "DELETE FROM {schema}.run_record WHERE id IN (
                    SELECT id FROM {schema}.run_record WHERE job = $1
                    ORDER BY trigger_at DESC, started_at DESC OFFSET $2)",
            ),
            database,
            retention,
            prune: PruneSchedule::new(retention, PruneSchedule::DEFAULT_EVERY),
        }
    }

    /// Prunes every `appends` appends of this process (at least 1; default
    /// [`PruneSchedule::DEFAULT_EVERY`]).
    #[must_use]
    pub fn prune_every(mut self, appends: u64) -> Self {
        self.prune = PruneSchedule::new(self.retention, appends);
        self
    }

    /// Carries out one pruning; the number of records deleted.
    async fn run_prune(&self, prune: &Prune) -> Result<u64, BoxError> {
        let mut deleted = 0;
        if let Some(cutoff) = prune.older_than {
            deleted += self.database.execute(&self.prune_by_age, &[&codec::timestamptz(cutoff)?]).await?;
        }
        if let Some(keep) = prune.keep_per_job {
            let keep = i64::try_from(keep).unwrap_or(i64::MAX);
            for job in &prune.jobs {
                deleted += self.database.execute(&self.prune_job, &[&&**job, &keep]).await?;
            }
        }
        Ok(deleted)
    }
}

#[async_trait]
impl Ledger for PostgresLedger {
    async fn append(&self, record: &RunRecord) -> Result<(), LedgerError> {
        let trigger = codec::timestamptz(record.trigger).map_err(LedgerError)?;
        let started = codec::timestamptz(record.started).map_err(LedgerError)?;
        // The token's 64 bits: tokens above i64::MAX read back unchanged.
        let token = record.fencing_token.map(|token| token as i64);
        let duration = i64::try_from(record.duration.as_micros()).unwrap_or(i64::MAX);
        let params: [&(dyn ToSql + Sync); 8] = [
            &&*record.job,
            &trigger,
            &&*record.instance,
            &record.outcome.as_str(),
            &token,
            &started,
            &duration,
            &record.error,
        ];
        self.database.execute(&self.insert, &params).await.map_err(|e| LedgerError(e.into()))?;
        if let Some(due) = self.prune.on_append(record) {
            // The record is stored; a failed pruning is retried at the next one.
            match self.run_prune(&due).await {
                Ok(deleted) => tracing::debug!(url = self.database.url(), deleted, "ledger pruned"),
                Err(e) => tracing::warn!(url = self.database.url(), "ledger pruning failed: {e}"),
            }
        }
        Ok(())
    }

    async fn query(&self, query: &LedgerQuery) -> Result<Vec<RunRecord>, LedgerError> {
        let since = query.since.map(codec::timestamptz).transpose().map_err(LedgerError)?;
        let until = query.until.map(codec::timestamptz).transpose().map_err(LedgerError)?;
        let outcome = query.outcome.map(Outcome::as_str);
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let mut conditions = Vec::new();
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::new();
        let filters: [(&str, Option<&(dyn ToSql + Sync)>); 4] = [
            ("job =", query.job.as_ref().map(|job| job as &(dyn ToSql + Sync))),
            ("trigger_at >=", since.as_ref().map(|since| since as &(dyn ToSql + Sync))),
            ("trigger_at <", until.as_ref().map(|until| until as &(dyn ToSql + Sync))),
            ("outcome =", outcome.as_ref().map(|outcome| outcome as &(dyn ToSql + Sync))),
        ];
        for (condition, param) in filters {
            if let Some(param) = param {
                params.push(param);
                conditions.push(format!("{condition} ${}", params.len()));
            }
        }
        params.push(&limit);
        let filter = if conditions.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", conditions.join(" AND "))
        };
        // One statement text per combination of filters, so each is prepared once and
        // uses the right index.
        let sql = self.database.sql(&format!(
            "SELECT {COLUMNS} FROM {{schema}}.run_record{filter} \
             ORDER BY trigger_at DESC, started_at DESC LIMIT ${}",
            params.len()
        ));
        let rows = self.database.query(&sql, &params).await.map_err(|e| LedgerError(e.into()))?;
        rows.iter()
            .map(decode)
            .collect::<Result<_, _>>()
            .map_err(|e| LedgerError(format!("{}: run_record: {e}", self.database.url()).into()))
    }
}

fn decode(row: &tokio_postgres::Row) -> Result<RunRecord, BoxError> {
    let outcome = row.try_get::<_, &str>(3)?.parse::<Outcome>()?;
    Ok(RunRecord {
        job: row.try_get::<_, &str>(0)?.into(),
        trigger: codec::instant(row.try_get::<_, SystemTime>(1)?)?,
        instance: row.try_get::<_, &str>(2)?.into(),
        outcome,
        fencing_token: row.try_get::<_, Option<i64>>(4)?.map(|token| token as u64),
        started: codec::instant(row.try_get::<_, SystemTime>(5)?)?,
        duration: Duration::from_micros(u64::try_from(row.try_get::<_, i64>(6)?)?),
        // Not stored by this schema version: one attempt for a run.
        attempts: u32::from(outcome.ran()),
        error: row.try_get(7)?,
    })
}
