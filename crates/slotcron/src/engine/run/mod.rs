//! One trigger, start to finish: claim, run the handler under its timeout, record.

mod attempt;
mod gate;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use jiff::Timestamp;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use super::cancel::in_flight::RunCancel;
use super::chain;
use super::claim::marks::Unmarked;
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
use crate::metrics::{JobSeries, Metrics};
use crate::policy::{self, AttemptResult, Attempted, Guarded, OnInterrupt, Overlap, RunSlot, RunStop};
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

/// Records the end of `job`'s run (`record`), then runs the triggers of the jobs chained
/// after it that its end fires ([`chain::finish`]): all at once, on this task (so a
/// shutdown waits for them as for the parent).
async fn finish(scope: &Arc<RunScope>, job: &Arc<Job>, record: RunRecord) {
    use futures_util::future::{Either, join_all};
    let children = chain::finish(scope, job, record).await;
    let runs = children.into_iter().map(|chain::ChildRun { due, claimed }| {
        scope.spawning();
        match claimed {
            Some((claimed, key)) => {
                Either::Left(Box::pin(execute_claimed(scope.clone(), due, claimed, key, None)))
            }
            None => Either::Right(Box::pin(execute(scope.clone(), due))),
        }
    });
    join_all(runs).await;
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

/// A run whose start was marked together with its batch's
/// ([`mark_group`](super::claim::mark_group)) before it was spawned: its `running` record
/// and the mark's answer, which its first attempt takes instead of marking its own.
pub(crate) struct Marked {
    pub record: RunRecord,
    pub answer: Result<(), Unmarked>,
}

/// Whether a won claim of `job` may have its start marked with its batch's, before its
/// run is spawned: its first attempt then waits for nothing else (no overlap lease to
/// take first, which may skip the run), and whose mark counts no run (a job with
/// `max_runs` marks each run's start on its own, `engine/limits.rs`).
pub(crate) fn marks_with_batch(job: &Job) -> bool {
    job.overlap == Overlap::Allow && job.max_runs().is_none()
}

/// Handles one due item whose claim a batch has decided, to
/// the end, as [`execute`] does; `key` is its trigger key, `marked` its start when the
/// batch marked it. It was not removed when it was claimed, so it ends in its record
/// even if its job is removed now.
pub(crate) async fn execute_claimed(
    scope: Arc<RunScope>,
    due: Due,
    claimed: Claimed,
    key: Box<str>,
    marked: Option<Marked>,
) {
    scope.started();
    let span = tracing::info_span!("run", job = %due.job.name, trigger = %due.trigger);
    let run = async move {
        let Due { job, trigger, next, cause, .. } = due;
        let claiming = Claiming::Batched(claimed, key, marked.map(Box::new));
        let record = claim_and_run(&scope, &job, trigger, next, cause, claiming).await;
        finish(&scope, &job, record).await;
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
        let claiming = Claiming::Batched(Ok(fencing_token), key, None);
        let mut record = claim_and_run(&scope, &job, trigger, next, cause, claiming).await;
        record.error = Some(match record.error.take() {
            Some(error) => format!("{error} ({note})"),
            None => note,
        });
        finish(&scope, &job, record).await;
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
        Action::Requested { attempts_made } => {
            claim_and_run(&scope, &job, trigger, next, cause, Claiming::Requested(attempts_made)).await
        }
    };
    finish(&scope, &job, record).await;
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
                "{count} trigger(s) up to this one came due before this replica started and were not handled \
                 by it (it was not running, or its previous process stopped first); \
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
    /// A batch has claimed it, under this trigger key, and may have marked its start:
    /// then the trigger has neither jitter nor cap.
    Batched(Claimed, Box<str>, Option<Box<Marked>>),
    /// A run an operator asked for (manual, backfill, caught up at a resume) or the rerun
    /// of an interrupted trigger, after the attempts it already had: no jitter, no pause,
    /// claimed under its own key ([`request_key`](crate::request_key)).
    Requested(u32),
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
    let won = match claim_trigger(scope, job, trigger, next, cause, claiming).await {
        Ok(won) => won,
        Err(skipped) => return *skipped,
    };
    let shared = &scope.shared;
    // Won on schedule: the job's next trigger may be claimed ahead (fleet/ahead.rs).
    if matches!(cause, Cause::Scheduled | Cause::CatchUp) {
        job.last_won.fetch_max(trigger.as_millisecond(), Ordering::Relaxed);
    }
    // Remembered before the handler runs: a one-shot runs at most once even if the
    // process dies during the run.
    if cause.saves_state() {
        shared.save_state(job, trigger, None).await;
    }
    run_won(scope, job, trigger, cause, won).await
}

/// A trigger this scheduler may run: its fencing token, the trigger key (set when it
/// is known), whether that key names a claim won from the coordinator (its start is then
/// marked there too), the attempts the trigger already had (a rerun's interrupted run's),
/// its start if its batch marked it, and the concurrency slot it holds.
struct Won {
    fencing_token: u64,
    trigger_key: OnceLock<Box<str>>,
    coordinated: bool,
    attempts_made: u32,
    marked: Option<Box<Marked>>,
    _slot: Option<RunSlot>,
}

/// The claim step of [`claim_and_run`]: the start gate and the claim as `claiming` says,
/// or a local fencing token when nothing is claimed; the record of the skip otherwise.
async fn claim_trigger(
    scope: &Arc<RunScope>,
    job: &Arc<Job>,
    trigger: Timestamp,
    next: Option<Timestamp>,
    cause: Cause,
    claiming: Claiming,
) -> Result<Won, Box<RunRecord>> {
    let shared = &scope.shared;
    let (trigger_key, coordinator) =
        (OnceLock::new(), shared.coordinator.as_ref().filter(|_| !job.every_replica));
    let attempts_made = match claiming {
        Claiming::Requested(made) => made,
        _ => 0,
    };
    let won = |fencing_token, trigger_key, marked, _slot| Won {
        fencing_token,
        trigger_key,
        coordinated: true,
        attempts_made,
        marked,
        _slot,
    };
    let (requested, tally) = match claiming {
        Claiming::Batched(claimed, key, marked) => {
            trigger_key.get_or_init(|| key);
            return claimed.map(|token| won(token, trigger_key, marked, None));
        }
        Claiming::Here(tally) => (false, tally),
        Claiming::Requested(_) => (true, None),
    };
    let slot = start_gate(scope, job, trigger, cause, requested).await?;
    let Some(coordinator) = coordinator else {
        // Single-replica mode, or a job every replica runs: nothing to claim.
        let fencing_token = local_fencing_token(shared, job).await;
        let _slot = Some(slot);
        return Ok(Won {
            fencing_token,
            trigger_key,
            coordinated: false,
            attempts_made,
            marked: None,
            _slot,
        });
    };
    let claimed = if requested {
        let key =
            trigger_key.get_or_init(|| crate::key::request_key(&job.name, job.kind, cause, trigger).into());
        claim_requested(shared, coordinator.as_ref(), job, trigger, cause, key).await
    } else {
        let key = trigger_key.get_or_init(|| key_of(job, trigger));
        let claimed = claim(shared, coordinator.as_ref(), job, trigger, next, cause, key).await;
        if let Some(tally) = tally {
            tally.note(key, &claimed);
        }
        claimed
    };
    claimed.map(|token| won(token, trigger_key, None, Some(slot)))
}

/// The run step of [`claim_and_run`]: the overlap lease around the retries around each
/// attempt, to the run's record.
async fn run_won(
    scope: &Arc<RunScope>,
    job: &Arc<Job>,
    trigger: Timestamp,
    cause: Cause,
    mut won: Won,
) -> RunRecord {
    let shared = &scope.shared;
    let marked = won.marked.take();
    let skipped = |outcome, reason: String| shared.skipped(job, trigger, cause, outcome, Some(reason));
    // A rerun job's run stops when this replica finds itself cut off (fleet/partition.rs).
    let partitioned = won.coordinated && job.on_interrupt == OnInterrupt::Rerun;
    // An operator may cancel it until its record is made (engine/cancel.rs).
    let registered = shared.in_flight.register(&job.name, trigger);
    let cancel = &registered.cancel;
    let stop =
        (job.overlap != Overlap::Allow || partitioned).then(|| RunStop::new(&scope.shutdown, cancel.token()));
    let watch = stop.as_ref().filter(|_| partitioned).map(|stop| partition::Watch::new(shared, stop));
    let owner = match job.overlap {
        Overlap::Allow => String::new(),
        _ => format!("{} {}", shared.instance, won.trigger_key.get_or_init(|| key_of(job, trigger))),
    };
    let attempts = Attempts::new(scope, job, trigger, cause, &won, (stop.as_ref(), cancel), marked);
    // A rerun is the attempt after its interrupted run's, within the attempts left.
    let made = won.attempts_made;
    let retry = job.retry.after(made);
    let retries = retry
        .run(shared.clock.as_ref(), &scope.stopping, Some(attempts.stopped), |n| attempts.attempt(made + n));
    let guard = policy::Guard {
        policy: job.overlap,
        coordinator: shared.leases(job),
        clock: shared.clock.as_ref(),
        lease: Lease { job: &job.name, owner: &owner, ttl: shared.settings.lease_ttl },
        call_timeout: shared.settings.claim_timeout,
        renew_limit: job.run_budget(shared.settings.cancel_grace, shared.settings.slack),
        stop: stop.as_ref(),
        stopping: &scope.stopping,
    };
    let guarded = guard.run(retries).await;
    let (attempted, note) = match guarded {
        Guarded::Ran(attempted, note) => (attempted, note),
        Guarded::Skipped(reason) => {
            // Skipped on purpose: the claim is settled, never taken over and run elsewhere.
            settle_start(shared, attempts.claim_key(), job).await;
            return attempts.not_run(Outcome::SkippedOverlap, reason);
        }
        Guarded::Unavailable(reason) => return attempts.not_run(Outcome::SkippedBackendUnavailable, reason),
    };
    let note = note.or_else(|| watch.as_ref().and_then(partition::Watch::note));
    attempts.ended(attempted, note).unwrap_or_else(|reason| skipped(Outcome::Aborted, reason))
}

/// The attempts of one run: what each needs, the run's `running` record (written when
/// the first attempt starts, after any wait for the lease; it counts the attempts as they
/// go) and the running-runs gauge (from the first attempt's start to the run's end).
struct Attempts<'a> {
    scope: &'a Arc<RunScope>,
    job: &'a Arc<Job>,
    trigger: Timestamp,
    cause: Cause,
    won: &'a Won,
    /// The token each attempt's own is a child of: the overlap stop's, else the shutdown's.
    parent: &'a CancellationToken,
    /// Fired when the overlap layer (or a cut-off) stops the run, or an operator cancels it.
    stopped: &'a CancellationToken,
    /// The run's cancel, which an operator fires.
    cancel: &'a RunCancel,
    record: OnceLock<Arc<Mutex<RunRecord>>>,
    /// The answer of the start mark made with the run's batch, until the first attempt
    /// takes it.
    marked: Mutex<Option<Result<(), Unmarked>>>,
    running: OnceLock<Running<'a>>,
}

/// How the first attempt's start mark is made: queued now, or made with its batch.
enum Mark {
    Queue(RunRecord),
    Made(Result<(), Unmarked>),
}

impl<'a> Attempts<'a> {
    fn new(
        scope: &'a Arc<RunScope>,
        job: &'a Arc<Job>,
        trigger: Timestamp,
        cause: Cause,
        won: &'a Won,
        (stop, cancel): (Option<&'a RunStop>, &'a RunCancel),
        marked: Option<Box<Marked>>,
    ) -> Self {
        let parent = stop.map_or(&scope.shutdown, |stop| &stop.handler);
        // The lease's token is a child of the cancel's: either stops the run.
        let stopped = stop.map_or(cancel.token(), |stop| &stop.lease);
        let (record, answer) = match marked.map(|marked| *marked) {
            Some(Marked { record, answer }) => (OnceLock::from(Arc::new(Mutex::new(record))), Some(answer)),
            None => (OnceLock::new(), None),
        };
        Self {
            scope,
            job,
            trigger,
            cause,
            won,
            parent,
            stopped,
            cancel,
            record,
            marked: Mutex::new(answer),
            running: OnceLock::new(),
        }
    }

    /// The trigger key of the claim won from the coordinator, if any.
    fn claim_key(&self) -> Option<&str> {
        self.won.coordinated.then(|| self.won.trigger_key.get().map(|key| &**key)).flatten()
    }

    /// Attempt number `attempt`: the first waits for its start mark (and does not start
    /// without it); each runs the handler under its timeout.
    fn attempt(&self, attempt: u32) -> impl Future<Output = AttemptResult> + '_ {
        let shared = &self.scope.shared;
        // The first attempt's `running` record is the run's start mark, waited for below
        // (or made with its batch).
        let mut mark = self.marked.lock().unwrap_or_else(|p| p.into_inner()).take().map(Mark::Made);
        let run = self
            .record
            .get_or_init(|| {
                let mut started =
                    shared.start_run(self.job, self.trigger, self.cause, self.won.fencing_token);
                started.attempts = attempt;
                mark = Some(Mark::Queue(started.clone()));
                Arc::new(Mutex::new(started))
            })
            .clone();
        if mark.is_none() {
            let update = {
                let mut run = lock(&run);
                run.attempts = attempt;
                run.clone()
            };
            shared.outbox.push(LedgerWrite::Update(update));
        }
        let ctx = self.context(attempt, run);
        async move {
            let marked = match mark {
                Some(Mark::Queue(record)) => mark_start(shared, self.job, record, self.claim_key()).await,
                Some(Mark::Made(answer)) => answer,
                None => Ok(()),
            };
            if let Err((outcome, reason)) = marked {
                return AttemptResult::not_started(outcome, reason);
            }
            if let Some(reason) = self.cancel.reason() {
                return AttemptResult::not_started(Outcome::Cancelled, reason.to_owned());
            }
            let clock = shared.clock.as_ref();
            self.running.get_or_init(|| {
                // Lateness from the actual (jittered, lease-waited, marked) start.
                let lateness = self.trigger.duration_until(clock.now());
                shared
                    .metrics
                    .run_started(self.job.series(), Duration::try_from(lateness).unwrap_or_default());
                self.job.series().run_started();
                Running(&shared.metrics, self.job.series())
            });
            let stop = (self.stopped, self.cancel.token());
            let result = run_handler(self.scope, self.job, ctx, stop, clock.now()).await;
            if self.job.retry.attempts() > 1 {
                let made = self.won.attempts_made;
                let of = made + self.job.retry.after(made).attempts();
                log_attempt(self.job, self.trigger, (attempt, of), &result);
            }
            result
        }
    }

    /// The handler's context for attempt number `attempt` of the run recorded in `run`.
    fn context(&self, attempt: u32, run: Arc<Mutex<RunRecord>>) -> JobContext {
        JobContext {
            job: self.job.name.clone(),
            trigger: self.trigger,
            kind: self.job.kind,
            trigger_key: self.won.trigger_key.clone(),
            fencing_token: self.won.fencing_token,
            attempt,
            handle: self.scope.handle.clone(),
            // Each attempt can be cancelled on its own: by its timeout, its job's removal,
            // or (through `parent`) its lease.
            own_cancel: self.parent.child_token(),
            operator_cancel: self.cancel.token().clone(),
            payload: self.job.seldom().payload.clone(),
            record: run,
        }
    }

    /// The record of a run the overlap layer did not let start: the `running` record made
    /// with its start mark before its run was spawned (a claim ahead whose job's overlap
    /// policy changed since), now with `outcome` and `reason`, else a record of the skip.
    fn not_run(self, outcome: Outcome, reason: String) -> RunRecord {
        let shared = &self.scope.shared;
        match self.record.get() {
            Some(run) => RunRecord { outcome, error: Some(reason), ..lock(run).clone() },
            None => shared.skipped(self.job, self.trigger, self.cause, outcome, Some(reason)),
        }
    }

    /// The run's record once its attempts are over, with the overlap layer's `note`;
    /// `Err` with the reason when no attempt started (stopped before the first). A run an
    /// operator cancelled is `cancelled` with who asked, its last attempt's end after it,
    /// unless it succeeded first.
    fn ended(self, attempted: Attempted, note: Option<String>) -> Result<RunRecord, String> {
        drop(self.running);
        let Attempted { result: AttemptResult { mut outcome, mut error, .. }, attempts } = attempted;
        if let Some(reason) = self.cancel.reason().filter(|_| outcome != Outcome::Succeeded) {
            error = Some(match error.filter(|error| error != reason) {
                Some(error) => format!("{reason} ({error})"),
                None => reason.to_owned(),
            });
            outcome = Outcome::Cancelled;
        }
        let error = match (error, note) {
            (Some(error), Some(note)) => Some(format!("{error} ({note})")),
            (error, note) => error.or(note),
        };
        let Some(run) = self.record.get() else {
            return Err(error.unwrap_or_else(|| "the scheduler stopped before the first attempt".into()));
        };
        let mut record = lock(run).clone();
        let now = self.scope.shared.clock.now();
        record.duration = Duration::try_from(record.started.duration_until(now)).unwrap_or_default();
        record.outcome = outcome;
        record.error = error;
        record.attempts = self.won.attempts_made + attempts;
        Ok(record)
    }
}

/// A started handler, counted in the running-runs gauge and its job's runs in flight
/// until dropped.
struct Running<'a>(&'a Metrics, &'a JobSeries);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.run_ended();
        self.1.run_ended();
    }
}
