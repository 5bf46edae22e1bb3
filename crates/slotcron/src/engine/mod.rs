//! The engine: one ordered queue of next triggers, a sleep until the earliest through
//! the [`Clock`](crate::Clock), and one task per run.

// The table of contents, from the bottom up.
//
// The queue of next triggers:
mod queue;
mod table;
// What the parts share, and what one `run()`'s runs share:
mod scope;
mod shared;
// The claim path (every claimed trigger walks it), one run, start to finish, and the
// triggers a run's end fires in the jobs chained after it:
mod chain;
mod claim;
mod failures;
mod limits;
mod run;
// Recording runs: their records, the outbox to the ledger, the sweep of a dead run's,
// and a single replica's triggers taken and never recorded:
mod outbox;
mod record;
mod sweep;
mod unrecorded;
// The fleet: only with a coordinator.
mod fleet;
// The loop, and what is built around it:
mod builder;
mod cancel;
mod introspect;
mod lifecycle;
mod misfire;
mod plans;
mod probe;
mod reconcile;
mod steer;

pub use builder::SchedulerBuilder;
pub use cancel::CancelAsked;
pub use chain::{PRESUMED_PARENT_WAIT, PresumedSweep};
pub use fleet::details::{FleetMember, JoinError, RUNS_IN_FLIGHT};
pub use introspect::{JobInfo, Reachable};
pub use reconcile::{PlanError, PlanErrorKind, ReconcileError, ReconcileReport};
pub use steer::{Resumed, TriggerDryRun, Triggered};
pub use sweep::Leftover;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use jiff::Timestamp;

use crate::job::{Handler, Job, JobError};
use crate::ledger::{Ledger, LedgerError, LedgerQuery, RunRecord};
use crate::store::{JobDefinition, StoreError};
use fleet::Fleet;
use shared::Shared;

/// Runs jobs on their schedules; cheap to clone (clones share the same jobs).
///
/// ```no_run
/// use std::time::Duration;
/// use slotcron::{CancellationToken, Job, JobContext, Scheduler};
///
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let scheduler = Scheduler::builder().build();
/// scheduler.add(
///     Job::builder("heartbeat")
///         .every(Duration::from_secs(10))
///         .handler(|ctx: JobContext| async move {
///             println!("{} for {}", ctx.job(), ctx.trigger());
///             Ok::<_, std::io::Error>(())
///         })
///         .build()?,
/// )?;
/// let cancel = CancellationToken::new();
/// scheduler.run(cancel).await; // returns once `cancel` fires and the runs have stopped
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Scheduler {
    shared: Arc<Shared>,
    /// With a coordinator, the fleet's state; `None` in single-replica mode, which
    /// walks none of the fleet.
    fleet: Option<Arc<Fleet>>,
}

/// [`JobError::Invalid`] (field `on`) for `job` in a scheduler with no coordinator that
/// lacks the labels the job is placed on: no other member could run it.
fn refuse_alone(shared: &Shared, job: &Job) -> Result<(), JobError> {
    match job.placement.refused_alone(&shared.settings.labels).filter(|_| shared.coordinator.is_none()) {
        Some(reason) => Err(JobError::Invalid { job: job.name.to_string(), field: "on", reason }),
        None => Ok(()),
    }
}

impl Scheduler {
    /// A builder with the defaults: system clock, no coordinator (single-replica
    /// mode), in-memory ledger.
    pub fn builder() -> SchedulerBuilder {
        SchedulerBuilder::default()
    }

    /// Adds a job. If the scheduler is running, its first trigger is queued at once.
    ///
    /// # Errors
    /// [`JobError::Duplicate`] if a job with this name exists; [`JobError::Invalid`]
    /// (field `run_after`) for a chained job whose parent runs after it (a cycle, every
    /// job in it named; a parent not added yet is no error: it fires the job once added);
    /// [`JobError::Invalid`] (field `on`) for a job placed on labels this scheduler does
    /// not carry when it has no coordinator (no other member could run it);
    /// [`JobError::Invalid`] (field `max_runs`) for a job with `max_runs` when no
    /// coordinator here counts runs, and (field `pause_after_failures`) for a job with it
    /// when no controls here keep streaks of failures.
    pub fn add(&self, job: Job) -> Result<(), JobError> {
        refuse_alone(&self.shared, &job)?;
        limits::refuse_uncounted(&self.shared, &job)?;
        failures::refuse_uncounted(&self.shared, &job)?;
        let name = job.name.to_string();
        let mut table = self.shared.table();
        chain::refuse_cycle(&table, &job)?;
        let Some(earliest) = table.insert(job, self.shared.clock.now()) else {
            return Err(JobError::Duplicate { job: name });
        };
        let added = table.job(&name);
        drop(table);
        limits::end_reached_soon(&self.shared, added.into_iter().collect());
        if earliest {
            self.shared.wake.notify_one();
        }
        Ok(())
    }

    /// Replaces the job of the same name (or adds it); its schedule restarts from now.
    pub fn replace(&self, job: Job) {
        let mut table = self.shared.table();
        let name = job.name.clone();
        table.remove(&name);
        let earliest = table.insert(job, self.shared.clock.now()) == Some(true);
        let added = table.job(&name);
        drop(table);
        limits::end_reached_soon(&self.shared, added.into_iter().collect());
        if earliest {
            self.shared.wake.notify_one();
        }
    }

    /// Removes a job: none of its triggers fires from now on, not even one already due
    /// and waiting to start. A run already started goes on (its cancellation token is not
    /// fired) and is recorded. The job's stored state is deleted, so a job added again
    /// under this name starts from its schedule, with no catch-up of the time it was
    /// absent, also after a restart; a one-shot's state is kept, so a one-shot added again
    /// for the same instant does not run again (with a coordinator, its claim stands
    /// too). `false` if there was no such job.
    pub fn remove(&self, name: &str) -> bool {
        self.shared.remove(name, false)
    }

    /// [`Scheduler::remove`], and also fires the cancellation token of the job's runs in
    /// flight (a run that ignores it is dropped after the cancel grace, recorded as
    /// aborted).
    pub fn remove_and_cancel(&self, name: &str) -> bool {
        self.shared.remove(name, true)
    }

    /// The names of the jobs, in no particular order.
    pub fn job_names(&self) -> Vec<String> {
        self.shared.table().names().iter().map(|n| n.to_string()).collect()
    }

    /// The next queued trigger of a job; `None` if there is no such job, the scheduler is
    /// not running yet, or the schedule is exhausted.
    pub fn next_trigger(&self, name: &str) -> Option<Timestamp> {
        self.shared.table().next_trigger(name)
    }

    /// This scheduler's instance id.
    pub fn instance(&self) -> &str {
        &self.shared.instance
    }

    /// This scheduler's last view of the fleet's
    /// [membership](crate::Coordinator#membership): the live members' instance ids,
    /// sorted. `None` before the first heartbeat has answered, and with a coordinator
    /// that keeps no membership (every replica then claims every trigger at once).
    pub fn members(&self) -> Option<Vec<String>> {
        let members = self.fleet.as_ref()?.membership.get()?;
        Some(members.iter().map(|m| m.to_string()).collect())
    }

    /// The fleet's live members, sorted, when this scheduler can vouch that one missing
    /// from them has *left* the membership: its heartbeats have answered without a break
    /// for a full membership TTL, so every live member renewed its entry meanwhile.
    /// `None` otherwise — before that, after a heartbeat failed (until a TTL after the
    /// next answer), and without a membership. What decides that a run's daemon is gone
    /// (docs/design.md, "Claims, start marks and takeover"): never a ledger timestamp.
    pub fn vouched_members(&self) -> Option<Vec<String>> {
        let fleet = self.fleet.as_ref()?;
        let members =
            fleet.membership.vouched(self.shared.clock.now(), self.shared.settings.membership_ttl)?;
        Some(members.iter().map(|m| m.to_string()).collect())
    }

    /// Hands the [metrics](crate#metrics) counted since the last flush to the installed
    /// recorder. The engine flushes [`METRICS_FLUSH_EVERY`](crate::METRICS_FLUSH_EVERY) after
    /// activity and when [`Scheduler::run`] returns; call this just before rendering an
    /// exposition (the `/metrics` endpoint of `slotcron-admin` does), so that the counters
    /// hold every record written so far. Takes a few milliseconds for 10,000 jobs.
    pub fn flush_metrics(&self) {
        self.shared.metrics.flush();
    }

    /// Asks the coordinator (the store in single-replica mode) which jobs are paused, for
    /// each job's [`JOB_PAUSED`](crate::JOB_PAUSED) gauge, waiting at most the claim
    /// timeout (on failure the gauges stay as last heard), then
    /// [flushes](Self::flush_metrics). The `/metrics` endpoint of `slotcron-admin` calls
    /// it before each exposition: one read of the pauses per scrape.
    pub async fn refresh_metrics(&self) {
        let asked = tokio::time::timeout(self.shared.settings.claim_timeout, self.paused_jobs()).await;
        if let Ok(Ok(paused)) = asked {
            for info in self.shared.table().infos() {
                info.job.series().set_paused(paused.contains_key(&*info.job.name));
            }
        }
        self.flush_metrics();
    }

    /// The ledger the run records go to.
    pub fn ledger(&self) -> &Arc<dyn Ledger> {
        &self.shared.ledger
    }

    /// Registers a handler by name, for jobs added through [`Scheduler::define`] and for
    /// the stored definitions [`Scheduler::restore`] brings back.
    pub fn register_handler(&self, name: impl Into<String>, handler: impl Handler) {
        self.shared.handlers.register(name, handler);
    }

    /// Adds (or replaces) a job described by data and stores its definition, so it comes
    /// back after a restart. Its handler must be registered.
    ///
    /// # Errors
    /// The definition is invalid (nothing is stored then), or the store failed.
    pub async fn define(&self, definition: JobDefinition) -> Result<(), DefineError> {
        let job = definition.to_job(&self.shared.handlers)?;
        self.shared.store.save_definition(&definition).await?;
        self.replace(job);
        Ok(())
    }

    /// Removes a job added through [`Scheduler::define`] and deletes its definition.
    /// `false` if there was no such definition.
    ///
    /// # Errors
    /// The store failed; the job keeps running then.
    pub async fn undefine(&self, name: &str) -> Result<bool, StoreError> {
        let deleted = self.shared.store.delete_definition(name).await?;
        self.remove(name);
        Ok(deleted)
    }

    /// Reads the store: adds the stored job definitions (whose handlers must be
    /// registered by now) and the state each job resumes from. [`Scheduler::run`] calls it
    /// if it has not been called; call it first to fail early on an unreachable store.
    ///
    /// A definition that cannot be built (e.g. its handler is not registered) is logged
    /// and skipped, never deleted.
    ///
    /// # Errors
    /// The store failed.
    pub async fn restore(&self) -> Result<(), StoreError> {
        let definitions = match self.shared.settings.restore_definitions {
            true => self.shared.store.load_definitions().await?,
            false => Vec::new(),
        };
        let states = self.shared.store.load_states().await?;
        if self.shared.coordinator.is_none()
            && let Some(controls) = self.shared.store.controls()
        {
            *self.shared.local_paused() = controls.paused_jobs().await.map_err(StoreError::new)?;
        }
        for definition in definitions {
            match definition.to_job(&self.shared.handlers) {
                Ok(job) => self.replace(job),
                Err(e) => tracing::error!("stored definition skipped: {e}"),
            }
        }
        self.shared.table().set_states(states);
        self.shared.restored.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Reads the run history: newest trigger first.
    ///
    /// # Errors
    /// The ledger backend failed.
    pub async fn history(&self, query: &LedgerQuery) -> Result<Vec<RunRecord>, LedgerError> {
        self.shared.ledger.query(query).await
    }
}

/// Why [`Scheduler::define`] failed.
#[derive(Debug, thiserror::Error)]
pub enum DefineError {
    /// The definition is invalid.
    #[error(transparent)]
    Invalid(#[from] JobError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}
