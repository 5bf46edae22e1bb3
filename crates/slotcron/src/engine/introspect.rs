//! What a running scheduler can tell about its jobs: for the admin API and status page.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;

use super::Scheduler;
use crate::coordinator::{CoordinatorError, CoordinatorErrorKind};
use crate::job::Job;
use crate::ledger::LastRun;

/// A job as the scheduler holds it now; see [`Scheduler::jobs`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct JobInfo {
    /// The job: its name, schedule and policies (through [`Job`]'s accessors).
    pub job: Arc<Job>,
    /// Its next fire times (UTC), earliest first: the queued trigger, then the schedule's
    /// next ones; fewer when the schedule runs out, none before [`Scheduler::run`] starts
    /// queueing.
    pub next_triggers: Vec<Timestamp>,
    /// The last trigger this scheduler handled, if any: while its run goes on, with
    /// outcome [`Outcome::Running`](crate::Outcome::Running).
    pub last_run: Option<LastRun>,
    /// How many runs of the job have a handler running now on this scheduler (started
    /// and not yet ended, retries' backoffs included); runs on other replicas of a fleet
    /// are not counted.
    pub runs_in_flight: u32,
    /// Whether the job has ended on this scheduler: its
    /// [`max_runs`](crate::JobBuilder::max_runs) were reached, and none of its triggers
    /// is queued any more.
    pub ended: bool,
}

impl Scheduler {
    /// Every job, in no particular order, each with its next `next` fire times.
    pub fn jobs(&self, next: usize) -> Vec<JobInfo> {
        // The fire times are computed after the table's lock is released: the engine
        // goes on dispatching meanwhile.
        let mut infos = self.shared.table().infos();
        infos.iter_mut().for_each(|info| info.add_fire_times(next));
        infos
    }

    /// One job with its next `next` fire times; `None` if there is no such job.
    pub fn job(&self, name: &str, next: usize) -> Option<JobInfo> {
        let mut info = self.shared.table().info(name)?;
        info.add_fire_times(next);
        Some(info)
    }

    /// Whether the backends answered the last time the engine used them: the
    /// coordinator at the last claim, the state (store and ledger) at the last write of
    /// its buffered records and job states.
    /// Both are `true` until a call fails.
    pub fn backends_reachable(&self) -> Reachable {
        let health = &self.shared.health;
        let coordinator = health.coordinator.load(Ordering::Relaxed);
        Reachable {
            coordinator,
            coordinator_error: if coordinator { None } else { health.last_error() },
            state: !self.shared.outbox.is_failing(),
        }
    }

    /// Whether [`Scheduler::run`] is running.
    pub fn is_running(&self) -> bool {
        self.shared.running.load(Ordering::SeqCst)
    }
}

/// What [`Scheduler::backends_reachable`] says.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reachable {
    /// The coordinator answered the last claim (always `true` without one).
    pub coordinator: bool,
    /// Why the coordinator failed the last time, while it fails: its kind and message
    /// (`unauthorized: NOAUTH Authentication required.`...).
    pub coordinator_error: Option<String>,
    /// The last write to the store or the ledger succeeded.
    pub state: bool,
}

/// How often a coordinator that keeps failing is logged at the error level: once a
/// minute per kind of error, naming the cause (each skipped trigger has its own record
/// and warning).
pub(crate) const COORDINATOR_ERROR_LOG_EVERY: Duration = Duration::from_secs(60);

/// The engine's last word from each backend; see [`Scheduler::backends_reachable`].
#[derive(Debug)]
pub(crate) struct Health {
    pub coordinator: AtomicBool,
    /// The last coordinator error, and when an error of each kind was last logged.
    failure: Mutex<(Option<String>, HashMap<CoordinatorErrorKind, Timestamp>)>,
}

impl Default for Health {
    fn default() -> Self {
        Self { coordinator: AtomicBool::new(true), failure: Mutex::default() }
    }
}

impl Health {
    /// The coordinator failed at `now` with `error`: kept for
    /// [`Scheduler::backends_reachable`], and logged at the error level once every
    /// [`COORDINATOR_ERROR_LOG_EVERY`] for its kind.
    pub fn coordinator_failed(&self, error: &CoordinatorError, now: Timestamp) {
        self.coordinator.store(false, Ordering::Relaxed);
        let message = format!("{}: {error}", error.kind());
        let mut failure = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        let logged = failure.1.get(&error.kind());
        let due = logged.is_none_or(|at| crate::clock::later(*at, COORDINATOR_ERROR_LOG_EVERY) <= now);
        if due {
            failure.1.insert(error.kind(), now);
            tracing::error!(
                kind = %error.kind(),
                "the coordinator fails: {error}; triggers are skipped until it answers (logged once a minute \
                 per kind)"
            );
        }
        failure.0 = Some(message);
    }

    fn last_error(&self) -> Option<String> {
        self.failure.lock().unwrap_or_else(|p| p.into_inner()).0.clone()
    }
}

impl JobInfo {
    /// `next_triggers` holds the queued trigger (if any): makes it that and the fire
    /// times after it, `count` in all.
    fn add_fire_times(&mut self, count: usize) {
        self.next_triggers.truncate(count);
        let one_shot = self.job.kind.is_one_shot();
        while let Some(&last) = self.next_triggers.last() {
            if one_shot || self.next_triggers.len() >= count {
                break;
            }
            match self.job.schedule.next_after(last) {
                Some(next) => self.next_triggers.push(next),
                None => break,
            }
        }
    }
}
