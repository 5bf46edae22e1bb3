//! One trigger, start to finish: claim, run the handler under its timeout, record.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use futures_util::FutureExt;
use jiff::Timestamp;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use super::Shared;
use super::later;
use super::skew::{self, Skew};
use super::table::{Action, Due};
use super::trigger::{claim_hold, job_run_budget};
use crate::context::JobContext;
use crate::coordinator::{Claim, ClaimOutcome, Coordinator, CoordinatorError, CoordinatorErrorKind};
use crate::job::{BoxError, Job};
use crate::ledger::{Cause, Outcome, RunRecord};
use crate::metrics::{ClaimResult, EngineSeries};

/// What the runs started by one [`Scheduler::run`](crate::Scheduler::run) share: the
/// scheduler and its stop signals, behind one reference count, so a burst of runs
/// touches one shared counter per run rather than one per field.
pub(crate) struct RunScope {
    pub shared: Arc<Shared>,
    /// Cooperative stop: every run's cancellation token is this one or its child.
    pub shutdown: CancellationToken,
    /// Hard stop: runs drop their handler's future and record `aborted`.
    pub abort: CancellationToken,
    /// Runs spawned but not yet started.
    waiting: AtomicUsize,
    /// Notified when `waiting` falls to [`RunScope::RESUME_AT`].
    drained: Notify,
}

impl RunScope {
    /// The engine stops spawning once this many runs wait to start...
    const PAUSE_ABOVE: usize = 128;
    /// ...and goes on once they are down to this many. A burst of thousands of triggers
    /// thus never queues more than a few hundred tasks: memory stays bounded, and the
    /// first runs are not held up behind the spawning of the last.
    const RESUME_AT: usize = 32;

    pub fn new(shared: Arc<Shared>) -> Self {
        Self {
            shared,
            shutdown: CancellationToken::new(),
            abort: CancellationToken::new(),
            waiting: AtomicUsize::new(0),
            drained: Notify::new(),
        }
    }

    /// Counts a run about to be spawned.
    pub fn spawning(&self) {
        self.waiting.fetch_add(1, Ordering::Relaxed);
    }

    fn started(&self) {
        if self.waiting.fetch_sub(1, Ordering::AcqRel) == Self::RESUME_AT + 1 {
            self.drained.notify_waiters();
        }
    }

    /// Waits while too many spawned runs have not started yet.
    pub async fn pace(&self) {
        loop {
            let drained = self.drained.notified();
            let mut drained = std::pin::pin!(drained);
            drained.as_mut().enable();
            if self.waiting.load(Ordering::Acquire) <= Self::PAUSE_ABOVE {
                return;
            }
            drained.await;
        }
    }
}

/// Handles one due item to the end, including its ledger record and log line.
///
/// The run's state is boxed when it starts, so a task that waits in the runtime's queue
/// holds only its arguments (and tokio moves less memory per spawn): a burst of
/// thousands of triggers stays small.
///
/// The run is a `tracing` span, `run`, carrying the job and the trigger, so the handler's
/// own events carry them too.
pub(crate) async fn execute(scope: Arc<RunScope>, due: Due) {
    scope.started();
    let span = tracing::info_span!("run", job = %due.job.name, trigger = %due.trigger);
    Box::pin(execute_started(scope, due)).instrument(span).await;
}

/// Handles several due items of one job (a catch-up) in trigger order: each claim, and
/// so each fencing token, is made after the previous item's, and each run's handler is
/// called before the next claim is made; the runs themselves then go on side by side in
/// tasks of `tracker`, as runs of separate triggers do.
pub(crate) async fn execute_in_order(scope: Arc<RunScope>, tracker: TaskTracker, items: Vec<Due>) {
    for due in items {
        scope.started();
        let Due { job, trigger, next, action, cause } = due;
        if removed(&job, trigger) {
            continue;
        }
        let started = match action {
            Action::Missed { count } => Err(missed(&scope.shared, &job, trigger, cause, count)),
            Action::Run => Box::pin(claim_and_start(&scope, &job, trigger, next, cause)).await,
        };
        match started {
            Err(record) => scope.shared.finish(&job, record).await,
            Ok(run) => {
                let scope = scope.clone();
                tracker.spawn(async move {
                    let record = Box::pin(run.finish(&scope, &job)).await;
                    scope.shared.finish(&job, record).await;
                });
            }
        }
    }
}

async fn execute_started(scope: Arc<RunScope>, due: Due) {
    let shared = &scope.shared;
    let Due { job, trigger, next, action, cause } = due;
    if removed(&job, trigger) {
        return;
    }
    let record = match action {
        Action::Missed { count } => missed(shared, &job, trigger, cause, count),
        Action::Run => match claim_and_start(&scope, &job, trigger, next, cause).await {
            Ok(run) => run.finish(&scope, &job).await,
            Err(skipped) => skipped,
        },
    };
    shared.finish(&job, record).await;
}

/// Whether `job` was removed before `trigger` started (logged): it does not run then.
fn removed(job: &Job, trigger: Timestamp) -> bool {
    let removed = job.removed.load(Ordering::SeqCst);
    if removed {
        tracing::info!(job = %job.name, %trigger, "job removed before this trigger started: not run");
    }
    removed
}

/// The record of `count` triggers the misfire policy dropped, up to `trigger`.
fn missed(shared: &Shared, job: &Job, trigger: Timestamp, cause: Cause, count: u64) -> RunRecord {
    let reason = format!(
        "{count} trigger(s) noticed after the {:?} grace window, up to this one; misfire policy {}",
        job.grace,
        job.misfire.name()
    );
    shared.skipped(job, trigger, cause, Outcome::Missed, Some(reason))
}

/// A run whose handler has been called: its future, awaited by [`Started::finish`].
struct Started {
    trigger: Timestamp,
    /// The run's record (written `running`), shared with its [`JobContext`].
    record: Arc<Mutex<RunRecord>>,
    started: Timestamp,
    cancel: CancellationToken,
    /// The handler's future, or the outcome of a handler that panicked when called.
    run: Result<HandlerRun, (Outcome, Option<String>)>,
}

type HandlerRun = futures_util::future::CatchUnwind<
    AssertUnwindSafe<futures_util::future::BoxFuture<'static, Result<(), BoxError>>>,
>;

/// Claims the trigger and calls the handler: the started run, or the record of the skip.
async fn claim_and_start(
    scope: &Arc<RunScope>,
    job: &Arc<Job>,
    trigger: Timestamp,
    next: Option<Timestamp>,
    cause: Cause,
) -> Result<Started, RunRecord> {
    let shared = &scope.shared;
    let kind = job.schedule.kind();
    let trigger_key = OnceLock::new();
    let fencing_token = match &shared.coordinator {
        // Single-replica mode, or a job every replica runs: nothing to claim.
        None => local_fencing_token(shared, job).await,
        Some(_) if job.every_replica => local_fencing_token(shared, job).await,
        Some(coordinator) => {
            let key =
                trigger_key.get_or_init(|| super::trigger_key(&job.name, kind, trigger).into_boxed_str());
            claim(shared, coordinator.as_ref(), job, trigger, next, cause, key).await?
        }
    };
    // Remembered before the handler runs: a one-shot runs at most once even if the
    // process dies during the run.
    shared.save_state(job, trigger, None).await;
    let record = Arc::new(Mutex::new(shared.start_run(job, trigger, cause, fencing_token)));
    let ctx = JobContext {
        job: job.name.clone(),
        trigger,
        kind,
        trigger_key,
        fencing_token,
        scope: scope.clone(),
        // Each run can be cancelled on its own: by its timeout, or by its job's removal.
        own_cancel: scope.shutdown.child_token(),
        payload: job.payload.clone(),
        record: record.clone(),
    };
    let started = lock(&record).started;
    let cancel = ctx.own_cancel.clone();
    let run = match std::panic::catch_unwind(AssertUnwindSafe(|| job.handler.call(ctx))) {
        Ok(run) => Ok(AssertUnwindSafe(run).catch_unwind()),
        Err(panic) => Err((Outcome::Panicked, Some(panic_message(panic.as_ref())))),
    };
    Ok(Started { trigger, record, started, cancel, run })
}

impl Started {
    /// Awaits the handler under its timeout; the run's record.
    async fn finish(self, scope: &RunScope, job: &Job) -> RunRecord {
        let shared = &scope.shared;
        let Self { trigger, record, started, cancel, run } = self;
        let lateness = trigger.duration_until(started);
        let series = shared.series();
        series.run_started(Duration::try_from(lateness).unwrap_or_default());
        let running = Running(series);
        let (outcome, error) = match run {
            Ok(run) => run_handler(scope, job, run, cancel, started).await,
            Err(panicked) => panicked,
        };
        drop(running);
        let duration = Duration::try_from(started.duration_until(shared.clock.now())).unwrap_or_default();
        let mut record = lock(&record).clone();
        record.outcome = outcome;
        record.duration = duration;
        record.error = error;
        record
    }
}

/// The run's record, shared with its [`JobContext`].
pub(crate) fn lock(record: &Mutex<RunRecord>) -> MutexGuard<'_, RunRecord> {
    record.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A started handler, counted in the running-runs gauge until dropped.
struct Running<'a>(&'a EngineSeries);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.run_ended();
    }
}

/// The next fencing token of a run that claims nothing: from the store, so tokens go on
/// growing after a restart. Without a store, or if it fails (logged), one more than the
/// last this process handed out (or took from the store).
async fn local_fencing_token(shared: &Shared, job: &Job) -> u64 {
    if shared.persist_state {
        match shared.store.next_fencing_token(&job.name).await {
            Ok(token) => {
                job.local_fencing.fetch_max(token, Ordering::Relaxed);
                return token;
            }
            Err(e) => tracing::warn!(job = %job.name, "{e}; fencing token counted in memory"),
        }
    }
    job.local_fencing.fetch_add(1, Ordering::Relaxed) + 1
}

/// Claims the trigger: the fencing token if won, else the record of the skip.
async fn claim(
    shared: &Shared,
    coordinator: &dyn Coordinator,
    job: &Job,
    trigger: Timestamp,
    next: Option<Timestamp>,
    cause: Cause,
    key: &str,
) -> Result<u64, RunRecord> {
    let kind = job.schedule.kind();
    let settings = &shared.settings;
    let budget = job_run_budget(job, settings.cancel_grace, settings.slack);
    let hold = claim_hold(trigger, next, kind.is_one_shot(), budget, settings.slack);
    let claim = Claim { job: &job.name, trigger, key, instance: &shared.instance, hold };
    if settings.check_clock_skew {
        match shared.skew.check(shared, coordinator).await {
            Ok(Skew::Within) => {}
            Ok(Skew::Beyond(offset)) => {
                let reason = skew::reason(coordinator, offset, settings.slack);
                return Err(shared.skipped(job, trigger, cause, Outcome::SkippedClockSkew, Some(reason)));
            }
            Err(e) => {
                shared.health.coordinator.store(false, Ordering::Relaxed);
                return Err(unclaimed(shared, coordinator, job, trigger, cause, &e));
            }
        }
    }
    let asked = shared.clock.now();
    let claimed = within_claim_timeout(shared, coordinator.claim(&claim)).await;
    let latency = Duration::try_from(asked.duration_until(shared.clock.now())).unwrap_or_default();
    shared.health.coordinator.store(claimed.is_ok(), Ordering::Relaxed);
    let result = match claimed {
        Ok(ClaimOutcome::Won { .. }) => ClaimResult::Won,
        Ok(ClaimOutcome::Lost | ClaimOutcome::BehindMark) => ClaimResult::Lost,
        Err(_) => ClaimResult::Error,
    };
    shared.series().claim(result, latency);
    match claimed {
        Ok(ClaimOutcome::Won { fencing_token }) => Ok(fencing_token),
        Ok(ClaimOutcome::Lost) => Err(shared.skipped(job, trigger, cause, Outcome::SkippedLost, None)),
        Ok(ClaimOutcome::BehindMark) => {
            let reason = "the job's high-water mark refused the claim: the fleet has handled this trigger \
                          or a later one, and this trigger's claim may have expired, so it is never \
                          claimed again"
                .to_owned();
            Err(shared.skipped(job, trigger, cause, Outcome::SkippedLost, Some(reason)))
        }
        Err(e) => Err(unclaimed(shared, coordinator, job, trigger, cause, &e)),
    }
}

/// Awaits a call to the coordinator for at most the claim timeout; its end is the
/// [`TimedOut`](CoordinatorErrorKind::TimedOut) kind.
pub(super) async fn within_claim_timeout<T>(
    shared: &Shared,
    call: impl Future<Output = Result<T, CoordinatorError>>,
) -> Result<T, CoordinatorError> {
    let mut call = std::pin::pin!(call);
    // Most calls answer at once: arm the timeout only if not.
    if let Some(answer) = (&mut call).now_or_never() {
        return answer;
    }
    let timeout = shared.settings.claim_timeout;
    tokio::select! {
        biased;
        answer = call => answer,
        () = shared.clock.sleep_until(later(shared.clock.now(), timeout)) => Err(CoordinatorError::timed_out(
            format!("no answer within the claim timeout of {timeout:?}"),
        )),
    }
}

/// The record of a claim without an answer. Every kind fails closed: a missed run can
/// be re-issued, a double run cannot be undone (DESIGN.md).
fn unclaimed(
    shared: &Shared,
    coordinator: &dyn Coordinator,
    job: &Job,
    trigger: Timestamp,
    cause: Cause,
    error: &CoordinatorError,
) -> RunRecord {
    let outcome = match error.kind() {
        CoordinatorErrorKind::Unavailable
        | CoordinatorErrorKind::TimedOut
        | CoordinatorErrorKind::OutcomeUnknown => Outcome::SkippedBackendUnavailable,
    };
    let reason = format!("{} coordinator ({}): {error}", coordinator.name(), error.kind());
    shared.skipped(job, trigger, cause, outcome, Some(reason))
}

/// Awaits the handler's future, catching errors and panics, and enforcing the timeout.
async fn run_handler(
    scope: &RunScope,
    job: &Job,
    mut run: HandlerRun,
    cancel: CancellationToken,
    started: Timestamp,
) -> (Outcome, Option<String>) {
    let (shared, abort) = (&scope.shared, &scope.abort);
    let timeout = async {
        match job.timeout {
            Some(timeout) => shared.clock.sleep_until(later(started, timeout)).await,
            None => std::future::pending().await,
        }
    };
    let timed_out = tokio::select! {
        biased;
        result = &mut run => return finished(result),
        () = abort.cancelled() => return aborted(),
        () = timeout => true,
        () = job.cancel_runs.cancelled() => false,
    };
    // Timed out, or the job was removed with its runs cancelled: ask the handler to stop,
    // then drop it after the grace period.
    cancel.cancel();
    let grace = shared.settings.cancel_grace;
    let stopped = tokio::select! {
        biased;
        result = &mut run => Some(result),
        () = abort.cancelled() => None,
        () = shared.clock.sleep_until(later(shared.clock.now(), grace)) => None,
    };
    match (timed_out, stopped) {
        (true, _) => {
            (Outcome::TimedOut, Some(format!("timed out after {:?}", job.timeout.unwrap_or_default())))
        }
        (false, Some(result)) => finished(result),
        (false, None) => (
            Outcome::Aborted,
            Some(format!("the job was removed and its run cancelled; dropped after {grace:?}")),
        ),
    }
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
