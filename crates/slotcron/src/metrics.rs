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
//! Per-job labels (`job`) can be turned off for very large job sets with
//! [`SchedulerBuilder::metrics_per_job`](crate::SchedulerBuilder::metrics_per_job): the
//! per-job series then go away (`runs_total` keeps its `outcome` label, the duration
//! histogram has no label, and the two per-job gauges are not emitted).

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use metrics::{counter, gauge, histogram};

use crate::ledger::Outcome;

/// Counter, labels `job` and `outcome` ([`Outcome::as_str`]): one per run record, whatever
/// the outcome, including every reason a trigger did not run (`skipped-lost`,
/// `skipped-backend-unavailable`, `missed`...).
pub const RUNS_TOTAL: &str = "slotcron_runs_total";
/// Histogram, label `job`, seconds: how long each handler ran (runs that started only).
pub const RUN_DURATION_SECONDS: &str = "slotcron_run_duration_seconds";
/// Histogram, seconds: from a trigger's scheduled instant to its handler's start.
pub const TRIGGER_LATENESS_SECONDS: &str = "slotcron_trigger_lateness_seconds";
/// Counter, label `result`: `won`, `lost` or `error` (unreachable, timed out), one per
/// claim sent to the coordinator.
pub const CLAIMS_TOTAL: &str = "slotcron_claims_total";
/// Histogram, seconds: how long a claim took to answer (or to time out).
pub const CLAIM_DURATION_SECONDS: &str = "slotcron_claim_duration_seconds";
/// Gauge: handlers running now on this scheduler.
pub const RUNNING_RUNS: &str = "slotcron_running_runs";
/// Gauge, label `job`, Unix seconds: the trigger of the job's last successful run here.
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

impl JobLabels {
    /// One run record.
    pub fn record(self, job: &Arc<str>, outcome: Outcome, trigger: Timestamp, duration: Option<Duration>) {
        let succeeded = outcome == Outcome::Succeeded;
        let outcome = outcome.as_str();
        if self.0 {
            counter!(RUNS_TOTAL, "job" => job.clone(), "outcome" => outcome).increment(1);
            if let Some(duration) = duration {
                histogram!(RUN_DURATION_SECONDS, "job" => job.clone()).record(duration.as_secs_f64());
            }
            if succeeded {
                gauge!(JOB_LAST_SUCCESS_TIMESTAMP_SECONDS, "job" => job.clone()).set(unix_seconds(trigger));
            }
        } else {
            counter!(RUNS_TOTAL, "outcome" => outcome).increment(1);
            if let Some(duration) = duration {
                histogram!(RUN_DURATION_SECONDS).record(duration.as_secs_f64());
            }
        }
    }

    /// A job's next trigger was queued (`None`: it has no more).
    pub fn next_trigger(self, job: &Arc<str>, next: Option<Timestamp>) {
        if self.0 {
            let gauge = gauge!(JOB_NEXT_TRIGGER_TIMESTAMP_SECONDS, "job" => job.clone());
            gauge.set(next.map_or(0.0, unix_seconds));
        }
    }
}

/// A handler started, `lateness` after its trigger's scheduled instant.
pub(crate) fn run_started(lateness: Duration) {
    histogram!(TRIGGER_LATENESS_SECONDS).record(lateness.as_secs_f64());
    gauge!(RUNNING_RUNS).increment(1.0);
}

/// A handler that [`run_started`] counted has ended.
pub(crate) fn run_ended() {
    gauge!(RUNNING_RUNS).decrement(1.0);
}

/// A claim's answer: `won`, `lost` or `error`, after `latency`.
pub(crate) fn claim(result: &'static str, latency: Duration) {
    counter!(CLAIMS_TOTAL, "result" => result).increment(1);
    histogram!(CLAIM_DURATION_SECONDS).record(latency.as_secs_f64());
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
