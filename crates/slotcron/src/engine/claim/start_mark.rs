//! The start mark: a claim is provisional until its run's start is durable (docs/design.md,
//! "Claims, start marks and takeover") — the run's `running` record in the ledger, and,
//! for a claim won from a coordinator that keeps start marks, the mark beside the claim.
//! The run starts only once both are made, the ledger's first: a claim marked started
//! always has its `running` record, so a replica killed between the two leaves an
//! unmarked claim, which is taken over (and its record says so), never a marked claim
//! without a record, which nobody would take over or record. The starts of runs starting
//! together are marked together ([`StartMarks`](super::marks::StartMarks)): a sender
//! takes a batch of them, queues their records in the outbox as one group (written a
//! batch per round trip), waits for the ledger to take them, marks their claims in one
//! coordinator call, then answers each run once. The runs of claims won in one batch
//! are marked as one group before they are spawned ([`mark_group`]): no queue, no
//! channel and no second wake-up per run.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

use super::marks::{ClaimMark, Queued, Unmarked};
use super::timeout;
use crate::clock::later;
use crate::coordinator::{CoordinatorError, CountedMark, MAX_CLAIMS_PER_ROUND_TRIP, StartMark};
use crate::engine::limits;
use crate::engine::shared::Shared;
use crate::job::Job;
use crate::ledger::{LedgerWrite, Outcome, RunRecord};

/// Makes `record` (a run's `running` record) durable and then, when `claim` names the
/// trigger key of a claim won from the coordinator, marks that claim's start; `Err` with
/// the outcome and reason when the run must not start: a mark not made within the
/// start-mark timeout (fail closed), a claim another replica took over first, or one
/// whose mark counts a run of `job` past its `max_runs` ([`limits`]).
pub(crate) async fn mark_start(
    shared: &Arc<Shared>,
    job: &Job,
    record: RunRecord,
    claim: Option<&str>,
) -> Result<(), Unmarked> {
    let claim = claim.filter(|_| keeps_marks(shared)).map(|key| ClaimMark {
        job: record.job.clone(),
        key: Box::from(key),
        max_runs: limits::counted_against(job, key),
    });
    queue(shared, Some(record), claim).await
}

/// Marks the claim of `key` (when it is one won from the coordinator) as settled without a
/// run — a trigger skipped on purpose after its claim was won (its overlap policy) — so
/// that no replica takes it over and runs it once this one has gone. A mark that fails is
/// logged: the claim may then be run late by another replica.
pub(crate) async fn settle_start(shared: &Arc<Shared>, key: Option<&str>, job: &crate::job::Job) {
    let Some(key) = key.filter(|_| keeps_marks(shared)) else { return };
    let claim = ClaimMark { job: job.name.clone(), key: key.into(), max_runs: None };
    if let Err((_, reason)) = queue(shared, None, Some(claim)).await {
        tracing::warn!(job = %job.name, key, "{reason}");
    }
}

/// Whether this scheduler's coordinator keeps start marks.
fn keeps_marks(shared: &Shared) -> bool {
    shared.coordinator.as_ref().is_some_and(|coordinator| coordinator.keeps_start_marks())
}

/// Queues a start (starting a sender if fewer than the most are at work) and waits for
/// its answer.
async fn queue(
    shared: &Arc<Shared>,
    record: Option<RunRecord>,
    claim: Option<ClaimMark>,
) -> Result<(), Unmarked> {
    let (answer, answered) = oneshot::channel();
    let send = { shared.start_marks.lock().push(Queued { record, claim, answer }) };
    if send {
        tokio::spawn(send_marks(shared.clone()));
    }
    let stopped = || {
        (
            Outcome::SkippedBackendUnavailable,
            "the run's start mark was not made: the scheduler stopped".into(),
        )
    };
    answered.await.unwrap_or_else(|_| Err(stopped()))
}

/// Marks the queued starts, a batch of up to [`MAX_CLAIMS_PER_ROUND_TRIP`] at a time, until
/// none is left.
async fn send_marks(shared: Arc<Shared>) {
    loop {
        let batch = shared.start_marks.lock().take(MAX_CLAIMS_PER_ROUND_TRIP);
        if batch.is_empty() {
            return;
        }
        mark_batch(&shared, batch).await;
    }
}

/// The starts of `batch`: their records in the ledger, then their claims in the
/// coordinator; each start answered once.
async fn mark_batch(shared: &Shared, mut batch: Vec<Queued>) {
    let records: Vec<RunRecord> = batch.iter_mut().filter_map(|queued| queued.record.take()).collect();
    let claims: Vec<Option<ClaimMark>> = batch.iter_mut().map(|queued| queued.claim.take()).collect();
    let waiting = || batch.iter().any(|queued| !queued.answer.is_closed());
    let answers = mark_all(shared, records, &claims, waiting).await;
    for (queued, answer) in batch.into_iter().zip(answers) {
        let _ = queued.answer.send(answer);
    }
}

/// Marks the starts of runs whose claims were won together, as one group: `starts`
/// pairs each run's `running` record with its job and trigger key, all written as
/// [`mark_start`] writes one, in one ledger group and one coordinator call (at most
/// [`MAX_CLAIMS_PER_ROUND_TRIP`]), without a queue or a channel per run. One answer per
/// start, in order. None of them counts a run: a job with `max_runs` marks its runs'
/// starts one at a time ([`marks_with_batch`](crate::engine::run::marks_with_batch)).
pub(crate) async fn mark_group(
    shared: &Shared,
    starts: Vec<(RunRecord, Box<str>)>,
) -> Vec<Result<(), Unmarked>> {
    let marks = keeps_marks(shared);
    let (records, claims): (Vec<RunRecord>, Vec<_>) = starts
        .into_iter()
        .map(|(record, key)| {
            let claim = marks.then(|| ClaimMark { job: record.job.clone(), key, max_runs: None });
            (record, claim)
        })
        .unzip();
    mark_all(shared, records, &claims, || true).await
}

/// The records in the ledger, then the `claims` (one per start, `None` where there is
/// none to mark) in the coordinator, while a start is still `waiting`: the plain marks in
/// one call, those counting a run ([`limits`]) in another; one answer per claim, in
/// order.
async fn mark_all(
    shared: &Shared,
    records: Vec<RunRecord>,
    claims: &[Option<ClaimMark>],
    waiting: impl Fn() -> bool,
) -> Vec<Result<(), Unmarked>> {
    if let Err(unmarked) = mark_records(shared, records).await {
        return claims.iter().map(|_| Err(unmarked.clone())).collect();
    }
    let Some(coordinator) = shared.coordinator.as_deref() else {
        return claims.iter().map(|_| Ok(())).collect();
    };
    fn mark(claim: &ClaimMark) -> StartMark<'_> {
        StartMark { job: &claim.job, key: &claim.key }
    }
    let plain: Vec<StartMark<'_>> =
        claims.iter().flatten().filter(|c| c.max_runs.is_none()).map(mark).collect();
    let counted: Vec<CountedMark<'_>> = claims
        .iter()
        .flatten()
        .filter_map(|c| Some(CountedMark { mark: mark(c), max_runs: c.max_runs? }))
        .collect();
    let instance = &*shared.instance;
    let plain_answers = if plain.is_empty() {
        Ok(Vec::new())
    } else {
        send_chunk(shared, || coordinator.mark_starts(instance, &plain), &waiting).await
    };
    let counted_answers = if counted.is_empty() {
        Ok(Vec::new())
    } else {
        send_chunk(shared, || coordinator.mark_counted_starts(instance, &counted), &waiting).await
    };
    let mut plain = answers(shared, plain_answers, plain.len());
    let mut counted = answers(shared, counted_answers, counted.len());
    claims
        .iter()
        .map(|claim| match claim {
            None => Ok(()),
            Some(ClaimMark { max_runs: None, .. }) => match plain.next() {
                Some(Ok(true)) => Ok(()),
                Some(Err(unmarked)) => Err(unmarked),
                _ => Err(taken_over()),
            },
            Some(ClaimMark { max_runs: Some(max_runs), .. }) => match counted.next() {
                Some(Ok(answer)) => limits::answer(answer, *max_runs),
                Some(Err(unmarked)) => Err(unmarked),
                None => Err(taken_over()),
            },
        })
        .collect()
}

/// The answers of one mark call for `n` claims, one per claim: each claim's error when
/// the call failed.
fn answers<T>(
    shared: &Shared,
    answers: Result<Vec<T>, CoordinatorError>,
    n: usize,
) -> std::vec::IntoIter<Result<T, Unmarked>> {
    let answers: Vec<Result<T, Unmarked>> = match answers {
        Ok(answers) => answers.into_iter().map(Ok).collect(),
        Err(e) => {
            let unmarked = unavailable(shared, format!("{e} ({})", e.kind()));
            (0..n).map(|_| Err(unmarked.clone())).collect()
        }
    };
    answers.into_iter()
}

/// Why a run whose claim another replica took over before its start mark does not start.
pub(crate) fn taken_over() -> Unmarked {
    (
        Outcome::SkippedLost,
        "another replica took the claim over before this one marked its start: not started here".into(),
    )
}

/// A claim's start mark not made in the coordinator, for `reason`.
fn unavailable(shared: &Shared, reason: String) -> Unmarked {
    let name = shared.coordinator.as_ref().map_or("", |coordinator| coordinator.name());
    (
        Outcome::SkippedBackendUnavailable,
        format!("the claim's start mark was not made in the {name} coordinator: {reason}"),
    )
}

/// Makes `records` (runs' `running` records) durable: queues them in the outbox as one
/// group and waits until the ledger has taken them, for at most the start-mark timeout.
/// The first half of every start mark; the whole of it for the claims ahead of an
/// instant, whose owner's start of the instant marks their claims together (the fleet's
/// claims ahead).
pub(crate) async fn mark_records(shared: &Shared, records: Vec<RunRecord>) -> Result<(), Unmarked> {
    if records.is_empty() {
        return Ok(());
    }
    let taken = shared.outbox.push_marks(records.into_iter().map(LedgerWrite::Append).collect());
    let timeout = shared.settings.start_mark_timeout;
    let deadline = later(shared.clock.now(), timeout);
    let marked = tokio::select! {
        biased;
        taken = taken => taken.is_ok(),
        () = shared.clock.sleep_until(deadline) => false,
    };
    if marked {
        return Ok(());
    }
    let reason = format!(
        "the run's start mark (its `running` record) was not in the ledger within {timeout:?}: \
         not started, since a run whose start is not durable could be lost without a record"
    );
    Err((Outcome::SkippedBackendUnavailable, reason))
}

/// The first wait before a mark call is sent again; it doubles up to a second.
const MARK_RETRY_MIN: Duration = Duration::from_millis(50);

/// One call for `marks`, waited for until the start-mark timeout (a mark call is not cut
/// short at the claim timeout: a slow answer is still an answer), sent again (a mark is
/// idempotent) after a failure, while a run still `waiting` for them: a busy or briefly
/// unreachable coordinator delays the runs rather than failing them.
async fn send_chunk<T, F: Future<Output = Result<Vec<T>, CoordinatorError>>>(
    shared: &Shared,
    call: impl Fn() -> F,
    waiting: impl Fn() -> bool,
) -> Result<Vec<T>, CoordinatorError> {
    let clock = shared.clock.as_ref();
    let (timeout, started) = (shared.settings.start_mark_timeout, clock.now());
    let deadline = later(started, timeout);
    let mut wait = MARK_RETRY_MIN;
    loop {
        let left = Duration::try_from(clock.now().duration_until(deadline)).unwrap_or_default();
        let answer = timeout::within(clock, left, call()).await;
        let next = later(clock.now(), wait);
        match answer {
            Ok(answers) => return Ok(answers),
            Err(e) if next >= deadline || !waiting() => return Err(e),
            Err(e) => tracing::debug!("start marks not made ({e}); sending them again"),
        }
        clock.sleep_until(next).await;
        wait = (wait * 2).min(Duration::from_secs(1));
    }
}
