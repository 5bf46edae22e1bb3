use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use slotcron::MAX_CLAIMS_PER_ROUND_TRIP;
use slotcron::jiff::Timestamp;
use slotcron::{
    Claim, ClaimOutcome, Controls, Coordinator, CoordinatorError, CoordinatorErrorKind, CountedAnswer,
    CountedMark, RequestClaim,
};
use slotcron::{
    ClaimAttemptError, ClaimBatchAttempt, ClaimHolder, claim_batch_with_read_back, claim_with_read_back,
};
use slotcron::{
    Handled, Lease, LeaseGrant, LeaseRenewal, LiveMember, MemberDetails, StartMark, TriggerRef, Unstarted,
};
use tokio_postgres::Row;

use crate::claimant::{ClaimRow, Token, holder};
use crate::codec;
use crate::controls::PostgresControls;
use crate::database::QueryError;
use crate::{DbError, PostgresDatabase};
use slotcron::error_chain;

mod membership;
mod start;

use membership::MembershipSql;
use start::StartSql;

/// A [`Coordinator`] on a claims table, so a fleet with only PostgreSQL needs no Redis.
///
/// A claim is one call of the schema's `claim_trigger` function (one round trip, one
/// transaction): it inserts the row keyed by (job, trigger key) if absent — or takes it
/// over if its expiry has passed — and, only if it did, bumps the job's fencing counter
/// and returns the new token. Concurrent claims of one trigger serialize on the row's
/// key, so exactly one wins. A recurring claim expires at the absolute instant
/// [`Hold`](slotcron::Hold) describes, on the server's clock (`now()`), and the function
/// keeps the job's high-water mark in the same transaction (claims of one job serialize
/// on its mark row), refusing a trigger behind it whose claim may have expired; one-shot
/// claims never expire. Claims are never released. The row keeps the claimant's instance, a random 64-bit token drawn for each
/// claim, and the fencing token it won.
///
/// When the reply is lost (the connection closed or broke, the server ended the session,
/// or no reply within the [response timeout](Self::response_timeout)) the claim may have
/// committed. The coordinator drops that connection and reads the row back on another
/// (waiting for a claim of the row still in progress), as
/// [`Coordinator`]'s "Lost replies" describes: its own token and instance mean
/// won (with the stored fencing token), another's mean lost, no row means the claim did
/// not happen and it is made once more, with the same token, so that a first attempt
/// still running on the server is found rather than lost to. If the row cannot be read,
/// the claim fails and the scheduler skips the trigger (fail closed). An error reported
/// by the server (severity `ERROR`) rolled the claim back: it is an error at once.
///
/// Leases (the overlap policies') are rows of the `lease` table, one per job, each
/// change one statement: acquiring inserts the row or takes over one whose expiry has
/// passed (or that is the caller's); renewing and releasing match the stored owner, so a
/// lease that expired and was taken by another replica is never extended by the first.
///
/// A batch of claims ([`Coordinator::claim_batch`]) is one call of the schema's
/// `claim_triggers` per [`MAX_CLAIMS_PER_ROUND_TRIP`] claims: one round trip, one
/// transaction, whose answers and rows are those of `claim_trigger` above making the
/// claims one after the other in the order of job, trigger and position, but made for the
/// whole batch at once (schema version 10): one statement reads the pauses and the held
/// claims and locks the marks of the jobs with a recurring trigger left, in job order (so
/// concurrent batches lock jobs' rows in one order); a second, under the locks, reads the
/// held claims and the marks again, inserts (or takes over) the rows of the claims won
/// with their fencing tokens (a job's triggers get theirs in trigger order), bumps each
/// job's fencing counter once and moves its mark once. A lost reply is read back for
/// every claim of the batch in one statement; the claims nobody holds are made once more,
/// as one batch.
///
/// The fleet's [membership](slotcron::Coordinator#membership) is the `member` table,
/// one row per replica with the instant its membership lapses on the server's clock;
/// each heartbeat is one statement that removes the lapsed rows, renews its own and
/// returns the live members. The owners' [`Handled`] tallies are rows of the `handled`
/// table per (owner, trigger instant), lapsing after the membership TTL, removed by the
/// heartbeats. Which triggers are still unclaimed, and the tallies of many owners, are
/// each read in one statement.
///
/// The claim statement first reads the job's row of `job_pause`, and the batch claim
/// (`claim_triggers`) reads it for each claim: while the job is paused nothing is
/// claimed ([`ClaimOutcome::Paused`]), in the same round trip. Manual and backfilled runs
/// are claimed under their own keys by the schema's six-argument `claim_trigger` (a
/// claim expiring a TTL after it is made, no high-water mark, the job's fencing counter).
///
/// Start marks (schema version 11, `started_at`): the claims this coordinator makes
/// (through the schema's `*_unstarted` functions: `claim_trigger` and `claim_triggers`
/// with `slotcron.marks_starts` set) start unmarked, also when they take over an expired
/// row. [`Coordinator::mark_starts`] marks a batch in one statement,
/// [`Coordinator::unstarted`] reads a holder's unmarked claims (a partial index), and
/// [`Coordinator::take_over`] moves a batch of unmarked claims in one statement, each
/// with its job's next fencing token, holding again from then for as long as it held
/// when made. A mark and a takeover of one claim lock its row, so one of them finds the
/// other's work done: the mark of a claim taken over is refused, a marked claim is not
/// taken over. Claims made before version 11, and those replicas of an older release
/// make meanwhile, count as started.
///
/// Counted runs (`max_runs`, schema version 17): [`Coordinator::mark_counted_starts`]
/// marks its claims as [`Coordinator::mark_starts`] does and counts each run in the
/// same transaction, in the tables `counted_run` (the trigger keys counted, per job) and
/// `run_count` (per job, the count, whose row serializes the job's counted marks).
///
/// Expired claims are removed every [`PostgresCoordinator::REMOVE_EXPIRED_EVERY`] claims
/// of this process (in the background), so the table stays bounded; an expired claim
/// without a start mark stays until it is marked or taken over, listed by
/// [`Coordinator::unstarted`].
#[derive(Debug)]
pub struct PostgresCoordinator {
    database: PostgresDatabase,
    claim_sql: String,
    claim_batch_sql: String,
    request_sql: String,
    read_back_sql: String,
    read_back_batch_sql: String,
    remove_expired_sql: String,
    lease: LeaseSql,
    membership: MembershipSql,
    start: StartSql,
    response_timeout: Option<Duration>,
    claims: AtomicU64,
    /// Whether a removal of expired claims is going on (one at a time per coordinator).
    removing: Arc<AtomicBool>,
    controls: PostgresControls,
}

impl PostgresCoordinator {
    /// How many claims of this process between two removals of expired claims (a
    /// removal still going on when the count passes the next multiple is not doubled).
    pub const REMOVE_EXPIRED_EVERY: u64 = 1_000;
    /// How many expired claims one statement of a removal deletes at most: a removal is
    /// a series of such statements, each its own short transaction.
    pub const REMOVE_EXPIRED_CHUNK: u64 = 1_000;
    /// Hold durations are capped at this (a thousand years): longer is forever in practice, and
    /// the server's `timestamptz` has an end.
    pub const MAX_TTL: Duration = Duration::from_secs(1_000 * 365 * 86_400);
    /// How long a claim waits for each reply unless told otherwise: shorter than the
    /// scheduler's default claim timeout (1 s), so a lost reply can still be read back.
    pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_millis(500);

    /// The coordinator on `database`'s schema.
    pub fn new(database: PostgresDatabase) -> Self {
        Self {
            // -2: paused. A volatile function in a CASE branch not taken is not called.
            claim_sql: database.sql(
                "SELECT CASE WHEN EXISTS (SELECT FROM {schema}.job_pause WHERE job = $1) THEN -2
                        ELSE {schema}.claim_trigger_unstarted($1, $2, $3, $4, $5, $6, $7) END",
            ),
            claim_batch_sql: database
                .sql("SELECT {schema}.claim_triggers_unstarted($1, $2, $3, $4, $5, $6, $7)"),
            request_sql: database.sql("SELECT {schema}.claim_trigger_unstarted($1, $2, $3, $4, $5, $6)"),
            // FOR SHARE waits for a claim of the row still in progress, then reads it.
            read_back_sql: database.sql(
                "SELECT claimant_token, instance, fencing_token FROM {schema}.claim
                 WHERE job = $1 AND trigger_key = $2 FOR SHARE",
            ),
            // The rows of the given (job, trigger key) pairs, by position; none: nobody's.
            read_back_batch_sql: database.sql(
                "SELECT t.ord, c.claimant_token, c.instance, c.fencing_token
                 FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(job, trigger_key, ord)
                 JOIN {schema}.claim c USING (job, trigger_key)
                 FOR SHARE OF c",
            ),
            // An expired claim without a start mark stays: it lists the claim as unstarted.
            // At most a chunk per statement, skipping the rows another transaction holds
            // (another replica's removal, a claim taking a row over): removals never wait
            // on each other or on claims, so they cannot deadlock or hold a burst up.
            remove_expired_sql: database.sql(&format!(
                "DELETE FROM {{schema}}.claim c USING (
                     SELECT job, trigger_key FROM {{schema}}.claim
                     WHERE expires_at <= now() AND started_at IS NOT NULL
                     LIMIT {} FOR UPDATE SKIP LOCKED
                 ) d
                 WHERE c.job = d.job AND c.trigger_key = d.trigger_key",
                Self::REMOVE_EXPIRED_CHUNK
            )),
            lease: LeaseSql::new(&database),
            membership: MembershipSql::new(&database),
            start: StartSql::new(&database),
            controls: PostgresControls::new(database.clone()),
            database,
            response_timeout: Some(Self::DEFAULT_RESPONSE_TIMEOUT),
            claims: AtomicU64::new(0),
            removing: Arc::default(),
        }
    }

    /// Bounds each wait of a claim for the server (preparing a statement on a new
    /// connection, the claim's reply, the reply of the read-back after a lost reply) to
    /// `timeout`; `Duration::ZERO` removes the bound, as `0` does for PostgreSQL's own
    /// `statement_timeout`. Default [`Self::DEFAULT_RESPONSE_TIMEOUT`]. Keep it below the
    /// scheduler's claim timeout, which drops a claim without reading it back. Opening a
    /// connection is bounded by [`PostgresDatabase::CONNECT_TIMEOUT`] instead.
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = (!timeout.is_zero()).then_some(timeout);
        self
    }

    /// Removes the claims whose expiry has passed (they could be taken over anyway);
    /// the number removed. One-shot claims stay, and so do the claims without a start
    /// mark (listed by [`Coordinator::unstarted`] until marked or taken over). Rows that
    /// another transaction holds at the time are skipped (the next removal takes them).
    ///
    /// # Errors
    /// The server failed; the chunks deleted before stay deleted.
    pub async fn remove_expired(&self) -> Result<u64, DbError> {
        remove_expired(&self.database, &self.remove_expired_sql).await
    }

    /// Starts a removal of expired claims in the background, unless one is going on.
    fn remove_expired_in_background(&self) {
        if self.removing.swap(true, Ordering::AcqRel) {
            return;
        }
        let (database, sql, removing) =
            (self.database.clone(), self.remove_expired_sql.clone(), self.removing.clone());
        tokio::spawn(async move {
            match remove_expired(&database, &sql).await {
                Ok(removed) => tracing::debug!(url = database.url(), removed, "expired claims removed"),
                Err(e) => tracing::warn!("removing expired claims: {e}"),
            }
            removing.store(false, Ordering::Release);
        });
    }

    /// Counts `claims` more claims, and removes the expired ones in the background each
    /// time the count passes a multiple of [`Self::REMOVE_EXPIRED_EVERY`].
    fn count_claims(&self, claims: u64) {
        let before = self.claims.fetch_add(claims, Ordering::Relaxed);
        if (before + claims) / Self::REMOVE_EXPIRED_EVERY > before / Self::REMOVE_EXPIRED_EVERY {
            self.remove_expired_in_background();
        }
    }

    /// Claims the chunk `claims` in one statement ([`Coordinator::claim_batch`]).
    async fn claim_chunk(&self, claims: &[Claim<'_>]) -> Vec<Result<ClaimOutcome, CoordinatorError>> {
        let failed =
            |e: String| claims.iter().map(|_| Err(CoordinatorError::unavailable(e.clone()))).collect();
        let mut triggers = Vec::with_capacity(claims.len());
        let mut tokens = Vec::with_capacity(claims.len());
        for claim in claims {
            match codec::timestamptz(claim.trigger) {
                Ok(trigger) => triggers.push(trigger),
                Err(e) => return failed(e.to_string()),
            }
            match Token::random() {
                Ok(token) => tokens.push(token),
                Err(e) => return failed(format!("no random claim token: {e}")),
            }
        }
        let holds: Vec<(Option<i64>, Option<i64>)> = claims.iter().map(|c| hold_us(c.hold)).collect();
        self.count_claims(claims.len() as u64);
        let name = |i: usize| format!("{}: claim of {}", self.database.url(), claims[i].key);
        claim_batch_with_read_back(
            claims.len(),
            &name,
            |pending: Vec<usize>| self.try_claims(claims, &triggers, &holds, &tokens, pending),
            |pending: Vec<usize>| self.read_holders(claims, &tokens, pending),
        )
        .await
    }

    /// Makes the claims `pending` (indices into `claims`) once, in one statement.
    async fn try_claims(
        &self,
        claims: &[Claim<'_>],
        triggers: &[SystemTime],
        holds: &[(Option<i64>, Option<i64>)],
        tokens: &[Token],
        pending: Vec<usize>,
    ) -> ClaimBatchAttempt<String> {
        let instance = claims.first().map_or("", |c| c.instance);
        if let Some(other) = pending.iter().find(|&&i| claims[i].instance != instance) {
            let e =
                format!("a batch of claims of two instances, {instance:?} and {:?}", claims[*other].instance);
            return Err(ClaimAttemptError::NotMade(e));
        }
        let jobs: Vec<&str> = pending.iter().map(|&i| claims[i].job).collect();
        let keys: Vec<&str> = pending.iter().map(|&i| claims[i].key).collect();
        let at: Vec<SystemTime> = pending.iter().map(|&i| triggers[i]).collect();
        let after_trigger: Vec<Option<i64>> = pending.iter().map(|&i| holds[i].0).collect();
        let after_claim: Vec<Option<i64>> = pending.iter().map(|&i| holds[i].1).collect();
        let token_column: Vec<i64> = pending.iter().map(|&i| tokens[i].column()).collect();
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 7] =
            [&jobs, &keys, &at, &instance, &after_trigger, &after_claim, &token_column];
        let rows =
            match self.database.query_within(&self.claim_batch_sql, &params, self.response_timeout).await {
                Ok(rows) => rows,
                Err(QueryError::NotApplied(e)) => return Err(not_made(e)),
                Err(QueryError::OutcomeUnknown(e)) => return Err(ClaimAttemptError::ReplyLost(e.cause)),
            };
        // One row: per claim, the fencing token, NULL (lost), -1 (behind the mark) or -2
        // (paused).
        let answers = match rows.first().map(|row| row.try_get::<_, Vec<Option<i64>>>(0)) {
            Some(Ok(answers)) if answers.len() == pending.len() => answers,
            Some(Ok(answers)) => {
                let e = format!("{} answers to {} claims", answers.len(), pending.len());
                return Err(ClaimAttemptError::ReplyLost(e));
            }
            Some(Err(e)) => return Err(ClaimAttemptError::ReplyLost(error_chain(&e))),
            None => return Err(ClaimAttemptError::ReplyLost("no row in the reply".to_owned())),
        };
        Ok(answers.into_iter().map(|answer| Ok(outcome(answer))).collect())
    }

    /// Who holds the rows of the claims `pending` now, in one statement.
    async fn read_holders(
        &self,
        claims: &[Claim<'_>],
        tokens: &[Token],
        pending: Vec<usize>,
    ) -> Result<Vec<ClaimHolder>, String> {
        let jobs: Vec<&str> = pending.iter().map(|&i| claims[i].job).collect();
        let keys: Vec<&str> = pending.iter().map(|&i| claims[i].key).collect();
        let rows = self
            .database
            .query_within(&self.read_back_batch_sql, &[&jobs, &keys], self.response_timeout)
            .await
            .map_err(|e| e.into_cause().cause)?;
        let mut found: Vec<Option<ClaimRow>> = pending.iter().map(|_| None).collect();
        for row in &rows {
            let ord: i64 = row.try_get(0).map_err(|e| error_chain(&e))?;
            let claim = ClaimRow {
                claimant_token: row.try_get(1).map_err(|e| error_chain(&e))?,
                instance: row.try_get(2).map_err(|e| error_chain(&e))?,
                fencing_token: row.try_get(3).map_err(|e| error_chain(&e))?,
            };
            let slot = usize::try_from(ord - 1).ok().and_then(|k| found.get_mut(k));
            *slot.ok_or_else(|| format!("the read-back answered for position {ord}"))? = Some(claim);
        }
        Ok(pending
            .iter()
            .zip(found)
            .map(|(&i, row)| holder(row.as_ref(), tokens[i], claims[i].instance))
            .collect())
    }

    /// Makes the claim once. Errors are the causes alone: the claim's errors name the URL.
    async fn try_claim(
        &self,
        claim: &Claim<'_>,
        trigger: &SystemTime,
        hold_us: &(Option<i64>, Option<i64>),
        token: Token,
    ) -> Result<ClaimOutcome, ClaimAttemptError<String>> {
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 7] =
            [&claim.job, &claim.key, trigger, &claim.instance, &hold_us.0, &hold_us.1, &token.column()];
        self.run_claim(&self.claim_sql, &params).await
    }

    /// Runs a claim statement once: its one row is the fencing token when won, NULL
    /// when lost, -1 behind the mark, -2 paused.
    async fn run_claim(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<ClaimOutcome, ClaimAttemptError<String>> {
        let rows = match self.database.query_within(sql, params, self.response_timeout).await {
            Ok(rows) => rows,
            Err(QueryError::NotApplied(e)) => return Err(not_made(e)),
            Err(QueryError::OutcomeUnknown(e)) => return Err(ClaimAttemptError::ReplyLost(e.cause)),
        };
        // One row: the fencing token, or NULL. Anything else is a reply not understood.
        match rows.first().map(|row| row.try_get::<_, Option<i64>>(0)) {
            Some(Ok(answer)) => Ok(outcome(answer)),
            Some(Err(e)) => Err(ClaimAttemptError::ReplyLost(error_chain(&e))),
            None => Err(ClaimAttemptError::ReplyLost("no row in the reply".to_owned())),
        }
    }

    /// Who holds the row of `job`'s claim `key` now. Errors are the causes alone, as for
    /// [`Self::try_claim`].
    async fn read_holder(
        &self,
        job: &str,
        key: &str,
        instance: &str,
        token: Token,
    ) -> Result<ClaimHolder, String> {
        let rows = self
            .database
            .query_within(&self.read_back_sql, &[&job, &key], self.response_timeout)
            .await
            .map_err(|e| e.into_cause().cause)?;
        let row = rows.first().map(claim_row).transpose().map_err(|e| error_chain(&e))?;
        Ok(holder(row.as_ref(), token, instance))
    }
}

/// The lease statements, on the schema.
#[derive(Debug)]
struct LeaseSql {
    acquire: String,
    renew: String,
    release: String,
    cancel: String,
}

impl LeaseSql {
    fn new(database: &PostgresDatabase) -> Self {
        Self {
            acquire: database.sql(
                "INSERT INTO {schema}.lease AS held (job, owner, expires_at)
                 VALUES ($1, $2, now() + $3::bigint * interval '1 microsecond')
                 ON CONFLICT (job) DO UPDATE SET
                     owner = EXCLUDED.owner,
                     expires_at = EXCLUDED.expires_at,
                     cancel = held.cancel AND held.owner = EXCLUDED.owner
                 WHERE held.expires_at <= now() OR held.owner = EXCLUDED.owner
                 RETURNING 1",
            ),
            renew: database.sql(
                "UPDATE {schema}.lease SET expires_at = now() + $3::bigint * interval '1 microsecond'
                 WHERE job = $1 AND owner = $2 AND expires_at > now()
                 RETURNING cancel",
            ),
            release: database.sql("DELETE FROM {schema}.lease WHERE job = $1 AND owner = $2"),
            cancel: database.sql(
                "UPDATE {schema}.lease SET cancel = true WHERE job = $1 AND expires_at > now() RETURNING 1",
            ),
        }
    }
}

impl PostgresCoordinator {
    /// Runs one statement of a lease or the membership, bounded by the response timeout;
    /// its rows, or an error naming the URL and `what` it was for.
    async fn query_for(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
        what: &str,
    ) -> Result<Vec<Row>, CoordinatorError> {
        self.database.query_within(sql, params, self.response_timeout).await.map_err(|e| {
            let e = e.into_cause();
            failed_call(&e, format!("{}: {what}: {}", self.database.url(), e.cause))
        })
    }

    /// Runs one lease statement of `job`'s lease; its rows.
    async fn lease_query(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
        job: &str,
    ) -> Result<Vec<Row>, CoordinatorError> {
        self.query_for(sql, params, &format!("lease of {job}")).await
    }
}

/// Runs `sql` (a chunk of [`PostgresCoordinator::remove_expired`]) until a chunk is not
/// full: the number of claims removed.
async fn remove_expired(database: &PostgresDatabase, sql: &str) -> Result<u64, DbError> {
    let mut removed = 0;
    loop {
        let chunk = database.execute(sql, &[]).await?;
        removed += chunk;
        if chunk < PostgresCoordinator::REMOVE_EXPIRED_CHUNK {
            return Ok(removed);
        }
    }
}

/// What a claim statement answered: the fencing token when won, NULL when lost, -1 when
/// the high-water mark refused the trigger, -2 when the job is paused.
fn outcome(answer: Option<i64>) -> ClaimOutcome {
    match answer {
        Some(-1) => ClaimOutcome::BehindMark,
        Some(-2) => ClaimOutcome::Paused,
        Some(fencing_token) => ClaimOutcome::Won { fencing_token: fencing_token as u64 },
        None => ClaimOutcome::Lost,
    }
}

/// A claim's hold in microseconds, capped at [`PostgresCoordinator::MAX_TTL`]: after the
/// trigger and after the claim; both NULL for a one-shot.
fn hold_us(hold: Option<slotcron::Hold>) -> (Option<i64>, Option<i64>) {
    let us = |d: Duration| d.min(PostgresCoordinator::MAX_TTL).as_micros() as i64;
    (hold.map(|h| us(h.after_trigger())), hold.map(|h| us(h.after_claim())))
}

/// A lease TTL in microseconds, capped as claims' are.
fn ttl_us(ttl: Duration) -> i64 {
    ttl.min(PostgresCoordinator::MAX_TTL).as_micros() as i64
}

fn claim_row(row: &Row) -> Result<ClaimRow, tokio_postgres::Error> {
    Ok(ClaimRow {
        claimant_token: row.try_get(0)?,
        instance: row.try_get(1)?,
        fencing_token: row.try_get(2)?,
    })
}

#[async_trait]
impl Coordinator for PostgresCoordinator {
    async fn claim(&self, claim: &Claim<'_>) -> Result<ClaimOutcome, CoordinatorError> {
        let trigger: SystemTime = codec::timestamptz(claim.trigger).map_err(CoordinatorError::unavailable)?;
        let hold_us = hold_us(claim.hold);
        let token = Token::random()
            .map_err(|e| CoordinatorError::unavailable(format!("no random claim token: {e}")))?;
        self.count_claims(1);
        claim_with_read_back(
            &format!("{}: claim of {}", self.database.url(), claim.key),
            &token,
            || self.try_claim(claim, &trigger, &hold_us, token),
            || self.read_holder(claim.job, claim.key, claim.instance, token),
        )
        .await
    }

    /// One statement per chunk of [`MAX_CLAIMS_PER_ROUND_TRIP`] claims (the schema's
    /// `claim_triggers`, one transaction), the chunks one after the other. Within a chunk
    /// each claim is decided as [`Coordinator::claim`] decides it, the claims made in the
    /// order of job, trigger and position (set-based, see the type's documentation); a
    /// lost reply is read back for the whole chunk in one statement.
    async fn claim_batch(&self, claims: &[Claim<'_>]) -> Vec<Result<ClaimOutcome, CoordinatorError>> {
        let mut outcomes = Vec::with_capacity(claims.len());
        for chunk in claims.chunks(MAX_CLAIMS_PER_ROUND_TRIP) {
            outcomes.extend(self.claim_chunk(chunk).await);
        }
        outcomes
    }

    async fn claim_request(&self, claim: &RequestClaim<'_>) -> Result<ClaimOutcome, CoordinatorError> {
        let trigger: SystemTime = codec::timestamptz(claim.trigger).map_err(CoordinatorError::unavailable)?;
        let ttl_us = ttl_us(claim.ttl);
        let token = Token::random()
            .map_err(|e| CoordinatorError::unavailable(format!("no random claim token: {e}")))?;
        let column = token.column();
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 6] =
            [&claim.job, &claim.key, &trigger, &claim.instance, &ttl_us, &column];
        claim_with_read_back(
            &format!("{}: claim of {}", self.database.url(), claim.key),
            &token,
            || self.run_claim(&self.request_sql, &params),
            || self.read_holder(claim.job, claim.key, claim.instance, token),
        )
        .await
    }

    fn controls(&self) -> Option<&dyn Controls> {
        Some(&self.controls)
    }

    fn keeps_start_marks(&self) -> bool {
        true
    }

    /// One statement for the whole batch.
    async fn mark_starts(
        &self,
        instance: &str,
        marks: &[StartMark<'_>],
    ) -> Result<Vec<bool>, CoordinatorError> {
        self.mark(instance, marks).await
    }

    /// One statement; the claims are the holder's rows (the jobs are not needed).
    fn counts_runs(&self) -> bool {
        true
    }

    /// One call of the function `mark_counted_starts` (schema version 17), which marks the
    /// claims and counts their runs in the tables `counted_run` and `run_count`.
    async fn mark_counted_starts(
        &self,
        instance: &str,
        marks: &[CountedMark<'_>],
    ) -> Result<Vec<CountedAnswer>, CoordinatorError> {
        self.mark_counted(instance, marks).await
    }

    /// One statement on `run_count`.
    async fn run_counts(&self, jobs: &[&str]) -> Result<Vec<u64>, CoordinatorError> {
        self.read_run_counts(jobs).await
    }

    async fn unstarted(&self, instance: &str, _jobs: &[&str]) -> Result<Vec<Unstarted>, CoordinatorError> {
        self.list_unstarted(instance).await
    }

    /// One statement (one transaction) for the whole batch; an error is every claim's.
    async fn take_over(
        &self,
        from: &str,
        to: &str,
        claims: &[TriggerRef<'_>],
    ) -> Vec<Result<ClaimOutcome, CoordinatorError>> {
        match self.move_claims(from, to, claims).await {
            Ok(outcomes) => outcomes.into_iter().map(Ok).collect(),
            Err(e) => claims.iter().map(|_| Err(CoordinatorError::new(e.kind(), e.to_string()))).collect(),
        }
    }

    async fn acquire_lease(&self, lease: &Lease<'_>) -> Result<LeaseGrant, CoordinatorError> {
        let ttl = ttl_us(lease.ttl);
        let rows =
            self.lease_query(&self.lease.acquire, &[&lease.job, &lease.owner, &ttl], lease.job).await?;
        Ok(if rows.is_empty() { LeaseGrant::Held } else { LeaseGrant::Acquired })
    }

    async fn renew_lease(&self, lease: &Lease<'_>) -> Result<LeaseRenewal, CoordinatorError> {
        let ttl = ttl_us(lease.ttl);
        let rows = self.lease_query(&self.lease.renew, &[&lease.job, &lease.owner, &ttl], lease.job).await?;
        let cancel = rows.first().map(|row| row.try_get::<_, bool>(0)).transpose();
        match cancel.map_err(|e| CoordinatorError::outcome_unknown(error_chain(&e)))? {
            None => Ok(LeaseRenewal::Lost),
            Some(false) => Ok(LeaseRenewal::Renewed),
            Some(true) => Ok(LeaseRenewal::CancelRequested),
        }
    }

    async fn release_lease(&self, lease: &Lease<'_>) -> Result<(), CoordinatorError> {
        self.lease_query(&self.lease.release, &[&lease.job, &lease.owner], lease.job).await.map(drop)
    }

    async fn cancel_lease(&self, job: &str) -> Result<bool, CoordinatorError> {
        Ok(!self.lease_query(&self.lease.cancel, &[&job], job).await?.is_empty())
    }

    async fn time(&self) -> Result<Option<Timestamp>, CoordinatorError> {
        let failed =
            |cause: String| CoordinatorError::unavailable(format!("{}: now(): {cause}", self.database.url()));
        let rows =
            self.database.query_within("SELECT now()", &[], self.response_timeout).await.map_err(|e| {
                let e = e.into_cause();
                failed_call(&e, format!("{}: now(): {}", self.database.url(), e.cause))
            })?;
        let now: SystemTime = rows
            .first()
            .ok_or_else(|| failed("no row".to_owned()))?
            .try_get(0)
            .map_err(|e| failed(error_chain(&e)))?;
        Ok(Some(codec::instant(now).map_err(|e| failed(e.to_string()))?))
    }

    /// One statement: removes the lapsed members (and the lapsed tallies), renews this
    /// one and returns the live members, on the server's clock.
    async fn heartbeat(
        &self,
        instance: &str,
        ttl: Duration,
    ) -> Result<Option<Vec<String>>, CoordinatorError> {
        self.renew_member(instance, ttl).await.map(Some)
    }

    async fn leave(&self, instance: &str) -> Result<(), CoordinatorError> {
        self.remove_member(instance).await
    }

    /// One statement (an upsert of `member_detail`).
    async fn publish_details(&self, instance: &str, details: &MemberDetails) -> Result<(), CoordinatorError> {
        self.publish(instance, details).await
    }

    /// One statement: the live members joined with their details.
    async fn members(&self) -> Result<Vec<LiveMember>, CoordinatorError> {
        self.read_members().await
    }

    /// One statement over the given keys (`unnest`), whatever their number.
    /// One statement: the jobs' rows of `claim_mark` (a job whose mark is still
    /// `-infinity`, or without a row, has none).
    async fn high_water_marks(&self, jobs: &[&str]) -> Result<Vec<Option<Timestamp>>, CoordinatorError> {
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        let what = format!("reading the high-water marks of {} jobs", jobs.len());
        let sql = self.database.sql(
            "SELECT job, trigger_at FROM {schema}.claim_mark WHERE job = ANY($1) AND trigger_at > '-infinity'",
        );
        let rows = self.query_for(&sql, &[&jobs], &what).await?;
        let mut marks: HashMap<String, Timestamp> = HashMap::with_capacity(rows.len());
        for row in rows {
            let job: String = row.try_get(0).map_err(|e| self.not_understood(&what, &e))?;
            let at: SystemTime = row.try_get(1).map_err(|e| self.not_understood(&what, &e))?;
            let at = codec::instant(at).map_err(|e| CoordinatorError::unavailable(format!("{what}: {e}")))?;
            marks.insert(job, at);
        }
        Ok(jobs.iter().map(|job| marks.get(*job).copied()).collect())
    }

    async fn unclaimed(&self, triggers: &[TriggerRef<'_>]) -> Result<Vec<bool>, CoordinatorError> {
        self.read_unclaimed(triggers).await
    }

    async fn add_handled(
        &self,
        owner: &str,
        at: Timestamp,
        handled: Handled,
        ttl: Duration,
    ) -> Result<(), CoordinatorError> {
        self.add_tally(owner, at, handled, ttl).await
    }

    /// One statement for all the given owners and instants.
    async fn handled(&self, tallies: &[(&str, Timestamp)]) -> Result<Vec<Option<Handled>>, CoordinatorError> {
        self.read_tallies(tallies).await
    }

    fn name(&self) -> &'static str {
        "postgres"
    }
}
/// A claim statement that was not applied: refused when the server refused the role
/// ([`DbError::refused`]), else not made.
fn not_made(error: DbError) -> ClaimAttemptError<String> {
    match error.refused {
        true => ClaimAttemptError::Refused(error.cause),
        false => ClaimAttemptError::NotMade(error.cause),
    }
}

/// A statement that failed with `error`, described by `message`: the coordinator's
/// error, of kind `unauthorized` when the server refused the role ([`DbError::refused`]),
/// else `unavailable`.
fn failed_call(error: &DbError, message: String) -> CoordinatorError {
    match error.refused {
        true => CoordinatorError::new(CoordinatorErrorKind::Unauthorized, message),
        false => CoordinatorError::unavailable(message),
    }
}
