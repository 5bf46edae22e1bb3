//! Jobs: a name, a schedule, a handler, and policies; and the builder that validates
//! them.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures_util::future::BoxFuture;
use jiff::Timestamp;
use jiff::tz::TimeZone;

use crate::context::JobContext;
use crate::error::BoxError;
use crate::ledger::LastRun;
use crate::ledger::RunRecord;
use crate::metrics::JobSeries;
use crate::placement::{LabelError, Placement};
use crate::policy::{Misfire, OnInterrupt, Overlap, Retry, run_budget};
use crate::schedule::{
    After, At, Calendar, CronSchedule, Excluding, Interval, MAX_DURATION, RunAfter, Schedule, ScheduleError,
    ScheduleKind, Window,
};

/// A handler error saying that the scheduler's shutdown stopped the run (the daemon, at
/// a second stop signal, kills the running commands): the trigger is recorded `aborted`
/// ([`Outcome::Aborted`](crate::Outcome::Aborted)) rather than `failed`, with this
/// error's message, and is not retried.
///
/// The engine tells it apart by type (`StoppedByShutdown` at the top of the error), as
/// it does [`Permanent`](crate::Permanent).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct StoppedByShutdown(pub BoxError);

impl StoppedByShutdown {
    /// Marks `error` as the result of the shutdown's stop.
    pub fn new(error: impl Into<BoxError>) -> Self {
        Self(error.into())
    }

    /// Whether a handler's error is marked as the result of the shutdown's stop.
    pub fn marks(error: &BoxError) -> bool {
        error.is::<StoppedByShutdown>()
    }
}

/// What a job runs: any `async fn(JobContext) -> Result<(), E>` (or closure returning
/// such a future) where `E` converts into a [`BoxError`].
pub trait Handler: Send + Sync + 'static {
    /// Starts one run.
    fn call(&self, ctx: JobContext) -> BoxFuture<'static, Result<(), BoxError>>;
}

impl<F, Fut, E> Handler for F
where
    F: Fn(JobContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: Into<BoxError>,
{
    fn call(&self, ctx: JobContext) -> BoxFuture<'static, Result<(), BoxError>> {
        let run = self(ctx);
        Box::pin(async move { run.await.map_err(Into::into) })
    }
}

/// A job's name: 1 to 200 characters of ASCII letters, digits and `-_.@/`.
///
/// Names are part of trigger keys (`{job}:{trigger}`), so `:` and white space are out.
pub const MAX_NAME_LEN: usize = 200;

/// A validated job, ready for [`Scheduler::add`](crate::Scheduler::add).
pub struct Job {
    pub(crate) name: Arc<str>,
    pub(crate) schedule: Arc<dyn Schedule>,
    /// `schedule.kind()`, kept beside the name: trigger keys are built from both at
    /// every trigger, and this spares a look into the schedule.
    pub(crate) kind: ScheduleKind,
    pub(crate) handler: Arc<dyn Handler>,
    pub(crate) run_on_start: bool,
    pub(crate) misfire: Misfire,
    pub(crate) grace: Duration,
    pub(crate) every_replica: bool,
    /// Shared by the jobs that keep the default ([`Retry::into_shared`]).
    pub(crate) retry: Arc<Retry>,
    pub(crate) overlap: Overlap,
    pub(crate) on_interrupt: OnInterrupt,
    /// The labels a member must carry to run the job's triggers.
    pub(crate) placement: Arc<Placement>,
    /// The settings most jobs leave unset, boxed only when one is set: a million jobs
    /// save about 80 B each ([`Seldom`]).
    seldom: Option<Box<Seldom>>,
    /// Fencing tokens in single-replica mode (no coordinator): the last one handed out.
    pub(crate) local_fencing: AtomicU64,
    /// The newest trigger whose claim this scheduler won, in ms since the Unix epoch
    /// (`i64::MIN`: none yet): the next trigger is claimed ahead only after it, or once
    /// the instant before it is too old for anyone to claim (see `engine/fleet/ahead.rs`).
    pub(crate) last_won: AtomicI64,
    /// The owner of the job's triggers as last reckoned: the membership view's generation
    /// in the high 24 bits, the owner's index in that view plus one in the low 8 (0:
    /// none noted). Spares the rendezvous hash at every trigger (`engine/fleet`).
    pub(crate) owner_noted: AtomicU32,
    /// The job's metric counts, flushed to the recorder by its scheduler, and its last
    /// run (for the admin API): what each run's end writes, side by side. Made at first
    /// use ([`Job::series`]): a job that is only validated (`slotcron check`) has none.
    series: OnceLock<Arc<JobSeries>>,
    /// Set when the job is removed from its scheduler: a trigger of it that has not
    /// started yet does not start, and a run that ends saves no state.
    pub(crate) removed: AtomicBool,
    /// Set once a start mark was refused at the job's `max_runs`: the job has ended and
    /// none of its triggers is queued any more (`engine/limits.rs`).
    pub(crate) ended: AtomicBool,
    /// Set when the job is removed with its runs cancelled: its runs in flight stop
    /// (told by the scheduler's `runs_cancelled` notice).
    pub(crate) runs_cancelled: AtomicBool,
}

/// The settings of a [`Job`] that most jobs leave unset, kept out of line: a job holds
/// `None` when all of them are unset, and reads [`Seldom::NONE`] then.
#[derive(Clone, Default)]
pub(crate) struct Seldom {
    pub(crate) timeout: Option<Duration>,
    pub(crate) payload: Option<Arc<serde_json::Value>>,
    pub(crate) jitter: Option<Duration>,
    /// The most scheduled triggers the job runs across the fleet, counted with their
    /// start marks (`None`: no limit).
    pub(crate) max_runs: Option<u64>,
    /// How many failed triggers in a row pause the job across the fleet (`None`: never).
    pub(crate) pause_after_failures: Option<u64>,
    /// The job whose runs fire this one's triggers ([`JobBuilder::run_after`]), if chained.
    pub(crate) parent: Option<Arc<str>>,
}

impl Seldom {
    /// All unset.
    const NONE: Seldom = Seldom {
        timeout: None,
        payload: None,
        jitter: None,
        max_runs: None,
        pause_after_failures: None,
        parent: None,
    };

    /// Boxed if any is set, else `None`.
    fn boxed(self) -> Option<Box<Seldom>> {
        let unset = self.timeout.is_none()
            && self.payload.is_none()
            && self.jitter.is_none()
            && self.max_runs.is_none()
            && self.pause_after_failures.is_none()
            && self.parent.is_none();
        (!unset).then(|| Box::new(self))
    }
}

impl Clone for Job {
    /// A copy whose single-replica fencing tokens continue from the original's.
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            schedule: self.schedule.clone(),
            kind: self.kind,
            handler: self.handler.clone(),
            run_on_start: self.run_on_start,
            misfire: self.misfire,
            grace: self.grace,
            every_replica: self.every_replica,
            retry: self.retry.clone(),
            overlap: self.overlap,
            on_interrupt: self.on_interrupt,
            placement: self.placement.clone(),
            seldom: self.seldom.clone(),
            local_fencing: AtomicU64::new(self.local_fencing.load(Ordering::Relaxed)),
            last_won: AtomicI64::new(i64::MIN),
            owner_noted: AtomicU32::new(0),
            series: OnceLock::new(),
            removed: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            runs_cancelled: AtomicBool::new(false),
        }
    }
}

impl From<Job> for JobBuilder {
    /// A builder holding the job's settings, to build it again (into a
    /// [`Plan`](crate::Plan), for example).
    fn from(job: Job) -> Self {
        let Seldom { timeout, payload, jitter, max_runs, pause_after_failures, parent } =
            job.seldom.map(|s| *s).unwrap_or_default();
        Self {
            name: job.name.to_string(),
            schedules: vec![Ok(job.schedule)],
            handler: Some(job.handler),
            timeout,
            run_on_start: job.run_on_start,
            misfire: Some(job.misfire),
            grace: job.grace,
            payload,
            every_replica: job.every_replica,
            retry: *job.retry,
            attempts: job.retry.attempts(),
            multiplier: job.retry.multiplier(),
            overlap: job.overlap,
            jitter,
            on_interrupt: job.on_interrupt,
            max_runs,
            pause_after_failures,
            on: Ok(job.placement),
            run_after: parent,
            // The job's schedule is already bounded, its calendars applied.
            window: (None, None),
            exclude: Vec::new(),
        }
    }
}

impl Job {
    /// Starts building a job called `name`.
    pub fn builder(name: impl Into<String>) -> JobBuilder {
        JobBuilder {
            name: name.into(),
            schedules: Vec::new(),
            handler: None,
            timeout: None,
            run_on_start: false,
            misfire: None,
            grace: Misfire::DEFAULT_GRACE,
            payload: None,
            every_replica: false,
            retry: Retry::once(),
            attempts: Retry::DEFAULT_ATTEMPTS,
            multiplier: Retry::DEFAULT_MULTIPLIER,
            overlap: Overlap::Allow,
            jitter: None,
            on_interrupt: OnInterrupt::Record,
            max_runs: None,
            pause_after_failures: None,
            on: Ok(Placement::default().into_shared()),
            run_after: None,
            window: (None, None),
            exclude: Vec::new(),
        }
    }

    /// The job's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The settings most jobs leave unset.
    pub(crate) fn seldom(&self) -> &Seldom {
        self.seldom.as_deref().unwrap_or(&Seldom::NONE)
    }

    /// The job's schedule.
    pub fn schedule(&self) -> &Arc<dyn Schedule> {
        &self.schedule
    }

    /// The most scheduled triggers the job runs across the fleet
    /// ([`JobBuilder::max_runs`]); `None`: no limit.
    pub fn max_runs(&self) -> Option<u64> {
        self.seldom().max_runs
    }

    /// How many failed triggers in a row pause the job across the fleet
    /// ([`JobBuilder::pause_after_failures`]); `None`: never.
    pub fn pause_after_failures(&self) -> Option<u64> {
        self.seldom().pause_after_failures
    }

    /// The limit on one run, if any.
    pub fn timeout(&self) -> Option<Duration> {
        self.seldom().timeout
    }

    /// What happens to a trigger whose run was interrupted.
    pub fn on_interrupt(&self) -> OnInterrupt {
        self.on_interrupt
    }

    /// What happens to triggers noticed later than the grace window.
    pub fn misfire(&self) -> Misfire {
        self.misfire
    }

    /// How late a trigger may be noticed before it counts as a misfire.
    pub fn grace(&self) -> Duration {
        self.grace
    }

    /// Whether every replica runs every trigger, unclaimed.
    pub fn on_every_replica(&self) -> bool {
        self.every_replica
    }

    /// Whether an interval job also fires at start-up.
    pub fn run_on_start(&self) -> bool {
        self.run_on_start
    }

    /// The retry budget: attempts and the backoff between them.
    pub fn retry(&self) -> Retry {
        *self.retry
    }

    /// What a trigger does when a run of this job is still going in the fleet.
    pub fn overlap(&self) -> Overlap {
        self.overlap
    }

    /// The labels a member must carry to run the job ([`JobBuilder::on`]).
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// The job whose runs fire this one's triggers, for a chained job
    /// ([`JobBuilder::run_after`]).
    pub fn parent(&self) -> Option<&str> {
        self.seldom().parent.as_deref()
    }

    /// The most each trigger's start is delayed by, if jittered.
    pub fn jitter(&self) -> Option<Duration> {
        self.seldom().jitter
    }

    /// How long one trigger's run may take, every attempt and backoff included:
    /// [`run_budget`] with this job's attempts, timeout and backoffs, `kill_grace` (the
    /// scheduler's cancel grace) and `slack`. `None` without a timeout (unbounded).
    pub fn run_budget(&self, kill_grace: Duration, slack: Duration) -> Option<Duration> {
        run_budget(self.retry.attempts(), self.timeout(), kill_grace, self.retry.total_backoff(), slack)
    }
}

impl Job {
    /// The job as [`JobBuilder::build`] would make it again from its settings: its
    /// single-replica fencing count from zero (a clone's continues from the original's).
    pub(crate) fn renewed(self) -> Self {
        Self { local_fencing: AtomicU64::new(0), ..self }
    }

    /// The job's metric counts and last run, made at the first call.
    pub(crate) fn series(&self) -> &Arc<JobSeries> {
        self.series.get_or_init(|| Arc::new(JobSeries::new(&self.name)))
    }

    /// Remembers `record` as the job's last run (an older trigger finishing late does
    /// not replace a newer one).
    pub(crate) fn set_last_run(&self, record: &RunRecord) {
        let mut last = self.series().last_run.lock().unwrap_or_else(|p| p.into_inner());
        match &mut *last {
            // Written in place: no allocation per run once the job has one.
            Some(last) if last.trigger <= record.trigger => **last = LastRun::from(record),
            Some(_) => {}
            None => *last = Some(Box::new(LastRun::from(record))),
        }
    }

    /// The last run [`Job::set_last_run`] remembered.
    pub(crate) fn last_run(&self) -> Option<LastRun> {
        self.series().last_run.lock().unwrap_or_else(|p| p.into_inner()).as_deref().cloned()
    }
}

impl fmt::Debug for Job {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Job")
            .field("name", &self.name)
            .field("schedule", &self.schedule)
            .field("timeout", &self.timeout())
            .field("run_on_start", &self.run_on_start)
            .field("misfire", &self.misfire)
            .field("grace", &self.grace)
            .field("retry", &self.retry)
            .field("overlap", &self.overlap)
            .field("jitter", &self.jitter())
            .field("placement", &self.placement)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Job`]; every problem is reported by [`JobBuilder::build`].
#[must_use]
pub struct JobBuilder {
    name: String,
    schedules: Vec<Result<Arc<dyn Schedule>, ScheduleError>>,
    handler: Option<Arc<dyn Handler>>,
    timeout: Option<Duration>,
    run_on_start: bool,
    misfire: Option<Misfire>,
    grace: Duration,
    payload: Option<Arc<serde_json::Value>>,
    every_replica: bool,
    retry: Retry,
    /// As given, checked by `build` (the `Retry` setters clamp).
    attempts: u32,
    multiplier: f64,
    overlap: Overlap,
    jitter: Option<Duration>,
    on_interrupt: OnInterrupt,
    /// As given, checked by `build` (0 is refused).
    max_runs: Option<u64>,
    /// As given, checked by `build` (0 is refused).
    pause_after_failures: Option<u64>,
    /// The placement as given to [`JobBuilder::on`], read (checked by `build`).
    on: Result<Arc<Placement>, LabelError>,
    /// The parent given to [`JobBuilder::run_after`] (its schedule is among `schedules`).
    run_after: Option<Arc<str>>,
    /// The window the schedule's triggers are bounded to: from (included), until
    /// (excluded).
    window: (Option<Timestamp>, Option<Timestamp>),
    /// The calendars whose instants are not triggers.
    exclude: Vec<Arc<Calendar>>,
}

impl JobBuilder {
    /// Sets the schedule (exactly one per job).
    pub fn schedule(mut self, schedule: impl Schedule) -> Self {
        self.schedules.push(Ok(Arc::new(schedule)));
        self
    }

    /// Fires every `period`, anchored to the Unix epoch ([`Interval`]).
    pub fn every(mut self, period: Duration) -> Self {
        self.schedules.push(Interval::every(period).map(|s| Arc::new(s) as Arc<dyn Schedule>));
        self
    }

    /// Fires on a cron expression evaluated in UTC ([`CronSchedule`]).
    pub fn cron(self, expression: &str) -> Self {
        self.cron_in(expression, TimeZone::UTC)
    }

    /// Fires on a cron expression evaluated on the wall clock of `zone`.
    pub fn cron_in(mut self, expression: &str, zone: TimeZone) -> Self {
        let schedule = CronSchedule::parse(expression)
            .map(|s| Arc::new(s.with_time_zone(zone)) as Arc<dyn Schedule>)
            .map_err(ScheduleError::from);
        self.schedules.push(schedule);
        self
    }

    /// Fires once at `instant` ([`At`]).
    pub fn at(self, instant: Timestamp) -> Self {
        self.schedule(At::new(instant))
    }

    /// Runs after each successful run of the job named `parent` ([`RunAfter`]): a
    /// schedule of its own, in place of `every`, `cron`, `at` or `after`. Each trigger of
    /// the parent whose run ends is a trigger of this job at the same instant, claimed
    /// like any other (so run once across the fleet): run if the parent succeeded,
    /// recorded [`SkippedParent`](crate::Outcome::SkippedParent) if its run failed or
    /// was skipped after its claim (docs/design.md, "Job chains"). A parent that is not
    /// scheduled never fires it; a cycle of chained jobs is refused when the last of
    /// them is added ([`Scheduler::add`](crate::Scheduler::add)), and a jobs file
    /// refuses an unknown parent too ([`check_chains`](crate::check_chains)).
    pub fn run_after(mut self, parent: impl Into<String>) -> Self {
        let parent: Arc<str> = parent.into().into();
        self.schedules.push(Ok(Arc::new(RunAfter::new(parent.clone()))));
        self.run_after = Some(parent);
        self
    }

    /// Fires once, `delay` after the scheduler starts ([`After`]).
    pub fn after(self, delay: Duration) -> Self {
        self.schedule(After::new(delay))
    }

    /// Sets the handler.
    pub fn handler(self, handler: impl Handler) -> Self {
        self.shared_handler(Arc::new(handler))
    }

    /// Sets a handler shared with other jobs.
    pub fn shared_handler(mut self, handler: Arc<dyn Handler>) -> Self {
        self.handler = Some(handler);
        self
    }

    /// Data for the handler, read with [`JobContext::payload`].
    pub fn payload(mut self, payload: serde_json::Value) -> Self {
        self.payload = Some(Arc::new(payload));
        self
    }

    /// Limits each run: when it expires the run's cancellation token fires, and after the
    /// scheduler's cancel grace its future is dropped. The run is recorded as timed out.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Also fires once at start-up, for the slot the start falls in (intervals only).
    /// The trigger is the start of that slot, so replicas agree on it and it runs once
    /// across the fleet.
    pub fn run_on_start(mut self, run_on_start: bool) -> Self {
        self.run_on_start = run_on_start;
        self
    }

    /// What to do with triggers noticed later than the grace window. Defaults to
    /// [`Misfire::Skip`] for recurring jobs and [`Misfire::RunOnce`] for one-shots.
    pub fn misfire(mut self, misfire: Misfire) -> Self {
        self.misfire = Some(misfire);
        self
    }

    /// How late a trigger may be noticed before it is a misfire
    /// (default [`Misfire::DEFAULT_GRACE`]); longer than zero, at most [`MAX_DURATION`],
    /// 100 years.
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Runs every trigger on every replica, without a claim: for per-host work such as
    /// warming a local cache, or cron's `@reboot` (default `false`: each trigger runs once
    /// across the fleet). Fencing tokens then count this replica's runs.
    pub fn on_every_replica(mut self, every_replica: bool) -> Self {
        self.every_replica = every_replica;
        self
    }

    /// How many attempts each trigger gets in all, the first included (default
    /// [`Retry::DEFAULT_ATTEMPTS`], 1). A failure or timeout is retried while attempts
    /// remain, unless the handler's error is [`Permanent`](crate::policy::Permanent);
    /// panics are not retried.
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts;
        self.retry = Retry::fixed(attempts, self.retry.backoff())
            .exponential(self.retry.multiplier(), self.retry.max_backoff());
        self
    }

    /// The wait before the first retry (default [`Retry::DEFAULT_BACKOFF`], none).
    pub fn backoff(mut self, backoff: Duration) -> Self {
        self.retry = Retry::fixed(self.retry.attempts(), backoff)
            .exponential(self.retry.multiplier(), self.retry.max_backoff());
        self
    }

    /// Makes the backoff exponential: each retry waits `multiplier` times the one before
    /// (default [`Retry::DEFAULT_MULTIPLIER`], 1: fixed); from 1 to 100.
    pub fn backoff_multiplier(mut self, multiplier: f64) -> Self {
        self.multiplier = multiplier;
        self.retry = self.retry.exponential(multiplier, self.retry.max_backoff());
        self
    }

    /// The longest wait between attempts (default: no cap); at least the
    /// [`backoff`](Self::backoff), or [`build`](Self::build) fails.
    pub fn backoff_max(mut self, max: Duration) -> Self {
        self.retry = self.retry.exponential(self.retry.multiplier(), Some(max));
        self
    }

    /// What a trigger does when a run of this job is still going anywhere in the fleet
    /// (default [`Overlap::Allow`]).
    pub fn overlap(mut self, overlap: Overlap) -> Self {
        self.overlap = overlap;
        self
    }

    /// What happens to a trigger whose run was interrupted (default
    /// [`OnInterrupt::Record`]; [`OnInterrupt::Rerun`] runs it once more).
    pub fn on_interrupt(mut self, on_interrupt: OnInterrupt) -> Self {
        self.on_interrupt = on_interrupt;
        self
    }

    /// Bounds a recurring schedule's triggers to those at or after `start` ([`Window`],
    /// Temporal's `startAt`); the schedule's anchor is unchanged.
    pub fn start_at(mut self, start: Timestamp) -> Self {
        self.window.0 = Some(start);
        self
    }

    /// Bounds a recurring schedule's triggers to those before `end` ([`Window`],
    /// Temporal's `endAt`); past it the job has no more triggers.
    pub fn end_at(mut self, end: Timestamp) -> Self {
        self.window.1 = Some(end);
        self
    }

    /// Ends the job after `max_runs` of its scheduled triggers have started across the
    /// fleet (Temporal's limited actions): each is counted in the coordinator with its
    /// start mark, so exactly; the next trigger's mark is refused, it is recorded
    /// [`SkippedMaxRuns`](crate::Outcome::SkippedMaxRuns) and the job has no more
    /// triggers. Manual runs, backfills, retries and reruns do not count. The count is
    /// kept by job name: neither a restart nor a change to the job resets it. Needs a
    /// coordinator that counts runs ([`Coordinator::counts_runs`](crate::Coordinator::counts_runs));
    /// [`Scheduler::add`](crate::Scheduler::add) refuses the job otherwise. The job's
    /// triggers are claimed at their instant, never ahead. At least 1 (default: no limit).
    pub fn max_runs(mut self, max_runs: u64) -> Self {
        self.max_runs = Some(max_runs);
        self
    }

    /// Pauses the job across the fleet after `failures` of its triggers in a row have
    /// failed (Temporal's `pauseOnFailure`): a trigger whose run ended `failed`,
    /// `timed-out` or `panicked` after all its attempts counts one; one that `succeeded`
    /// ends the streak; any other end (`interrupted`, `cancelled`, `aborted`, a skip)
    /// neither counts nor ends it, and neither do manual runs and backfills. The streak
    /// is kept in the fleet's controls (the coordinator's, or the store's without one), so
    /// the triggers count whichever replica ran them, and the pause is kept with the
    /// reason `paused after N failed triggers in a row, the last at T`. Resuming the job
    /// starts a new streak. Needs controls that keep streaks
    /// ([`Controls::counts_failures`](crate::Controls::counts_failures));
    /// [`Scheduler::add`](crate::Scheduler::add) refuses the job otherwise, and for a job
    /// every replica runs. At least 1 (default: never paused).
    pub fn pause_after_failures(mut self, failures: u64) -> Self {
        self.pause_after_failures = Some(failures);
        self
    }

    /// Removes the instants `calendar` excludes from the job's fire times ([`Excluding`],
    /// Quartz's calendars, Temporal's `exclude`): an excluded instant is not a trigger at
    /// all, and nothing is recorded for it. May be called for several calendars.
    pub fn exclude(mut self, calendar: Arc<Calendar>) -> Self {
        self.exclude.push(calendar);
        self
    }

    /// Delays each trigger's start by an offset in `[0, jitter)` from a hash of the job's
    /// name and the trigger, the same on every replica
    /// ([`jitter_offset`](crate::policy::jitter_offset)); the trigger instant and key stay
    /// nominal. Must be shorter than the schedule's shortest slot (default: none).
    pub fn jitter(mut self, jitter: Duration) -> Self {
        self.jitter = Some(jitter);
        self
    }

    /// Places the job on the members that carry every one of `labels`, each `key` (the
    /// key with any value) or `key=value` ([`Placement`]): only they claim and run its
    /// triggers, still once across the fleet; a trigger no live member can run is
    /// recorded [`SkippedNoMember`](crate::Outcome::SkippedNoMember). Without a
    /// coordinator, [`Scheduler::add`](crate::Scheduler::add) refuses a job whose labels
    /// the scheduler does not carry. Default: none, any member.
    pub fn on<S: AsRef<str>>(mut self, labels: impl IntoIterator<Item = S>) -> Self {
        self.on = Placement::parse(labels).map(Placement::into_shared);
        self
    }

    /// Every problem of a chained job's settings ([`Self::run_after`]), each a
    /// [`JobError::Invalid`] of field `run_after` naming the job: a parent's name that is
    /// not a job name, the job itself as its parent, another schedule, and each of
    /// `start`, `end`, `exclude`, `jitter`, `on` and `on_every_replica` set (the job's
    /// triggers are its parent's, fired by the replica that ran the parent). None for a
    /// job that runs after no other. [`Self::build`] reports the first; a jobs file
    /// reports them all.
    pub fn chain_problems(&self) -> Vec<JobError> {
        let Some(parent) = &self.run_after else { return Vec::new() };
        let invalid = |reason| JobError::Invalid { job: self.name.clone(), field: "run_after", reason };
        let mut reasons = Vec::new();
        if let Err(reason) = validate_job_name(parent) {
            reasons.push(format!("the parent's name: {reason}"));
        }
        if **parent == *self.name {
            reasons.push(format!("a job cannot run after itself (a cycle: {parent} → {parent})"));
        }
        if self.schedules.len() > 1 {
            reasons.push(
                "cannot be combined with another schedule (every, cron, at or after): a job has exactly \
                 one schedule"
                    .into(),
            );
        }
        let triggers = "the parent's triggers are the job's";
        let replica = "the replica that ran the parent's trigger";
        let placed = self.on.as_ref().is_ok_and(|placement| !placement.is_anywhere());
        let combined = [
            ("start", self.window.0.is_some(), triggers.to_owned()),
            ("end", self.window.1.is_some(), triggers.to_owned()),
            ("exclude", !self.exclude.is_empty(), triggers.to_owned()),
            ("jitter", self.jitter.is_some(), "its trigger fires as its parent's run ends".to_owned()),
            ("on", placed, format!("{replica} runs it")),
            ("on_every_replica", self.every_replica, format!("{replica} fires it")),
        ];
        let combined = combined.into_iter().filter(|(_, set, _)| *set);
        reasons.extend(combined.map(|(key, _, why)| format!("cannot be combined with {key}: {why}")));
        reasons.into_iter().map(invalid).collect()
    }

    /// The retry policy's problem, if any: the field and the reason.
    fn check_retry(&self) -> Result<(), (&'static str, String)> {
        if self.attempts == 0 {
            return Err(("attempts", "must be at least 1 (the first attempt counts)".into()));
        }
        if !(1.0..=100.0).contains(&self.multiplier) {
            return Err(("backoff_multiplier", "must be a number from 1 (a fixed backoff) to 100".into()));
        }
        if self.retry.backoff() > MAX_DURATION || self.retry.max_backoff().is_some_and(|m| m > MAX_DURATION) {
            return Err(("backoff", "must be at most 100 years".into()));
        }
        if let Some(max) = self.retry.max_backoff()
            && max < self.retry.backoff()
        {
            let reason = format!(
                "{max:?} is shorter than the backoff of {:?}: the cap must be at least the first wait",
                self.retry.backoff()
            );
            return Err(("backoff_max", reason));
        }
        Ok(())
    }

    /// Checks the limits counted across the fleet (`max_runs`, `pause_after_failures`):
    /// at least 1, and not for a job every replica runs. The field and the reason.
    fn check_counted(&self) -> Result<(), (&'static str, &'static str)> {
        let uncounted = "cannot be counted for a job every replica runs (on_every_replica)";
        for (field, limit) in
            [("max_runs", self.max_runs), ("pause_after_failures", self.pause_after_failures)]
        {
            match limit {
                Some(0) => return Err((field, "must be at least 1")),
                Some(_) if self.every_replica => return Err((field, uncounted)),
                _ => {}
            }
        }
        Ok(())
    }

    /// Validates the job.
    ///
    /// # Errors
    /// The first problem found, naming the job, the field and the reason.
    pub fn build(self) -> Result<Job, JobError> {
        let job = &self.name;
        let invalid =
            |field, reason: &str| JobError::Invalid { job: job.clone(), field, reason: reason.into() };
        validate_job_name(&self.name).map_err(|reason| invalid("name", &reason))?;
        if let Some(first) = self.chain_problems().into_iter().next() {
            return Err(first);
        }
        self.check_retry().map_err(|(field, reason)| invalid(field, &reason))?;
        self.check_counted().map_err(|(field, reason)| invalid(field, reason))?;
        let mut schedules = self.schedules.into_iter();
        let schedule = match (schedules.next(), schedules.next()) {
            (None, _) => {
                return Err(invalid(
                    "schedule",
                    "a job needs a schedule (every, cron, at, after or run_after)",
                ));
            }
            (Some(_), Some(_)) => {
                return Err(invalid("schedule", "a job has exactly one schedule; found several"));
            }
            (Some(schedule), None) => {
                schedule.map_err(|source| JobError::Schedule { job: job.clone(), source })?
            }
        };
        let schedule =
            bound(schedule, self.window, self.exclude, self.run_on_start).map_err(|e| e.for_job(job))?;
        let handler = self.handler.ok_or_else(|| invalid("handler", "a job needs a handler"))?;
        if self.timeout == Some(Duration::ZERO) {
            return Err(invalid("timeout", "must be longer than zero"));
        }
        if self.timeout.is_some_and(|t| t > MAX_DURATION) {
            return Err(invalid("timeout", "must be at most 100 years"));
        }
        if self.grace.is_zero() {
            // A scheduler always notices a trigger a little after its instant: with no
            // grace at all, every trigger would be a misfire.
            return Err(invalid("grace", "must be longer than zero (every trigger would be missed)"));
        }
        if self.grace > MAX_DURATION {
            return Err(invalid("grace", "must be at most 100 years"));
        }
        let kind = schedule.kind();
        if let ScheduleKind::After(delay) = kind
            && delay > MAX_DURATION
        {
            return Err(invalid("after", "the delay must be at most 100 years"));
        }
        if self.run_on_start && !matches!(kind, ScheduleKind::Interval { .. }) {
            return Err(invalid("run_on_start", "only interval schedules (every, @every) can run on start"));
        }
        let misfire =
            self.misfire.unwrap_or(if kind.is_one_shot() { Misfire::RunOnce } else { Misfire::Skip });
        if let Misfire::RunAll { cap: 0 } = misfire {
            return Err(invalid("misfire_cap", "must be at least 1"));
        }
        if let Some(jitter) = self.jitter {
            check_jitter(schedule.as_ref(), jitter).map_err(|reason| invalid("jitter", &reason))?;
        }
        let placement = self.on.map_err(|e| invalid("on", &e.to_string()))?;
        let name: Arc<str> = self.name.into();
        Ok(Job {
            series: OnceLock::new(),
            name,
            kind: schedule.kind(),
            schedule,
            handler,
            run_on_start: self.run_on_start,
            misfire,
            grace: self.grace,
            every_replica: self.every_replica,
            retry: self.retry.into_shared(),
            overlap: self.overlap,
            on_interrupt: self.on_interrupt,
            placement,
            seldom: Seldom {
                timeout: self.timeout,
                payload: self.payload,
                jitter: self.jitter.filter(|j| !j.is_zero()),
                max_runs: self.max_runs,
                pause_after_failures: self.pause_after_failures,
                parent: self.run_after,
            }
            .boxed(),
            local_fencing: AtomicU64::new(0),
            last_won: AtomicI64::new(i64::MIN),
            owner_noted: AtomicU32::new(0),
            removed: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            runs_cancelled: AtomicBool::new(false),
        })
    }

    /// The job's name as given.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Feeds every setting but the handler to `hasher`, as text that differs whenever a
    /// setting does: what a [`Plan`](crate::Plan)'s derived fingerprint hashes. Written
    /// straight into the hasher, without building the text.
    pub(crate) fn hash_settings(&self, hasher: &mut impl std::hash::Hasher) {
        use std::fmt::Write;
        struct Feed<'a, H>(&'a mut H);
        impl<H: std::hash::Hasher> Write for Feed<'_, H> {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                self.0.write(s.as_bytes());
                Ok(())
            }
        }
        let mut feed = Feed(hasher);
        // Writing into a hasher cannot fail.
        _ = write!(feed, "name={:?}", self.name);
        for schedule in &self.schedules {
            _ = match schedule {
                Ok(schedule) => write!(feed, " schedule={schedule:?}"),
                Err(e) => write!(feed, " schedule=invalid: {e}"),
            };
        }
        _ = write!(
            feed,
            " timeout={:?} run_on_start={} misfire={:?} grace={:?} every_replica={} attempts={} \
             multiplier={} retry={:?} overlap={:?} jitter={:?} payload=",
            self.timeout,
            self.run_on_start,
            self.misfire,
            self.grace,
            self.every_replica,
            self.attempts,
            self.multiplier,
            self.retry,
            self.overlap,
            self.jitter,
        );
        if let Some(payload) = &self.payload {
            _ = write!(feed, "{payload}");
        }
        // Only when set: the fingerprints of the plans made before it existed stay.
        if self.on_interrupt != OnInterrupt::Record {
            _ = write!(feed, " on_interrupt={}", self.on_interrupt.name());
        }
        if let Some(max_runs) = self.max_runs {
            _ = write!(feed, " max_runs={max_runs}");
        }
        if let Some(failures) = self.pause_after_failures {
            _ = write!(feed, " pause_after_failures={failures}");
        }
        match &self.on {
            Ok(placement) if placement.is_anywhere() => {}
            Ok(placement) => _ = write!(feed, " on={placement}"),
            Err(e) => _ = write!(feed, " on=invalid: {e}"),
        }
    }
}

/// How many fire times [`check_jitter`] compares to find a schedule's shortest slot.
const JITTER_SLOTS_CHECKED: usize = 1_000;

/// A jitter must be shorter than the schedule's shortest slot (else a trigger could
/// start after the next one): for intervals the period; for cron expressions the
/// shortest gap among the next [`JITTER_SLOTS_CHECKED`] fire times from now.
fn check_jitter(schedule: &dyn Schedule, jitter: Duration) -> Result<(), String> {
    let shortest = match schedule.kind() {
        ScheduleKind::Interval { period } => Some(period),
        ScheduleKind::Recurring => {
            let mut shortest: Option<Duration> = None;
            let mut at = schedule.next_after(Timestamp::now());
            for _ in 0..JITTER_SLOTS_CHECKED {
                let (Some(from), Some(to)) = (at, at.and_then(|a| schedule.next_after(a))) else { break };
                let gap = Duration::try_from(from.duration_until(to)).unwrap_or_default();
                shortest = Some(shortest.map_or(gap, |s| s.min(gap)));
                at = Some(to);
            }
            shortest
        }
        ScheduleKind::At(_) | ScheduleKind::After(_) | ScheduleKind::Chained => {
            return Err("applies to recurring schedules (every, cron) only".into());
        }
    };
    match shortest {
        Some(slot) if jitter >= slot => Err(format!(
            "{jitter:?} is not shorter than the schedule's shortest slot, {slot:?}: a trigger could start after the next one"
        )),
        _ => Ok(()),
    }
}

/// Checks a job name; the reason on failure.
pub fn validate_job_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!("must be at most {MAX_NAME_LEN} characters, got {}", name.len()));
    }
    if let Some(bad) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || "-_.@/".contains(*c))) {
        return Err(format!("{bad:?} is not allowed; use ASCII letters, digits and - _ . @ /"));
    }
    Ok(())
}

/// A job that cannot be built or added.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// A field with an invalid value.
    #[error("job {job:?}: {field}: {reason}")]
    Invalid {
        /// The job's name.
        job: String,
        /// The field at fault (`name`, `schedule`, `timeout`...).
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// An invalid schedule.
    #[error("job {job:?}: {source}")]
    Schedule {
        /// The job's name.
        job: String,
        /// What is wrong with the schedule.
        source: ScheduleError,
    },
    /// A job with this name is already scheduled.
    #[error("job {job:?}: name: a job with this name already exists")]
    Duplicate {
        /// The job's name.
        job: String,
    },
}

/// `schedule` bounded to `window` (a [`Window`]) and less the instants `exclude`'s
/// calendars exclude (an [`Excluding`]), each only when given; `run_on_start` goes with
/// neither.
fn bound(
    schedule: Arc<dyn Schedule>,
    window: (Option<Timestamp>, Option<Timestamp>),
    exclude: Vec<Arc<Calendar>>,
    run_on_start: bool,
) -> Result<Arc<dyn Schedule>, BoundError> {
    if run_on_start && !exclude.is_empty() {
        let reason = "cannot be combined with exclude (a calendar may exclude the start's slot)";
        return Err(BoundError::Invalid("run_on_start", reason));
    }
    let schedule = match window {
        (None, None) => schedule,
        (start, end) => {
            if run_on_start {
                return Err(BoundError::Invalid("run_on_start", "cannot be combined with start or end"));
            }
            Arc::new(Window::new(schedule, start, end).map_err(BoundError::Schedule)?) as Arc<dyn Schedule>
        }
    };
    Ok(if exclude.is_empty() { schedule } else { Arc::new(Excluding::new(schedule, exclude)) })
}

/// Why [`bound`] failed, before it names the job.
enum BoundError {
    Invalid(&'static str, &'static str),
    Schedule(ScheduleError),
}

impl BoundError {
    fn for_job(self, job: &str) -> JobError {
        match self {
            Self::Invalid(field, reason) => {
                JobError::Invalid { job: job.to_owned(), field, reason: reason.into() }
            }
            Self::Schedule(source) => JobError::Schedule { job: job.to_owned(), source },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn noop(_: JobContext) -> Result<(), BoxError> {
        Ok(())
    }

    #[test]
    fn a_job_that_sets_none_of_the_seldom_settings_holds_no_box_for_them() {
        let job = Job::builder("job").every(Duration::from_secs(60)).handler(noop).build().unwrap();
        assert!(job.seldom.is_none());
        assert_eq!((job.timeout(), job.jitter(), job.max_runs(), job.parent()), (None, None, None, None));
    }

    #[test]
    fn a_job_that_sets_one_keeps_every_seldom_setting_it_was_given() {
        let job = Job::builder("job")
            .every(Duration::from_secs(60))
            .timeout(Duration::from_secs(5))
            .max_runs(3)
            .pause_after_failures(2)
            .handler(noop)
            .build()
            .unwrap();
        assert!(job.seldom.is_some());
        assert_eq!(job.timeout(), Some(Duration::from_secs(5)));
        assert_eq!((job.max_runs(), job.pause_after_failures(), job.jitter()), (Some(3), Some(2), None));
        let rebuilt = JobBuilder::from(job.clone()).build().unwrap();
        assert_eq!((rebuilt.timeout(), rebuilt.max_runs()), (Some(Duration::from_secs(5)), Some(3)));
    }
}
