//! One trigger, start to finish: claim, run the handler under its timeout, record.

mod attempt;
mod gate;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use jiff::Timestamp;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use super::claim::{
    ClaimNote, Claimed, SkewSkip, claim, claim_requested, key_of, local_fencing_token, mark_start,
    settle_start, skew_gate, within_claim_timeout,
};
use super::scope::RunScope;
use super::table::{Action, Due};
use crate::context::JobContext;
use crate::coordinator::Lease;
use crate::engine::fleet::partition;
use crate::engine::shared::Shared;
use crate::job::Job;
use crate::ledger::{Cause, LedgerWrite, Outcome, RunRecord, lock};
use crate::metrics::Metrics;
use crate::policy::{self, AttemptResult, Attempted, Guarded, OnInterrupt, Overlap, RunStop};
use attempt::{log_attempt, run_handler};
use gate::start_gate;

/// The note a trigger's claim answer goes to, if any (an owner's tally of the instant).
pub(crate) type Note = Option<Arc<dyn ClaimNote>>;

/// Spawns the runs of `items` as they come from the table: each group of consecutive
/// items of one job (a catch-up) as one task that runs them in trigger order, every
/// other item handed to `single`, which says whether it spawned a run. Returns how many
/// runs were spawned.
pub(crate) fn spawn_due(
    scope: &Arc<RunScope>,
    tracker: &TaskTracker,
    items: impl Iterator<Item = Due>,
    mut single: impl FnMut(Due) -> bool,
) -> usize {
    let mut items = items.peekable();
    let mut spawned = 0;
    while let Some(item) = items.next() {
        // A job's catch-up comes as consecutive items: claimed in trigger order.
        if items.peek().is_some_and(|next| Arc::ptr_eq(&next.job, &item.job)) {
            scope.spawning();
            let mut group = vec![item];
            while let Some(next) = items.next_if(|next| Arc::ptr_eq(&next.job, &group[0].job)) {
                scope.spawning();
                group.push(next);
            }
            tracker.spawn(execute_in_order(scope.clone(), group));
            spawned += 1;
        } else if single(item) {
            spawned += 1;
        }
    }
    spawned
}

/// Spawns the groups of requested runs (manual, backfill, catch-up at a resume) waiting
/// for the engine, each in order.
pub(crate) fn spawn_requests(scope: &Arc<RunScope>, tracker: &TaskTracker) {
    let requests = std::mem::take(&mut *scope.shared.requests());
    for group in requests {
        group.iter().for_each(|_| scope.spawning());
        tracker.spawn(execute_in_order(scope.clone(), group));
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
pub(crate) async fn execute_owned(scope: Arc<RunScope>, due: Due, tally: Note) {
    scope.started();
    let span = tracing::info_span!("run", job = %due.job.name, trigger = %due.trigger);
    Box::pin(execute_started(scope, due, tally)).instrument(span).await;
}

/// Handles several due items of one job (a catch-up) in trigger order, one after the
/// other: each claim, and so each fencing token, is made after the previous item's run
/// has ended, so claims, tokens and starts follow trigger order (docs/design.md). A catch-up
/// is a bounded burst (the misfire cap), and its items' runs do not overlap.
pub(crate) async fn execute_in_order(scope: Arc<RunScope>, items: Vec<Due>) {
    for due in items {
        execute(scope.clone(), due).await;
    }
}

/// Handles one due item whose claim a batch has decided, to
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

/// Handles a trigger whose claim this replica took over (won with `fencing_token`, under
/// trigger key `key`), as [`execute_claimed`] does; its record's error field carries
/// `note` (whom it was taken over from), after the run's own error if any.
pub(crate) async fn execute_taken_over(
    scope: Arc<RunScope>,
    due: Due,
    fencing_token: u64,
    key: Box<str>,
    note: String,
) {
    scope.started();
    let span = tracing::info_span!("run", job = %due.job.name, trigger = %due.trigger);
    let run = async move {
        let Due { job, trigger, next, cause, .. } = due;
        let claiming = Claiming::Batched(Ok(fencing_token), key);
        let mut record = claim_and_run(&scope, &job, trigger, next, cause, claiming).await;
        record.error = Some(match record.error.take() {
            Some(error) => format!("{error} ({note})"),
            None => note,
        });
        scope.shared.finish(&job, record).await;
    };
    Box::pin(run).instrument(span).await;
}

async fn execute_started(scope: Arc<RunScope>, due: Due, tally: Note) {
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
pub(crate) fn removed(job: &Job, trigger: Timestamp) -> bool {
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
    /// with its instant's tally, which learns the claim's answer.
    Here(Note),
    /// A batch has claimed it, under this trigger key: then the
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
    // Whether the trigger key names a claim won from the coordinator (its start is marked).
    let mut coordinated = true;
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
            match shared.coordinator.as_ref().filter(|_| !job.every_replica) {
                // Single-replica mode, or a job every replica runs: nothing to claim.
                None => {
                    coordinated = false;
                    local_fencing_token(shared, job).await
                }
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
            match shared.coordinator.as_ref().filter(|_| !job.every_replica) {
                None => {
                    coordinated = false;
                    local_fencing_token(shared, job).await
                }
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
    // A rerun job's run stops when this replica finds itself cut off (fleet/partition.rs).
    let partitioned = coordinated && job.on_interrupt == OnInterrupt::Rerun;
    let stop = (job.overlap != Overlap::Allow || partitioned).then(|| RunStop::new(&scope.shutdown));
    let watch = stop.as_ref().filter(|_| partitioned).map(|stop| partition::Watch::new(shared, stop));
    let run_cancel = stop.as_ref().map(|stop| &stop.handler);
    let stopped = stop.as_ref().map(|stop| &stop.lease);
    let owner = match job.overlap {
        Overlap::Allow => String::new(),
        _ => {
            let key = trigger_key.get_or_init(|| key_of(job, trigger));
            format!("{} {key}", shared.instance)
        }
    };
    let in_flight = &running;
    let claim_key = if coordinated { trigger_key.get().map(|key| &**key) } else { None };
    let retries = job.retry.run(clock, &scope.stopping, stopped, |attempt| {
        let parent = run_cancel.unwrap_or(&scope.shutdown);
        // The first attempt's `running` record is the run's start mark, waited for below.
        let mut mark = None;
        let run = record
            .get_or_init(|| {
                let started = shared.start_run(job, trigger, cause, fencing_token);
                mark = Some(started.clone());
                Arc::new(Mutex::new(started))
            })
            .clone();
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
        async move {
            if let Some(mark) = mark
                && let Err((outcome, reason)) = mark_start(shared, mark, claim_key).await
            {
                return AttemptResult::not_started(outcome, reason);
            }
            in_flight.get_or_init(|| {
                // Lateness from the actual (jittered, lease-waited, marked) start.
                let lateness = trigger.duration_until(clock.now());
                shared.metrics.run_started(Duration::try_from(lateness).unwrap_or_default());
                Running(&shared.metrics)
            });
            let result = run_handler(scope, job, ctx, stopped, clock.now()).await;
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
        Guarded::Skipped(reason) => {
            // Skipped on purpose: the claim is settled, never taken over and run elsewhere.
            settle_start(shared, claim_key, job).await;
            return skipped(Outcome::SkippedOverlap, reason);
        }
        Guarded::Unavailable(reason) => return skipped(Outcome::SkippedBackendUnavailable, reason),
    };
    let Attempted { result: AttemptResult { outcome, error, .. }, attempts } = attempted;
    let note = note.or_else(|| watch.as_ref().and_then(partition::Watch::note));
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

/// A started handler, counted in the running-runs gauge until dropped.
struct Running<'a>(&'a Metrics);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.run_ended();
    }
}
