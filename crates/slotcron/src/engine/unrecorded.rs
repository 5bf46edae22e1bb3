//! Triggers a single replica took and never recorded. Without a coordinator a trigger is
//! taken by saving the job's state (its last trigger, no outcome yet) before the run's
//! start mark, its `running` record in the ledger, is written; a process killed between
//! the two leaves a trigger its next start would count as handled, with no record at all.
//! Its command never started (a command starts only once its record is durable), so the
//! next incarnation takes it over and runs it, late, once — as a fleet's replica takes
//! over the claims its previous incarnation won and never started
//! ([`fleet::orphans`](super::fleet)). So are the triggers that came due while the
//! previous process ran and that it died before taking (a burst takes a while to take).

use std::sync::Arc;

use jiff::Timestamp;
use tokio_util::task::TaskTracker;

use super::claim::local_fencing_token;
use super::run;
use super::scope::RunScope;
use super::table::{Action, Due};
use crate::Scheduler;
use crate::job::Job;
use crate::key::trigger_key;
use crate::ledger::Cause;
use crate::schedule::ScheduleKind;
use crate::store::JobState;

/// Why a trigger is taken over at start.
#[derive(Clone, Copy)]
enum Left {
    /// Taken (its state saved) and never recorded.
    Unrecorded,
    /// Due while the previous process still ran — it took triggers up to a later instant
    /// — and not taken before it died.
    NotTaken,
}

impl Scheduler {
    /// Runs, late, each trigger the previous process left unhandled: one the stored state
    /// says was taken (its outcome not stored) and the ledger has no record of, and a
    /// recurring job's next trigger that came due while that process still ran (not
    /// after the newest trigger it took, nor after now) and was not taken before it died —
    /// a burst's last triggers, when it died while taking them. At start, before the loop
    /// takes anything, in single-replica mode with a durable store; exempt from the
    /// misfire grace. A ledger that cannot be read is logged, and the trigger left as it
    /// is; without stored states (none, or none could be read at restore), nothing.
    pub(super) async fn adopt_unrecorded(&self, scope: &Arc<RunScope>, tracker: &TaskTracker) {
        let shared = &self.shared;
        if !shared.persist_state {
            return;
        }
        // The states the table was restored from (read once, at start): the jobs it holds.
        let (states, alive_until) = {
            let table = shared.table();
            let stored = table.stored_states();
            let Some(alive_until) = stored.values().map(|state| state.last_trigger).max() else { return };
            let states: Vec<(Arc<Job>, JobState)> =
                stored.iter().filter_map(|(name, state)| Some((table.job(name)?, state.clone()))).collect();
            (states, alive_until)
        };
        let now = shared.clock.now();
        let mut left = Vec::new();
        for (job, state) in states {
            if state.last_outcome.is_none() && !self.recorded(&job, state.last_trigger).await {
                left.push((job, state.last_trigger, Left::Unrecorded));
                continue;
            }
            let recurring = matches!(job.kind, ScheduleKind::Interval { .. } | ScheduleKind::Recurring);
            let next = job.schedule.next_after(state.last_trigger).filter(|at| *at <= alive_until.min(now));
            if let Some(next) = next.filter(|_| recurring && !job.run_on_start) {
                // The table goes on after it, as after a trigger taken.
                shared
                    .table()
                    .set_state(&job.name, JobState { last_trigger: next, last_outcome: None, ..state });
                left.push((job, next, Left::NotTaken));
            }
        }
        for (job, trigger, why) in left {
            self.take_over_left(scope, tracker, job, trigger, why).await;
        }
    }

    /// Runs `job`'s `trigger`, left by the previous process as `why` says, taken over.
    async fn take_over_left(
        &self,
        scope: &Arc<RunScope>,
        tracker: &TaskTracker,
        job: Arc<Job>,
        trigger: Timestamp,
        why: Left,
    ) {
        let note = match why {
            Left::Unrecorded => {
                "taken over from the previous incarnation, which took it and died before its run's start mark \
                 (its command never started)"
            }
            Left::NotTaken => {
                "taken over from the previous incarnation, which was running when it came due and died before \
                 taking it"
            }
        };
        tracing::warn!(job = %job.name, %trigger, "a trigger the previous process left unhandled runs now ({note})");
        let token = local_fencing_token(&self.shared, &job).await;
        let key = trigger_key(&job.name, job.kind, trigger).into_boxed_str();
        let due = Due { job, trigger, next: None, action: Action::Run, cause: Cause::TakenOver };
        scope.spawning();
        tracker.spawn(run::execute_taken_over(scope.clone(), due, token, key, note.to_owned()));
    }

    /// Whether the ledger holds a record of `job`'s `trigger` (any outcome, any instance);
    /// `true` when it cannot be read (logged): nothing is run twice on a guess.
    async fn recorded(&self, job: &Job, trigger: Timestamp) -> bool {
        match self.shared.recorded(job, trigger, None).await {
            Ok(recorded) => recorded,
            Err(e) => {
                tracing::warn!(job = %job.name, %trigger, "cannot read its record: {e}; left as it is");
                true
            }
        }
    }
}
