//! The write endpoints of a mounted router over a scheduler on a manual clock: pause,
//! resume, trigger (with an idempotency key), backfill; and every refusal a 4xx with a
//! message that changes nothing.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use slotcron::{Cause, Job, Outcome};
use slotcron_admin::Admin;
use slotcron_testkit::harness::{Harness, ok, ts};
use tower::ServiceExt;

async fn send(
    router: &axum::Router,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Body>,
) -> (StatusCode, serde_json::Value) {
    let mut request = Request::builder().method(method).uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = router.clone().oneshot(request.body(body.into()).unwrap()).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null))
}

const JSON: (&str, &str) = ("content-type", "application/json");

async fn post(router: &axum::Router, path: &str, body: &str) -> (StatusCode, serde_json::Value) {
    send(router, "POST", path, &[JSON], body.to_owned()).await
}

async fn running() -> Harness {
    let mut h = Harness::new("2024-05-17T01:00:00Z");
    h.add(Job::builder("tick").every(Duration::from_secs(60)).handler(ok).build().unwrap());
    h.start().await;
    h
}

#[tokio::test(start_paused = true)]
async fn pause_resume_trigger_and_backfill_through_the_api() {
    let mut h = running().await;
    let router = Admin::new(h.scheduler.clone()).router();
    let (status, paused) = post(&router, "/api/v1/jobs/tick/pause", "").await;
    assert_eq!(status, StatusCode::OK, "{paused}");
    assert_eq!(paused["paused_since"], "2024-05-17T01:00:00Z");
    let (_, job) = send(&router, "GET", "/api/v1/jobs/tick", &[], Body::empty()).await;
    assert_eq!(
        (job["paused"].clone(), job["paused_since"].clone()),
        (true.into(), "2024-05-17T01:00:00Z".into())
    );
    h.advance_to(ts("2024-05-17T01:02:30Z")).await;
    assert_eq!(h.triggers("tick", Outcome::SkippedPaused).len(), 2);

    let (status, resumed) = post(&router, "/api/v1/jobs/tick/resume", r#"{"catch_up": false}"#).await;
    assert_eq!(status, StatusCode::OK, "{resumed}");
    assert_eq!(resumed["caught_up"], serde_json::json!([]));
    let (_, jobs) = send(&router, "GET", "/api/v1/jobs", &[], Body::empty()).await;
    assert_eq!(jobs["jobs"][0]["paused"], false);

    let key = [JSON, ("idempotency-key", "release-42")];
    let (status, first) = send(&router, "POST", "/api/v1/jobs/tick/trigger", &key, "{}").await;
    assert_eq!(status, StatusCode::ACCEPTED, "{first}");
    assert_eq!(
        (first["trigger"].as_str(), first["repeated"].as_bool()),
        (Some("2024-05-17T01:02:30Z"), Some(false))
    );
    h.advance(Duration::from_secs(5)).await;
    let (status, again) = send(&router, "POST", "/api/v1/jobs/tick/trigger", &key, "").await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(
        (again["trigger"].clone(), again["repeated"].clone()),
        (first["trigger"].clone(), true.into())
    );

    let range = r#"{"from": "2024-05-17T00:10:00Z", "to": "2024-05-17T00:12:00Z"}"#;
    let (status, backfill) = post(&router, "/api/v1/jobs/tick/backfill", range).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{backfill}");
    assert_eq!(
        backfill["triggers"],
        serde_json::json!(["2024-05-17T00:10:00Z", "2024-05-17T00:11:00Z", "2024-05-17T00:12:00Z"])
    );
    h.advance(Duration::from_millis(1)).await;
    let ran: Vec<_> = h
        .records("tick")
        .into_iter()
        .filter(|r| r.outcome == Outcome::Succeeded && r.cause != Cause::Scheduled)
        .map(|r| (r.trigger.to_string(), r.cause))
        .collect();
    let want = [
        ("2024-05-17T01:02:30Z", Cause::Manual),
        ("2024-05-17T00:10:00Z", Cause::Backfill),
        ("2024-05-17T00:11:00Z", Cause::Backfill),
        ("2024-05-17T00:12:00Z", Cause::Backfill),
    ]
    .map(|(t, c)| (t.to_owned(), c));
    assert_eq!(ran, want);
    let (_, runs) = send(&router, "GET", "/api/v1/jobs/tick/runs?limit=1", &[], Body::empty()).await;
    assert_eq!(runs["runs"][0]["cause"], "manual");
    h.stop().await;
}

/// A refused request: path, headers, body, the status and the start of the message.
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, String, StatusCode, &'a str);

#[tokio::test(start_paused = true)]
async fn bad_input_gets_a_4xx_with_a_message_and_changes_nothing() {
    let mut h = running().await;
    let router = Admin::new(h.scheduler.clone()).token("t0ken").router();
    let bearer = ("authorization", "Bearer t0ken");
    let big = format!(r#"{{"catch_up": false, "pad": "{}"}}"#, "x".repeat(slotcron_admin::MAX_BODY));
    let cases: Vec<Case> = vec![
        (
            "/api/v1/jobs/nope/pause",
            vec![JSON, bearer],
            String::new(),
            StatusCode::NOT_FOUND,
            "no job named \"nope\"",
        ),
        (
            "/api/v1/jobs/tick/pause",
            vec![bearer],
            String::new(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "a POST needs Content-Type: application/json",
        ),
        (
            "/api/v1/jobs/tick/pause",
            vec![("content-type", "text/plain"), bearer],
            "{}".into(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "a POST needs Content-Type",
        ),
        (
            "/api/v1/jobs/tick/pause",
            vec![JSON],
            String::new(),
            StatusCode::UNAUTHORIZED,
            "this server needs Authorization",
        ),
        (
            "/api/v1/jobs/tick/pause",
            vec![JSON, bearer],
            "{\"why\": 1}".into(),
            StatusCode::BAD_REQUEST,
            r#"the body is not the JSON expected: field "why": unknown field `why`, there are no fields; the endpoint takes no body, or an empty object {}"#,
        ),
        (
            "/api/v1/jobs/tick/resume",
            vec![JSON, bearer],
            "{catch_up: true".into(),
            StatusCode::BAD_REQUEST,
            "the body is not the JSON expected",
        ),
        (
            "/api/v1/jobs/tick/resume",
            vec![JSON, bearer],
            big,
            StatusCode::PAYLOAD_TOO_LARGE,
            "the body is larger than 1048576 bytes",
        ),
        (
            "/api/v1/jobs/tick/backfill",
            vec![JSON, bearer],
            String::new(),
            StatusCode::BAD_REQUEST,
            r#"the body is not the JSON expected: an object {"from": T1, "to": T2} of RFC 3339 timestamps, and "dry_run": true or false if wanted, given an empty body"#,
        ),
        (
            "/api/v1/jobs/tick/backfill",
            vec![JSON, bearer],
            r#"{"from": "2024-05-17T00:20:00Z", "to": "2024-05-17T00:10:00Z"}"#.into(),
            StatusCode::BAD_REQUEST,
            "backfill of job \"tick\": from 2024-05-17T00:20:00Z is after to 2024-05-17T00:10:00Z",
        ),
        (
            "/api/v1/jobs/tick/backfill",
            vec![JSON, bearer],
            r#"{"from": "2024-05-15T00:00:00Z", "to": "2024-05-17T00:00:00Z"}"#.into(),
            StatusCode::BAD_REQUEST,
            "backfill of job \"tick\": the range holds 2881 triggers; at most 1000 per request",
        ),
        (
            "/api/v1/jobs/tick/backfill",
            vec![JSON, bearer],
            r#"{"from": "yesterday", "to": "2024-05-17T00:00:00Z"}"#.into(),
            StatusCode::BAD_REQUEST,
            r#"the body is not the JSON expected: field "from": failed to parse four digit integer as year: invalid digit, expected 0-9 but got y; the endpoint takes an object {"from": T1, "to": T2} of RFC 3339 timestamps"#,
        ),
        (
            "/api/v1/jobs/tick/resume",
            vec![JSON, bearer],
            r#"{"catch_up": "yes"}"#.into(),
            StatusCode::BAD_REQUEST,
            r#"the body is not the JSON expected: field "catch_up": invalid type: string "yes", expected a boolean; the endpoint takes no body, or an object {"catch_up": true or false}"#,
        ),
        // A body that is not an object says what each endpoint takes, in the API's words.
        (
            "/api/v1/jobs/tick/trigger",
            vec![JSON, bearer],
            "null".into(),
            StatusCode::BAD_REQUEST,
            r#"the body is not the JSON expected: no body, or an object {"dry_run": true or false}, given null"#,
        ),
        (
            "/api/v1/jobs/tick/pause",
            vec![JSON, bearer],
            "[]".into(),
            StatusCode::BAD_REQUEST,
            "the body is not the JSON expected: no body, or an empty object {}, given an array",
        ),
        (
            "/api/v1/jobs/tick/resume",
            vec![JSON, bearer],
            "[true]".into(),
            StatusCode::BAD_REQUEST,
            r#"the body is not the JSON expected: no body, or an object {"catch_up": true or false}, given an array"#,
        ),
        (
            "/api/v1/jobs/tick/backfill",
            vec![JSON, bearer],
            "null".into(),
            StatusCode::BAD_REQUEST,
            r#"the body is not the JSON expected: an object {"from": T1, "to": T2} of RFC 3339 timestamps, and "dry_run": true or false if wanted, given null"#,
        ),
        (
            "/api/v1/jobs/tick/trigger",
            vec![JSON, bearer, ("idempotency-key", "a:b")],
            String::new(),
            StatusCode::BAD_REQUEST,
            "idempotency key refused: ':' is not allowed",
        ),
    ];
    for (path, headers, body, status, message) in cases {
        let (got, answer) = send(&router, "POST", path, &headers, body).await;
        assert_eq!(got, status, "{path}: {answer}");
        let error = answer["error"].as_str().unwrap_or_default();
        assert!(error.starts_with(message), "{path}: {answer}");
    }
    let (_, job) = send(&router, "GET", "/api/v1/jobs/tick", &[bearer], Body::empty()).await;
    assert_eq!(job["paused"], false, "nothing was paused");
    h.advance(Duration::from_secs(1)).await;
    assert!(h.records("tick").is_empty(), "nothing ran: {:?}", h.records("tick"));
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn dry_runs_answer_what_would_run_and_run_nothing() {
    let mut h = running().await;
    let router = Admin::new(h.scheduler.clone()).router();
    let (status, would) = post(&router, "/api/v1/jobs/tick/trigger", r#"{"dry_run": true}"#).await;
    assert_eq!(status, StatusCode::OK, "{would}");
    assert_eq!(
        would,
        serde_json::json!({
            "job": "tick", "trigger": "2024-05-17T01:00:00Z", "paused": false, "paused_since": null, "dry_run": true
        })
    );
    post(&router, "/api/v1/jobs/tick/pause", "").await;
    let (_, would) = post(&router, "/api/v1/jobs/tick/trigger", r#"{"dry_run": true}"#).await;
    assert_eq!(
        (would["paused"].clone(), would["paused_since"].clone()),
        (true.into(), "2024-05-17T01:00:00Z".into())
    );

    let range = r#"{"from": "2024-05-17T00:10:00Z", "to": "2024-05-17T00:12:30Z", "dry_run": true}"#;
    let (status, would) = post(&router, "/api/v1/jobs/tick/backfill", range).await;
    assert_eq!(status, StatusCode::OK, "{would}");
    assert_eq!(
        (would["triggers"].clone(), would["dry_run"].clone()),
        (
            serde_json::json!(["2024-05-17T00:10:00Z", "2024-05-17T00:11:00Z", "2024-05-17T00:12:00Z"]),
            true.into()
        )
    );
    // A range the backfill refuses, the dry run refuses alike.
    for range in [
        r#"{"from": "2024-05-17T00:20:00Z", "to": "2024-05-17T00:10:00Z"}"#,
        r#"{"from": "2024-05-15T00:00:00Z", "to": "2024-05-17T00:00:00Z"}"#,
        r#"{"from": "2024-05-17T00:00:00Z", "to": "2024-05-18T00:00:00Z"}"#,
    ] {
        let dry = range.replace('}', r#", "dry_run": true}"#);
        let refused = post(&router, "/api/v1/jobs/tick/backfill", range).await;
        assert!(refused.0.is_client_error(), "{range}: {refused:?}");
        assert_eq!(post(&router, "/api/v1/jobs/tick/backfill", &dry).await, refused, "{range}");
    }
    let refused = post(&router, "/api/v1/jobs/nope/trigger", "").await;
    assert_eq!(post(&router, "/api/v1/jobs/nope/trigger", r#"{"dry_run": true}"#).await, refused);

    h.advance(Duration::from_secs(1)).await;
    let requested: Vec<_> = h.records("tick").into_iter().filter(|r| r.cause != Cause::Scheduled).collect();
    assert!(requested.is_empty(), "no manual or backfilled run: {requested:?}");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_job_paused_after_failures_shows_the_reason_until_resumed() {
    let mut h = Harness::new("2024-05-17T01:00:30Z");
    let broken = |_ctx: slotcron::JobContext| async { Err::<(), _>(std::io::Error::other("broken")) };
    let job = Job::builder("broken").every(Duration::from_secs(60)).pause_after_failures(2).handler(broken);
    h.add(job.build().unwrap());
    h.start().await;
    let router = Admin::new(h.scheduler.clone()).router();
    h.advance_to(ts("2024-05-17T01:03:30Z")).await;
    let reason = "paused after 2 failed triggers in a row, the last at 2024-05-17T01:02:00Z";
    let (_, job) = send(&router, "GET", "/api/v1/jobs/broken", &[], Body::empty()).await;
    assert_eq!((&job["paused"], &job["paused_reason"]), (&true.into(), &reason.into()), "{job}");
    assert_eq!(job["policies"]["pause_after_failures"], 2, "{job}");
    let (_, page) = send(&router, "GET", "/api/v1/jobs", &[], Body::empty()).await;
    assert_eq!(page["jobs"][0]["paused_reason"], reason, "{page}");

    let (status, _) = post(&router, "/api/v1/jobs/broken/resume", r#"{"catch_up": false}"#).await;
    assert_eq!(status, StatusCode::OK);
    let (_, job) = send(&router, "GET", "/api/v1/jobs/broken", &[], Body::empty()).await;
    assert_eq!((&job["paused"], &job["paused_reason"]), (&false.into(), &serde_json::Value::Null), "{job}");
    h.stop().await;
}
