//! The metrics the engine emits, through the [`metrics`] facade: the core installs no
//! exporter, so they cost next to nothing until the application installs a recorder
//! (the daemon installs `slotcron_admin::PrometheusMetrics`, `metrics-exporter-prometheus`
//! with histograms counted in their buckets, and serves `/metrics`).
//!
//! Names and units follow the Prometheus naming conventions
//! (<https://prometheus.io/docs/practices/naming/>): a `slotcron_` prefix, base units
//! (seconds), `_total` on counters, `_timestamp_seconds` on Unix-time gauges.
//!
//! Counters count what **this scheduler** saw: in a fleet each replica counts its own
//! records (a trigger another replica won is `skipped-lost` here), so the fleet's sum of
//! `outcome="succeeded"` is the fleet's number of successful runs.
//!
//! **Counted locally, flushed to the recorder.** A run does not touch the recorder: it
//! bumps plain atomics kept with its job (its record by outcome, its last success or
//! failure, and its own histograms when it keeps them; without the `job` label, in the
//! stripe below instead) and in one of the engine's stripes, one per thread (duration and
//! lateness in histograms of the [`METRIC_BUCKETS`] buckets, running handlers, claims). A flush hands what was counted since the
//! last one to the recorder: [`METRICS_FLUSH_EVERY`] after activity, when
//! [`Scheduler::run`](crate::Scheduler::run) ends, and whenever
//! [`Scheduler::flush_metrics`](crate::Scheduler::flush_metrics) is called — call it
//! before rendering an exposition (the `/metrics` endpoint of `slotcron-admin` does), so
//! that a scrape sees every record written so far. A histogram's samples reach the
//! recorder as each bucket's count of samples at that bucket's mean: a Prometheus
//! exporter configured with [`METRIC_BUCKETS`] (or with a subset of them) shows the same bucket
//! counts, sample count and sum as if it had had each sample.
//!
//! Each series is registered with the recorder at its first flush, so install the
//! recorder before [`Scheduler::run`](crate::Scheduler::run) starts.
//!
//! **Per job**, by default: [`RUNS_TOTAL`] (a series per outcome that occurred),
//! [`JOB_LAST_SUCCESS_TIMESTAMP_SECONDS`] and [`JOB_LAST_FAILURE_TIMESTAMP_SECONDS`] (once
//! the job has one) and [`JOB_PAUSED`]: three to five lines of exposition per job. Each
//! job's own duration and lateness histograms (about 40 lines) come with
//! [`SchedulerBuilder::metrics_per_job_histograms`](crate::SchedulerBuilder::metrics_per_job_histograms);
//! [`SchedulerBuilder::metrics_per_job`](crate::SchedulerBuilder::metrics_per_job)`(false)`
//! keeps only the fleet-wide series (`runs_total` by `outcome` alone). The fleet-wide
//! [`RUN_DURATION_SECONDS`] and [`TRIGGER_LATENESS_SECONDS`] histograms are always there.

mod engine;
mod flush;
mod histogram;
mod job;

pub(crate) use engine::ClaimResult;
pub(crate) use flush::Metrics;
pub(crate) use job::JobSeries;

use std::time::Duration;

use jiff::Timestamp;
use metrics::gauge;

/// Counter, labels `job` and `outcome` ([`Outcome::as_str`](crate::Outcome::as_str)): one per run record, whatever
/// the outcome, including every reason a trigger did not run (`skipped-lost`,
/// `skipped-backend-unavailable`, `missed`...).
pub const RUNS_TOTAL: &str = "slotcron_runs_total";
/// Histogram, seconds: how long each handler ran, every job's runs (runs that started
/// only).
pub const RUN_DURATION_SECONDS: &str = "slotcron_run_duration_seconds";
/// Histogram, label `job`, seconds: how long each of the job's handlers ran; only with
/// [`SchedulerBuilder::metrics_per_job_histograms`](crate::SchedulerBuilder::metrics_per_job_histograms).
pub const JOB_RUN_DURATION_SECONDS: &str = "slotcron_job_run_duration_seconds";
/// Histogram, label `job`, seconds: the job's [`TRIGGER_LATENESS_SECONDS`]; only with
/// [`SchedulerBuilder::metrics_per_job_histograms`](crate::SchedulerBuilder::metrics_per_job_histograms).
pub const JOB_TRIGGER_LATENESS_SECONDS: &str = "slotcron_job_trigger_lateness_seconds";
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
/// Gauge, label `job`, Unix seconds: the trigger of the job's last successful run, from
/// the job's state at start (kept by the store across restarts, and across the fleet
/// with a shared store) and from this scheduler's runs since; no series until it has one.
pub const JOB_LAST_SUCCESS_TIMESTAMP_SECONDS: &str = "slotcron_job_last_success_timestamp_seconds";
/// Gauge, label `job`, Unix seconds: the trigger of the job's last failed run
/// ([`Outcome::is_failure`](crate::Outcome::is_failure)), kept as
/// [`JOB_LAST_SUCCESS_TIMESTAMP_SECONDS`] is.
pub const JOB_LAST_FAILURE_TIMESTAMP_SECONDS: &str = "slotcron_job_last_failure_timestamp_seconds";
/// Gauge, label `job`: 1 while the job is paused across the fleet, else 0 (as last heard:
/// at start, at a pause or resume here, at each claim refused as paused, and at each
/// [`Scheduler::refresh_metrics`](crate::Scheduler::refresh_metrics)).
pub const JOB_PAUSED: &str = "slotcron_job_paused";
/// Gauge, label `version`: always 1; the release of the slotcron library running (the
/// Prometheus `_info` convention).
pub const BUILD_INFO: &str = "slotcron_build_info";
/// Counter, labels `backend` (`coordinator`, `state`) and `kind` (`unavailable`,
/// `timed-out`, `outcome-unknown`, `unauthorized`, `invalid-data`): failed calls to a
/// backend. `unauthorized`: the backend refused the credentials (a rotated password).
pub const BACKEND_ERRORS_TOTAL: &str = "slotcron_backend_errors_total";

/// Gauge: ledger writes (run records, start marks) waiting for the ledger to take them.
pub const LEDGER_QUEUED_WRITES: &str = "slotcron_ledger_queued_writes";
/// Counter: spells during which the ledger's buffer was full and the engine claimed
/// nothing new until the ledger took its records (back-pressure; no record is dropped).
pub const LEDGER_BACKPRESSURE_TOTAL: &str = "slotcron_ledger_backpressure_total";

/// Gauge: 1 if the last configuration reload succeeded, 0 if it failed.
pub const CONFIG_LAST_RELOAD_SUCCESSFUL: &str = "slotcron_config_last_reload_successful";
/// Gauge, Unix seconds: when the configuration was last reloaded successfully.
pub const CONFIG_LAST_RELOAD_SUCCESS_TIMESTAMP_SECONDS: &str =
    "slotcron_config_last_reload_success_timestamp_seconds";

/// Records the result of a configuration reload at `at` (for whatever reloads the
/// jobs: the daemon at SIGHUP), as Prometheus' own `prometheus_config_last_reload_*`
/// gauges do.
pub fn record_config_reload(successful: bool, at: Timestamp) {
    gauge!(CONFIG_LAST_RELOAD_SUCCESSFUL).set(if successful { 1.0 } else { 0.0 });
    if successful {
        gauge!(CONFIG_LAST_RELOAD_SUCCESS_TIMESTAMP_SECONDS).set(unix_seconds(at));
    }
}

/// The histogram buckets, in seconds, that the engine files samples in: from 1 ms to an
/// hour. Install the Prometheus exporter with them (`set_buckets(&METRIC_BUCKETS)`), or
/// `slotcron_admin::PrometheusMetrics` (which the daemon installs), for exact bucket
/// counts.
pub const METRIC_BUCKETS: [f64; 16] =
    [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0];

/// How long after a count the engine flushes it to the recorder, unless a scrape
/// ([`Scheduler::flush_metrics`](crate::Scheduler::flush_metrics)) does it first.
pub const METRICS_FLUSH_EVERY: Duration = Duration::from_secs(10);

/// The stripes the engine's own counts are spread over, one per thread (threads beyond
/// that share them).
const STRIPES: usize = 16;

/// Which per-job series there are.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MetricLabels {
    /// Series carry the `job` label (default: yes).
    pub per_job: bool,
    /// Each job also has its duration and lateness histograms (default: no).
    pub per_job_histograms: bool,
}

impl Default for MetricLabels {
    fn default() -> Self {
        Self { per_job: true, per_job_histograms: false }
    }
}

fn unix_seconds(at: Timestamp) -> f64 {
    at.as_millisecond() as f64 / 1e3
}

/// Gives the installed recorder each metric's unit and help text (the `# HELP` lines of
/// a Prometheus exposition). Call it once, after installing the recorder.
pub fn describe_metrics() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(RUNS_TOTAL, "Run records written by this scheduler, by job and outcome.");
    describe_histogram!(RUN_DURATION_SECONDS, Unit::Seconds, "How long handlers ran, every job's.");
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
    describe_gauge!(LEDGER_QUEUED_WRITES, "Ledger writes waiting for the ledger to take them.");
    describe_counter!(
        LEDGER_BACKPRESSURE_TOTAL,
        "Spells of a full ledger buffer, during which this scheduler claimed nothing new (no record is dropped)."
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
        JOB_LAST_FAILURE_TIMESTAMP_SECONDS,
        Unit::Seconds,
        "The trigger of each job's last failed run, in Unix seconds."
    );
    describe_gauge!(JOB_PAUSED, "Whether each job is paused across the fleet (1) or not (0).");
    describe_gauge!(BUILD_INFO, "The slotcron release running: always 1, the release in the version label.");
    describe_counter!(BACKEND_ERRORS_TOTAL, "Failed calls to the coordinator or the state, by kind.");
    describe_histogram!(JOB_RUN_DURATION_SECONDS, Unit::Seconds, "How long each job's handlers ran.");
    describe_histogram!(
        JOB_TRIGGER_LATENESS_SECONDS,
        Unit::Seconds,
        "From each job's triggers to its handlers' start."
    );
}
