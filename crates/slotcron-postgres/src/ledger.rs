use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use slotcron::jiff::Timestamp;
use slotcron::{Cause, Ledger, LedgerQuery, Outcome, Retention, RunProcess, RunRecord};
use slotcron::{LedgerBatchError, LedgerError, LedgerWrite, Prune, PruneSchedule};
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
    write: String,
    prune_by_age: String,
    prune_jobs: String,
    distinct_jobs: String,
}

const COLUMNS: &str = "job, trigger_at, instance, outcome, fencing_token, started_at, duration_us, error, \
    cause, attempts, process_host, process_id, process_start";

/// The same columns in a schema of version 1 or 2 (opened for reading only, so not
/// migrated): the columns of version 3 read as NULL.
const COLUMNS_V2: &str = "job, trigger_at, instance, outcome, fencing_token, started_at, duration_us, error, \
    NULL::text, NULL::bigint, NULL::text, NULL::bigint, NULL::bigint";

/// Writes a batch of runs in one statement, as upserts on the run's unique index
/// (`run_record_run`, migration 12): every conflict check is an index probe, whatever the
/// table's statistics. Each row of the arrays is one run (a distinct job, trigger,
/// instance and start: [`runs`] makes them so, as an `ON CONFLICT DO UPDATE` may not touch
/// a row twice, and the two `INSERT`s never propose the same run), in the order of its
/// first write, with `replaces` true if the batch updates it: the stored record of the run
/// is replaced by a row that `replaces`, and left alone by one that does not; a run with
/// no stored record is inserted. Written twice, it leaves the same records.
///
/// The runs not stored are inserted in the batch's order: each row takes its id from the
/// table's sequence in that order (as the column's default would, one per row proposed),
/// so the ids of the runs either `INSERT` adds follow the order of their first writes, as
/// with one `INSERT` of them.
const WRITE: &str = "WITH batch AS MATERIALIZED (
    SELECT b.*, nextval('{schema}.run_record_id_seq'::regclass) AS id
    FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::bigint[],
        $6::timestamptz[], $7::bigint[], $8::text[], $9::text[], $10::bigint[], $11::text[],
        $12::bigint[], $13::bigint[], $14::boolean[])
    WITH ORDINALITY AS b(job, trigger_at, instance, outcome, fencing_token, started_at,
        duration_us, error, cause, attempts, process_host, process_id, process_start, replaces, ord)
), appended AS (
    INSERT INTO {schema}.run_record (id, job, trigger_at, instance, outcome, fencing_token,
        started_at, duration_us, error, cause, attempts, process_host, process_id, process_start)
    OVERRIDING SYSTEM VALUE
    SELECT id, job, trigger_at, instance, outcome, fencing_token, started_at, duration_us, error,
        cause, attempts, process_host, process_id, process_start
    FROM batch WHERE NOT replaces ORDER BY ord
    ON CONFLICT (job, trigger_at, instance, started_at) DO NOTHING
)
INSERT INTO {schema}.run_record AS r (id, job, trigger_at, instance, outcome, fencing_token,
    started_at, duration_us, error, cause, attempts, process_host, process_id, process_start)
OVERRIDING SYSTEM VALUE
SELECT id, job, trigger_at, instance, outcome, fencing_token, started_at, duration_us, error,
    cause, attempts, process_host, process_id, process_start
FROM batch WHERE replaces ORDER BY ord
ON CONFLICT (job, trigger_at, instance, started_at) DO UPDATE SET
    outcome = excluded.outcome, fencing_token = excluded.fencing_token,
    duration_us = excluded.duration_us,
    error = CASE WHEN r.outcome = 'interrupted' AND excluded.outcome <> 'interrupted'
                 THEN coalesce(excluded.error || '; ', '') || 'presumed lost meanwhile: ' || coalesce(r.error, '')
                 WHEN r.outcome = excluded.outcome
                      AND starts_with(r.error, coalesce(excluded.error || '; ', '') || 'presumed lost meanwhile: ')
                 THEN r.error
                 ELSE excluded.error END,
    cause = excluded.cause, attempts = excluded.attempts, process_host = excluded.process_host,
    process_id = excluded.process_id, process_start = excluded.process_start";

/// The condition (on the columns of the `run_record` row `r` being deleted) of a record
/// that pruning keeps whatever its age and rank: a `running` record (a run's start mark),
/// and the job's newest success and newest failure ([`Prune::kept_outcomes`]): a record of
/// one of those classes with no newer record (trigger, then start, then id) of its class.
fn kept() -> String {
    let classes: Vec<String> = Prune::kept_outcomes().map(|o| format!("'{o}'")).collect();
    let classes = classes.join(", ");
    format!(
        "r.outcome = 'running' OR (r.outcome IN ({classes}) AND NOT EXISTS (
            SELECT 1 FROM {{schema}}.run_record AS newer
            WHERE newer.job = r.job AND newer.trigger_at >= r.trigger_at
                AND newer.outcome IN ({classes})
                AND (newer.outcome = 'succeeded') = (r.outcome = 'succeeded')
                AND (newer.trigger_at, newer.started_at, newer.id) > (r.trigger_at, r.started_at, r.id)))"
    )
}

/// Deletes the records whose trigger is older than `$1`, but those [`kept`].
fn prune_by_age() -> String {
    format!("DELETE FROM {{schema}}.run_record AS r WHERE r.trigger_at < $1 AND NOT ({})", kept())
}

/// Prunes each of the jobs `$1` to its newest `$2` records, but those [`kept`], in one
/// statement.
fn prune_jobs() -> String {
    format!(
        "DELETE FROM {{schema}}.run_record AS r WHERE r.id IN (
            SELECT past.id FROM unnest($1::text[]) AS j(job)
            CROSS JOIN LATERAL (SELECT id FROM {{schema}}.run_record WHERE job = j.job
                                ORDER BY trigger_at DESC, started_at DESC OFFSET $2) AS past)
        AND NOT ({})",
        kept()
    )
}

impl PostgresLedger {
    /// The ledger in `database`'s schema, keeping what `retention` says.
    pub fn new(database: PostgresDatabase, retention: Retention) -> Self {
        Self {
            write: database.sql(WRITE),
            prune_by_age: database.sql(&prune_by_age()),
            prune_jobs: database.sql(&prune_jobs()),
            distinct_jobs: database.sql("SELECT DISTINCT job FROM {schema}.run_record"),
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
            let jobs: Vec<&str> = prune.jobs.iter().map(|job| &**job).collect();
            deleted += self.database.execute(&self.prune_jobs, &[&jobs, &keep]).await?;
        }
        Ok(deleted)
    }

    /// Carries out `writes` in one statement, as writing them one after the other would,
    /// then the pruning their appends make due, if any.
    async fn write_all(&self, writes: &[LedgerWrite]) -> Result<(), LedgerError> {
        let columns = Columns::of(&runs(writes)).map_err(LedgerError::new)?;
        self.database.execute(&self.write, &columns.params()).await.map_err(LedgerError::new)?;
        if let Some(due) = self.prune.on_appends(writes.iter().filter_map(LedgerWrite::appended)) {
            // The records are stored; a failed pruning is retried at the next one.
            match self.run_prune(&due).await {
                Ok(deleted) => tracing::debug!(url = self.database.url(), deleted, "ledger pruned"),
                Err(e) => tracing::warn!(url = self.database.url(), "ledger pruning failed: {e}"),
            }
        }
        Ok(())
    }
}

/// One run of a batch: the record it leaves, and whether that replaces a stored record
/// of the run (the batch updates it) or is only added where none is stored.
type Run<'a> = (&'a RunRecord, bool);

/// What writing `writes` one after the other leaves, one row per run (the same job,
/// trigger, instance and start, as the server compares them), in the order of the run's
/// first write: the record of its last update, if it has one, else of its first write.
///
/// A run stored before gets its last update; one not stored gets inserted once, with the
/// record of its last update or else its first write; appends after its first write add
/// nothing.
fn runs(writes: &[LedgerWrite]) -> Vec<Run<'_>> {
    let mut runs: Vec<Run<'_>> = Vec::with_capacity(writes.len());
    let mut positions = HashMap::with_capacity(writes.len());
    for write in writes {
        let run = match write {
            LedgerWrite::Append(record) => (record, false),
            LedgerWrite::Update(record) => (record, true),
        };
        match positions.entry(run_key(run.0)) {
            Entry::Vacant(vacant) => {
                vacant.insert(runs.len());
                runs.push(run);
            }
            Entry::Occupied(occupied) if run.1 => runs[*occupied.get()] = run,
            Entry::Occupied(_) => {}
        }
    }
    runs
}

/// The key of `record`'s run as the server compares it (instants to the microsecond).
/// An instant out of range keys as `i64::MIN`: [`Columns::of`] rejects its run.
fn run_key(record: &RunRecord) -> (&str, i64, &str, i64) {
    let micros = |instant| codec::timestamptz(instant).map_or(i64::MIN, codec::stored_micros);
    (&record.job, micros(record.trigger), &record.instance, micros(record.started))
}

/// The runs of a batch as [`WRITE`]'s 14 parameters, one array per column.
#[derive(Default)]
struct Columns<'a> {
    job: Vec<&'a str>,
    trigger: Vec<SystemTime>,
    instance: Vec<&'a str>,
    outcome: Vec<&'a str>,
    fencing_token: Vec<Option<i64>>,
    started: Vec<SystemTime>,
    duration: Vec<i64>,
    error: Vec<Option<&'a str>>,
    cause: Vec<&'a str>,
    attempts: Vec<i64>,
    host: Vec<Option<&'a str>>,
    pid: Vec<Option<i64>>,
    start_time: Vec<Option<i64>>,
    replaces: Vec<bool>,
}

impl<'a> Columns<'a> {
    /// The columns of `runs`.
    ///
    /// # Errors
    /// An instant out of `timestamptz`'s range.
    fn of(runs: &[Run<'a>]) -> Result<Self, BoxError> {
        let mut columns = Self::default();
        for &(record, replaces) in runs {
            let process = record.process.as_ref();
            columns.job.push(&record.job);
            columns.trigger.push(codec::timestamptz(record.trigger)?);
            columns.instance.push(&record.instance);
            columns.outcome.push(record.outcome.as_str());
            // The token's 64 bits: tokens above i64::MAX read back unchanged.
            columns.fencing_token.push(record.fencing_token.map(|token| token as i64));
            columns.started.push(codec::timestamptz(record.started)?);
            columns.duration.push(i64::try_from(record.duration.as_micros()).unwrap_or(i64::MAX));
            columns.error.push(record.error.as_deref());
            columns.cause.push(record.cause.as_str());
            columns.attempts.push(i64::from(record.attempts));
            columns.host.push(process.map(|p| &*p.host));
            columns.pid.push(process.map(|p| i64::from(p.pid)));
            // The start time's 64 bits, as the token's.
            columns.start_time.push(process.map(|p| p.start_time as i64));
            columns.replaces.push(replaces);
        }
        Ok(columns)
    }

    /// [`WRITE`]'s parameters, in order.
    fn params(&self) -> [&(dyn ToSql + Sync); 14] {
        [
            &self.job,
            &self.trigger,
            &self.instance,
            &self.outcome,
            &self.fencing_token,
            &self.started,
            &self.duration,
            &self.error,
            &self.cause,
            &self.attempts,
            &self.host,
            &self.pid,
            &self.start_time,
            &self.replaces,
        ]
    }
}

#[async_trait]
impl Ledger for PostgresLedger {
    async fn append(&self, record: &RunRecord) -> Result<(), LedgerError> {
        self.write_all(&[LedgerWrite::Append(record.clone())]).await
    }

    async fn update(&self, record: &RunRecord) -> Result<(), LedgerError> {
        self.write_all(&[LedgerWrite::Update(record.clone())]).await
    }

    /// One statement (one round trip once prepared): all of `writes` or none.
    async fn write_batch(&self, writes: &[LedgerWrite]) -> Result<(), LedgerBatchError> {
        self.write_all(writes).await.map_err(|error| LedgerBatchError { written: 0, error })
    }

    /// Prunes every job the table holds: one statement for the ages, one for the counts.
    async fn prune(&self, now: Timestamp) -> Result<u64, LedgerError> {
        let rows = self.database.query(&self.distinct_jobs, &[]).await.map_err(LedgerError::new)?;
        let jobs = rows.iter().map(|row| row.try_get::<_, &str>(0).map(Arc::from)).collect::<Result<_, _>>();
        let jobs = jobs.map_err(LedgerError::new)?;
        self.run_prune(&self.retention.prune_at(now, jobs)).await.map_err(LedgerError::new)
    }

    async fn query(&self, query: &LedgerQuery) -> Result<Vec<RunRecord>, LedgerError> {
        let since = query.since.map(codec::timestamptz).transpose().map_err(LedgerError::new)?;
        let until = query.until.map(codec::timestamptz).transpose().map_err(LedgerError::new)?;
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
        let rows = self.database.query(&sql, &params).await.map_err(LedgerError::new)?;
        rows.iter()
            .map(decode)
            .collect::<Result<_, _>>()
            .map_err(|e| LedgerError::invalid_data(format!("{}: run_record: {e}", self.database.url())))
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
