//! One trigger, start to finish: claim, run the handler under its timeout, record.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures_util::FutureExt;
use jiff::Timestamp;
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::Shared;
use super::batch::Claimed;
use super::hold::{claim_hold, job_run_budget, request_ttl};
use super::ownership::Tally;
use super::skew::{self, Skew};
use super::table::{Action, Due};
use crate::clock::later;
use crate::context::{JobContext, RunHandle};
use crate::coordinator::{
    Claim, ClaimOutcome, Coordinator, CoordinatorError, CoordinatorErrorKind, Lease, RequestClaim,
};
use crate::error::{BoxError, error_chain};
use crate::job::{Job, StoppedByShutdown};
use crate::ledger::{Cause, LedgerWrite, Outcome, RunRecord, lock};
use crate::metrics::{ClaimResult, Metrics};
use crate::policy::{
    self, AttemptResult, Attempted, ConcurrencyCap, Guarded, Overlap, Permanent, RunSlot, RunStop,
};

/// What the runs started by one [`Scheduler::run`](crate::Scheduler::run) share: the
/// scheduler and its stop signals, behind one reference count, so a burst of runs
/// touches one shared counter per run rather than one per field.
pub(crate) struct RunScope {
    pub shared: Arc<Shared>,
    /// Cooperative stop: every run's cancellation token is this one or its child.
    pub shutdown: CancellationToken,
    /// Hard stop: runs drop their handler's future and record `aborted`.
    pub abort: CancellationToken,
    /// Fires when the scheduler starts stopping (also when it drains): no retry, no
    /// jittered or buffered trigger starts after it.
    pub stopping: CancellationToken,
    /// Runs spawned but not yet started.
    waiting: AtomicUsize,
    /// Notified when `waiting` falls to [`RunScope::RESUME_AT`].
    drained: Notify,
    /// The claim batches in flight ([`batch::BATCHES_IN_FLIGHT`](super::batch::BATCHES_IN_FLIGHT)).
    pub batches: Arc<Semaphore>,
    /// What the runs' contexts see of the scheduler.
    pub handle: Arc<RunHandle>,
}

impl RunScope {
    /// The engine stops spawning once this many runs wait to start...
    const PAUSE_ABOVE: usize = 128;
    /// ...and goes on once they are down to this many. A burst of thousands of triggers
    /// thus never queues more than a few hundred tasks: memory stays bounded, and the
    /// first runs are not held up behind the spawning of the last.
    const RESUME_AT: usize = 32;

    pub fn new(shared: Arc<Shared>) -> Self {
        let stopping = CancellationToken::new();
        let handle = Arc::new(RunHandle {
            instance: shared.instance.clone(),
            stopping: stopping.clone(),
            records: shared.outbox.clone(),
        });
        Self {
            shared,
            shutdown: CancellationToken::new(),
            abort: CancellationToken::new(),
            stopping,
            waiting: AtomicUsize::new(0),
            drained: Notify::new(),
            batches: Arc::new(Semaphore::new(super::batch::BATCHES_IN_FLIGHT)),
            handle,
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
    execute_owned(scope, due, None).await;
}

/// [`execute`] for a trigger this replica owns: its claim's answer goes into `tally`.
pub(crate) async fn execute_owned(scope: Arc<RunScope>, due: Due, tally: Option<Arc<Tally>>) {
    scope.started();
    let span = tracing::info_span!("run", job = %due.job.name, trigger = %due.trigger);
    Box::pin(execute_started(scope, due, tally)).instrument(span).await;
}

/// Handles several due items of one job (a catch-up) in trigger order, one after the
/// other: each claim, and so each fencing token, is made after the previous item's run
/// has ended, so claims, tokens and starts follow trigger order (DESIGN.md). A catch-up
/// is a bounded burst (the misfire cap), and its items' runs do not overlap.
pub(crate) async fn execute_in_order(scope: Arc<RunScope>, items: Vec<Due>) {
    for due in items {
        execute(scope.clone(), due).await;
    }
}

/// Handles one due item whose claim a batch has decided ([`batch`](super::batch)), to
/// the end, as [`execute`] does; `key` is its trigger key. It was not removed when it was
/// claimed, so it ends in its record even if its job is removed now.
pub(crate) async fn execute_claimed(scope: Arc<RunScope>, due: Due, claimed: Claimed, key: Box<str>) {
    scope.started();
    let span = tracing::info_span!("run", job = %due.job.name, trigger = %due.trigger);
    let run = async move {
        let Due { job, trigger, next, cause, .. } = due;
        let record = claim_and_run(&scope, &job, trigger, next, cause, Claiming::Batched(claimed, key)).await;
        scope.shared.finish(&job, record).await;
    };
    Box::pin(run).instrument(span).await;
}

async fn execute_started(scope: Arc<RunScope>, due: Due, tally: Option<Arc<Tally>>) {
    let shared = &scope.shared;
    let Due { job, trigger, next, action, cause } = due;
    if removed(&job, trigger) {
        return;
    }
    let record = match action {
        Action::Missed { count } => missed(shared, &job, trigger, cause, count).await,
        Action::Run => claim_and_run(&scope, &job, trigger, next, cause, Claiming::Here(tally)).await,
        Action::Requested => claim_and_run(&scope, &job, trigger, next, cause, Claiming::Requested).await,
    };
    shared.finish(&job, record).await;
}

/// Whether `job` was removed before `trigger` started (logged): it does not run then.
pub(super) fn removed(job: &Job, trigger: Timestamp) -> bool {
    let removed = job.removed.load(Ordering::SeqCst);
    if removed {
        tracing::info!(job = %job.name, %trigger, "job removed before this trigger started: not run");
    }
    removed
}

/// The record of `count` triggers the misfire policy dropped, up to `trigger`: `missed`.
/// With a coordinator, the clock-skew guard first: a replica whose clock is off by more
/// than the slack cannot tell which of them came due (a clock ahead counts triggers
/// not due yet), so they are `skipped-clock-skew`, as their claims would be. Then, if
/// the job's high-water mark is at or past `trigger`, the fleet handled them while this
/// replica was not running: `skipped-lost`, saying so (no failure to report). A mark
/// (or a clock) that cannot be read leaves them `missed`.
async fn missed(shared: &Shared, job: &Job, trigger: Timestamp, cause: Cause, count: u64) -> RunRecord {
    if let Some(coordinator) = shared.coordinator.as_ref().filter(|_| !job.every_replica) {
        if let Err(skip @ SkewSkip::Beyond(_)) = skew_gate(shared, coordinator.as_ref()).await {
            return skip.record(shared, coordinator.as_ref(), job, trigger, cause);
        }
        let marks = within_claim_timeout(shared, coordinator.high_water_marks(&[&job.name])).await;
        if let Some(mark) = marks.ok().and_then(|marks| marks.first().copied().flatten())
            && mark >= trigger
        {
            let reason = format!(
                "{count} trigger(s) up to this one came due while this replica was not running; \
                 the fleet handled them (the job's high-water mark is {mark})"
            );
            return shared.skipped(job, trigger, cause, Outcome::SkippedLost, Some(reason));
        }
    }
    let reason = format!(
        "{count} trigger(s) noticed after the {:?} grace window, up to this one; misfire policy {}",
        job.grace,
        job.misfire.name()
    );
    shared.skipped(job, trigger, cause, Outcome::Missed, Some(reason))
}

/// How a trigger's claim is made.
enum Claiming {
    /// Here, after the jitter and the concurrency cap; a trigger this replica owns comes
    /// with its instant's [`Tally`], which learns the claim's answer.
    Here(Option<Arc<Tally>>),
    /// A batch has claimed it ([`batch`](super::batch)), under this trigger key: then the
    /// trigger has neither jitter nor cap.
    Batched(Claimed, Box<str>),
    /// A run an operator asked for (manual, backfill, caught up at a resume): no jitter,
    /// no pause, claimed under its own key ([`request_key`](crate::request_key)).
    Requested,
}

/// Handles one trigger to its record: jitter, the concurrency cap, the claim (each as
/// [`Claiming`] says), then the overlap lease around the retries around each attempt
/// under its timeout.
async fn claim_and_run(
    scope: &Arc<RunScope>,
    job: &Arc<Job>,
    trigger: Timestamp,
    next: Option<Timestamp>,
    cause: Cause,
    claiming: Claiming,
) -> RunRecord {
    let shared = &scope.shared;
    let clock = shared.clock.as_ref();
    let skipped = |outcome, reason: String| shared.skipped(job, trigger, cause, outcome, Some(reason));
    let kind = job.kind;
    let trigger_key = OnceLock::new();
    let mut _slot = None;
    let fencing_token = match claiming {
        Claiming::Batched(claimed, key) => {
            trigger_key.get_or_init(|| key);
            match claimed {
                Ok(fencing_token) => fencing_token,
                Err(skipped) => return *skipped,
            }
        }
        Claiming::Here(tally) => {
            _slot = match start_gate(scope, job, trigger, cause, false).await {
                Ok(slot) => Some(slot),
                Err(skipped) => return *skipped,
            };
            match &shared.coordinator {
                // Single-replica mode, or a job every replica runs: nothing to claim.
                None => local_fencing_token(shared, job).await,
                Some(_) if job.every_replica => local_fencing_token(shared, job).await,
                Some(coordinator) => {
                    let key = trigger_key.get_or_init(|| key_of(job, trigger));
                    let claimed = claim(shared, coordinator.as_ref(), job, trigger, next, cause, key).await;
                    if let Some(tally) = tally {
                        tally.note(key, &claimed);
                    }
                    match claimed {
                        Ok(fencing_token) => fencing_token,
                        Err(skipped) => return *skipped,
                    }
                }
            }
        }
        Claiming::Requested => {
            _slot = match start_gate(scope, job, trigger, cause, true).await {
                Ok(slot) => Some(slot),
                Err(skipped) => return *skipped,
            };
            let key =
                trigger_key.get_or_init(|| crate::key::request_key(&job.name, kind, cause, trigger).into());
            match &shared.coordinator {
                None => local_fencing_token(shared, job).await,
                Some(_) if job.every_replica => local_fencing_token(shared, job).await,
                Some(coordinator) => {
                    match claim_requested(shared, coordinator.as_ref(), job, trigger, cause, key).await {
                        Ok(fencing_token) => fencing_token,
                        Err(skipped) => return *skipped,
                    }
                }
            }
        }
    };
    // Won on schedule: the job's next trigger may be claimed ahead (engine/ahead.rs).
    if matches!(cause, Cause::Scheduled | Cause::CatchUp) {
        job.last_won.fetch_max(trigger.as_millisecond(), Ordering::Relaxed);
    }
    // Remembered before the handler runs: a one-shot runs at most once even if the
    // process dies during the run.
    if super::record::saves_state(cause) {
        shared.save_state(job, trigger, None).await;
    }
    // The run's `running` record, written when the first attempt starts (after any wait
    // for the lease); it counts the attempts as they go.
    let record: OnceLock<Arc<Mutex<RunRecord>>> = OnceLock::new();
    // The running-runs gauge, from the first attempt's start to the run's end.
    let running: OnceLock<Running<'_>> = OnceLock::new();
    // The overlap lease, around the retries, around each attempt under its timeout.
    let stop = (job.overlap != Overlap::Allow).then(|| RunStop::new(&scope.shutdown));
    let run_cancel = stop.as_ref().map(|stop| &stop.handler);
    let stopped = stop.as_ref().map(|stop| &stop.lease);
    let owner = match job.overlap {
        Overlap::Allow => String::new(),
        _ => {
            let key = trigger_key.get_or_init(|| key_of(job, trigger));
            format!("{} {key}", shared.instance)
        }
    };
    let retries = job.retry.run(clock, &scope.stopping, stopped, |attempt| {
        let parent = run_cancel.unwrap_or(&scope.shutdown);
        let run = record
            .get_or_init(|| Arc::new(Mutex::new(shared.start_run(job, trigger, cause, fencing_token))))
            .clone();
        running.get_or_init(|| {
            // Lateness from the actual (jittered, lease-waited) start.
            let lateness = trigger.duration_until(lock(&run).started);
            shared.metrics.run_started(Duration::try_from(lateness).unwrap_or_default());
            Running(&shared.metrics)
        });
        if attempt > 1 {
            let update = {
                let mut run = lock(&run);
                run.attempts = attempt;
                run.clone()
            };
            shared.outbox.push(LedgerWrite::Update(update));
        }
        let ctx = JobContext {
            job: job.name.clone(),
            trigger,
            kind,
            trigger_key: trigger_key.clone(),
            fencing_token,
            attempt,
            handle: scope.handle.clone(),
            // Each attempt can be cancelled on its own: by its timeout, its job's removal,
            // or (through `parent`) its lease.
            own_cancel: parent.child_token(),
            payload: job.payload.clone(),
            record: run,
        };
        let now = clock.now();
        async move {
            let result = run_handler(scope, job, ctx, stopped, now).await;
            if job.retry.attempts() > 1 {
                log_attempt(job, trigger, attempt, &result);
            }
            result
        }
    });
    let guard = policy::Guard {
        policy: job.overlap,
        coordinator: shared.leases(job),
        clock,
        lease: Lease { job: &job.name, owner: &owner, ttl: shared.settings.lease_ttl },
        call_timeout: shared.settings.claim_timeout,
        renew_limit: job.run_budget(shared.settings.cancel_grace, shared.settings.slack),
        stop: stop.as_ref(),
        stopping: &scope.stopping,
    };
    let guarded = guard.run(retries).await;
    drop(running);
    let (attempted, note) = match guarded {
        Guarded::Ran(attempted, note) => (attempted, note),
        Guarded::Skipped(reason) => return skipped(Outcome::SkippedOverlap, reason),
        Guarded::Unavailable(reason) => return skipped(Outcome::SkippedBackendUnavailable, reason),
    };
    let Attempted { result: AttemptResult { outcome, error, .. }, attempts } = attempted;
    let error = match (error, note) {
        (Some(error), Some(note)) => Some(format!("{error} ({note})")),
        (error, note) => error.or(note),
    };
    let Some(run) = record.get() else {
        // No attempt started (stopped before the first): nothing ran.
        let reason = error.unwrap_or_else(|| "the scheduler stopped before the first attempt".into());
        return skipped(Outcome::Aborted, reason);
    };
    let mut record = lock(run).clone();
    record.duration = Duration::try_from(record.started.duration_until(clock.now())).unwrap_or_default();
    record.outcome = outcome;
    record.error = error;
    record.attempts = attempts;
    record
}

/// What comes before a claim made here: the jitter (none for a `requested` run), the
/// pause of a job no coordinator claims for (a claim checks its own; a requested run
/// ignores it), and the concurrency cap's slot, taken before the claim so a replica with
/// room wins it. Else the record of the skip.
async fn start_gate(
    scope: &RunScope,
    job: &Job,
    trigger: Timestamp,
    cause: Cause,
    requested: bool,
) -> Result<RunSlot, Box<RunRecord>> {
    let shared = &scope.shared;
    let clock = shared.clock.as_ref();
    let skipped =
        |outcome, reason: String| Box::new(shared.skipped(job, trigger, cause, outcome, Some(reason)));
    // Jitter: the start waits for the trigger's offset; the trigger stays nominal.
    let jitter = if requested { None } else { job.jitter };
    let start = match policy::wait_for_start(&job.name, trigger, jitter, clock, &scope.stopping).await {
        Ok(start) => start,
        Err(reason) => return Err(skipped(Outcome::Missed, reason)),
    };
    if !requested && (shared.coordinator.is_none() || job.every_replica) {
        match shared.unclaimed_paused(job).await {
            Ok(None) => {}
            Ok(Some(since)) => {
                return Err(skipped(Outcome::SkippedPaused, format!("the job is paused since {since}")));
            }
            Err(e) => {
                let reason = format!("whether the job is paused is unknown: {e}");
                return Err(skipped(Outcome::SkippedBackendUnavailable, reason));
            }
        }
    }
    // A late trigger (catch-up, start-up) waits the grace window from when it came up.
    let deadline = later(start.max(clock.now()), job.grace);
    let taken =
        ConcurrencyCap::take(shared.cap.as_ref(), clock, deadline, &scope.stopping, (&job.name, trigger));
    taken.await.map_err(|reason| skipped(Outcome::SkippedConcurrency, reason))
}

/// One log line per attempt of a job that may retry.
fn log_attempt(job: &Job, trigger: Timestamp, attempt: u32, result: &AttemptResult) {
    let (job, outcome, of) = (&*job.name, result.outcome.as_str(), job.retry.attempts());
    match &result.error {
        None => tracing::info!(job, %trigger, attempt, of, outcome, "attempt finished"),
        Some(err) => tracing::warn!(job, %trigger, attempt, of, outcome, err, "attempt finished"),
    }
}

/// A started handler, counted in the running-runs gauge until dropped.
struct Running<'a>(&'a Metrics);

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

/// The trigger key of `job`'s `trigger`.
pub(super) fn key_of(job: &Job, trigger: Timestamp) -> Box<str> {
    crate::key::trigger_key(&job.name, job.kind, trigger).into_boxed_str()
}

/// The claim of `job`'s `trigger` (key `key`, next trigger `next`) by this scheduler.
pub(super) fn claim_of<'a>(
    shared: &'a Shared,
    job: &'a Job,
    trigger: Timestamp,
    next: Option<Timestamp>,
    key: &'a str,
) -> Claim<'a> {
    let settings = &shared.settings;
    let budget = job_run_budget(job, settings.cancel_grace, settings.slack);
    let hold = claim_hold(trigger, next, job.kind.is_one_shot(), budget, settings.slack);
    Claim { job: &job.name, trigger, key, instance: &shared.instance, hold }
}

/// Why the clock-skew guard lets no claim through.
pub(super) enum SkewSkip {
    /// This replica's clock is off by more than the slack.
    Beyond(jiff::SignedDuration),
    /// The coordinator's clock could not be read.
    Unread(CoordinatorError),
}

impl SkewSkip {
    /// The record of `job`'s `trigger` skipped for it.
    pub fn record(
        &self,
        shared: &Shared,
        coordinator: &dyn Coordinator,
        job: &Job,
        trigger: Timestamp,
        cause: Cause,
    ) -> RunRecord {
        match self {
            Self::Beyond(offset) => {
                let reason = skew::reason(coordinator, *offset, shared.settings.slack);
                shared.skipped(job, trigger, cause, Outcome::SkippedClockSkew, Some(reason))
            }
            Self::Unread(e) => unclaimed(shared, coordinator, job, trigger, cause, e),
        }
    }
}

/// The clock-skew guard before a claim (or a batch of claims), if it is on.
pub(super) async fn skew_gate(shared: &Shared, coordinator: &dyn Coordinator) -> Result<(), SkewSkip> {
    if !shared.settings.check_clock_skew {
        return Ok(());
    }
    match shared.skew.check(shared, coordinator).await {
        Ok(Skew::Within) => Ok(()),
        Ok(Skew::Beyond(offset)) => Err(SkewSkip::Beyond(offset)),
        Err(e) => {
            shared.health.coordinator.store(false, Ordering::Relaxed);
            Err(SkewSkip::Unread(e))
        }
    }
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
) -> Claimed {
    let claim = claim_of(shared, job, trigger, next, key);
    if let Err(skip) = skew_gate(shared, coordinator).await {
        return Err(Box::new(skip.record(shared, coordinator, job, trigger, cause)));
    }
    let asked = shared.clock.now();
    let claimed = within_claim_timeout(shared, coordinator.claim(&claim)).await;
    let latency = Duration::try_from(asked.duration_until(shared.clock.now())).unwrap_or_default();
    decide(shared, coordinator, job, trigger, cause, claimed, latency)
}

/// Claims a requested run under its own key: no skew check (it holds from when it is
/// made, on the coordinator's clock), no pause, no high-water mark.
async fn claim_requested(
    shared: &Shared,
    coordinator: &dyn Coordinator,
    job: &Job,
    trigger: Timestamp,
    cause: Cause,
    key: &str,
) -> Claimed {
    let settings = &shared.settings;
    let ttl = request_ttl(job, cause, trigger, settings.cancel_grace, settings.slack);
    let claim = RequestClaim { job: &job.name, trigger, key, instance: &shared.instance, ttl };
    let asked = shared.clock.now();
    let claimed = within_claim_timeout(shared, coordinator.claim_request(&claim)).await;
    let latency = Duration::try_from(asked.duration_until(shared.clock.now())).unwrap_or_default();
    decide(shared, coordinator, job, trigger, cause, claimed, latency)
}

/// What a claim's answer (which took `latency`) means for its trigger: the fencing token
/// if won, else the record of the skip; counted in the claim metrics and the health.
pub(super) fn decide(
    shared: &Shared,
    coordinator: &dyn Coordinator,
    job: &Job,
    trigger: Timestamp,
    cause: Cause,
    claimed: Result<ClaimOutcome, CoordinatorError>,
    latency: Duration,
) -> Claimed {
    shared.health.coordinator.store(claimed.is_ok(), Ordering::Relaxed);
    let result = match claimed {
        Ok(ClaimOutcome::Won { .. }) => ClaimResult::Won,
        Ok(ClaimOutcome::Lost | ClaimOutcome::BehindMark | ClaimOutcome::Paused) => ClaimResult::Lost,
        Err(_) => ClaimResult::Error,
    };
    shared.metrics.claim(result, latency);
    let skipped = |outcome, reason| Box::new(shared.skipped(job, trigger, cause, outcome, reason));
    match claimed {
        Ok(ClaimOutcome::Won { fencing_token }) => Ok(fencing_token),
        Ok(ClaimOutcome::Lost) => Err(skipped(Outcome::SkippedLost, None)),
        Ok(ClaimOutcome::BehindMark) => {
            let reason = "the job's high-water mark refused the claim: the fleet has handled this trigger \
                          or a later one, and this trigger's claim may have expired, so it is never \
                          claimed again"
                .to_owned();
            Err(skipped(Outcome::SkippedLost, Some(reason)))
        }
        Ok(ClaimOutcome::Paused) => Err(skipped(
            Outcome::SkippedPaused,
            Some(format!("the job is paused in the {} coordinator", coordinator.name())),
        )),
        Err(e) => Err(Box::new(unclaimed(shared, coordinator, job, trigger, cause, &e))),
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
pub(super) fn unclaimed(
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

/// Runs one attempt of the handler, catching errors and panics, and enforcing the
/// timeout; `stopped` fires when the overlap lease stops the run (lost, or replaced):
/// the handler then gets the cancel grace to stop before it is dropped, as at a timeout.
async fn run_handler(
    scope: &RunScope,
    job: &Job,
    ctx: JobContext,
    stopped: Option<&CancellationToken>,
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
        match job.timeout {
            Some(timeout) => shared.clock.sleep_until(later(started, timeout)).await,
            None => std::future::pending().await,
        }
    };
    let stopped = async {
        match stopped {
            Some(stopped) => stopped.cancelled().await,
            None => std::future::pending().await,
        }
    };
    let why = tokio::select! {
        biased;
        result = &mut run => return finished(result),
        () = abort.cancelled() => return aborted(),
        () = timeout => Why::TimedOut,
        () = job.cancel_runs.cancelled() => Why::Removed,
        () = stopped => Why::Stopped,
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
            let reason = format!("timed out after {:?}", job.timeout.unwrap_or_default());
            AttemptResult { outcome: Outcome::TimedOut, error: Some(reason), retryable: true }
        }
        // It stopped when asked: its own result, not retried.
        (_, Some(result)) => AttemptResult { retryable: false, ..finished(result) },
        (Why::Removed, None) => ended(
            Outcome::Aborted,
            Some(format!("the job was removed and its run cancelled; dropped after {grace:?}")),
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
