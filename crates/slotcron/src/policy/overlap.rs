//! The overlap policy, fleet-wide: what a trigger does when a run of its job is still
//! going on any replica (docs/design.md, "Run policies"). Every policy but `allow` holds the
//! job's [lease](crate::coordinator::lease) from the won claim to the end of the run.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::clock::later;
use crate::coordinator::lease::heartbeat;
use crate::coordinator::{Coordinator, CoordinatorError, Lease, LeaseGrant, LeaseRenewal};

/// What a trigger does when a run of its job is still going anywhere in the fleet.
///
/// As data: `"allow"`, `"forbid"`, `"buffer_one"`, `"replace"`. Temporal Schedules'
/// overlap policies and Kubernetes CronJob's `concurrencyPolicy` are the models.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Overlap {
    /// Runs may overlap (the default, as cron). No lease is taken.
    #[default]
    Allow,
    /// A trigger that finds a run still going is skipped, `skipped-overlap`
    /// (Kubernetes' `Forbid`).
    Forbid,
    /// A trigger that finds a run still going waits for it to end, then runs; at most
    /// one trigger per job waits in the whole fleet (it holds the job's buffer lease),
    /// later ones are `skipped-overlap`.
    BufferOne,
    /// The running one is cancelled (its cancellation token fires; an owner on another
    /// replica learns it at its next renewal) and the new one starts once it has
    /// stopped (Kubernetes' `Replace`).
    Replace,
}

impl Overlap {
    /// Every policy, for error messages.
    pub const ALL: [Overlap; 4] = [Self::Allow, Self::Forbid, Self::BufferOne, Self::Replace];

    /// The name used in configuration files.
    pub fn name(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Forbid => "forbid",
            Self::BufferOne => "buffer_one",
            Self::Replace => "replace",
        }
    }

    /// The policy called `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.name() == name)
    }
}

/// What the overlap layer needs besides the run itself.
pub(crate) struct Guard<'a> {
    pub policy: Overlap,
    pub coordinator: &'a dyn Coordinator,
    pub clock: &'a dyn Clock,
    pub lease: Lease<'a>,
    /// How long each call to the coordinator may take.
    pub call_timeout: Duration,
    /// The most the lease is renewed, from its acquisition: the run budget.
    pub renew_limit: Option<Duration>,
    /// Fired to stop the run: the lease was lost, or a `replace` asked (`None` for
    /// `allow`, which takes no lease).
    pub stop: Option<&'a RunStop>,
    /// Fired when the scheduler stops: a trigger still waiting for the lease gives up.
    pub stopping: &'a CancellationToken,
}

/// The name of the lease the waiting trigger of a `buffer_one` job holds: the job's
/// name and `:buffer`, which no job's name can be (names hold no `:`).
fn buffer_lease_name(job: &str) -> String {
    format!("{job}:buffer")
}

/// How the overlap layer stops a run: the token its handler sees (a child of the
/// scheduler's, so a shutdown reaches it too) and one only the lease (or the run's
/// cancel, whose child it is) fires, after which the engine drops a handler that has not
/// stopped within the cancel grace.
#[derive(Clone)]
pub(crate) struct RunStop {
    pub handler: CancellationToken,
    pub lease: CancellationToken,
}

impl RunStop {
    pub fn new(shutdown: &CancellationToken, cancel: &CancellationToken) -> Self {
        Self { handler: shutdown.child_token(), lease: cancel.child_token() }
    }

    /// Stops the run: its handler's token fires, and the engine drops a handler that has
    /// not stopped within the cancel grace.
    pub fn fire(&self) {
        self.lease.cancel();
        self.handler.cancel();
    }

    fn fired(&self) -> bool {
        self.lease.is_cancelled()
    }
}

/// How the overlap layer ended.
pub(crate) enum Guarded<T> {
    /// The run ran (under the lease, unless `allow`); a note if the lease was lost or a
    /// `replace` stopped it.
    Ran(T, Option<String>),
    /// Another run holds the job: `skipped-overlap`, with the reason.
    Skipped(String),
    /// The coordinator did not answer about the lease: fail closed.
    Unavailable(String),
}

impl Guard<'_> {
    /// Runs `run` under the policy.
    pub async fn run<T, Fut: Future<Output = T>>(self, run: Fut) -> Guarded<T> {
        if self.policy == Overlap::Allow {
            return Guarded::Ran(run.await, None);
        }
        match self.call(self.coordinator.acquire_lease(&self.lease)).await {
            Ok(LeaseGrant::Acquired) => {
                // A `buffer_one` trigger that finds the job free while another trigger
                // waits for its turn (it polls once a heartbeat) must not jump the queue.
                if let Err(skipped) = self.behind_a_waiter().await {
                    self.release(&self.lease, "lease").await;
                    return skipped;
                }
            }
            Ok(LeaseGrant::Held) => {
                if let Err(skipped) = self.wait_for_lease().await {
                    return skipped;
                }
            }
            Err(e) => return Guarded::Unavailable(format!("lease of job {}: {e}", self.lease.job)),
        }
        let acquired = self.clock.now();
        let note = Mutex::new(None);
        let outcome = tokio::select! {
            biased;
            outcome = run => outcome,
            never = self.renew(acquired, &note) => match never {},
        };
        self.release(&self.lease, "lease").await;
        let note = note.into_inner().unwrap_or_else(|p| p.into_inner());
        Guarded::Ran(outcome, note)
    }

    /// Releases `lease` (`what` names it in the log); if that fails, it expires within
    /// its TTL.
    async fn release(&self, lease: &Lease<'_>, what: &str) {
        if let Err(e) = self.call(self.coordinator.release_lease(lease)).await {
            tracing::warn!(job = self.lease.job, "{what} not released, it expires within its TTL: {e}");
        }
    }

    /// For `buffer_one`: whether another trigger holds the buffer lease, waiting for its
    /// turn; then this one is skipped, since the one place to wait is taken.
    async fn behind_a_waiter<T>(&self) -> Result<(), Guarded<T>> {
        if self.policy != Overlap::BufferOne {
            return Ok(());
        }
        let name = buffer_lease_name(self.lease.job);
        let buffer = Lease { job: &name, ..self.lease };
        match self.call(self.coordinator.acquire_lease(&buffer)).await {
            Ok(LeaseGrant::Acquired) => {
                self.release(&buffer, "buffer lease").await;
                Ok(())
            }
            Ok(LeaseGrant::Held) => {
                Err(Guarded::Skipped("another trigger already waits for its turn to run".into()))
            }
            Err(e) => Err(Guarded::Unavailable(format!("buffer lease of job {}: {e}", self.lease.job))),
        }
    }

    /// A held lease: skipped (`forbid`), or waited for (`buffer_one`, `replace`).
    async fn wait_for_lease<T>(&self) -> Result<(), Guarded<T>> {
        let held = "a run of the job is still going (its lease is held)";
        match self.policy {
            Overlap::Allow => Ok(()),
            Overlap::Forbid => Err(Guarded::Skipped(held.into())),
            Overlap::BufferOne => {
                // The one waiting trigger of the fleet holds the job's buffer lease while
                // it waits (renewed at each poll, so a dead waiter frees it in its TTL).
                let name = buffer_lease_name(self.lease.job);
                let buffer = Lease { job: &name, ..self.lease };
                match self.call(self.coordinator.acquire_lease(&buffer)).await {
                    Ok(LeaseGrant::Acquired) => {}
                    Ok(LeaseGrant::Held) => {
                        return Err(Guarded::Skipped(format!(
                            "{held} and another trigger already waits for it"
                        )));
                    }
                    Err(e) => {
                        return Err(Guarded::Unavailable(format!(
                            "buffer lease of job {}: {e}",
                            self.lease.job
                        )));
                    }
                }
                let waited = self.poll_lease(Some(&buffer)).await;
                self.release(&buffer, "buffer lease").await;
                waited
            }
            Overlap::Replace => self.poll_lease(None).await,
        }
    }

    /// Tries the lease every heartbeat until it is acquired, renewing `buffer` (the
    /// buffer lease of `buffer_one`) meanwhile; without one (`replace`) asks the lease's
    /// holder to stop each time (a new holder may have taken it meanwhile).
    async fn poll_lease<T>(&self, buffer: Option<&Lease<'_>>) -> Result<(), Guarded<T>> {
        let every = heartbeat(self.lease.ttl);
        loop {
            match buffer {
                Some(buffer) => match self.call(self.coordinator.renew_lease(buffer)).await {
                    Ok(LeaseRenewal::Lost) => {
                        return Err(Guarded::Skipped("its place as the waiting trigger was lost".into()));
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(job = self.lease.job, "renewing the buffer lease: {e}"),
                },
                None => {
                    if let Err(e) = self.call(self.coordinator.cancel_lease(self.lease.job)).await {
                        tracing::warn!(job = self.lease.job, "asking the running one to stop: {e}");
                    }
                }
            }
            tokio::select! {
                biased;
                () = self.stopping.cancelled() => {
                    return Err(Guarded::Skipped(
                        "the scheduler stopped while the trigger waited for the running one".into(),
                    ));
                }
                () = self.clock.sleep_until(later(self.clock.now(), every)) => {}
            }
            match self.call(self.coordinator.acquire_lease(&self.lease)).await {
                Ok(LeaseGrant::Acquired) => return Ok(()),
                Ok(LeaseGrant::Held) => {}
                Err(e) => tracing::warn!(job = self.lease.job, "waiting for the lease: {e}"),
            }
        }
    }

    /// Renews the lease every heartbeat, for ever (the run ending drops this future).
    /// Fires the run's cancellation when the lease is lost, unrenewed for a TTL, or
    /// past the run budget, and when a `replace` asks; `note` says which.
    async fn renew(&self, acquired: Timestamp, note: &Mutex<Option<String>>) -> std::convert::Infallible {
        let every = heartbeat(self.lease.ttl);
        let mut renewed = acquired;
        let mut renewing = true;
        let stop = |why: String| {
            tracing::warn!(job = self.lease.job, owner = self.lease.owner, "{why}: cancelling the run");
            note.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(why);
            if let Some(stop) = self.stop {
                stop.fire();
            }
        };
        loop {
            self.clock.sleep_until(later(self.clock.now(), every)).await;
            if !renewing {
                continue;
            }
            let now = self.clock.now();
            if let Some(limit) = self.renew_limit
                && now >= later(acquired, limit)
            {
                stop(format!("the run outlasted its budget of {limit:?}; its lease is no longer renewed"));
                renewing = false;
                continue;
            }
            match self.call(self.coordinator.renew_lease(&self.lease)).await {
                Ok(LeaseRenewal::Renewed) => renewed = now,
                Ok(LeaseRenewal::CancelRequested) => {
                    renewed = now;
                    if !self.stop.is_some_and(RunStop::fired) {
                        stop("replaced by a newer trigger (overlap = replace)".into());
                    }
                }
                Ok(LeaseRenewal::Lost) => {
                    stop("the job's lease was lost (expired or taken by another owner)".into());
                    renewing = false;
                }
                Err(e) if now >= later(renewed, self.lease.ttl) => {
                    stop(format!(
                        "the job's lease was not renewed within its TTL of {:?}: {e}",
                        self.lease.ttl
                    ));
                    renewing = false;
                }
                Err(e) => tracing::warn!(job = self.lease.job, "lease renewal failed, retrying: {e}"),
            }
        }
    }

    /// A coordinator call bounded by the call timeout.
    async fn call<T>(
        &self,
        call: impl Future<Output = Result<T, CoordinatorError>>,
    ) -> Result<T, CoordinatorError> {
        tokio::select! {
            biased;
            answer = call => answer,
            () = self.clock.sleep_until(later(self.clock.now(), self.call_timeout)) => Err(
                CoordinatorError::timed_out(format!("no answer within {:?}", self.call_timeout)),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for policy in Overlap::ALL {
            assert_eq!(Overlap::from_name(policy.name()), Some(policy));
        }
        assert_eq!(Overlap::from_name("Forbid"), None);
        assert_eq!(Overlap::default(), Overlap::Allow);
    }
}
