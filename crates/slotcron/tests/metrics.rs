//! The engine's metrics, read through `metrics-util`'s debugging recorder on a manual
//! clock: every record is counted by job and outcome, claims by result (each result's
//! series exported from the start, at 0), and the gauges follow the runs.

use std::sync::Arc;
use std::time::Duration;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use slotcron::{InProcessCoordinator, Job, JobContext, Outcome, SchedulerBuilder};
use slotcron_testkit::harness::{Harness, gated, ok, ts};

async fn boom(_ctx: JobContext) -> Result<(), std::io::Error> {
    Err(std::io::Error::other("boom"))
}

/// Runs `test` on a paused current-thread runtime with `recorder` as the thread's
/// recorder (every task of that runtime runs on this thread).
fn recorded<F: Future<Output = ()>>(test: impl FnOnce() -> F) -> Snapshotter {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
    metrics::with_local_recorder(&recorder, || runtime.block_on(test()));
    snapshotter
}

/// Every series: `name{label=value,...}` and its value (counters and gauges; histograms
/// as their number of samples).
fn series(snapshotter: &Snapshotter) -> Vec<(String, f64)> {
    let mut all: Vec<(String, f64)> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let key = key.key();
            let labels: Vec<String> = key.labels().map(|l| format!("{}={}", l.key(), l.value())).collect();
            let value = match value {
                DebugValue::Counter(n) => n as f64,
                DebugValue::Gauge(g) => g.into_inner(),
                DebugValue::Histogram(samples) => samples.len() as f64,
            };
            (format!("{}{{{}}}", key.name(), labels.join(",")), value)
        })
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all
}

fn harness(configure: impl FnOnce(SchedulerBuilder) -> SchedulerBuilder) -> Harness {
    // The in-process coordinator keeps the system's time, not the manual clock's: the
    // clock-skew guard (tested in faults.rs) is off here.
    let h = Harness::with("2024-05-17T00:00:30Z", |b| {
        configure(b.coordinator(Arc::new(InProcessCoordinator::new())).check_clock_skew(false))
    });
    h.add(Job::builder("tick").every(Duration::from_secs(60)).handler(ok).build().unwrap());
    h.add(Job::builder("boom").every(Duration::from_secs(120)).handler(boom).build().unwrap());
    h
}

#[test]
fn runs_claims_and_gauges_are_counted_per_job_and_outcome() {
    let snapshotter = recorded(async || {
        let mut h = harness(|b| b);
        h.start().await;
        h.advance_to(ts("2024-05-17T00:04:30Z")).await;
        assert_eq!(h.triggers("tick", Outcome::Succeeded).len(), 4);
        assert_eq!(h.triggers("boom", Outcome::Failed).len(), 2);
        h.stop().await;
    });
    let last = ts("2024-05-17T00:04:00Z").as_second() as f64;
    let build_info = format!("slotcron_build_info{{version={}}}", env!("CARGO_PKG_VERSION"));
    let expected: Vec<(String, f64)> = [
        ("slotcron_backend_errors_total{backend=coordinator,kind=unavailable}", 0.0),
        ("slotcron_backend_errors_total{backend=state,kind=unavailable}", 0.0),
        (&build_info, 1.0),
        ("slotcron_claim_duration_seconds{}", 6.0),
        ("slotcron_claims_total{result=error}", 0.0),
        ("slotcron_claims_total{result=lost}", 0.0),
        ("slotcron_claims_total{result=won}", 6.0),
        // A fleet of one: the only member, who owns everything.
        ("slotcron_fleet_members{}", 1.0),
        // A series for a last success or failure once the job has one.
        ("slotcron_job_last_failure_timestamp_seconds{job=boom}", last),
        ("slotcron_job_last_success_timestamp_seconds{job=tick}", last),
        ("slotcron_job_paused{job=boom}", 0.0),
        ("slotcron_job_paused{job=tick}", 0.0),
        ("slotcron_ledger_backpressure_total{}", 0.0),
        ("slotcron_ledger_queued_writes{}", 0.0),
        // Fleet-wide: no per-job histogram unless asked for.
        ("slotcron_run_duration_seconds{}", 6.0),
        ("slotcron_running_runs{}", 0.0),
        ("slotcron_runs_total{job=boom,outcome=failed}", 2.0),
        ("slotcron_runs_total{job=tick,outcome=succeeded}", 4.0),
        ("slotcron_takeover_found_claimed_total{}", 0.0),
        ("slotcron_takeovers_total{}", 0.0),
        ("slotcron_trigger_lateness_seconds{}", 6.0),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value))
    .collect();
    assert_eq!(series(&snapshotter), expected);
}

#[test]
fn without_per_job_labels_only_outcomes_are_counted() {
    let snapshotter = recorded(async || {
        let mut h = harness(|b| b.metrics_per_job(false));
        h.start().await;
        h.advance_to(ts("2024-05-17T00:02:30Z")).await;
        h.stop().await;
    });
    let names: Vec<String> = series(&snapshotter).into_iter().map(|(name, _)| name).collect();
    assert_eq!(
        names,
        [
            "slotcron_backend_errors_total{backend=coordinator,kind=unavailable}",
            "slotcron_backend_errors_total{backend=state,kind=unavailable}",
            &format!("slotcron_build_info{{version={}}}", env!("CARGO_PKG_VERSION")),
            "slotcron_claim_duration_seconds{}",
            "slotcron_claims_total{result=error}",
            "slotcron_claims_total{result=lost}",
            "slotcron_claims_total{result=won}",
            "slotcron_fleet_members{}",
            "slotcron_ledger_backpressure_total{}",
            "slotcron_ledger_queued_writes{}",
            "slotcron_run_duration_seconds{}",
            "slotcron_running_runs{}",
            "slotcron_runs_total{outcome=failed}",
            "slotcron_runs_total{outcome=succeeded}",
            "slotcron_takeover_found_claimed_total{}",
            "slotcron_takeovers_total{}",
            "slotcron_trigger_lateness_seconds{}",
        ]
    );
}

/// The runs counted since the last snapshot: (job, outcome, count), counts above 0.
fn runs(snapshotter: &Snapshotter) -> Vec<(String, String, u64)> {
    let mut runs: Vec<(String, String, u64)> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == slotcron::RUNS_TOTAL)
        .filter_map(|(key, _, _, value)| {
            let DebugValue::Counter(n) = value else { return None };
            let label =
                |name: &str| key.key().labels().find(|l| l.key() == name).map(|l| l.value().to_owned());
            (n > 0).then(|| (label("job").unwrap(), label("outcome").unwrap(), n))
        })
        .collect();
    runs.sort();
    runs
}

fn run(job: &str, outcome: &str, n: u64) -> (String, String, u64) {
    (job.to_owned(), outcome.to_owned(), n)
}

#[test]
fn counts_reach_the_recorder_at_a_flush_or_a_flush_interval_after_the_runs() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
    metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            let mut h = harness(|b| b);
            h.start().await;
            h.advance_to(ts("2024-05-17T00:01:00Z")).await;
            assert_eq!(h.triggers("tick", Outcome::Succeeded).len(), 1);
            assert_eq!(runs(&snapshotter), [], "counted next to the job until a flush");
            h.scheduler.flush_metrics();
            assert_eq!(runs(&snapshotter), [run("tick", "succeeded", 1)], "a scrape's flush");

            h.advance_to(ts("2024-05-17T00:02:00Z")).await;
            assert_eq!(h.triggers("boom", Outcome::Failed).len(), 1);
            assert_eq!(runs(&snapshotter), []);
            h.advance_to(ts("2024-05-17T00:02:00Z") + slotcron::METRICS_FLUSH_EVERY).await;
            assert_eq!(
                runs(&snapshotter),
                [run("boom", "failed", 1), run("tick", "succeeded", 1)],
                "the periodic flush, FLUSH_EVERY after the runs"
            );
            h.stop().await;
        })
    });
}

/// The periodic flush hands the series on a few thousand jobs at a time, yielding between
/// steps: with 10,000 jobs (three steps) every job's run reaches the recorder, and a job
/// removed meanwhile has its count flushed once.
#[test]
fn a_periodic_flush_in_steps_hands_on_every_jobs_count() {
    let snapshotter = recorded(async || {
        let mut h = Harness::with("2024-05-17T00:00:30Z", |b| b);
        for i in 0..10_000 {
            h.add(
                Job::builder(format!("job-{i}")).every(Duration::from_secs(60)).handler(ok).build().unwrap(),
            );
        }
        h.start().await;
        h.advance_to(ts("2024-05-17T00:01:00Z")).await;
        assert!(h.scheduler.remove("job-0"));
        h.advance_to(ts("2024-05-17T00:01:00Z") + slotcron::METRICS_FLUSH_EVERY).await;
        h.stop().await;
    });
    let counted = runs(&snapshotter);
    assert_eq!(counted.len(), 10_000, "one series per job");
    assert!(counted.iter().all(|(_, outcome, n)| outcome == "succeeded" && *n == 1), "each job's run once");
}

#[test]
fn a_run_that_outlives_its_removed_job_is_counted() {
    let release = Arc::new(tokio::sync::Notify::new());
    let snapshotter = recorded(async || {
        let mut h = harness(|b| b);
        h.add(Job::builder("slow").every(Duration::from_secs(60)).handler(gated(&release)).build().unwrap());
        h.start().await;
        h.advance_to(ts("2024-05-17T00:01:00Z")).await;
        assert_eq!(h.triggers("slow", Outcome::Running).len(), 1);
        assert!(h.scheduler.remove("slow"));
        release.notify_one();
        h.advance_to(ts("2024-05-17T00:01:01Z")).await;
        assert_eq!(h.triggers("slow", Outcome::Succeeded).len(), 1);
        h.stop().await;
    });
    let all = series(&snapshotter);
    let value = |name: &str| all.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    assert_eq!(value("slotcron_runs_total{job=slow,outcome=succeeded}"), Some(1.0));
    let last = ts("2024-05-17T00:01:00Z").as_second() as f64;
    assert_eq!(value("slotcron_job_last_success_timestamp_seconds{job=slow}"), Some(last));
    assert_eq!(value("slotcron_running_runs{}"), Some(0.0));
}

#[test]
fn each_job_has_its_own_histograms_only_when_asked() {
    let snapshotter = recorded(async || {
        let mut h = harness(|b| b.metrics_per_job_histograms(true));
        h.start().await;
        h.advance_to(ts("2024-05-17T00:02:30Z")).await;
        h.stop().await;
    });
    let all = series(&snapshotter);
    let value = |name: &str| all.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    assert_eq!(value("slotcron_job_run_duration_seconds{job=tick}"), Some(2.0));
    assert_eq!(value("slotcron_job_run_duration_seconds{job=boom}"), Some(1.0));
    assert_eq!(value("slotcron_job_trigger_lateness_seconds{job=tick}"), Some(2.0));
    assert_eq!(value("slotcron_job_trigger_lateness_seconds{job=boom}"), Some(1.0));
    assert_eq!(value("slotcron_run_duration_seconds{}"), Some(3.0), "and the fleet-wide one");
}

#[test]
fn the_last_success_and_failure_come_back_from_the_job_state_at_start() {
    let store = Arc::new(slotcron::MemoryStore::new());
    let stored = slotcron::JobState {
        last_failure: Some(ts("2024-05-16T23:00:00Z")),
        ..slotcron::JobState::of(ts("2024-05-17T00:00:00Z"), Some(Outcome::Succeeded), false)
    };
    let snapshotter = recorded(async || {
        use slotcron::Store;
        store.save_state("tick", &stored).await.unwrap();
        let mut h = harness(|b| b.store(store.clone()));
        h.start().await;
        // Before any run of this process.
        h.scheduler.flush_metrics();
        h.stop().await;
    });
    let all = series(&snapshotter);
    let value = |name: &str| all.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    let seconds = |at: &str| Some(ts(at).as_second() as f64);
    let success = value("slotcron_job_last_success_timestamp_seconds{job=tick}");
    assert_eq!(success, seconds("2024-05-17T00:00:00Z"));
    let failure = value("slotcron_job_last_failure_timestamp_seconds{job=tick}");
    assert_eq!(failure, seconds("2024-05-16T23:00:00Z"));
    assert_eq!(value("slotcron_job_last_success_timestamp_seconds{job=boom}"), None, "none stored");
}

#[test]
fn the_paused_gauge_follows_pause_and_resume() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
    let paused = |snapshotter: &Snapshotter| {
        series(snapshotter).into_iter().find(|(n, _)| n == "slotcron_job_paused{job=tick}").map(|(_, v)| v)
    };
    metrics::with_local_recorder(&recorder, || {
        runtime.block_on(async {
            let mut h = harness(|b| b);
            h.start().await;
            h.scheduler.pause("tick").await.unwrap();
            h.scheduler.refresh_metrics().await;
            assert_eq!(paused(&snapshotter), Some(1.0), "paused");
            h.scheduler.resume("tick", false).await.unwrap();
            h.scheduler.flush_metrics();
            assert_eq!(paused(&snapshotter), Some(0.0), "resumed");
            h.stop().await;
        })
    });
}

#[test]
fn with_metrics_off_nothing_is_counted() {
    let snapshotter = recorded(async || {
        let mut h = harness(|b| b.metrics(false));
        h.start().await;
        h.advance_to(ts("2024-05-17T00:02:30Z")).await;
        assert_eq!(h.triggers("tick", Outcome::Succeeded).len(), 2);
        h.scheduler.flush_metrics();
        h.stop().await;
    });
    assert_eq!(series(&snapshotter), []);
}

#[test]
fn without_a_membership_the_members_gauge_is_zero() {
    let snapshotter = recorded(async || {
        let mut h = Harness::new("2024-05-17T00:00:00Z");
        h.add(Job::builder("tick").every(Duration::from_secs(60)).handler(ok).build().unwrap());
        h.start().await;
        h.advance_to(ts("2024-05-17T00:01:30Z")).await;
        h.stop().await;
    });
    let members = series(&snapshotter).into_iter().find(|(name, _)| name == "slotcron_fleet_members{}");
    assert_eq!(members, Some(("slotcron_fleet_members{}".to_owned(), 0.0)), "single-replica mode");
}
