//! The start mark: a claim is provisional until its run's start is durable (docs/design.md,
//! "Claims, start marks and takeover") — the run's `running` record in the ledger, and,
//! for a claim won from a coordinator that keeps start marks, the mark beside the claim.
//! The run starts only once both are made, the ledger's first: a claim marked started
//! always has its `running` record, so a replica killed between the two leaves an
//! unmarked claim, which is taken over (and its record says so), never a marked claim
//! without a record, which nobody would take over or record. The marks of runs starting
//! together go out together: the ledger's in the outbox's batches, the coordinator's in
//! one call per batch of starts ([`StartMarks`](super::marks::StartMarks)).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

use super::timeout;
use crate::clock::later;
use crate::coordinator::{Coordinator, CoordinatorError, MAX_CLAIMS_PER_ROUND_TRIP, StartMark};
use crate::engine::shared::Shared;
use crate::ledger::{LedgerWrite, Outcome, RunRecord};

/// Why a run's start could not be marked: it does not start, and is recorded with this
/// outcome and reason.
pub(crate) type Unmarked = (Outcome, String);

/// Makes `record` (a run's `running` record) durable and then, when `claim` names the
/// trigger key of a claim won from the coordinator, marks that claim's start; `Err` with
/// the outcome and reason when the run must not start: a mark not made within the
/// start-mark timeout (fail closed), or a claim another replica took over first.
pub(crate) async fn mark_start(
    shared: &Arc<Shared>,
    record: RunRecord,
    claim: Option<&str>,
) -> Result<(), Unmarked> {
    let job = record.job.clone();
    mark_in_ledger(shared, record).await?;
    match (claim, &shared.coordinator) {
        (Some(key), Some(coordinator)) if coordinator.keeps_start_marks() => {
            mark_in_coordinator(shared, coordinator, job, key).await
        }
        _ => Ok(()),
    }
}

/// Marks the claim of `key` (when it is one won from the coordinator) as settled without a
/// run — a trigger skipped on purpose after its claim was won (its overlap policy) — so
/// that no replica takes it over and runs it once this one has gone. A mark that fails is
/// logged: the claim may then be run late by another replica.
pub(crate) async fn settle_start(shared: &Arc<Shared>, key: Option<&str>, job: &crate::job::Job) {
    let (Some(key), Some(coordinator)) = (key, &shared.coordinator) else { return };
    if !coordinator.keeps_start_marks() {
        return;
    }
    if let Err((_, reason)) = mark_in_coordinator(shared, coordinator, job.name.clone(), key).await {
        tracing::warn!(job = %job.name, key, "{reason}");
    }
}

/// Queues `record` and waits until the ledger has taken it, for at most the start-mark
/// timeout.
async fn mark_in_ledger(shared: &Shared, record: RunRecord) -> Result<(), Unmarked> {
    let taken = shared.outbox.push_mark(LedgerWrite::Append(record));
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

/// Marks the start of this replica's claim of `key` in the coordinator, batched with the
/// other starts of the moment.
async fn mark_in_coordinator(
    shared: &Arc<Shared>,
    coordinator: &Arc<dyn Coordinator>,
    job: Arc<str>,
    key: &str,
) -> Result<(), Unmarked> {
    let (answer, answered) = oneshot::channel();
    let send = { shared.start_marks.lock().push(job, key.into(), answer) };
    if send {
        tokio::spawn(send_marks(shared.clone(), coordinator.clone()));
    }
    let unavailable = |e: String| {
        let reason =
            format!("the claim's start mark was not made in the {} coordinator: {e}", coordinator.name());
        (Outcome::SkippedBackendUnavailable, reason)
    };
    match answered.await {
        Ok(Ok(true)) => Ok(()),
        Ok(Ok(false)) => Err((
            Outcome::SkippedLost,
            "another replica took the claim over before this one marked its start: not started here".into(),
        )),
        Ok(Err(e)) => Err(unavailable(e)),
        Err(_) => Err(unavailable("the scheduler stopped".into())),
    }
}

/// Sends the queued marks, a call per chunk of [`MAX_CLAIMS_PER_ROUND_TRIP`], until none
/// is left ([`send_chunk`]).
async fn send_marks(shared: Arc<Shared>, coordinator: Arc<dyn Coordinator>) {
    loop {
        let batch = shared.start_marks.lock().take(MAX_CLAIMS_PER_ROUND_TRIP);
        if batch.is_empty() {
            return;
        }
        let marks: Vec<StartMark<'_>> = batch.iter().map(|(job, key, _)| StartMark { job, key }).collect();
        let waiting = || batch.iter().any(|(_, _, answer)| !answer.is_closed());
        let answers = send_chunk(&shared, coordinator.as_ref(), &marks, waiting).await;
        for (index, (_, _, answer)) in batch.into_iter().enumerate() {
            let answer_of = match &answers {
                Ok(answers) => Ok(answers.get(index).copied().unwrap_or(false)),
                Err(e) => Err(format!("{e} ({})", e.kind())),
            };
            let _ = answer.send(answer_of);
        }
    }
}

/// The first wait before a mark call is sent again; it doubles up to a second.
const MARK_RETRY_MIN: Duration = Duration::from_millis(50);

/// One call for `marks`, waited for until the start-mark timeout (a mark call is not cut
/// short at the claim timeout: a slow answer is still an answer), sent again (a mark is
/// idempotent) after a failure, while a run still `waiting` for them: a busy or briefly
/// unreachable coordinator delays the runs rather than failing them.
async fn send_chunk(
    shared: &Shared,
    coordinator: &dyn Coordinator,
    marks: &[StartMark<'_>],
    waiting: impl Fn() -> bool,
) -> Result<Vec<bool>, CoordinatorError> {
    let clock = shared.clock.as_ref();
    let (timeout, started) = (shared.settings.start_mark_timeout, clock.now());
    let deadline = later(started, timeout);
    let mut wait = MARK_RETRY_MIN;
    loop {
        let left = Duration::try_from(clock.now().duration_until(deadline)).unwrap_or_default();
        let answer = timeout::within(clock, left, coordinator.mark_starts(&shared.instance, marks)).await;
        let next = later(clock.now(), wait);
        match answer {
            Ok(answers) => return Ok(answers),
            Err(e) if next >= deadline || !waiting() => return Err(e),
            Err(e) => tracing::debug!(marks = marks.len(), "start marks not made ({e}); sending them again"),
        }
        clock.sleep_until(next).await;
        wait = (wait * 2).min(Duration::from_secs(1));
    }
}
