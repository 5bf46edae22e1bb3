//! Stopping a run an operator asks to stop ([`Scheduler::cancel`]): the runs in flight on
//! this replica, by job and trigger, each with the token that stops it.
//!
//! A run is registered from the moment its claim is won until its record is made. A
//! cancel asked of the replica holding the run fires its token at once: the attempt
//! going on is asked to stop (its handler's token fires; a command's process group gets
//! SIGTERM, then SIGKILL after the kill grace) and dropped after the cancel grace if it
//! has not stopped, no retry starts, and the run ends
//! [`Cancelled`](crate::Outcome::Cancelled) with who asked in its error text. A cancel
//! asked of another replica travels through the coordinator's controls to the holder
//! ([`fleet::cancels`](super::fleet::cancels)): a replica never signals another's
//! processes. The registry of the runs in flight is [`in_flight`], below the engine's
//! shared state that holds it.

pub(crate) mod in_flight;

use jiff::{SignedDuration, Timestamp};

use super::Scheduler;
use super::fleet::cancels;
use crate::control::{CancelRequest, ControlError};
use crate::ledger::{LedgerQuery, Outcome, RunRecord};

/// What [`Scheduler::cancel`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CancelAsked {
    /// The instance id of the replica that holds the run (as its `running` record names
    /// it): this one, or the one the request was relayed to.
    pub holder: String,
    /// Whether the request was relayed to another replica through the coordinator (it
    /// stops the run at its next look, about a second later), rather than fired here.
    pub relayed: bool,
}

impl Scheduler {
    /// Stops the run of job `name` at `trigger` (UTC, as its records name it) wherever it
    /// runs, and records it [`Cancelled`](crate::Outcome::Cancelled) with `reason` (who
    /// asked, for its error text). Held here, it is asked to stop at once: its handler's
    /// token fires (a command's process group gets SIGTERM), it is dropped after the
    /// cancel grace if it has not stopped, and no retry starts. Held by another replica
    /// (its `running` record in this replica's ledger names it: a ledger the fleet shares
    /// shows every member's runs, one of this replica's own shows only its own), the
    /// request goes through the coordinator's controls, kept for
    /// [`CANCEL_REQUEST_TTL`](crate::CANCEL_REQUEST_TTL), and the holder stops the run at
    /// its next look (about a second). A run that ends before it is stopped keeps its own
    /// outcome if it succeeded. An `on_every_replica` job's run is stopped on the replica
    /// asked only.
    ///
    /// # Errors
    /// [`ControlError::NoSuchJob`]; [`ControlError::NoSuchRun`] when no run of it at
    /// `trigger` is going on that this replica knows of (none here, and no other
    /// replica's `running` in its ledger, or no coordinator to relay to);
    /// [`ControlError::RunEnded`] when its records say it has ended; or
    /// [`ControlError::Backend`] when the ledger cannot be read or the coordinator keeps
    /// no cancel requests or failed (nothing was asked then).
    pub async fn cancel(
        &self,
        name: &str,
        trigger: Timestamp,
        reason: &str,
    ) -> Result<CancelAsked, ControlError> {
        let job = self.job_named(name)?;
        if let Some(asked) = self.cancel_here(&job.name, trigger, reason) {
            return Ok(asked);
        }
        let query = LedgerQuery {
            job: Some(job.name.to_string()),
            since: Some(trigger),
            // A durable ledger keeps microseconds.
            until: trigger.checked_add(SignedDuration::from_micros(1)).ok(),
            limit: usize::MAX,
            ..LedgerQuery::default()
        };
        let records = self.history(&query).await;
        let records =
            records.map_err(|e| ControlError::Backend(format!("cannot read the run history: {e}")))?;
        let records: Vec<RunRecord> =
            records.into_iter().filter(|record| record.trigger == trigger).collect();
        // This replica's own `running` record of a run no longer in flight here is one
        // that has just ended (its end not written yet) or a dead process's (to be swept).
        let elsewhere =
            |r: &&RunRecord| r.outcome == Outcome::Running && *r.instance != *self.shared.instance;
        match (records.iter().find(elsewhere), &self.fleet) {
            (Some(held), Some(_)) => self.relay_cancel(&job.name, trigger, reason, &held.instance).await,
            _ => Err(match records.iter().rfind(|r| r.outcome.ran() && r.outcome != Outcome::Running) {
                Some(ended) => ControlError::RunEnded {
                    job: job.name.to_string(),
                    trigger,
                    outcome: ended.outcome.to_string(),
                },
                None => ControlError::NoSuchRun { job: job.name.to_string(), trigger },
            }),
        }
    }

    /// Stops the run of job `name` at `trigger` that the replica `holder` (an instance id)
    /// holds, as the caller found it (e.g. in that replica's own ledger, through its admin
    /// API): as [`Scheduler::cancel`] does, but relayed to `holder` without this replica's
    /// ledger saying so.
    ///
    /// # Errors
    /// [`ControlError::NoSuchJob`]; [`ControlError::NoSuchRun`] when `holder` is this
    /// replica and the run is not in flight here, or there is no coordinator to relay to;
    /// [`ControlError::Backend`] when the coordinator keeps no cancel requests or failed.
    pub async fn cancel_held_by(
        &self,
        name: &str,
        trigger: Timestamp,
        reason: &str,
        holder: &str,
    ) -> Result<CancelAsked, ControlError> {
        let job = self.job_named(name)?;
        if let Some(asked) = self.cancel_here(&job.name, trigger, reason) {
            return Ok(asked);
        }
        if holder == &*self.shared.instance || self.fleet.is_none() {
            return Err(ControlError::NoSuchRun { job: job.name.to_string(), trigger });
        }
        self.relay_cancel(&job.name, trigger, reason, holder).await
    }

    /// Stops the run of `job` at `trigger` if it is in flight here.
    fn cancel_here(&self, job: &str, trigger: Timestamp, reason: &str) -> Option<CancelAsked> {
        let run = self.shared.in_flight.get(job, trigger)?;
        let reason = cancelled(reason);
        tracing::info!(job, %trigger, %reason, "run cancelled");
        run.fire(reason);
        Some(CancelAsked { holder: self.shared.instance.to_string(), relayed: false })
    }

    /// Asks `holder` to stop the run of `job` at `trigger`, through the coordinator.
    async fn relay_cancel(
        &self,
        job: &str,
        trigger: Timestamp,
        reason: &str,
        holder: &str,
    ) -> Result<CancelAsked, ControlError> {
        let request = CancelRequest { job: job.to_owned(), trigger, reason: cancelled(reason) };
        cancels::relay(&self.shared, &request, holder).await?;
        Ok(CancelAsked { holder: holder.to_owned(), relayed: true })
    }
}

/// A run's error text once cancelled for `reason`.
fn cancelled(reason: &str) -> String {
    format!("cancelled: {reason}")
}
