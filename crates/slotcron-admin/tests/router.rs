//! The admin router as a library user mounts it: requests through `tower`'s `oneshot`,
//! a scheduler on a manual clock.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use slotcron::ledger::{MemoryOutputs, OutputStore, RunOutput};
use slotcron::testkit::harness::{Harness, ok, ts};
use slotcron::{Job, Outcome};
use slotcron_admin::Admin;
use tower::ServiceExt;

async fn get(router: &axum::Router, path: &str, headers: &[(&str, &str)]) -> (StatusCode, serde_json::Value) {
    let mut request = Request::get(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = router.clone().oneshot(request.body(Body::empty()).unwrap()).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null))
}

#[tokio::test(start_paused = true)]
async fn a_mounted_router_lists_jobs_runs_and_output() {
    let mut h = Harness::new("2024-05-17T00:00:30Z");
    h.add(Job::builder("tick").every(Duration::from_secs(60)).handler(ok).build().unwrap());
    h.start().await;
    h.advance_to(ts("2024-05-17T00:03:30Z")).await;
    let outputs = Arc::new(MemoryOutputs::default());
    let trigger = ts("2024-05-17T00:03:00Z");
    let output = RunOutput {
        job: "tick".into(),
        trigger,
        instance: "test".into(),
        output: b"hi\n".to_vec(),
        truncated: false,
    };
    outputs.save_output(&output).await.unwrap();
    let router = axum::Router::new().nest("/cron", Admin::new(h.scheduler.clone()).outputs(outputs).router());

    let (status, jobs) = get(&router, "/cron/api/v1/jobs", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let tick = &jobs["jobs"][0];
    assert_eq!(tick["name"], "tick");
    assert_eq!(tick["schedule"], "every 1m");
    assert_eq!(tick["schedule_english"], "Every minute, anchored to the Unix epoch");
    let next: Vec<&str> =
        tick["next_triggers"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert_eq!(
        next,
        [
            "2024-05-17T00:04:00Z",
            "2024-05-17T00:05:00Z",
            "2024-05-17T00:06:00Z",
            "2024-05-17T00:07:00Z",
            "2024-05-17T00:08:00Z"
        ]
    );
    assert_eq!(tick["last_run"]["trigger"], "2024-05-17T00:03:00Z");
    assert_eq!(tick["last_run"]["outcome"], Outcome::Succeeded.as_str());

    let (_, page) = get(&router, "/cron/api/v1/jobs/tick/runs?limit=2", &[]).await;
    let triggers: Vec<&str> =
        page["runs"].as_array().unwrap().iter().map(|r| r["trigger"].as_str().unwrap()).collect();
    assert_eq!(triggers, ["2024-05-17T00:03:00Z", "2024-05-17T00:02:00Z"]);
    assert_eq!(page["next_before"], "2024-05-17T00:02:00Z");
    let (_, rest) =
        get(&router, "/cron/api/v1/jobs/tick/runs?limit=2&before=2024-05-17T00:02:00Z", &[]).await;
    let triggers: Vec<&str> =
        rest["runs"].as_array().unwrap().iter().map(|r| r["trigger"].as_str().unwrap()).collect();
    assert_eq!(triggers, ["2024-05-17T00:01:00Z"]);
    assert_eq!(rest["next_before"], serde_json::Value::Null);

    let (status, output) = get(&router, "/cron/api/v1/jobs/tick/runs/2024-05-17T00:03:00Z/output", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(output["outputs"][0]["output"], "hi\n");

    let (status, missing) = get(&router, "/cron/api/v1/nothing", &[]).await;
    assert_eq!(
        (status, missing["error"].as_str()),
        (StatusCode::NOT_FOUND, Some("no such endpoint: /api/v1/nothing"))
    );
    let (status, _) = get(&router, "/cron/healthz", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = get(&router, "/cron/metrics", &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "no renderer given");
    h.stop().await;
    let (status, _) = get(&router, "/cron/healthz", &[]).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "the scheduler has stopped");
}

#[tokio::test(start_paused = true)]
async fn token_and_hosts_guard_the_api() {
    let h = Harness::new("2024-05-17T00:00:30Z");
    let router =
        Admin::new(h.scheduler.clone()).token("t0ken").allowed_hosts(["admin.internal".to_owned()]).router();
    let host = ("host", "admin.internal:8080");
    assert_eq!(get(&router, "/api/v1/jobs", &[host]).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(
        get(&router, "/api/v1/jobs", &[host, ("authorization", "Bearer t0ken")]).await.0,
        StatusCode::OK
    );
    let (status, body) =
        get(&router, "/api/v1/jobs", &[("host", "evil.example"), ("authorization", "Bearer t0ken")]).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(get(&router, "/metrics", &[host]).await.0, StatusCode::NOT_FOUND, "open, but not configured");
}
