//! The metrics the engine emits, through the [`metrics`] facade: the core installs no
//! exporter, so they cost next to nothing until the application installs a recorder
//! (the daemon installs `metrics-exporter-prometheus` and serves `/metrics`).
//!
//! Names and units follow the Prometheus naming conventions
//! (<https://prometheus.io/docs/practices/naming/>): a `slotcron_` prefix, base units
//! (seconds), `_total` on counters, `_timestamp_seconds` on Unix-time gauges.
//!
//! Counters count what **this scheduler** saw: in a fleet each replica counts its own
//! records (a trigger another replica won is `skipped-lost` here), so the fleet's sum of
//! `outcome="succeeded"` is the fleet's number of successful runs.
//!
//! Each series is registered with the recorder once (a job's at its first trigger) and
//! its handle kept, so install the recorder before [`Scheduler::run`](crate::Scheduler::run)
//! starts.
//!
//! Per-job labels (`job`) can be turned off for very large job sets with
//! [`SchedulerBuilder::metrics_per_job`](crate::SchedulerBuilder::metrics_per_job): the
//! per-job series then go away (`runs_total` keeps its `outcome` label, the duration
//! histogram has no label, and the two per-job gauges are not emitted).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;
use metrics::{Counter, Gauge, Histogram, counter, gauge, histogram};

use crate::ledger::Outcome;

/// Counter, labels `job` and `outcome` ([`Outcome::as_str`]): one per run record, whatever
/// the outcome, including every reason a trigger did not run (`skipped-lost`,
/// `skipped-backend-unavailable`, `missed`...).
pub const RUNS_TOTAL: &str = "slotcron_runs_total";
/// Histogram, label `job`, seconds: how long each handler ran (runs that started only).
pub const RUN_DURATION_SECONDS: &str = "slotcron_run_duration_seconds";
/// Histogram, seconds: from a trigger's scheduled instant to its handler's start.
pub const TRIGGER_LATENESS_SECONDS: &str = "slotcron_trigger_lateness_seconds";
/// Counter, label `result`: `won`, `lost` (also refused as paused or by the high-water
/// mark) or `error` (unreachable, timed out), one per claim sent to the coordinator.
pub const CLAIMS_TOTAL: &str = "slotcron_claims_total";
/// Histogram, seconds: how long a claim took to answer (or to time out).
pub const CLAIM_DURATION_SECONDS: &str = "slotcron_claim_duration_seconds";
/// Counter: triggers this scheduler claimed as a non-owner because their owner had left
/// them unclaimed for the takeover delay (see
/// [`SchedulerBuilder::takeover_delay`](crate::SchedulerBuilder::takeover_delay)).
pub const TAKEOVERS_TOTAL: &str = "slotcron_takeovers_total";
/// Counter: triggers this scheduler, not their owner, found claimed after the takeover
/// delay; it recorded nothing for them.
pub const TAKEOVER_FOUND_CLAIMED_TOTAL: &str = "slotcron_takeover_found_claimed_total";
/// Gauge: the live members of the fleet in this scheduler's last membership view (0
/// without a membership: every replica then claims every trigger).
pub const FLEET_MEMBERS: &str = "slotcron_fleet_members";
/// Gauge: handlers running now on this scheduler.
pub const RUNNING_RUNS: &str = "slotcron_running_runs";
/// Gauge, label `job`, Unix seconds: the trigger of the job's last successful run here;
/// 0 until it has one.
pub const JOB_LAST_SUCCESS_TIMESTAMP_SECONDS: &str = "slotcron_job_last_success_timestamp_seconds";
/// Gauge, label `job`, Unix seconds: the job's next queued trigger; 0 once it has none
/// (the facade cannot remove a series).
pub const JOB_NEXT_TRIGGER_TIMESTAMP_SECONDS: &str = "slotcron_job_next_trigger_timestamp_seconds";

/// Gauge: 1 if the last configuration reload succeeded, 0 if it failed.
pub const CONFIG_LAST_RELOAD_SUCCESSFUL: &str = "slotcron_config_last_reload_successful";
/// Gauge, Unix seconds: when the configuration was last reloaded successfully.
pub const CONFIG_LAST_RELOAD_SUCCESS_TIMESTAMP_SECONDS: &str =
    "slotcron_config_last_reload_success_timestamp_seconds";

/// Records the result of a configuration reload at `at` (for whatever reloads the
/// jobs: the daemon at SIGHUP), as Prometheus' own `prometheus_config_last_reload_*`
/// gauges do.
pub fn config_reloaded(successful: bool, at: Timestamp) {
    gauge!(CONFIG_LAST_RELOAD_SUCCESSFUL).set(if successful { 1.0 } else { 0.0 });
    if successful {
        gauge!(CONFIG_LAST_RELOAD_SUCCESS_TIMESTAMP_SECONDS).set(unix_seconds(at));
    }
}

/// Whether series carry the `job` label (default: yes).
#[derive(Debug, Clone, Copy)]
pub(crate) struct JobLabels(pub bool);

impl Default for JobLabels {
    fn default() -> Self {
        Self(true)
    }
}

fn unix_seconds(at: Timestamp) -> f64 {
    at.as_millisecond() as f64 / 1e3
}

/// One job's series, registered with the recorder at the job's first use and kept, so a
/// run costs a few atomic updates rather than a registry lookup per metric. (A recorder
/// installed after a job's first trigger does not see that job: install it before
/// [`Scheduler::run`](crate::Scheduler::run).)
pub(crate) struct JobSeries {
    /// The `job` label, if series carry it.
    job: Option<Arc<str>>,
    /// `runs_total` by outcome, registered as outcomes occur.
    runs: Mutex<Vec<(&'static str, Counter)>>,
    duration: Histogram,
    last_success: Gauge,
    next_trigger: Gauge,
}

impl std::fmt::Debug for JobSeries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobSeries").field("job", &self.job).finish_non_exhaustive()
    }
}

impl JobSeries {
    pub fn new(job: &Arc<str>, labels: JobLabels) -> Self {
        match labels.0 {
            true => Self {
                job: Some(job.clone()),
                runs: Mutex::new(Vec::new()),
                duration: histogram!(RUN_DURATION_SECONDS, "job" => job.clone()),
                last_success: gauge!(JOB_LAST_SUCCESS_TIMESTAMP_SECONDS, "job" => job.clone()),
                next_trigger: gauge!(JOB_NEXT_TRIGGER_TIMESTAMP_SECONDS, "job" => job.clone()),
            },
            false => Self {
                job: None,
                runs: Mutex::new(Vec::new()),
                duration: histogram!(RUN_DURATION_SECONDS),
                last_success: Gauge::noop(),
                next_trigger: Gauge::noop(),
            },
        }
    }

    /// One run record: `duration` if the handler ran.
    pub fn record(&self, outcome: Outcome, trigger: Timestamp, duration: Option<Duration>) {
        if outcome == Outcome::Succeeded {
            self.last_success.set(unix_seconds(trigger));
        }
        if let Some(duration) = duration {
            self.duration.record(duration.as_secs_f64());
        }
        let outcome = outcome.as_str();
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, counter)) = runs.iter().find(|(name, _)| *name == outcome) {
            counter.increment(1);
            return;
        }
        let counter = match &self.job {
            Some(job) => counter!(RUNS_TOTAL, "job" => job.clone(), "outcome" => outcome),
            None => counter!(RUNS_TOTAL, "outcome" => outcome),
        };
        counter.increment(1);
        runs.push((outcome, counter));
    }

    /// The job's next trigger was queued (`None`: it has no more).
    pub fn next_trigger(&self, next: Option<Timestamp>) {
        self.next_trigger.set(next.map_or(0.0, unix_seconds));
    }
}

/// A scheduler's series without a `job` label, registered at its first use.
pub(crate) struct EngineSeries {
    lateness: Histogram,
    running: Gauge,
    won: Counter,
    lost: Counter,
    error: Counter,
    claim_duration: Histogram,
    takeovers: Counter,
    found_claimed: Counter,
    members: Gauge,
}

impl Default for EngineSeries {
    fn default() -> Self {
        Self {
            lateness: histogram!(TRIGGER_LATENESS_SECONDS),
            running: gauge!(RUNNING_RUNS),
            won: counter!(CLAIMS_TOTAL, "result" => "won"),
            lost: counter!(CLAIMS_TOTAL, "result" => "lost"),
            error: counter!(CLAIMS_TOTAL, "result" => "error"),
            claim_duration: histogram!(CLAIM_DURATION_SECONDS),
            takeovers: counter!(TAKEOVERS_TOTAL),
            found_claimed: counter!(TAKEOVER_FOUND_CLAIMED_TOTAL),
            members: gauge!(FLEET_MEMBERS),
        }
    }
}

/// A claim's answer, for [`EngineSeries::claim`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum ClaimResult {
    Won,
    Lost,
    Error,
}

impl EngineSeries {
    /// A handler started, `lateness` after its trigger's scheduled instant.
    pub fn run_started(&self, lateness: Duration) {
        self.lateness.record(lateness.as_secs_f64());
        self.running.increment(1.0);
    }

    /// A handler that [`EngineSeries::run_started`] counted has ended.
    pub fn run_ended(&self) {
        self.running.decrement(1.0);
    }

    /// After the takeover delay, `taken` triggers were found unclaimed (this scheduler
    /// claims them) and `claimed` claimed by another replica.
    pub fn takeover(&self, taken: u64, claimed: u64) {
        self.takeovers.increment(taken);
        self.found_claimed.increment(claimed);
    }

    /// The membership view has `members` live members.
    pub fn members(&self, members: usize) {
        self.members.set(members as f64);
    }

    /// A claim's answer after `latency`.
    pub fn claim(&self, result: ClaimResult, latency: Duration) {
        match result {
            ClaimResult::Won => &self.won,
            ClaimResult::Lost => &self.lost,
            ClaimResult::Error => &self.error,
        }
        .increment(1);
        self.claim_duration.record(latency.as_secs_f64());
    }
}

/// Gives the installed recorder each metric's unit and help text (the `# HELP` lines of
/// a Prometheus exposition). Call it once, after installing the recorder.
pub fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(RUNS_TOTAL, "Run records written by this scheduler, by job and outcome.");
    describe_histogram!(RUN_DURATION_SECONDS, Unit::Seconds, "How long handlers ran.");
    describe_histogram!(
        TRIGGER_LATENESS_SECONDS,
        Unit::Seconds,
        "From a trigger's scheduled instant to its handler's start."
    );
    describe_counter!(CLAIMS_TOTAL, "Claims sent to the coordinator, by result (won, lost, error).");
    describe_histogram!(CLAIM_DURATION_SECONDS, Unit::Seconds, "How long claims took to answer.");
    describe_gauge!(RUNNING_RUNS, "Handlers running now.");
    describe_counter!(
        TAKEOVERS_TOTAL,
        "Triggers claimed by this replica as a non-owner, left unclaimed by their owner for the takeover delay."
    );
    describe_counter!(
        TAKEOVER_FOUND_CLAIMED_TOTAL,
        "Triggers this replica, not their owner, found claimed after the takeover delay (not recorded)."
    );
    describe_gauge!(FLEET_MEMBERS, "Live members of the fleet in this replica's membership view.");
    describe_gauge!(
        JOB_LAST_SUCCESS_TIMESTAMP_SECONDS,
        Unit::Seconds,
        "The trigger of each job's last successful run here, in Unix seconds."
    );
    describe_gauge!(
        CONFIG_LAST_RELOAD_SUCCESSFUL,
        "Whether the last configuration reload succeeded (1) or not (0)."
    );
    describe_gauge!(
        CONFIG_LAST_RELOAD_SUCCESS_TIMESTAMP_SECONDS,
        Unit::Seconds,
        "When the configuration was last reloaded successfully, in Unix seconds."
    );
    describe_gauge!(
        JOB_NEXT_TRIGGER_TIMESTAMP_SECONDS,
        Unit::Seconds,
        "Each job's next queued trigger, in Unix seconds (0: none)."
    );
}
