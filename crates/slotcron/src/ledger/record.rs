use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use jiff::Timestamp;

use super::UnknownName;

/// How a trigger ended on one replica, or that its run is still going.
///
/// An open set: a ledger written by several releases (a rolling upgrade) may hold names
/// this release does not know; they read as [`Outcome::Other`] ([`Outcome::from_name`])
/// and are shown as written. Adding an outcome: a variant, its name in
/// [`Outcome::as_str`], and an entry in [`Outcome::ALL`].
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The handler returned `Ok`.
    Succeeded,
    /// The handler returned an error.
    Failed,
    /// The handler ran past its timeout.
    TimedOut,
    /// The handler panicked.
    Panicked,
    /// The scheduler shut down and dropped the handler before it finished.
    Aborted,
    /// Another replica won the claim: normal in a fleet.
    SkippedLost,
    /// The coordinator was unreachable or slower than the claim timeout: the trigger was
    /// skipped rather than risk a double run (fail closed).
    SkippedBackendUnavailable,
    /// This replica's clock was off the coordinator's by more than the clock-skew slack:
    /// the trigger was skipped rather than risk a double run (fail closed).
    SkippedClockSkew,
    /// The trigger was noticed after its grace window and the misfire policy dropped it.
    Missed,
    /// A run of the job was still going in the fleet and the overlap policy (`forbid`,
    /// or a `buffer_one` already holding a trigger) skipped this one.
    SkippedOverlap,
    /// This replica was at its concurrency cap for the whole grace window and did not
    /// claim the trigger.
    SkippedConcurrency,
    /// The job was paused ([`Scheduler::pause`](crate::Scheduler::pause)) when the
    /// trigger came due: nothing was claimed or run.
    SkippedPaused,
    /// No live member of the fleet carries the labels the job is placed on
    /// ([`JobBuilder::on`](crate::JobBuilder::on)): the trigger was claimed so that no
    /// member runs it later, and not run; the reason names the labels.
    SkippedNoMember,
    /// The run has started and not ended yet: the record written when it starts, which
    /// its end completes.
    Running,
    /// The run never ended: the process recording it died (a crash, `kill -9`, a power
    /// loss), and a later start found its `running` record (the stale sweep).
    Interrupted,
    /// An operator stopped the run ([`Scheduler::cancel`](crate::Scheduler::cancel)):
    /// its handler was asked to stop (a command's process group got SIGTERM, then
    /// SIGKILL after the kill grace) and it is not retried. The error text says who
    /// asked. Not a failure: no failure hook runs for it.
    Cancelled,
    /// The trigger of a chained job ([`JobBuilder::run_after`](crate::JobBuilder::run_after))
    /// whose parent's run of the same instant did not succeed (it failed, timed out, was
    /// cancelled, interrupted, or skipped after its claim): claimed so that no member runs
    /// it, and not run; the reason names the parent and its outcome.
    SkippedParent,
    /// The job has run its [`max_runs`](crate::JobBuilder::max_runs) scheduled triggers
    /// across the fleet: this trigger's start mark was refused and it was not run (the
    /// job has ended). The reason says `max_runs reached (N)`.
    SkippedMaxRuns,
    /// An outcome this release does not know, written by another release.
    Other(UnknownName),
}

impl Outcome {
    /// Every outcome this release knows, in declaration order.
    pub const ALL: [Outcome; 18] = [
        Self::Succeeded,
        Self::Failed,
        Self::TimedOut,
        Self::Panicked,
        Self::Aborted,
        Self::SkippedLost,
        Self::SkippedBackendUnavailable,
        Self::SkippedClockSkew,
        Self::Missed,
        Self::SkippedOverlap,
        Self::SkippedConcurrency,
        Self::SkippedPaused,
        Self::SkippedNoMember,
        Self::Running,
        Self::Interrupted,
        Self::Cancelled,
        Self::SkippedParent,
        Self::SkippedMaxRuns,
    ];

    /// The stable name used in logs, files and databases, e.g. `skipped-lost`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::TimedOut => "timed-out",
            Self::Panicked => "panicked",
            Self::Aborted => "aborted",
            Self::SkippedLost => "skipped-lost",
            Self::SkippedBackendUnavailable => "skipped-backend-unavailable",
            Self::SkippedClockSkew => "skipped-clock-skew",
            Self::Missed => "missed",
            Self::SkippedOverlap => "skipped-overlap",
            Self::SkippedConcurrency => "skipped-concurrency",
            Self::SkippedPaused => "skipped-paused",
            Self::SkippedNoMember => "skipped-no-member",
            Self::Running => "running",
            Self::Interrupted => "interrupted",
            Self::Cancelled => "cancelled",
            Self::SkippedParent => "skipped-parent",
            Self::SkippedMaxRuns => "skipped-max-runs",
            Self::Other(name) => name.as_str(),
        }
    }

    /// The outcome named `name`, as a reader takes it: a name this release does not know
    /// is [`Outcome::Other`], never an error.
    pub fn from_name(name: &str) -> Self {
        name.parse().unwrap_or_else(|_| Self::Other(UnknownName::new(name)))
    }

    /// Whether this is a failed run: the handler failed, timed out or panicked, or its
    /// run never ended (`interrupted`). Skips, misses, `aborted` (stopped by a shutdown)
    /// and `cancelled` (stopped by an operator) are not failures; neither is an outcome
    /// of another release.
    pub fn is_failure(self) -> bool {
        matches!(self, Self::Failed | Self::TimedOut | Self::Panicked | Self::Interrupted)
    }

    /// Whether the handler ran (whatever its result), or is running. An outcome of
    /// another release counts as not run.
    pub fn ran(self) -> bool {
        matches!(
            self,
            Self::Succeeded
                | Self::Failed
                | Self::TimedOut
                | Self::Panicked
                | Self::Aborted
                | Self::Running
                | Self::Interrupted
                | Self::Cancelled
        )
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown outcome name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown outcome {0:?}")]
pub struct UnknownOutcome(pub String);

/// Only the names this release knows ([`Outcome::ALL`]): for names a user typed. A
/// reader of stored names uses [`Outcome::from_name`].
impl FromStr for Outcome {
    type Err = UnknownOutcome;

    fn from_str(name: &str) -> Result<Self, UnknownOutcome> {
        Self::ALL.into_iter().find(|o| o.as_str() == name).ok_or_else(|| UnknownOutcome(name.to_owned()))
    }
}

/// Why a trigger was handled: what put it in the queue.
///
/// An open set, as [`Outcome`] is: a name this release does not know reads as
/// [`Cause::Other`] ([`Cause::from_name`]).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Cause {
    /// The trigger came due on schedule.
    #[default]
    Scheduled,
    /// A trigger missed while the scheduler was down or busy, run late by the misfire
    /// policy (`run_once`, `run_all`).
    CatchUp,
    /// A run asked for by hand (e.g. through an admin API).
    Manual,
    /// A past trigger run on purpose for a time range.
    Backfill,
    /// The start-up run of a job with `run_on_start`.
    StartUp,
    /// A trigger whose claim this replica took over from one that had gone before
    /// marking its start (docs/design.md, "Claims, start marks and takeover"); run late,
    /// exempt from the misfire grace. The record's error field names the replica it was
    /// taken over from.
    TakenOver,
    /// A rerun of a trigger whose run was interrupted, for a job with
    /// [`OnInterrupt::Rerun`](crate::OnInterrupt::Rerun).
    Recovered,
    /// A cause this release does not know, written by another release.
    Other(UnknownName),
}

impl Cause {
    /// Whether a run of this cause is a scheduled trigger the job's state follows: not a
    /// manual or backfilled run, whose instant is no trigger the schedule resumes from.
    pub(crate) fn saves_state(self) -> bool {
        !matches!(self, Self::Manual | Self::Backfill)
    }

    /// Every cause this release knows, in declaration order.
    pub const ALL: [Cause; 7] = [
        Self::Scheduled,
        Self::CatchUp,
        Self::Manual,
        Self::Backfill,
        Self::StartUp,
        Self::TakenOver,
        Self::Recovered,
    ];

    /// The stable name used in logs, files and databases, e.g. `catch-up`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Scheduled => "scheduled",
            Self::CatchUp => "catch-up",
            Self::Manual => "manual",
            Self::Backfill => "backfill",
            Self::StartUp => "start-up",
            Self::TakenOver => "taken-over",
            Self::Recovered => "recovered",
            Self::Other(name) => name.as_str(),
        }
    }

    /// The cause named `name`; a name this release does not know is [`Cause::Other`].
    pub fn from_name(name: &str) -> Self {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == name)
            .unwrap_or_else(|| Self::Other(UnknownName::new(name)))
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The process a run started, as its handler reported it
/// ([`JobContext::started_process`](crate::JobContext::started_process)): what a later
/// start needs to stop a command that a dead scheduler left running.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RunProcess {
    /// The host it runs on (its hostname).
    pub host: Arc<str>,
    /// Its process id, which is also its process group's id when it leads one.
    pub pid: u32,
    /// When it started, in whatever unit the handler chose (the daemon: clock ticks since
    /// boot, `/proc/PID/stat` field 22): a process with the same pid and another start is
    /// a later one that reused the pid.
    pub start_time: u64,
}

/// One trigger as one replica handled it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRecord {
    /// The job's name.
    pub job: Arc<str>,
    /// The scheduled instant (UTC).
    pub trigger: Timestamp,
    /// The scheduler instance that recorded it.
    pub instance: Arc<str>,
    /// Why the trigger was handled.
    pub cause: Cause,
    /// How many times the handler was called: 0 for a skipped or missed trigger.
    pub attempts: u32,
    /// How it ended, or [`Outcome::Running`].
    pub outcome: Outcome,
    /// The fencing token of the won claim, when the handler ran.
    pub fencing_token: Option<u64>,
    /// When the handler started, or when the trigger was skipped (UTC).
    pub started: Timestamp,
    /// How long the handler ran, all attempts and backoffs included (zero when it did
    /// not, or while it runs).
    pub duration: Duration,
    /// The error, panic message, or reason for a skip.
    pub error: Option<String>,
    /// The process the run started, if its handler reported one.
    pub process: Option<RunProcess>,
}

impl RunRecord {
    /// [`Self::duration`] once the run's end was seen: `None` while it is
    /// [`Outcome::Running`] and for an [`Outcome::Interrupted`] one, which never ended
    /// (zero for a trigger that did not run).
    pub fn ended_duration(&self) -> Option<Duration> {
        (!matches!(self.outcome, Outcome::Running | Outcome::Interrupted)).then_some(self.duration)
    }
}

/// The last trigger a scheduler handled of a job: its record once this process started
/// or handled one (`running` while its run goes on), else what the store kept (trigger
/// and outcome only).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LastRun {
    /// The scheduled instant (UTC).
    pub trigger: Timestamp,
    /// How it ended (`None`: the store saw it start, its end was not stored).
    pub outcome: Option<Outcome>,
    /// The instance that handled it (`None` when read from the store).
    pub instance: Option<Arc<str>>,
    /// How long the handler ran (`None` when read from the store, and while the run goes
    /// on or for an interrupted one: [`RunRecord::ended_duration`]).
    pub duration: Option<Duration>,
    /// The record's error: what a failed run returned or panicked with, or why the
    /// trigger was skipped ([`RunRecord::error`]; `None` when read from the store).
    pub error: Option<String>,
}

impl From<&RunRecord> for LastRun {
    fn from(record: &RunRecord) -> Self {
        Self {
            trigger: record.trigger,
            outcome: Some(record.outcome),
            instance: Some(record.instance.clone()),
            duration: record.ended_duration(),
            error: record.error.clone(),
        }
    }
}

/// A run's record shared between its engine task and its handler's context, locked
/// (a poisoned lock is taken as it is: a record is plain data).
pub(crate) fn lock(record: &Mutex<RunRecord>) -> MutexGuard<'_, RunRecord> {
    record.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The record an update of `stored` with `update` leaves (the rule every ledger's
/// [`update`](super::Ledger::update) keeps): `update`, except that when `stored` says
/// [`Interrupted`](Outcome::Interrupted) — a live member presumed the run lost while its
/// daemon was cut off — and `update` is the run's real end, the record keeps both: its
/// error reads `{update's error}; presumed lost meanwhile: {stored error}` (or only the
/// latter part, without an error of its own). Written again (a write whose reply was
/// lost), the same end leaves the same record.
pub fn ended_after_presumed_lost(stored: &RunRecord, update: &RunRecord) -> RunRecord {
    let mut record = update.clone();
    let own = update.error.as_ref().map(|error| format!("{error}; ")).unwrap_or_default();
    let presumed = |error: &str| format!("{own}{PRESUMED_LOST}{error}");
    let stored_error = stored.error.as_deref().unwrap_or_default();
    if stored.outcome == Outcome::Interrupted && update.outcome != Outcome::Interrupted {
        record.error = Some(presumed(stored_error));
    } else if stored.outcome == update.outcome && stored_error.starts_with(&presumed("")) {
        record.error = stored.error.clone();
    }
    record
}

/// What the error of a run presumed lost and then ended says before the presumption.
const PRESUMED_LOST: &str = "presumed lost meanwhile: ";
