//! The stale sweep (seed 001's `WithStaleSweep`): the `running` records of a scheduler
//! that is gone — its previous incarnation, found at start, or a replica that left the
//! fleet's membership — are marked `interrupted` (or, when their start never reached the
//! coordinator, recorded as not started: their claims are taken over), and the
//! interrupted triggers of `on_interrupt = "rerun"` jobs run once more. A marked run
//! whose command its caller knows never started ([`Leftover::NeverStarted`]: the daemon
//! was killed between the start mark and the command's start) is recorded as not
//! started, and its trigger runs now, once.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::chain;
use super::claim::within_claim_timeout;
use super::fleet::placement;
use super::table::{Action, Due};
use crate::Scheduler;
use crate::key::request_key;
use crate::ledger::{Cause, LedgerError, LedgerQuery, Outcome, RunRecord};
use crate::policy::OnInterrupt;
use crate::schedule::ScheduleKind;
use crate::store::JobState;

/// What the run of a `running` record whose daemon is gone left behind, as the stale
/// sweep's `stop` found it ([`Scheduler::sweep_stale`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leftover {
    /// Nothing is known of it: the run is recorded [`Outcome::Interrupted`].
    Unknown,
    /// What was done to stop what the run left going (appended to the record's error):
    /// the run is recorded [`Outcome::Interrupted`].
    Stopped(String),
    /// Its command never started — the daemon died between the run's start mark and the
    /// command's start — and how that is known (appended to the record's error): the run
    /// is recorded [`Outcome::SkippedLost`] and its trigger runs now, once across the
    /// fleet, as a [`Cause::Recovered`] run (exempt from the misfire grace). Never say so
    /// of a run whose command may have started: it would run twice.
    NeverStarted(String),
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
    /// another daemon's); it returns what it did or found ([`Leftover`]). The record's
    /// error then reads `{cause}; recorded by {this instance}[; {what stop did}]`. A run
    /// whose command never started ([`Leftover::NeverStarted`]) is not interrupted: it is
    /// recorded not started and runs now (not a [`Cause::Recovered`] run's: a rerun is
    /// never run again), and is not among the records returned. The
    /// stored state of a job whose last trigger is such a run (started, its end never
    /// stored) then says `interrupted` too, so the job's last run ([`Scheduler::job`], the
    /// admin API) agrees with the ledger rather than looking still running. Returns the
    /// records recorded interrupted, as they were found.
    ///
    /// # Errors
    /// The ledger could not be read or written; the records marked so far stay marked.
    pub async fn sweep_stale(
        &self,
        gone: impl Fn(&RunRecord) -> Option<String>,
        mut stop: impl AsyncFnMut(&RunRecord) -> Leftover,
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
        let unmarked = self.unmarked_claims(stale.iter().map(|(record, _)| record)).await;
        let (stale, not_started): (Vec<_>, Vec<_>) =
            stale.into_iter().partition(|(record, _)| !unmarked.contains(&run_claim(self, record)));
        for (record, cause) in &not_started {
            self.record_not_started(record, cause).await?;
        }
        let mut interrupted = Vec::with_capacity(stale.len());
        for (record, cause) in stale {
            // Each trigger to run again is queued as soon as its record says so: a ledger
            // error on a later record must not leave it recorded and never run.
            match stop(&record).await {
                Leftover::NeverStarted(how) if record.cause != Cause::Recovered => {
                    self.record_never_started(&record, &cause, &how).await?;
                    // Its command never started: the run again is its first attempt.
                    self.run_again(&record, 0);
                    continue;
                }
                Leftover::NeverStarted(stopped) | Leftover::Stopped(stopped) => {
                    self.record_interrupted(&record, &cause, Some(&stopped)).await?;
                }
                Leftover::Unknown => self.record_interrupted(&record, &cause, None).await?,
            }
            if self.reruns(&record) {
                self.run_again(&record, record.attempts);
            } else {
                chain::skip_after_interrupted(&self.shared, &record).await;
            }
            interrupted.push(record);
        }
        if !interrupted.is_empty() {
            self.interrupt_states(&interrupted).await;
        }
        Ok(interrupted)
    }

    /// Whether `record`'s interrupted trigger runs again: its job says
    /// [`OnInterrupt::Rerun`], and it is not itself a rerun.
    pub(crate) fn reruns(&self, record: &RunRecord) -> bool {
        let rerun =
            self.shared.table().job(&record.job).is_some_and(|j| j.on_interrupt == OnInterrupt::Rerun);
        rerun && record.cause != Cause::Recovered
    }

    /// Records `record`'s run [`Outcome::Interrupted`], its error naming `cause`, this
    /// instance, and what `stopped` says was done to what it left going.
    async fn record_interrupted(
        &self,
        record: &RunRecord,
        cause: &str,
        stopped: Option<&str>,
    ) -> Result<(), LedgerError> {
        let mut interrupted = record.clone();
        interrupted.outcome = Outcome::Interrupted;
        let (by, at) = (&self.shared.instance, self.shared.clock.now());
        let mut error = format!("{cause}; recorded by {by} at {at}");
        if let Some(stopped) = stopped {
            error.push_str("; ");
            error.push_str(stopped);
        }
        interrupted.error = Some(error);
        self.ledger().update(&interrupted).await?;
        // Its failure hook, as for any run that ends failed (the run's own daemon, gone,
        // never told it).
        if let Some(observer) = &self.shared.observer {
            observer.run_ended(&interrupted);
        }
        tracing::warn!(
            job = %record.job,
            trigger = %record.trigger,
            instance = %record.instance,
            cause = %cause,
            "a run whose daemon is gone is recorded interrupted"
        );
        Ok(())
    }

    /// Records a marked run whose command never started, as `how` says: not started,
    /// its trigger to run again now.
    async fn record_never_started(
        &self,
        record: &RunRecord,
        cause: &str,
        how: &str,
    ) -> Result<(), LedgerError> {
        let mut skipped = record.clone();
        skipped.outcome = Outcome::SkippedLost;
        let (by, at) = (&self.shared.instance, self.shared.clock.now());
        skipped.error = Some(format!(
            "its command never started ({how}): its daemon stopped between the run's start mark and the \
             command's start ({cause}); the trigger runs again now, once (a recovered run); recorded by {by} at {at}"
        ));
        self.ledger().update(&skipped).await?;
        tracing::warn!(job = %record.job, trigger = %record.trigger, instance = %record.instance,
            "a run whose command never started runs now");
        Ok(())
    }

    /// The claims (holder, trigger key) among those of `records` that the coordinator
    /// lists without a start mark: their runs' `running` records were written, but their
    /// commands never started. Empty without a coordinator that keeps start marks, or when
    /// it cannot be read (logged: the runs are then recorded interrupted).
    async fn unmarked_claims(&self, records: impl Iterator<Item = &RunRecord>) -> HashSet<(String, String)> {
        let Some(coordinator) = self.shared.coordinator.as_ref().filter(|c| c.keeps_start_marks()) else {
            return HashSet::new();
        };
        let mut jobs: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for record in records {
            jobs.entry(&record.instance).or_default().insert(&record.job);
        }
        let mut unmarked = HashSet::new();
        for (instance, jobs) in jobs {
            let jobs: Vec<&str> = jobs.into_iter().collect();
            match within_claim_timeout(&self.shared, coordinator.unstarted(instance, &jobs)).await {
                Ok(listed) => unmarked.extend(listed.into_iter().map(|u| (instance.to_owned(), u.key))),
                Err(e) => tracing::warn!(instance, "cannot read its unstarted claims: {e}"),
            }
        }
        unmarked
    }

    /// Records a run whose `running` record was written but whose start never reached the
    /// coordinator: its command never started, and its claim is taken over (by the
    /// instance's next incarnation or a live member), so the trigger runs once, there.
    async fn record_not_started(&self, record: &RunRecord, cause: &str) -> Result<(), LedgerError> {
        let mut skipped = record.clone();
        skipped.outcome = Outcome::SkippedLost;
        skipped.error = Some(format!(
            "{cause}, before the run's start mark reached the coordinator: its command never started, \
             and its claim is taken over (the trigger runs once, there); recorded by {}",
            self.shared.instance
        ));
        self.ledger().update(&skipped).await?;
        tracing::info!(job = %record.job, trigger = %record.trigger, instance = %record.instance,
            "a run whose start was never marked is not interrupted: its claim is taken over");
        Ok(())
    }

    /// Queues a run of `record`'s trigger, of its own key (`{job}:recovered:{trigger}`),
    /// so that one replica of the fleet runs it, however many found it, as the attempt
    /// after `attempts_made`; nothing for a job this scheduler does not have, or whose
    /// labels it lacks (a replica that carries them runs it, if it found it too).
    fn run_again(&self, record: &RunRecord, attempts_made: u32) {
        let Some(job) = self.shared.table().job(&record.job) else { return };
        if !placement::runs_here(&self.shared, &job) {
            return tracing::warn!(job = %record.job, trigger = %record.trigger,
                "the trigger is to run again, on a replica that carries the labels the job is placed on: \
                 not this one");
        }
        tracing::info!(job = %record.job, trigger = %record.trigger,
            "the trigger is to run again (recovered; in a fleet, one replica claims it)");
        let due = Due {
            job,
            trigger: record.trigger,
            next: None,
            action: Action::Requested { attempts_made },
            cause: Cause::Recovered,
        };
        self.shared.requests().push(vec![due]);
        self.shared.wake.notify_one();
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
            let state = JobState {
                last_outcome: Some(Outcome::Interrupted),
                last_failure: state.last_failure.max(Some(record.trigger)),
                ..state.clone()
            };
            match shared.store.save_state(&record.job, &state).await {
                Ok(()) => shared.table().set_state(&record.job, state),
                Err(e) => tracing::warn!(job = %record.job, "the interrupted run's job state stays: {e}"),
            }
        }
    }
}

/// The claim (holder, trigger key) `record`'s run was made under: a requested run's own
/// key, else the trigger's key (the job's kind from this scheduler's table, recurring if
/// it has no such job).
fn run_claim(scheduler: &Scheduler, record: &RunRecord) -> (String, String) {
    let kind = scheduler.shared.table().job(&record.job).map_or(ScheduleKind::Recurring, |job| job.kind);
    let key = request_key(&record.job, kind, record.cause, record.trigger);
    (record.instance.to_string(), key)
}
