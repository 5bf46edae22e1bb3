//! Start marks and takeover on PostgreSQL (`slotcron::Coordinator`, "Start marks and
//! takeover"): the `started_at` column of the `claim` table (schema version 11), each
//! operation one statement (one round trip, one transaction) for its whole batch.
//!
//! A claim row is identified by (job, trigger key), the table's primary key; the keys are
//! stored as the engine gives them (the schema is the namespace). Marks and takeovers
//! lock the rows they change in (job, trigger key) order, and a takeover locks the jobs'
//! fencing counters after its rows, as the claim functions do, so that none of them
//! deadlocks with another.

use slotcron::{
    ClaimOutcome, CoordinatorError, CountedAnswer, CountedMark, StartMark, TriggerRef, Unstarted,
};

use super::PostgresCoordinator;
use crate::PostgresDatabase;
use crate::database::QueryError;

/// The start mark statements, on the schema.
#[derive(Debug)]
pub(super) struct StartSql {
    mark: String,
    mark_counted: String,
    run_counts: String,
    unstarted: String,
    take_over: String,
}

impl StartSql {
    pub(super) fn new(database: &PostgresDatabase) -> Self {
        Self {
            // Marks the claims ($2, $3 by position) that $1 holds, marked or not (a mark
            // sent again after a lost reply keeps the first instant); by position, whether
            // the claim was $1's. Rows another replica took over are not locked, so they
            // are not marked: false.
            mark: database.sql(
                "WITH marked AS (
                     UPDATE {schema}.claim c SET started_at = coalesce(c.started_at, now())
                     FROM (SELECT c.job, c.trigger_key
                           FROM {schema}.claim c
                           JOIN (SELECT DISTINCT job, trigger_key
                                 FROM unnest($2::text[], $3::text[]) AS t(job, trigger_key)) w
                               USING (job, trigger_key)
                           WHERE c.instance = $1
                           ORDER BY c.job, c.trigger_key
                           FOR UPDATE OF c) held
                     WHERE c.job = held.job AND c.trigger_key = held.trigger_key
                     RETURNING c.job, c.trigger_key
                 )
                 SELECT coalesce(array_agg(m.job IS NOT NULL ORDER BY t.ord), '{}')
                 FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS t(job, trigger_key, ord)
                 LEFT JOIN marked m ON m.job = t.job AND m.trigger_key = t.trigger_key",
            ),
            // Counted marks (max_runs): the function of schema version 17.
            mark_counted: database.sql("SELECT {schema}.mark_counted_starts($1, $2, $3, $4)"),
            run_counts: database.sql("SELECT job, runs FROM {schema}.run_count WHERE job = ANY ($1)"),
            // The claims $1 holds without a mark, expired or not (the partial index
            // claim_unstarted).
            unstarted: database.sql(
                "SELECT job, trigger_key FROM {schema}.claim WHERE instance = $1 AND started_at IS NULL",
            ),
            take_over: take_over_sql(database),
        }
    }
}

/// Takes over, for $2, the unmarked claims of $1 among the (job, trigger key) pairs $3,
/// $4; by position, the fencing token (won) or NULL (lost). See the statement's comments.
fn take_over_sql(database: &PostgresDatabase) -> String {
    database.sql(
        "-- The unmarked claims of $1 and $2 asked for, locked in key order, each row as it is
         -- once its lock is granted (a row marked or taken meanwhile is left out). Those of
         -- $2 stay (taken over already: an answer lost and asked again).
         WITH locked AS (
             SELECT c.job, c.trigger_key, c.trigger_at, c.fencing_token, c.instance <> $2 AS moving
             FROM {schema}.claim c
             JOIN (SELECT DISTINCT job, trigger_key
                   FROM unnest($3::text[], $4::text[]) AS t(job, trigger_key)) w
                 USING (job, trigger_key)
             WHERE c.started_at IS NULL AND c.instance IN ($1, $2)
             ORDER BY c.job, c.trigger_key
             FOR UPDATE OF c
         -- Each job's fencing counter bumped once, by its claims moving, in job order (as
         -- the claim functions bump theirs).
         ), counted AS (
             INSERT INTO {schema}.fencing AS counter (job, token)
             SELECT job, count(*) FROM locked WHERE moving GROUP BY job ORDER BY job
             ON CONFLICT (job) DO UPDATE SET token = counter.token + EXCLUDED.token
             RETURNING job, token
         -- The claims moving get their job's new tokens in the order of trigger and key, and
         -- hold from now for as long as they held when made (at least until their expiry):
         -- a claim won and never started must hold again long enough to run. A one-shot's
         -- never expires. The claimant token stays: a takeover is no new claim (the trigger
         -- claim_made_again leaves the row unmarked), and the old holder's read-back of
         -- its token finds another instance: lost.
         ), moved AS (
             UPDATE {schema}.claim c SET
                 instance = $2,
                 fencing_token = n.token,
                 claimed_at = now(),
                 expires_at = greatest(c.expires_at, now() + (c.expires_at - c.claimed_at))
             FROM (SELECT l.job, l.trigger_key,
                          k.token - count(*) OVER (PARTITION BY l.job)
                              + row_number() OVER (PARTITION BY l.job ORDER BY l.trigger_at, l.trigger_key)
                              AS token
                   FROM locked l JOIN counted k USING (job)
                   WHERE l.moving) n
             WHERE c.job = n.job AND c.trigger_key = n.trigger_key
             RETURNING c.job, c.trigger_key, c.fencing_token
         )
         SELECT coalesce(array_agg(coalesce(m.fencing_token, CASE WHEN NOT l.moving THEN l.fencing_token END)
                                   ORDER BY t.ord), '{}')
         FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS t(job, trigger_key, ord)
         LEFT JOIN locked l ON l.job = t.job AND l.trigger_key = t.trigger_key
         LEFT JOIN moved m ON m.job = t.job AND m.trigger_key = t.trigger_key",
    )
}

impl PostgresCoordinator {
    pub(super) async fn mark(
        &self,
        instance: &str,
        marks: &[StartMark<'_>],
    ) -> Result<Vec<bool>, CoordinatorError> {
        if marks.is_empty() {
            return Ok(Vec::new());
        }
        let what = format!("marking the start of {} claims of {instance}", marks.len());
        let jobs: Vec<&str> = marks.iter().map(|m| m.job).collect();
        let keys: Vec<&str> = marks.iter().map(|m| m.key).collect();
        let rows = self.query_for(&self.start.mark, &[&instance, &jobs, &keys], &what).await?;
        let answers: Vec<bool> = match rows.first() {
            Some(row) => row.try_get(0).map_err(|e| self.not_understood(&what, &e))?,
            None => Vec::new(),
        };
        self.one_answer_each(&what, answers, marks.len())
    }

    /// [`Coordinator::mark_counted_starts`](slotcron::Coordinator::mark_counted_starts):
    /// one call of the function `mark_counted_starts`.
    pub(super) async fn mark_counted(
        &self,
        instance: &str,
        marks: &[CountedMark<'_>],
    ) -> Result<Vec<CountedAnswer>, CoordinatorError> {
        if marks.is_empty() {
            return Ok(Vec::new());
        }
        let what = format!("marking the start of {} counted claims of {instance}", marks.len());
        let jobs: Vec<&str> = marks.iter().map(|m| m.mark.job).collect();
        let keys: Vec<&str> = marks.iter().map(|m| m.mark.key).collect();
        let max_runs: Vec<i64> =
            marks.iter().map(|m| i64::try_from(m.max_runs).unwrap_or(i64::MAX)).collect();
        let rows =
            self.query_for(&self.start.mark_counted, &[&instance, &jobs, &keys, &max_runs], &what).await?;
        let answers: Vec<i32> = match rows.first() {
            Some(row) => row.try_get(0).map_err(|e| self.not_understood(&what, &e))?,
            None => Vec::new(),
        };
        let answers = self.one_answer_each(&what, answers, marks.len())?;
        Ok(answers
            .into_iter()
            .map(|answer| match answer {
                1 => CountedAnswer::Marked,
                -3 => CountedAnswer::MaxRunsReached,
                _ => CountedAnswer::Lost,
            })
            .collect())
    }

    /// [`Coordinator::run_counts`](slotcron::Coordinator::run_counts): one statement.
    pub(super) async fn read_run_counts(&self, jobs: &[&str]) -> Result<Vec<u64>, CoordinatorError> {
        let what = format!("reading the runs counted of {} jobs", jobs.len());
        let rows = self.query_for(&self.start.run_counts, &[&jobs], &what).await?;
        let mut counts = std::collections::HashMap::with_capacity(rows.len());
        for row in &rows {
            let job: &str = row.try_get(0).map_err(|e| self.not_understood(&what, &e))?;
            let runs: i64 = row.try_get(1).map_err(|e| self.not_understood(&what, &e))?;
            counts.insert(job, runs.max(0) as u64);
        }
        Ok(jobs.iter().map(|job| counts.get(job).copied().unwrap_or(0)).collect())
    }

    pub(super) async fn list_unstarted(&self, instance: &str) -> Result<Vec<Unstarted>, CoordinatorError> {
        let what = format!("listing the unstarted claims of {instance}");
        let rows = self.query_for(&self.start.unstarted, &[&instance], &what).await?;
        rows.iter()
            .map(|row| {
                let job = row.try_get(0).map_err(|e| self.not_understood(&what, &e))?;
                let key = row.try_get(1).map_err(|e| self.not_understood(&what, &e))?;
                Ok(Unstarted { job, key })
            })
            .collect()
    }

    pub(super) async fn move_claims(
        &self,
        from: &str,
        to: &str,
        claims: &[TriggerRef<'_>],
    ) -> Result<Vec<ClaimOutcome>, CoordinatorError> {
        if claims.is_empty() {
            return Ok(Vec::new());
        }
        let what = format!("taking over {} claims of {from} for {to}", claims.len());
        let jobs: Vec<&str> = claims.iter().map(|c| c.job).collect();
        let keys: Vec<&str> = claims.iter().map(|c| c.key).collect();
        // A takeover whose reply was lost may have committed (asking again finds it).
        let rows = self
            .database
            .query_within(&self.start.take_over, &[&from, &to, &jobs, &keys], self.response_timeout)
            .await
            .map_err(|e| {
                let failed = format!("{}: {what}: ", self.database.url());
                match e {
                    QueryError::NotApplied(e) => CoordinatorError::unavailable(failed + &e.cause),
                    QueryError::OutcomeUnknown(e) => CoordinatorError::outcome_unknown(failed + &e.cause),
                }
            })?;
        let answers: Vec<Option<i64>> = match rows.first() {
            Some(row) => row.try_get(0).map_err(|e| self.not_understood(&what, &e))?,
            None => Vec::new(),
        };
        let answers = self.one_answer_each(&what, answers, claims.len())?;
        Ok(answers
            .into_iter()
            .map(|answer| match answer {
                Some(token) => ClaimOutcome::Won { fencing_token: token as u64 },
                None => ClaimOutcome::Lost,
            })
            .collect())
    }

    /// `answers`, if there is one for each of the `asked` (an error naming `what` if not).
    fn one_answer_each<T>(
        &self,
        what: &str,
        answers: Vec<T>,
        asked: usize,
    ) -> Result<Vec<T>, CoordinatorError> {
        if answers.len() == asked {
            return Ok(answers);
        }
        let cause = format!("{what}: {} answers", answers.len());
        Err(CoordinatorError::unavailable(format!("{}: {cause}", self.database.url())))
    }
}
