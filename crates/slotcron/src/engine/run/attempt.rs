//! One attempt of a handler: called, caught if it panics, bounded by its timeout and
//! the cancel grace, and what its result means for the run.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;

use futures_util::FutureExt;
use jiff::Timestamp;
use tokio_util::sync::CancellationToken;

use crate::clock::later;
use crate::context::JobContext;
use crate::engine::scope::RunScope;
use crate::engine::shared::Shared;
use crate::error::{BoxError, error_chain};
use crate::job::{Job, StoppedByShutdown};
use crate::ledger::Outcome;
use crate::policy::{AttemptResult, Permanent};

/// One log line per attempt of a job that may retry: attempt number `attempt` of `of`
/// (the job's attempts, or one more for a rerun after an interrupted last attempt, which
/// runs once more).
pub(super) fn log_attempt(job: &Job, trigger: Timestamp, (attempt, of): (u32, u32), result: &AttemptResult) {
    let (job, outcome) = (&*job.name, result.outcome.as_str());
    match &result.error {
        None => tracing::info!(job, %trigger, attempt, of, outcome, "attempt finished"),
        Some(err) => tracing::warn!(job, %trigger, attempt, of, outcome, err, "attempt finished"),
    }
}

/// Resolves once `job` is removed with its runs cancelled.
async fn runs_cancelled(shared: &Shared, job: &Job) {
    loop {
        let mut notified = std::pin::pin!(shared.runs_cancelled.notified());
        // Waiting before the look: a removal between the two is not missed.
        notified.as_mut().enable();
        if job.runs_cancelled.load(Ordering::SeqCst) {
            return;
        }
        notified.await;
    }
}

/// Runs one attempt of the handler, catching errors and panics, and enforcing the
/// timeout; `stopped` fires when the overlap lease stops the run (lost, or replaced),
/// `cancelled` when an operator cancels it (and `stopped` with it): the handler then gets
/// the cancel grace to stop before it is dropped, as at a timeout.
pub(super) async fn run_handler(
    scope: &RunScope,
    job: &Job,
    ctx: JobContext,
    (stopped, cancelled): (&CancellationToken, &CancellationToken),
    started: Timestamp,
) -> AttemptResult {
    let (shared, abort) = (&scope.shared, &scope.abort);
    let cancel = ctx.own_cancel.clone();
    let call = std::panic::catch_unwind(AssertUnwindSafe(|| job.handler.call(ctx)));
    let mut run = match call {
        Ok(run) => AssertUnwindSafe(run).catch_unwind(),
        Err(panic) => return ended(Outcome::Panicked, Some(panic_message(panic.as_ref()))),
    };
    let timeout = async {
        match job.timeout() {
            Some(timeout) => shared.clock.sleep_until(later(started, timeout)).await,
            None => std::future::pending().await,
        }
    };
    let why = tokio::select! {
        biased;
        result = &mut run => return finished(result),
        () = abort.cancelled() => return aborted(),
        () = timeout => Why::TimedOut,
        () = runs_cancelled(shared, job) => Why::Removed,
        () = cancelled.cancelled() => Why::Cancelled,
        () = stopped.cancelled() => Why::Stopped,
    };
    // Ask the handler to stop, then drop it after the grace period.
    cancel.cancel();
    let grace = shared.settings.cancel_grace;
    let result = tokio::select! {
        biased;
        result = &mut run => Some(result),
        () = abort.cancelled() => None,
        () = shared.clock.sleep_until(later(shared.clock.now(), grace)) => None,
    };
    match (why, result) {
        (Why::TimedOut, _) => {
            let reason = format!("timed out after {:?}", job.timeout().unwrap_or_default());
            AttemptResult { outcome: Outcome::TimedOut, error: Some(reason), retryable: true }
        }
        // Cancelled, it stopped when asked (whatever it returned: an `Ok` too): cancelled,
        // with its own error if any.
        (Why::Cancelled, Some(result)) => ended(Outcome::Cancelled, finished(result).error),
        // It stopped when asked: its own result, not retried.
        (_, Some(result)) => AttemptResult { retryable: false, ..finished(result) },
        (Why::Removed, None) => ended(
            Outcome::Aborted,
            Some(format!("the job was removed and its run cancelled; dropped after {grace:?}")),
        ),
        (Why::Cancelled, None) => ended(
            Outcome::Cancelled,
            Some(format!("cancelled, and did not stop within the cancel grace of {grace:?}; dropped")),
        ),
        (Why::Stopped, None) => ended(
            Outcome::Failed,
            Some(format!("did not stop within the cancel grace of {grace:?}; dropped")),
        ),
    }
}

/// Why an attempt was asked to stop.
enum Why {
    TimedOut,
    /// Its job was removed with its runs cancelled.
    Removed,
    /// The overlap lease stopped it (lost, or replaced).
    Stopped,
    /// An operator cancelled it.
    Cancelled,
}

/// An attempt that is not retried.
fn ended(outcome: Outcome, error: Option<String>) -> AttemptResult {
    AttemptResult { outcome, error, retryable: false }
}

fn finished(result: Result<Result<(), BoxError>, Box<dyn Any + Send>>) -> AttemptResult {
    match result {
        Ok(Ok(())) => ended(Outcome::Succeeded, None),
        Ok(Err(error)) if StoppedByShutdown::marks(&error) => {
            ended(Outcome::Aborted, Some(error_chain(error.as_ref())))
        }
        Ok(Err(error)) => AttemptResult {
            outcome: Outcome::Failed,
            retryable: !Permanent::marks(&error),
            error: Some(error_chain(error.as_ref())),
        },
        Err(panic) => ended(Outcome::Panicked, Some(panic_message(panic.as_ref()))),
    }
}

fn aborted() -> AttemptResult {
    ended(Outcome::Aborted, Some("the scheduler shut down before the run finished".into()))
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    let message = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    format!("panicked: {message}")
}
