//! Who may ask, through a mounted router (`tower`'s `oneshot`): the `Host` check of a
//! server without a token, the probes that answer any `Host`, the full and the
//! read-only token on every read and write.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use slotcron::{AttemptEnd, Cause, Job, MemoryOutputs, OutputStore};
use slotcron_admin::Admin;
use slotcron_testkit::fixtures;
use slotcron_testkit::harness::{Harness, ok, ts};
use tower::ServiceExt;

/// `method path` with `headers` (a `Host` among them, or none) and `body`: the status and
/// the body as JSON (`Null` if it is not).
async fn send(
    router: &axum::Router,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (StatusCode, serde_json::Value) {
    let mut request = Request::builder().method(method).uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = router.clone().oneshot(request.body(Body::from(body.to_owned())).unwrap()).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null))
}

const JSON: (&str, &str) = ("content-type", "application/json");
const FULL: (&str, &str) = ("authorization", "Bearer full-t0ken");
const READ: (&str, &str) = ("authorization", "Bearer read-t0ken");
const WRONG: (&str, &str) = ("authorization", "Bearer guess");

/// The listen address's own `Host`, a pod IP nobody listed, a rebinding page's name.
const OWN: &str = "127.0.0.1:9090";
const POD_IP: &str = "10.1.2.3:9090";
const FOREIGN: &str = "evil.example:9090";

/// The write endpoints: operation and body.
const WRITES: [(&str, &str); 4] = [
    ("pause", ""),
    ("resume", ""),
    ("trigger", ""),
    ("backfill", r#"{"from": "2024-05-17T00:10:00Z", "to": "2024-05-17T00:12:00Z"}"#),
];

/// A running scheduler with the job `tick` and one run of it kept with output.
async fn running() -> Harness {
    let mut h = Harness::new("2024-05-17T01:00:00Z");
    h.add(Job::builder("tick").every(Duration::from_secs(60)).handler(ok).build().unwrap());
    h.start().await;
    h.advance_to(ts("2024-05-17T01:01:30Z")).await;
    h
}

/// The admin API over `h` with metrics and output, the daemon's hosts for a loopback
/// listener.
async fn admin(h: &Harness) -> Admin {
    let outputs = std::sync::Arc::new(MemoryOutputs::default());
    let output = fixtures::run_output(
        "tick",
        ts("2024-05-17T01:01:00Z"),
        "test",
        vec![fixtures::attempt_output(1, ts("2024-05-17T01:01:00Z"), b"hi\n", b"", AttemptEnd::Exited(0))],
    );
    outputs.save_output(&output).await.unwrap();
    Admin::new(h.scheduler.clone())
        .metrics(|| "# slotcron\n".to_owned())
        .outputs(outputs)
        .allowed_hosts([OWN.to_owned(), "localhost:9090".to_owned()])
}

/// The `Host` header of each case: one of the names, or none.
fn host(name: Option<&'static str>) -> Vec<(&'static str, &'static str)> {
    name.map(|name| ("host", name)).into_iter().collect()
}

#[tokio::test(start_paused = true)]
async fn a_server_without_a_token_refuses_a_foreign_host_except_on_the_probes() {
    let mut h = running().await;
    let router = admin(&h).await.router();
    for name in [Some(OWN), Some("LOCALHOST:9090")] {
        for path in ["/", "/healthz", "/readyz", "/metrics", "/api/v1/jobs"] {
            let (status, body) = send(&router, "GET", path, &host(name), "").await;
            assert_eq!(status, StatusCode::OK, "{name:?} {path}: {body}");
        }
    }
    for name in [Some(FOREIGN), Some(POD_IP), None] {
        for path in ["/healthz", "/readyz"] {
            let (status, body) = send(&router, "GET", path, &host(name), "").await;
            assert_eq!(status, StatusCode::OK, "{name:?} {path}: {body}");
        }
        for path in ["/", "/metrics", "/api/v1/jobs", "/api/v1/jobs/tick/runs"] {
            let (status, body) = send(&router, "GET", path, &host(name), "").await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{name:?} {path}: {body}");
        }
        let mut headers = host(name);
        headers.extend([JSON, FULL]);
        let (status, body) = send(&router, "POST", "/api/v1/jobs/tick/pause", &headers, "").await;
        assert_eq!(status, StatusCode::FORBIDDEN, "a bearer header opens nothing here: {body}");
    }
    let (_, body) = send(&router, "GET", "/api/v1/jobs", &host(Some(FOREIGN)), "").await;
    assert_eq!(
        body["error"],
        "Host \"evil.example:9090\" is not this server's; allowed: 127.0.0.1:9090, localhost:9090"
    );
    let (_, job) = send(&router, "GET", "/api/v1/jobs/tick", &host(Some(OWN)), "").await;
    assert_eq!(job["paused"], false, "the refused pause changed nothing");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_server_with_a_token_answers_any_host_and_needs_the_token_on_the_api_only() {
    let mut h = running().await;
    let router = admin(&h).await.token("full-t0ken").router();
    for name in [Some(OWN), Some(POD_IP), Some(FOREIGN), None] {
        for path in ["/", "/healthz", "/readyz", "/metrics"] {
            let (status, body) = send(&router, "GET", path, &host(name), "").await;
            assert_eq!(status, StatusCode::OK, "no token needed: {name:?} {path}: {body}");
        }
        for path in ["/api/v1/jobs", "/api/v1/jobs/tick", "/api/v1/jobs/tick/runs"] {
            for (credentials, want) in [
                (None, StatusCode::UNAUTHORIZED),
                (Some(WRONG), StatusCode::UNAUTHORIZED),
                (Some(FULL), StatusCode::OK),
            ] {
                let mut headers = host(name);
                headers.extend(credentials);
                let (status, body) = send(&router, "GET", path, &headers, "").await;
                assert_eq!(status, want, "{name:?} {path} {credentials:?}: {body}");
            }
        }
    }
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_read_token_reads_jobs_runs_output_and_metrics_at_any_host() {
    let mut h = running().await;
    let router = admin(&h).await.token("full-t0ken").read_token("read-t0ken").router();
    for name in [Some(OWN), Some(POD_IP), None] {
        for path in [
            "/api/v1/jobs",
            "/api/v1/jobs/tick",
            "/api/v1/jobs/tick/runs",
            "/api/v1/jobs/tick/runs/2024-05-17T01:01:00Z/output",
            "/metrics",
        ] {
            let mut headers = host(name);
            headers.push(READ);
            let (status, body) = send(&router, "GET", path, &headers, "").await;
            assert_eq!(status, StatusCode::OK, "{name:?} {path}: {body}");
        }
    }
    let (_, output) =
        send(&router, "GET", "/api/v1/jobs/tick/runs/2024-05-17T01:01:00Z/output", &[READ], "").await;
    assert_eq!(output["outputs"][0]["output"], "hi\n");
    let (status, _) = send(&router, "GET", "/api/v1/jobs", &[WRONG], "").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_read_token_gets_403_on_every_write_and_changes_nothing() {
    let mut h = running().await;
    let router = admin(&h).await.token("full-t0ken").read_token("read-t0ken").router();
    for (operation, body) in WRITES {
        let path = format!("/api/v1/jobs/tick/{operation}");
        let (status, answer) = send(&router, "POST", &path, &[("host", POD_IP), JSON, READ], body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {answer}");
        assert_eq!(
            answer["error"],
            format!(
                "the read-only token (SLOTCRON_ADMIN_READ_TOKEN) cannot {operation}; use SLOTCRON_ADMIN_TOKEN"
            )
        );
        for credentials in [None, Some(WRONG)] {
            let mut headers = vec![JSON];
            headers.extend(credentials);
            let (status, answer) = send(&router, "POST", &path, &headers, body).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{path} {credentials:?}: {answer}");
        }
    }
    let (_, job) = send(&router, "GET", "/api/v1/jobs/tick", &[READ], "").await;
    assert_eq!(job["paused"], false, "nothing was paused");
    h.advance(Duration::from_secs(1)).await;
    let steered: Vec<_> = h.records("tick").into_iter().filter(|r| r.cause != Cause::Scheduled).collect();
    assert!(steered.is_empty(), "no manual run, no backfill: {steered:?}");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_full_token_does_every_write_beside_a_read_token() {
    let mut h = running().await;
    let router = admin(&h).await.token("full-t0ken").read_token("read-t0ken").router();
    let mut answers = Vec::new();
    for (operation, body) in WRITES {
        let path = format!("/api/v1/jobs/tick/{operation}");
        let (status, answer) = send(&router, "POST", &path, &[("host", POD_IP), JSON, FULL], body).await;
        answers.push((operation, status));
        assert!(status.is_success(), "{path}: {answer}");
    }
    assert_eq!(
        answers,
        [
            ("pause", StatusCode::OK),
            ("resume", StatusCode::OK),
            ("trigger", StatusCode::ACCEPTED),
            ("backfill", StatusCode::ACCEPTED)
        ]
    );
    h.advance(Duration::from_millis(1)).await;
    let mut causes: Vec<Cause> =
        h.records("tick").into_iter().map(|r| r.cause).filter(|c| *c != Cause::Scheduled).collect();
    causes.dedup();
    assert_eq!(causes, [Cause::Manual, Cause::Backfill]);
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_read_token_alone_makes_a_read_only_server_without_a_host_check() {
    let mut h = running().await;
    let router = admin(&h).await.read_token("read-t0ken").router();
    let (status, body) = send(&router, "GET", "/api/v1/jobs", &[("host", FOREIGN), READ], "").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = send(&router, "GET", "/api/v1/jobs", &[("host", OWN)], "").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, body) = send(&router, "POST", "/api/v1/jobs/tick/pause", &[JSON, READ], "").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    h.stop().await;
}
