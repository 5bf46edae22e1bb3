use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use slotcron::{Cause, Ledger, LedgerQuery, Outcome, Retention, RunProcess, RunRecord};
use slotcron::{LedgerError, Prune, PruneSchedule};
use tokio_postgres::types::ToSql;

use crate::PostgresDatabase;
use crate::codec;
use slotcron::BoxError;

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
    update: String,
    prune_by_age: String,
    prune_job: String,
}

const COLUMNS: &str = "job, trigger_at, instance, outcome, fencing_token, started_at, duration_us, error, \
    cause, attempts, process_host, process_id, process_start";

/// The same columns in a schema of version 1 or 2 (opened for reading only, so not
/// migrated): the columns of version 3 read as NULL.
const COLUMNS_V2: &str = "job, trigger_at, instance, outcome, fencing_token, started_at, duration_us, error, \
    NULL::text, NULL::bigint, NULL::text, NULL::bigint, NULL::bigint";

/// Inserts a record unless one of the same run (job, trigger, instance and start) is
/// stored: a write whose reply was lost, written again, adds nothing.
const INSERT: &str = "INSERT INTO {schema}.run_record (job, trigger_at, instance, outcome, fencing_token,
    started_at, duration_us, error, cause, attempts, process_host, process_id, process_start)
SELECT $1::text, $2::timestamptz, $3::text, $4::text, $5::bigint, $6::timestamptz, $7::bigint,
    $8::text, $9::text, $10::bigint, $11::text, $12::bigint, $13::bigint
WHERE NOT EXISTS (SELECT FROM {schema}.run_record
                  WHERE job = $1 AND trigger_at = $2 AND instance = $3 AND started_at = $6)";

/// Replaces the newest record of the same run (job, trigger, instance and start), or
/// else inserts the record: one statement, which written twice leaves one record.
const UPDATE: &str = "WITH target AS (
    SELECT id FROM {schema}.run_record
    WHERE job = $1 AND trigger_at = $2 AND instance = $3 AND started_at = $6
    ORDER BY id DESC LIMIT 1
), updated AS (
    UPDATE {schema}.run_record AS r SET
        outcome = $4, fencing_token = $5, duration_us = $7, error = $8,
        cause = $9, attempts = $10, process_host = $11, process_id = $12, process_start = $13
    FROM target WHERE r.id = target.id
    RETURNING r.id
)
INSERT INTO {schema}.run_record (job, trigger_at, instance, outcome, fencing_token, started_at,
    duration_us, error, cause, attempts, process_host, process_id, process_start)
SELECT $1::text, $2::timestamptz, $3::text, $4::text, $5::bigint, $6::timestamptz, $7::bigint,
    $8::text, $9::text, $10::bigint, $11::text, $12::bigint, $13::bigint
WHERE NOT EXISTS (SELECT FROM updated)";

impl PostgresLedger {
    /// The ledger in `database`'s schema, keeping what `retention` says.
    pub fn new(database: PostgresDatabase, retention: Retention) -> Self {
        Self {
            insert: database.sql(INSERT),
            update: database.sql(UPDATE),
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

impl PostgresLedger {
    /// Runs `sql` (the insert or the update) with `record`'s 13 columns.
    async fn write(&self, sql: &str, record: &RunRecord) -> Result<(), LedgerError> {
        let trigger = codec::timestamptz(record.trigger).map_err(LedgerError)?;
        let started = codec::timestamptz(record.started).map_err(LedgerError)?;
        // The token's 64 bits: tokens above i64::MAX read back unchanged.
        let token = record.fencing_token.map(|token| token as i64);
        let duration = i64::try_from(record.duration.as_micros()).unwrap_or(i64::MAX);
        let attempts = i64::from(record.attempts);
        let process = record.process.as_ref();
        let host = process.map(|p| &*p.host);
        let pid = process.map(|p| i64::from(p.pid));
        // The start time's 64 bits, as the token's.
        let start = process.map(|p| p.start_time as i64);
        let params: [&(dyn ToSql + Sync); 13] = [
            &&*record.job,
            &trigger,
            &&*record.instance,
            &record.outcome.as_str(),
            &token,
            &started,
            &duration,
            &record.error,
            &record.cause.as_str(),
            &attempts,
            &host,
            &pid,
            &start,
        ];
        self.database.execute(sql, &params).await.map_err(|e| LedgerError(e.into()))?;
        Ok(())
    }
}

#[async_trait]
impl Ledger for PostgresLedger {
    async fn append(&self, record: &RunRecord) -> Result<(), LedgerError> {
        self.write(&self.insert, record).await?;
        if let Some(due) = self.prune.on_append(record) {
            // The record is stored; a failed pruning is retried at the next one.
            match self.run_prune(&due).await {
                Ok(deleted) => tracing::debug!(url = self.database.url(), deleted, "ledger pruned"),
                Err(e) => tracing::warn!(url = self.database.url(), "ledger pruning failed: {e}"),
            }
        }
        Ok(())
    }

    async fn update(&self, record: &RunRecord) -> Result<(), LedgerError> {
        self.write(&self.update, record).await
    }

    async fn heartbeat(&self, instance: &str) -> Result<(), LedgerError> {
        let sql = self.database.sql(
            "INSERT INTO {schema}.instance_heartbeat (instance, beat_at) VALUES ($1, now())
             ON CONFLICT (instance) DO UPDATE SET beat_at = EXCLUDED.beat_at",
        );
        self.database.execute(&sql, &[&instance]).await.map_err(|e| LedgerError(e.into()))?;
        Ok(())
    }

    async fn lapsed_instances(&self, older_than: Duration) -> Result<Vec<String>, LedgerError> {
        let sql = self.database.sql(
            "SELECT DISTINCT r.instance FROM {schema}.run_record r
             JOIN {schema}.instance_heartbeat h ON h.instance = r.instance
             WHERE r.outcome = 'running' AND h.beat_at < now() - $1::bigint * interval '1 microsecond'
             ORDER BY r.instance",
        );
        let micros = i64::try_from(older_than.as_micros()).unwrap_or(i64::MAX);
        let rows = self.database.query(&sql, &[&micros]).await.map_err(|e| LedgerError(e.into()))?;
        rows.iter().map(|row| row.try_get::<_, String>(0).map_err(|e| LedgerError(e.into()))).collect()
    }

    async fn query(&self, query: &LedgerQuery) -> Result<Vec<RunRecord>, LedgerError> {
        let since = query.since.map(codec::timestamptz).transpose().map_err(LedgerError)?;
        let until = query.until.map(codec::timestamptz).transpose().map_err(LedgerError)?;
        let outcome = query.outcome.map(Outcome::as_str);
        let instance = query.instance.as_ref();
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let mut conditions = Vec::new();
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::new();
        let filters: [(&str, Option<&(dyn ToSql + Sync)>); 5] = [
            ("job =", query.job.as_ref().map(|job| job as &(dyn ToSql + Sync))),
            ("trigger_at >=", since.as_ref().map(|since| since as &(dyn ToSql + Sync))),
            ("trigger_at <", until.as_ref().map(|until| until as &(dyn ToSql + Sync))),
            ("outcome =", outcome.as_ref().map(|outcome| outcome as &(dyn ToSql + Sync))),
            ("instance =", instance.map(|instance| instance as &(dyn ToSql + Sync))),
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
        let columns = if self.database.version() < 3 { COLUMNS_V2 } else { COLUMNS };
        let sql = self.database.sql(&format!(
            "SELECT {columns} FROM {{schema}}.run_record{filter} \
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

/// A row; rows of schema versions 1 and 2 have no cause, attempts or process: they read as
/// scheduled, with one attempt if the handler ran.
fn decode(row: &tokio_postgres::Row) -> Result<RunRecord, BoxError> {
    let outcome = Outcome::from_name(row.try_get::<_, &str>(3)?);
    let process = match (
        row.try_get::<_, Option<&str>>(10)?,
        row.try_get::<_, Option<i64>>(11)?,
        row.try_get::<_, Option<i64>>(12)?,
    ) {
        (Some(host), Some(pid), Some(start)) => {
            Some(RunProcess { host: host.into(), pid: u32::try_from(pid)?, start_time: start as u64 })
        }
        _ => None,
    };
    Ok(RunRecord {
        job: row.try_get::<_, &str>(0)?.into(),
        trigger: codec::instant(row.try_get::<_, SystemTime>(1)?)?,
        instance: row.try_get::<_, &str>(2)?.into(),
        cause: row.try_get::<_, Option<&str>>(8)?.map_or(Cause::Scheduled, Cause::from_name),
        attempts: match row.try_get::<_, Option<i64>>(9)? {
            Some(attempts) => u32::try_from(attempts)?,
            None => u32::from(outcome.ran()),
        },
        outcome,
        process,
        fencing_token: row.try_get::<_, Option<i64>>(4)?.map(|token| token as u64),
        started: codec::instant(row.try_get::<_, SystemTime>(5)?)?,
        duration: Duration::from_micros(u64::try_from(row.try_get::<_, i64>(6)?)?),
        error: row.try_get(7)?,
    })
}
