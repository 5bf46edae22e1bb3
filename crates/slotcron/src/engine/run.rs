//! One trigger, start to finish: claim, run the handler under its timeout, record.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use jiff::Timestamp;
use tokio_util::sync::CancellationToken;

use super::Shared;
use super::table::{Action, Due};
use super::trigger::{claim_ttl, trigger_key};
use crate::context::JobContext;
use crate::coordinator::{Claim, ClaimOutcome};
use crate::job::{BoxError, Job};
use crate::ledger::{Outcome, RunRecord};

/// Signals from the engine to the runs it started.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunControl {
    /// Cooperative stop: the parent of every run's cancellation token.
    pub shutdown: CancellationToken,
    /// Hard stop: runs drop their handler's future and record `aborted`.
    pub abort: CancellationToken,
}

/// Handles one due item to the end, including its ledger record and log line.
///
/// The run's state is boxed when it starts, so a task that waits in the runtime's queue
/// holds only its arguments: a burst of thousands of triggers stays small in memory.
pub(crate) async fn execute(shared: Arc<Shared>, due: Due, control: RunControl) {
    Box::pin(execute_started(shared, due, control)).await;
}

async fn execute_started(shared: Arc<Shared>, due: Due, control: RunControl) {
    let Due { job, trigger, next, action } = due;
    let record = match action {
        Action::Missed { count } => {
            let reason = format!(
                "{count} trigger(s) noticed after the {:?} grace window, up to this one; misfire policy {}",
                job.grace,
                job.misfire.name()
            );
            shared.record(
                &job,
                trigger,
                Outcome::Missed,
                None,
                shared.clock.now(),
                Duration::ZERO,
                Some(reason),
            )
        }
        Action::Run => claim_and_run(&shared, &job, trigger, next, &control).await,
    };
    shared.finish(&job, record).await;
}

async fn claim_and_run(
    shared: &Shared,
    job: &Arc<Job>,
    trigger: Timestamp,
    next: Option<Timestamp>,
    control: &RunControl,
) -> RunRecord {
    let kind = job.schedule.kind();
    let key = trigger_key(&job.name, kind, trigger);
    let claim = Claim {
        job: &job.name,
        trigger,
        key: &key,
        instance: &shared.instance,
        ttl: claim_ttl(trigger, next, kind.is_one_shot(), shared.settings.slack),
    };
    let asked = shared.clock.now();
    let claimed = {
        let mut claiming = shared.coordinator.claim(&claim);
        // Most claims answer at once (always, in-process): arm the timeout only if not.
        match (&mut claiming).now_or_never() {
            Some(claimed) => claimed.map_err(|e| e.to_string()),
            None => tokio::select! {
                biased;
                claimed = claiming => claimed.map_err(|e| e.to_string()),
                () = shared.clock.sleep_until(asked + shared.settings.claim_timeout) => {
                    Err(format!("no answer within the claim timeout of {:?}", shared.settings.claim_timeout))
                }
            },
        }
    };
    let fencing_token = match claimed {
        Ok(ClaimOutcome::Won { fencing_token }) => fencing_token,
        Ok(ClaimOutcome::Lost) => {
            return shared.record(job, trigger, Outcome::SkippedLost, None, asked, Duration::ZERO, None);
        }
        Err(e) => {
            let reason = format!("{} coordinator: {e}", shared.coordinator.name());
            let outcome = Outcome::SkippedBackendUnavailable;
            return shared.record(job, trigger, outcome, None, asked, Duration::ZERO, Some(reason));
        }
    };
    // Remembered before the handler runs: a one-shot runs at most once even if the
    // process dies during the run.
    shared.save_state(job, trigger, None).await;
    let ctx = JobContext {
        job: job.name.clone(),
        trigger,
        trigger_key: key.into(),
        instance: shared.instance.clone(),
        fencing_token,
        // Only a run with a timeout can be cancelled on its own.
        cancel: if job.timeout.is_some() { control.shutdown.child_token() } else { control.shutdown.clone() },
        payload: job.payload.clone(),
    };
    let started = shared.clock.now();
    let (outcome, error) = run_handler(shared, job, ctx, started, control).await;
    let duration = Duration::try_from(started.duration_until(shared.clock.now())).unwrap_or_default();
    shared.record(job, trigger, outcome, Some(fencing_token), started, duration, error)
}

/// Runs the handler, catching errors and panics, and enforcing the timeout.
async fn run_handler(
    shared: &Shared,
    job: &Job,
    ctx: JobContext,
    started: Timestamp,
    control: &RunControl,
) -> (Outcome, Option<String>) {
    let cancel = ctx.cancel.clone();
    let call = std::panic::catch_unwind(AssertUnwindSafe(|| job.handler.call(ctx)));
    let mut run = match call {
        Ok(run) => AssertUnwindSafe(run).catch_unwind(),
        Err(panic) => return (Outcome::Panicked, Some(panic_message(panic.as_ref()))),
    };
    let timeout = async {
        match job.timeout {
            Some(timeout) => shared.clock.sleep_until(started + timeout).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        biased;
        result = &mut run => return finished(result),
        () = control.abort.cancelled() => return aborted(),
        () = timeout => {}
    }
    // Timed out: ask the handler to stop, then drop it after the grace period.
    cancel.cancel();
    let grace = shared.settings.cancel_grace;
    let reason = format!("timed out after {:?}", job.timeout.unwrap_or_default());
    tokio::select! {
        biased;
        _ = &mut run => {}
        () = control.abort.cancelled() => {}
        () = shared.clock.sleep_until(shared.clock.now() + grace) => {}
    }
    (Outcome::TimedOut, Some(reason))
}

fn finished(result: Result<Result<(), BoxError>, Box<dyn Any + Send>>) -> (Outcome, Option<String>) {
    match result {
        Ok(Ok(())) => (Outcome::Succeeded, None),
        Ok(Err(error)) => (Outcome::Failed, Some(error_chain(error.as_ref()))),
        Err(panic) => (Outcome::Panicked, Some(panic_message(panic.as_ref()))),
    }
}

fn aborted() -> (Outcome, Option<String>) {
    (Outcome::Aborted, Some("the scheduler shut down before the run finished".into()))
}

/// An error and its sources, joined with `: `.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    let message = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    format!("panicked: {message}")
}
