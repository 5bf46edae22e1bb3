//! The stale sweep (seed 001's `WithStaleSweep`): at start, the `running` records a
//! scheduler that died left behind are marked `interrupted`; and the heartbeat that tells
//! a live instance from a dead one on a shared ledger.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::shared::Shared;
use super::table::{Action, Due};
use crate::Scheduler;
use crate::clock::later;
use crate::ledger::{Cause, LEDGER_HEARTBEAT_EVERY, LedgerError, LedgerQuery, Outcome, RunRecord};
use crate::policy::OnInterrupt;
use crate::store::JobState;

/// Records the scheduler's heartbeat in its ledger every [`LEDGER_HEARTBEAT_EVERY`] (on its
/// clock) until `stop` fires.
pub(crate) async fn heartbeat(shared: Arc<Shared>, stop: CancellationToken) {
    loop {
        if let Err(e) = shared.ledger.heartbeat(&shared.instance).await {
            tracing::debug!("heartbeat: {e}");
        }
        let next = later(shared.clock.now(), LEDGER_HEARTBEAT_EVERY);
        tokio::select! {
            () = shared.clock.sleep_until(next) => {}
            () = stop.cancelled() => return,
        }
    }
}

impl Scheduler {
    /// Marks [`Outcome::Interrupted`] every [`Outcome::Running`] record of the ledger for
    /// which `gone` gives a cause — a run whose daemon is gone before it ended: a crash,
    /// `kill -9`, a power loss. `gone` says how the run's daemon was seen to be gone (its
    /// own instance restarted; it left the fleet's membership, see
    /// [`Scheduler::vouched_members`]); `None` leaves the record alone. Never give a cause
    /// for a record of a daemon that is still a member.
    ///
    /// `stop` is called first for each, to stop what the run left going (the daemon: its
    /// own previous incarnation's command, from [`RunProcess`](crate::RunProcess); never
    /// another daemon's); it returns what it did, for the record's error. The record's
    /// error then reads `{cause}; recorded by {this instance}[; {what stop did}]`. The
    /// stored state of a job whose last trigger is such a run (started, its end never
    /// stored) then says `interrupted` too, so the job's last run ([`Scheduler::job`], the
    /// admin API) agrees with the ledger rather than looking still running. Returns the
    /// records as they were found.
    ///
    /// # Errors
    /// The ledger could not be read or written; the records marked so far stay marked.
    pub async fn sweep_stale(
        &self,
        gone: impl Fn(&RunRecord) -> Option<String>,
        mut stop: impl AsyncFnMut(&RunRecord) -> Option<String>,
    ) -> Result<Vec<RunRecord>, LedgerError> {
        let query =
            LedgerQuery { outcome: Some(Outcome::Running), limit: usize::MAX, ..LedgerQuery::default() };
        let stale: Vec<(RunRecord, String)> = self
            .ledger()
            .query(&query)
            .await?
            .into_iter()
            .filter_map(|r| gone(&r).map(|cause| (r, cause)))
            .collect();
        for (record, cause) in &stale {
            let stopped = stop(record).await;
            let mut interrupted = record.clone();
            interrupted.outcome = Outcome::Interrupted;
            let mut error = format!("{cause}; recorded by {}", self.shared.instance);
            if let Some(stopped) = stopped {
                error.push_str("; ");
                error.push_str(&stopped);
            }
            interrupted.error = Some(error);
            self.ledger().update(&interrupted).await?;
            tracing::warn!(
                job = %record.job,
                trigger = %record.trigger,
                instance = %record.instance,
                cause = %cause,
                "a run whose daemon is gone is recorded interrupted"
            );
        }
        let stale: Vec<RunRecord> = stale.into_iter().map(|(record, _)| record).collect();
        if !stale.is_empty() {
            self.interrupt_states(&stale).await;
            self.rerun_interrupted(&stale);
        }
        Ok(stale)
    }

    /// Queues the rerun of each of `interrupted` whose job says
    /// [`OnInterrupt::Rerun`] — not of a rerun: a rerun interrupted is only recorded.
    /// Each is a requested run of its own key (`{job}:recovered:{trigger}`), so one
    /// replica of the fleet reruns it, however many found it interrupted.
    fn rerun_interrupted(&self, interrupted: &[RunRecord]) {
        let table = self.shared.table();
        let reruns: Vec<Vec<Due>> = interrupted
            .iter()
            .filter(|record| record.cause != Cause::Recovered)
            .filter_map(|record| {
                let job = table.job(&record.job).filter(|job| job.on_interrupt == OnInterrupt::Rerun)?;
                tracing::info!(job = %record.job, trigger = %record.trigger, "rerunning the interrupted trigger");
                let due = Due { job, trigger: record.trigger, next: None, action: Action::Requested, cause: Cause::Recovered };
                Some(vec![due])
            })
            .collect();
        drop(table);
        if !reruns.is_empty() {
            self.shared.requests().extend(reruns);
            self.shared.wake.notify_one();
        }
    }

    /// Makes the stored state of each job whose last trigger is one of `interrupted`,
    /// started and never ended, say so. A state that cannot be read or written is logged
    /// and left as it is: the ledger holds the outcome either way.
    async fn interrupt_states(&self, interrupted: &[RunRecord]) {
        let shared = &self.shared;
        if !shared.persist_state {
            return;
        }
        let states = match shared.store.load_states().await {
            Ok(states) => states,
            Err(e) => return tracing::warn!("the interrupted runs' job states stay as they are: {e}"),
        };
        for record in interrupted {
            let Some(state) = states.get(&*record.job) else { continue };
            if state.last_trigger != record.trigger || state.last_outcome.is_some() {
                continue;
            }
            let state = JobState { last_outcome: Some(Outcome::Interrupted), ..state.clone() };
            match shared.store.save_state(&record.job, &state).await {
                Ok(()) => shared.table().set_state(&record.job, state),
                Err(e) => tracing::warn!(job = %record.job, "the interrupted run's job state stays: {e}"),
            }
        }
    }
}
