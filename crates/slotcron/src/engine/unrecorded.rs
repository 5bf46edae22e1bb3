//! Triggers a single replica took and never recorded. Without a coordinator a trigger is
//! taken by saving the job's state (its last trigger, no outcome yet) before the run's
//! start mark, its `running` record in the ledger, is written; a process killed between
//! the two leaves a trigger its next start would count as handled, with no record at all.
//! Its command never started (a command starts only once its record is durable), so the
//! next incarnation takes it over and runs it, late, once — as a fleet's replica takes
//! over the claims its previous incarnation won and never started
//! ([`fleet::orphans`](super::fleet)).

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use tokio_util::task::TaskTracker;

use super::claim::local_fencing_token;
use super::run;
use super::scope::RunScope;
use super::table::{Action, Due};
use crate::Scheduler;
use crate::job::Job;
use crate::key::trigger_key;
use crate::ledger::{Cause, LedgerQuery};

impl Scheduler {
    /// Runs, late, each trigger the stored state says was taken (its outcome not stored)
    /// and the ledger has no record of: at start, before the loop takes anything, in
    /// single-replica mode with a durable store. A state or ledger that cannot be read
    /// is logged, and the trigger left as it is.
    pub(super) async fn adopt_unrecorded(&self, scope: &Arc<RunScope>, tracker: &TaskTracker) {
        let shared = &self.shared;
        if !shared.persist_state {
            return;
        }
        let states = match shared.store.load_states().await {
            Ok(states) => states,
            Err(e) => return tracing::warn!("cannot look for triggers taken and never recorded: {e}"),
        };
        let taken: Vec<(Arc<Job>, Timestamp)> = {
            let table = shared.table();
            states
                .into_iter()
                .filter(|(_, state)| state.last_outcome.is_none())
                .filter_map(|(name, state)| Some((table.job(&name)?, state.last_trigger)))
                .collect()
        };
        for (job, trigger) in taken {
            if self.recorded(&job, trigger).await {
                continue;
            }
            tracing::warn!(job = %job.name, %trigger,
                "a trigger the previous process took and never recorded (it died before the run's start mark): running it now");
            let token = local_fencing_token(shared, &job).await;
            let key = trigger_key(&job.name, job.kind, trigger).into_boxed_str();
            let note = "taken over from the previous incarnation, which took it and died before its run's \
                        start mark (its command never started)"
                .to_owned();
            let due = Due { job, trigger, next: None, action: Action::Run, cause: Cause::TakenOver };
            scope.spawning();
            tracker.spawn(run::execute_taken_over(scope.clone(), due, token, key, note));
        }
    }

    /// Whether the ledger holds a record of `job`'s `trigger` (any outcome, any instance);
    /// `true` when it cannot be read (logged): nothing is run twice on a guess.
    async fn recorded(&self, job: &Job, trigger: Timestamp) -> bool {
        let query = LedgerQuery {
            job: Some(job.name.to_string()),
            since: Some(trigger),
            // The backends keep microseconds: a bound one nanosecond on would round to
            // the trigger itself and find nothing.
            until: trigger.checked_add(Duration::from_micros(1)).ok(),
            limit: 1,
            ..LedgerQuery::default()
        };
        match self.ledger().query(&query).await {
            Ok(records) => !records.is_empty(),
            Err(e) => {
                tracing::warn!(job = %job.name, %trigger, "cannot read its record: {e}; left as it is");
                true
            }
        }
    }
}
