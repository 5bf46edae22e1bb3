//! `POST /api/v1/jobs/{name}/runs/{trigger}/cancel` over a scheduler on a manual clock:
//! a running run is stopped and recorded `cancelled` with the member, token kind and
//! note; an unknown job or run is 404, an ended run 409, a bad trigger or note 400, the
//! read-only token 403 — each with a message, changing nothing.

use std::sync::Arc;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use slotcron::{Job, Outcome};
use slotcron_admin::Admin;
use slotcron_testkit::harness::{Harness, ts, until_cancelled};
use tower::ServiceExt;

const FULL: &str = "Bearer full-t0ken";
const READ: &str = "Bearer read-t0ken";

/// `POST path` with an empty JSON body and `authorization`: the status and the JSON body.
async fn post(router: &axum::Router, path: &str, authorization: &str) -> (StatusCode, serde_json::Value) {
    let request = Request::builder()
        .method("POST")
        .uri(path)
        .header("content-type", "application/json")
        .header("authorization", authorization)
        .body(Body::empty())
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null))
}

/// A scheduler whose job `long` (every minute) runs from 00:01:00 until it is cancelled,
/// behind a router with a full and a read-only token.
async fn running() -> (Harness, axum::Router) {
    let mut h = Harness::new("2024-05-17T00:00:30Z");
    let calls = Arc::new(AtomicU32::new(0));
    let job = Job::builder("long").every(Duration::from_secs(60)).attempts(2);
    h.add(job.handler(until_cancelled(&calls)).build().unwrap());
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:00Z")).await;
    let admin = Admin::new(h.scheduler.clone()).token("full-t0ken").read_token("read-t0ken");
    (h, admin.router())
}

const RUN: &str = "/api/v1/jobs/long/runs/2024-05-17T00:01:00Z/cancel";

#[tokio::test(start_paused = true)]
async fn a_running_run_is_cancelled_and_recorded_with_who_asked() {
    let (mut h, router) = running().await;
    let (status, asked) = post(&router, &format!("{RUN}?note=stuck%20on%20a%20lock"), FULL).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{asked}");
    let expected = serde_json::json!({
        "job": "long", "trigger": "2024-05-17T00:01:00Z", "holder": "test", "relayed": false
    });
    assert_eq!(asked, expected);
    h.advance(Duration::from_millis(1)).await;
    let record = h.records("long").pop().unwrap();
    assert_eq!((record.outcome, record.attempts), (Outcome::Cancelled, 1));
    assert_eq!(
        record.error.as_deref(),
        Some(
            "cancelled: asked through the admin API of test with the full token: stuck on a lock \
             (stopped when asked)"
        )
    );
    let (status, again) = post(&router, RUN, FULL).await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    assert_eq!(
        again["error"],
        "the run of job \"long\" at 2024-05-17T00:01:00Z has ended already: cancelled"
    );
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_refused_cancel_says_why_and_stops_nothing() {
    let (mut h, router) = running().await;
    let refused = [
        (
            READ,
            RUN.to_owned(),
            StatusCode::FORBIDDEN,
            "the read-only token (SLOTCRON_ADMIN_READ_TOKEN) cannot cancel",
        ),
        (FULL, RUN.replace("long", "nope"), StatusCode::NOT_FOUND, "no job named \"nope\""),
        (
            FULL,
            RUN.replace("00:01:00Z", "00:02:00Z"),
            StatusCode::NOT_FOUND,
            "job \"long\" has no run at 2024-05-17T00:02:00Z going on that this replica knows of",
        ),
        (
            FULL,
            RUN.replace("2024-05-17T00:01:00Z", "yesterday"),
            StatusCode::BAD_REQUEST,
            "trigger \"yesterday\"",
        ),
        (
            FULL,
            format!("{RUN}?note={}", "x".repeat(1001)),
            StatusCode::BAD_REQUEST,
            "note is 1001 bytes long",
        ),
    ];
    for (token, path, status, message) in refused {
        let (got, answer) = post(&router, &path, token).await;
        assert_eq!(got, status, "{path}: {answer}");
        let error = answer["error"].as_str().unwrap_or_default();
        assert!(error.starts_with(message), "{path}: {error}");
    }
    h.advance(Duration::from_secs(10)).await;
    assert_eq!(h.records("long").pop().unwrap().outcome, Outcome::Running, "still running");
    h.stop().await;
}
