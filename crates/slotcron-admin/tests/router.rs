//! The admin router as a library user mounts it: requests through `tower`'s `oneshot`,
//! a scheduler on a manual clock.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use slotcron::{Cause, Job, Ledger, Outcome, RunRecord};
use slotcron::{MemoryOutputs, OutputStore, RunOutput};
use slotcron_admin::Admin;
use slotcron_sqlite::{SqliteDatabase, SqliteLedger};
use slotcron_testkit::harness::{Harness, gated, ok, ts};
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
async fn with_a_token_the_api_needs_it_and_allowed_hosts_no_longer_apply() {
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
        get(&router, "/api/v1/jobs", &[("host", "10.1.2.3:9090"), ("authorization", "Bearer t0ken")]).await;
    assert_eq!(status, StatusCode::OK, "a rebinding page cannot send the token: no Host check: {body}");
    assert_eq!(get(&router, "/metrics", &[host]).await.0, StatusCode::NOT_FOUND, "open, but not configured");
}

#[tokio::test(start_paused = true)]
async fn the_bearer_scheme_is_case_insensitive() {
    let h = Harness::new("2024-05-17T00:00:30Z");
    let router = Admin::new(h.scheduler.clone()).token("t0ken").router();
    for authorization in ["bearer t0ken", "BEARER t0ken", "Bearer  t0ken"] {
        let (status, _) = get(&router, "/api/v1/jobs", &[("authorization", authorization)]).await;
        assert_eq!(status, StatusCode::OK, "{authorization}");
    }
    let (status, body) = get(&router, "/api/v1/jobs", &[("authorization", "bearer T0KEN")]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "the token itself is case-sensitive: {body}");
}

#[tokio::test(start_paused = true)]
async fn every_client_error_is_json_with_a_message() {
    let mut h = Harness::new("2024-05-17T00:00:30Z");
    h.add(Job::builder("tick").every(Duration::from_secs(60)).handler(ok).build().unwrap());
    h.start().await;
    let router = Admin::new(h.scheduler.clone()).router();
    for (path, status, says) in [
        // axum's own rejections: of the query string (a repeated key), of the path (bytes
        // that are not UTF-8).
        ("/api/v1/jobs/tick/runs?limit=1&limit=2", StatusCode::BAD_REQUEST, "duplicate field `limit`"),
        // This API's own messages.
        ("/api/v1/jobs/tick/runs?limit=x", StatusCode::BAD_REQUEST, "limit \"x\" must be a whole number"),
        (
            "/api/v1/jobs/tick/runs?before=xx",
            StatusCode::BAD_REQUEST,
            "before \"xx\" is not an RFC 3339 timestamp with an offset, e.g. 2026-12-04T16:00:00Z",
        ),
        ("/api/v1/jobs/%FF", StatusCode::BAD_REQUEST, "UTF-8"),
        ("/api/v1/jobs/nope", StatusCode::NOT_FOUND, "nope"),
    ] {
        let (got, body) = get(&router, path, &[]).await;
        assert_eq!(got, status, "{path}: {body}");
        let message = body["error"].as_str().unwrap_or_else(|| panic!("{path}: not JSON: {body}"));
        assert!(message.contains(says), "{path}: {message}");
        assert!(!message.contains("end of input"), "no parser's words: {message}");
    }
    let request = Request::post("/api/v1/jobs").body(Body::empty()).unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(response.headers()["allow"], "GET,HEAD");
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["error"], "Method Not Allowed: POST /api/v1/jobs");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_running_run_has_no_duration_yet() {
    let release = Arc::new(tokio::sync::Notify::new());
    let mut h = Harness::new("2024-05-17T00:00:30Z");
    h.add(Job::builder("slow").every(Duration::from_secs(60)).handler(gated(&release)).build().unwrap());
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:05Z")).await;
    let router = Admin::new(h.scheduler.clone()).router();
    let (_, page) = get(&router, "/api/v1/jobs/slow/runs", &[]).await;
    assert_eq!(page["runs"][0]["outcome"], "running");
    assert_eq!(page["runs"][0]["duration_ms"], serde_json::Value::Null, "{page}");
    // The job's first run, still going, is its last run.
    let (_, job) = get(&router, "/api/v1/jobs/slow", &[]).await;
    assert_eq!(job["last_run"]["trigger"], "2024-05-17T00:01:00Z", "{job}");
    assert_eq!(job["last_run"]["outcome"], "running", "{job}");
    assert_eq!(job["last_run"]["duration_ms"], serde_json::Value::Null, "{job}");
    release.notify_one();
    h.advance_to(ts("2024-05-17T00:01:06Z")).await;
    let (_, page) = get(&router, "/api/v1/jobs/slow/runs", &[]).await;
    assert_eq!(page["runs"][0]["outcome"], "succeeded");
    assert_eq!(page["runs"][0]["duration_ms"], 6000, "released 6 s after its start: {page}");
    let (_, job) = get(&router, "/api/v1/jobs/slow", &[]).await;
    assert_eq!(job["last_run"]["outcome"], "succeeded", "{job}");
    assert_eq!(job["last_run"]["duration_ms"], 6000, "{job}");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_page_of_runs_ends_at_a_whole_trigger() {
    let h = Harness::new("2024-05-17T00:10:00Z");
    let ledger = h.ledger.clone();
    pages_end_at_whole_triggers(h, &*ledger).await;
}

/// As [`a_page_of_runs_ends_at_a_whole_trigger`], on a ledger that keeps microseconds.
#[tokio::test(start_paused = true)]
async fn a_page_of_runs_ends_at_a_whole_trigger_in_a_sqlite_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("state.db").display());
    let ledger = Arc::new(SqliteLedger::new(SqliteDatabase::open(&url).await.unwrap(), Default::default()));
    let h = Harness::with("2024-05-17T00:10:00Z", |b| b.ledger(ledger.clone()));
    pages_end_at_whole_triggers(h, &*ledger).await;
}

/// Pages of `h`'s runs, whose scheduler records in `ledger`, with several records of a
/// trigger across a page's end.
async fn pages_end_at_whole_triggers(h: Harness, ledger: &dyn Ledger) {
    h.add(Job::builder("tick").every(Duration::from_secs(60)).handler(ok).build().unwrap());
    // Three replicas of a shared ledger recorded 00:02 and 00:01; one recorded 00:03.
    let record = |trigger: &str, instance: &str| RunRecord {
        job: "tick".into(),
        trigger: ts(trigger),
        instance: instance.into(),
        cause: Cause::Scheduled,
        attempts: 0,
        outcome: Outcome::SkippedLost,
        fencing_token: None,
        started: ts(trigger),
        duration: Duration::ZERO,
        error: None,
        process: None,
    };
    for (trigger, instances) in [
        ("2024-05-17T00:01:00Z", &["a", "b", "c"][..]),
        ("2024-05-17T00:02:00Z", &["a", "b", "c"]),
        ("2024-05-17T00:03:00Z", &["a"]),
    ] {
        for instance in instances {
            ledger.append(&record(trigger, instance)).await.unwrap();
        }
    }
    let router = Admin::new(h.scheduler.clone()).router();
    let page = |path: &'static str| {
        let router = router.clone();
        async move {
            let (status, page) = get(&router, path, &[]).await;
            assert_eq!(status, StatusCode::OK, "{page}");
            let runs: Vec<(String, String)> = page["runs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    (r["trigger"].as_str().unwrap().to_owned(), r["instance"].as_str().unwrap().to_owned())
                })
                .collect();
            (runs, page["next_before"].clone())
        }
    };
    let pairs = |triggers: &[(&str, &str)]| -> Vec<(String, String)> {
        triggers.iter().map(|(t, i)| (t.to_string(), i.to_string())).collect()
    };

    // The limit of 2 ends inside 00:02's group: the page takes the rest of it.
    let (runs, next) = page("/api/v1/jobs/tick/runs?limit=2").await;
    let mut tail = runs[1..].to_vec();
    tail.sort();
    assert_eq!(runs[0], ("2024-05-17T00:03:00Z".into(), "a".into()));
    assert_eq!(
        tail,
        pairs(&[("2024-05-17T00:02:00Z", "a"), ("2024-05-17T00:02:00Z", "b"), ("2024-05-17T00:02:00Z", "c")])
    );
    assert_eq!(next, "2024-05-17T00:02:00Z");

    // A limit of 1 inside a group of 3 still moves on, a whole trigger a page.
    let (mut runs, next) = page("/api/v1/jobs/tick/runs?limit=1&before=2024-05-17T00:02:00Z").await;
    runs.sort();
    assert_eq!(
        runs,
        pairs(&[("2024-05-17T00:01:00Z", "a"), ("2024-05-17T00:01:00Z", "b"), ("2024-05-17T00:01:00Z", "c")])
    );
    assert_eq!(next, serde_json::Value::Null, "nothing before 00:01: the last page, though full");
    let (runs, next) = page("/api/v1/jobs/tick/runs?limit=1&before=2024-05-17T00:01:00Z").await;
    assert_eq!(runs, pairs(&[]));
    assert_eq!(next, serde_json::Value::Null);
}
