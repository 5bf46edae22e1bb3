//! Start marks and takeover ([`Coordinator`](slotcron::Coordinator)'s "Start marks and
//! takeover") on Redis: the start script (`start.lua`) over the claims' trigger keys and
//! their holders' registers of unstarted claims ([`KeyLayout::unstarted`]).

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use futures_util::future::join_all;
use redis::Script;
use slotcron::{
    ClaimOutcome, CoordinatorError, CountedAnswer, CountedMark, MAX_CLAIMS_PER_ROUND_TRIP, StartMark,
    TriggerRef, Unstarted,
};

use crate::claimant::Token;
use crate::coordinator::{RedisCoordinator, ceil_ms, outcome_unknown, slot_groups};
use crate::keys::KeyLayout;

static START: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("start.lua")));
static MARK: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("mark.lua")));

/// How long a claim holds that is made again by a start mark or a takeover after its hold
/// ended unmarked (its key expired; its register entry stayed): a day, or the one-shot
/// retention if longer. Nobody else can have claimed the trigger meanwhile (a claim won
/// rewrites the register entry), so the claim is made again to keep its key taken while
/// the late run goes on; the job's high-water mark refuses a recurring trigger that old
/// anyway, and for a manual run or a one-shot retained for a while, a day is longer than a
/// run has any business lasting.
const AFRESH_HOLD: Duration = Duration::from_secs(24 * 3600);

/// One claim as the start script takes it: its job and engine trigger key.
type Item<'a> = (&'a str, &'a str);

/// An operation of the start script: `mark` for `instance` (counting a run against
/// each claim's `max_runs` when counted), or `take` from one instance to another.
#[derive(Clone, Copy)]
pub(crate) enum Op<'a> {
    Mark { instance: &'a str },
    Count { instance: &'a str, max_runs: &'a [u64] },
    Take { from: &'a str, to: &'a str },
}

impl<'a> Op<'a> {
    /// The operation for the items `start..start + len` of a call's items.
    fn chunk(self, start: usize, len: usize) -> Self {
        match self {
            Op::Count { instance, max_runs } => {
                Op::Count { instance, max_runs: &max_runs[start..start + len] }
            }
            op => op,
        }
    }
}

impl RedisCoordinator {
    /// [`Coordinator::mark_starts`](slotcron::Coordinator::mark_starts): the script's
    /// `mark`, grouped as [`RedisCoordinator::start_batch`] says.
    pub(crate) async fn mark_starts_of(
        &self,
        instance: &str,
        marks: &[StartMark<'_>],
    ) -> Result<Vec<bool>, CoordinatorError> {
        let items: Vec<(&str, &str)> = marks.iter().map(|m| (m.job, m.key)).collect();
        if !self.keys.unstarted_per_instance() {
            let answers = self.start_batch(Op::Mark { instance }, &items).await;
            return answers.into_iter().map(|a| a.map(|a| a == 1)).collect();
        }
        let mut answers = Vec::with_capacity(items.len());
        for chunk in items.chunks(MAX_CLAIMS_PER_ROUND_TRIP) {
            answers.extend(self.mark_chunk(instance, chunk).await?);
        }
        Ok(answers)
    }

    /// On one server, one call of the mark script (`mark.lua`) for `chunk`; the claims
    /// whose key is gone then go through the start script's `mark`, which makes them again.
    async fn mark_chunk(&self, instance: &str, chunk: &[Item<'_>]) -> Result<Vec<bool>, CoordinatorError> {
        let mut script = MARK.prepare_invoke();
        script.key(self.keys.unstarted("", instance)).arg(instance);
        for (job, key) in chunk {
            script.key(self.keys.trigger(job, key)).arg(*key);
        }
        let what = || format!("mark of {} claims", chunk.len());
        let answers = self.invoke_idempotent(&script, chunk.len(), what).await?;
        let gone: Vec<Item<'_>> =
            chunk.iter().zip(&answers).filter(|(_, a)| **a < 0).map(|(i, _)| *i).collect();
        let mut afresh = if gone.is_empty() {
            Vec::new()
        } else {
            self.start_batch(Op::Mark { instance }, &gone)
                .await
                .into_iter()
                .collect::<Result<Vec<i64>, _>>()?
        }
        .into_iter();
        Ok(answers.into_iter().map(|a| if a < 0 { afresh.next() == Some(1) } else { a == 1 }).collect())
    }

    /// [`Coordinator::mark_counted_starts`](slotcron::Coordinator::mark_counted_starts):
    /// the start script's counted `mark` (never the mark script: the count is kept beside
    /// the claim by the start script alone), grouped as [`RedisCoordinator::start_batch`]
    /// says.
    pub(crate) async fn mark_counted_starts_of(
        &self,
        instance: &str,
        marks: &[CountedMark<'_>],
    ) -> Result<Vec<CountedAnswer>, CoordinatorError> {
        let items: Vec<Item<'_>> = marks.iter().map(|m| (m.mark.job, m.mark.key)).collect();
        let max_runs: Vec<u64> = marks.iter().map(|m| m.max_runs).collect();
        let answers = self.start_batch(Op::Count { instance, max_runs: &max_runs }, &items).await;
        answers
            .into_iter()
            .map(|answer| match answer? {
                1 => Ok(CountedAnswer::Marked),
                -3 => Ok(CountedAnswer::MaxRunsReached),
                _ => Ok(CountedAnswer::Lost),
            })
            .collect()
    }

    /// [`Coordinator::run_counts`](slotcron::Coordinator::run_counts): the size of each
    /// job's set of counted runs.
    pub(crate) async fn run_counts_of(&self, jobs: &[&str]) -> Result<Vec<u64>, CoordinatorError> {
        let keys: Vec<String> = jobs.iter().map(|job| self.keys.runs(job)).collect();
        self.connection.scard_each(&keys).await.map_err(|e| {
            CoordinatorError::unavailable(format!("reading the runs counted of {} jobs: {e}", jobs.len()))
        })
    }

    /// [`Coordinator::take_over`](slotcron::Coordinator::take_over): the script's `take`,
    /// grouped as [`RedisCoordinator::start_batch`] says.
    pub(crate) async fn take_over_of(
        &self,
        from: &str,
        to: &str,
        claims: &[TriggerRef<'_>],
    ) -> Vec<Result<ClaimOutcome, CoordinatorError>> {
        let items: Vec<(&str, &str)> = claims.iter().map(|c| (c.job, c.key)).collect();
        let answers = self.start_batch(Op::Take { from, to }, &items).await;
        answers.into_iter().zip(claims).map(|(answer, claim)| taken(answer, claim.key)).collect()
    }

    /// Runs `op` over `items`: chunks of [`MAX_CLAIMS_PER_ROUND_TRIP`], one after the
    /// other; per chunk, one script call on one server, or one per hash slot in a cluster,
    /// all in flight at once. One answer per item, in order.
    pub(crate) async fn start_batch(
        &self,
        op: Op<'_>,
        items: &[Item<'_>],
    ) -> Vec<Result<i64, CoordinatorError>> {
        let mut answers = Vec::with_capacity(items.len());
        for (n, chunk) in items.chunks(MAX_CLAIMS_PER_ROUND_TRIP).enumerate() {
            let op = op.chunk(n * MAX_CLAIMS_PER_ROUND_TRIP, chunk.len());
            let keys: Vec<String> = chunk.iter().map(|(job, key)| self.keys.trigger(job, key)).collect();
            let groups = slot_groups(&self.connection, &keys);
            let replies = join_all(groups.iter().map(|group| self.start_call(op, chunk, &keys, group))).await;
            let mut chunk_answers: Vec<Option<Result<i64, CoordinatorError>>> =
                (0..chunk.len()).map(|_| None).collect();
            for (group, reply) in groups.iter().zip(replies) {
                match reply {
                    Ok(values) => group.iter().zip(values).for_each(|(&i, v)| chunk_answers[i] = Some(Ok(v))),
                    Err(e) => group.iter().for_each(|&i| chunk_answers[i] = Some(Err(copy(&e)))),
                }
            }
            answers.extend(chunk_answers.into_iter().map(|answer| {
                answer.unwrap_or_else(|| Err(CoordinatorError::outcome_unknown("no answer for the claim")))
            }));
        }
        answers
    }

    /// One call of the start script over the items `group` of `chunk` (all on one slot in
    /// a cluster), whose trigger keys are `keys`; a lost reply is sent once more, since a
    /// mark and a takeover are both idempotent (same tokens), and is an error of kind
    /// `OutcomeUnknown` the second time.
    async fn start_call(
        &self,
        op: Op<'_>,
        chunk: &[Item<'_>],
        keys: &[String],
        group: &[usize],
    ) -> Result<Vec<i64>, CoordinatorError> {
        let token = Token::several(1)
            .map_err(|e| CoordinatorError::unavailable(format!("no random claim token: {e}")))?
            .remove(0);
        let hold = self.one_shot_retention.map_or(AFRESH_HOLD, |retention| retention.max(AFRESH_HOLD));
        let mut script = START.prepare_invoke();
        let (name, first, second) = match op {
            Op::Mark { instance } | Op::Count { instance, .. } => ("mark", instance, ""),
            Op::Take { from, to } => ("take", from, to),
        };
        // A counted mark's third argument: each claim's max_runs, in the call's order.
        let third = match op {
            Op::Count { max_runs, .. } => {
                group.iter().map(|&i| max_runs[i].to_string()).collect::<Vec<_>>().join(" ")
            }
            _ => second.to_owned(),
        };
        script.arg(name).arg(first).arg(third).arg(ceil_ms(hold)).arg(token.to_string());
        let to = if second.is_empty() { first } else { second };
        // One server: the same two registers for every claim, written out once.
        let shared = self.keys.unstarted_per_instance().then(|| registers(&self.keys, "", first, to));
        for &i in group {
            let (job, key) = chunk[i];
            let (from, to) = shared.clone().unwrap_or_else(|| registers(&self.keys, job, first, to));
            script.key(&keys[i]).key(self.keys.fencing(job)).key(&*from);
            match op {
                // A counted mark's fourth key: the job's set of counted runs.
                Op::Count { .. } => script.key(self.keys.runs(job)),
                _ => script.key(&*to),
            };
            script.arg(key);
        }
        let what = || format!("{name} of {} claims", group.len());
        self.invoke_idempotent(&script, group.len(), what).await
    }

    /// Calls `script`, which answers one integer for each of `n` claims and is idempotent:
    /// a lost reply is sent once more, and is an error of kind `OutcomeUnknown` the second
    /// time; `what` names the call in errors.
    async fn invoke_idempotent(
        &self,
        script: &redis::ScriptInvocation<'_>,
        n: usize,
        what: impl Fn() -> String,
    ) -> Result<Vec<i64>, CoordinatorError> {
        let mut lost = None;
        for _ in 0..2 {
            match self.connection.invoke::<Vec<i64>>(script).await {
                Ok(answers) if answers.len() == n => return Ok(answers),
                Ok(answers) => lost = Some(format!("{} answers to the {}", answers.len(), what())),
                Err(e) if outcome_unknown(&e) => lost = Some(format!("{}: {e}", what())),
                Err(e) => return Err(CoordinatorError::unavailable(format!("{}: {e}", what()))),
            }
        }
        Err(CoordinatorError::outcome_unknown(lost.unwrap_or_else(what)))
    }

    /// The claims `instance` holds unmarked: on one server its register, one `HGETALL`;
    /// in a cluster among `jobs`' registers, per chunk of [`MAX_CLAIMS_PER_ROUND_TRIP`]
    /// jobs one `HGETALL` per register, all in flight at once.
    pub(crate) async fn unstarted_of(
        &self,
        instance: &str,
        jobs: &[&str],
    ) -> Result<Vec<Unstarted>, CoordinatorError> {
        let failed = |registers: usize, e: redis::RedisError| {
            CoordinatorError::unavailable(format!("reading {registers} registers of unstarted claims: {e}"))
        };
        if self.keys.unstarted_per_instance() {
            let read = self.connection.hgetall_each(&[self.keys.unstarted("", instance)]).await;
            let entries = read.map_err(|e| failed(1, e))?.into_iter().flatten();
            return Ok(entries
                .filter(|(_, holder)| holder == instance)
                .map(|(key, _)| Unstarted { job: job_of(&key).to_owned(), key })
                .collect());
        }
        let mut unstarted = Vec::new();
        for chunk in jobs.chunks(MAX_CLAIMS_PER_ROUND_TRIP) {
            let registers: Vec<String> = chunk.iter().map(|job| self.keys.unstarted(job, instance)).collect();
            let read = self.connection.hgetall_each(&registers).await.map_err(|e| failed(chunk.len(), e))?;
            for (job, entries) in chunk.iter().zip(read) {
                let held = entries.into_iter().filter(|(_, holder)| holder == instance);
                unstarted.extend(held.map(|(key, _)| Unstarted { job: (*job).to_owned(), key }));
            }
        }
        Ok(unstarted)
    }
}

/// The job of an engine trigger key: `{job}:…`, or the job name alone (job names hold no
/// `:`; `slotcron::trigger_key`).
fn job_of(trigger_key: &str) -> &str {
    trigger_key.split_once(':').map_or(trigger_key, |(job, _)| job)
}

/// The registers of unstarted claims of `first` and `to` for `job`, shared by every use.
fn registers(keys: &KeyLayout, job: &str, first: &str, to: &str) -> (Arc<str>, Arc<str>) {
    (keys.unstarted(job, first).into(), keys.unstarted(job, to).into())
}

/// A takeover's answer: the fencing token when won, else lost; `-2`: the job's state is
/// not slotcron's.
pub(crate) fn taken(
    answer: Result<i64, CoordinatorError>,
    claim: &str,
) -> Result<ClaimOutcome, CoordinatorError> {
    match answer? {
        0 => Ok(ClaimOutcome::Lost),
        -2 => Err(CoordinatorError::unavailable(format!(
            "takeover of {claim} failed: its job's state holds a value slotcron did not write"
        ))),
        fencing_token => Ok(ClaimOutcome::Won { fencing_token: fencing_token as u64 }),
    }
}

/// The same error again, for each claim of a call that failed.
fn copy(error: &CoordinatorError) -> CoordinatorError {
    CoordinatorError::new(error.kind(), error.to_string())
}
