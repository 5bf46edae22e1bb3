//! Placement without a coordinator, on a manual clock and tokio's paused time: a lone
//! scheduler runs the jobs placed on labels it carries, and refuses, naming the job, the
//! field and the reason, those placed on labels it lacks (no other member could run
//! them). Labels that are not labels are refused when the job is built. The fleet's side
//! is in the test kit's placement suite (`tests/testkit.rs` and each backend's suite).

use std::sync::Arc;
use std::time::Duration;

use slotcron::{
    ControlError, InProcessCoordinator, Job, JobBuilder, Labels, Outcome, Plan, ReconcileError, Scheduler,
};
use slotcron_testkit::harness::{Harness, ok, ts};

fn placed(name: &str, on: &[&str]) -> JobBuilder {
    Job::builder(name).every(Duration::from_secs(60)).on(on).handler(ok)
}

fn eu() -> Labels {
    Labels::parse(["region=eu", "gpu=a100"]).unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_lone_scheduler_runs_the_jobs_placed_on_labels_it_carries() {
    let mut h = Harness::with("2026-12-01T00:00:00Z", |builder| builder.labels(eu()));
    h.add(placed("render", &["region=eu", "gpu"]).build().unwrap());
    h.start().await;
    h.advance_to(ts("2026-12-01T00:03:00Z")).await;
    h.stop().await;
    assert_eq!(h.triggers("render", Outcome::Succeeded).len(), 3, "{:?}", h.records("render"));
}

#[test]
fn a_lone_scheduler_refuses_a_job_placed_on_labels_it_lacks() {
    let scheduler = Scheduler::builder().labels(eu()).build();
    let refused = scheduler.add(placed("render", &["region=eu", "gpu=h100"]).build().unwrap()).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "job \"render\": on: placed on region=eu, gpu=h100, but this scheduler runs without a coordinator and \
         does not carry gpu=h100 (its labels: gpu=a100, region=eu); no other member could run the job"
    );
    assert!(scheduler.job_names().is_empty());
    let bare = Scheduler::builder().build();
    let refused = bare.add(placed("render", &["gpu"]).build().unwrap()).unwrap_err().to_string();
    assert!(refused.contains("does not carry gpu (its labels: none)"), "{refused}");
}

#[test]
fn a_reconcile_refuses_the_plan_of_a_job_placed_on_labels_it_lacks_and_applies_the_others() {
    let scheduler = Scheduler::builder().labels(eu()).build();
    let plans = vec![
        Plan::new(placed("render", &["ssd"])).fingerprint("1"),
        Plan::new(placed("report", &["region=eu"])).fingerprint("1"),
    ];
    let Err(ReconcileError::Plans(report)) = scheduler.reconcile(plans) else { panic!("a plan fails") };
    assert_eq!(report.added, ["report"]);
    assert_eq!(report.failures.len(), 1, "{:?}", report.failures);
    let failure = report.failures[0].to_string();
    assert!(failure.contains("render") && failure.contains("on: placed on ssd"), "{failure}");
    assert_eq!(scheduler.job_names(), ["report"]);
}

#[test]
fn labels_that_are_not_labels_are_refused_naming_the_job_the_field_and_the_reason() {
    let refused = |on: &[&str]| placed("render", on).build().unwrap_err().to_string();
    assert_eq!(
        refused(&["region = eu"]),
        "job \"render\": on: label \"region = eu\": white space is not allowed (write key or key=value)"
    );
    assert_eq!(refused(&[""]), "job \"render\": on: a label must not be empty (write key or key=value)");
    assert_eq!(refused(&["=eu"]), "job \"render\": on: label \"=eu\": the key before '=' is empty");
    assert_eq!(
        refused(&["region=eu", "region=us"]),
        "job \"render\": on: label key \"region\" is given twice (region=eu and region=us); a key has one value"
    );
    let job = placed("render", &["region=eu", "gpu"]).build().unwrap();
    assert_eq!(job.placement().to_string(), "region=eu, gpu");
}

#[tokio::test(start_paused = true)]
async fn a_replica_without_a_jobs_labels_refuses_to_queue_its_manual_runs_and_backfills() {
    let coordinator = Arc::new(InProcessCoordinator::default());
    let mut h =
        Harness::with("2026-12-01T00:00:00Z", |builder| builder.coordinator(coordinator).labels(eu()));
    h.add(placed("render", &["region=eu", "ssd"]).build().unwrap());
    h.start().await;
    let refused = h.scheduler.trigger_now("render", None).await.unwrap_err();
    let expected = ControlError::NotPlacedHere {
        job: "render".into(),
        placement: "region=eu, ssd".into(),
        unmet: "ssd".into(),
    };
    assert_eq!(refused, expected);
    assert_eq!(
        refused.to_string(),
        "job \"render\" is placed on region=eu, ssd, and this replica does not carry ssd: ask one that does"
    );
    let (from, to) = (ts("2026-11-30T00:00:00Z"), ts("2026-11-30T00:02:00Z"));
    assert_eq!(h.scheduler.backfill("render", from, to).await.unwrap_err(), expected);
    h.advance(Duration::from_secs(1)).await;
    h.stop().await;
    assert!(h.records("render").is_empty(), "{:?}", h.records("render"));
}
