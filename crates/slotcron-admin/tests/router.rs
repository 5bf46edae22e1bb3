//! The admin router as a library user mounts it: requests through `tower`'s `oneshot`,
//! a scheduler on a manual clock.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::json;
use slotcron::{AttemptEnd, MemoryOutputs, OutputStore};
use slotcron::{Cause, Job, Ledger, Outcome, RunRecord};
use slotcron_admin::Admin;
use slotcron_sqlite::{SqliteDatabase, SqliteLedger};
use slotcron_testkit::fixtures;
use slotcron_testkit::harness::{Harness, gated, ok, ts};
use tower::ServiceExt;

async fn get(router: &axum::Router, path: &str, headers: &[(&str, &str)]) -> (StatusCode, serde_json::Value) {
    let (status, _, body) = get_raw(router, path, headers).await;
    (status, serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null))
}

/// The status, headers and body bytes of `GET path`.
async fn get_raw(
    router: &axum::Router,
    path: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, axum::http::HeaderMap, axum::body::Bytes) {
    let mut request = Request::get(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = router.clone().oneshot(request.body(Body::empty()).unwrap()).await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    (status, headers, response.into_body().collect().await.unwrap().to_bytes())
}

#[tokio::test(start_paused = true)]
async fn a_mounted_router_lists_jobs_runs_and_output() {
    let mut h = Harness::new("2024-05-17T00:00:30Z");
    h.add(Job::builder("tick").every(Duration::from_secs(60)).handler(ok).build().unwrap());
    h.start().await;
    h.advance_to(ts("2024-05-17T00:03:30Z")).await;
    let outputs = Arc::new(MemoryOutputs::default());
    let trigger = ts("2024-05-17T00:03:00Z");
    let output = fixtures::run_output(
        "tick",
        trigger,
        "test",
        vec![fixtures::attempt_output(1, trigger, b"hi\n", b"", AttemptEnd::Exited(0))],
    );
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

async fn broken(_ctx: slotcron::JobContext) -> Result<(), std::io::Error> {
    Err(std::io::Error::other("disk full on /var"))
}

/// A scheduler of 25 jobs `job-00`..`job-24` (job `i` every `(i + 1) * 10` s, so their
/// next fire times differ and only some have run), `Backup-Nightly` (hourly, never run)
/// and `broken` (fails every minute), 35 s after it started.
async fn many_jobs() -> (Harness, axum::Router) {
    let mut h = Harness::new("2024-05-17T00:00:30Z");
    for i in 0..25u64 {
        let every = Duration::from_secs((i + 1) * 10);
        h.add(Job::builder(format!("job-{i:02}")).every(every).handler(ok).build().unwrap());
    }
    h.add(Job::builder("Backup-Nightly").every(Duration::from_secs(3600)).handler(ok).build().unwrap());
    h.add(Job::builder("broken").every(Duration::from_secs(60)).handler(broken).build().unwrap());
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:05Z")).await;
    let router = Admin::new(h.scheduler.clone()).router();
    (h, router)
}

/// The names of a page's jobs.
fn names(page: &serde_json::Value) -> Vec<String> {
    page["jobs"].as_array().unwrap().iter().map(|j| j["name"].as_str().unwrap().to_owned()).collect()
}

/// What `sort` orders a job by: its next fire time or last run's trigger.
fn sort_key(job: &serde_json::Value, sort: &str) -> Option<String> {
    let key = match sort {
        "next" => &job["next_triggers"][0],
        "last" => &job["last_run"]["trigger"],
        _ => return None,
    };
    key.as_str().map(str::to_owned)
}

#[tokio::test(start_paused = true)]
async fn cursors_walk_every_job_once_in_each_sort_and_order() {
    let (mut h, router) = many_jobs().await;
    let (_, all) = get(&router, "/api/v1/jobs?limit=1000", &[]).await;
    let mut every: Vec<String> = names(&all);
    assert_eq!(all["total"], 27);
    assert_eq!(all["next_cursor"], serde_json::Value::Null, "one page holds them all");
    every.sort();
    for sort in ["name", "next", "last"] {
        for order in ["asc", "desc"] {
            let mut seen: Vec<serde_json::Value> = Vec::new();
            let mut path = format!("/api/v1/jobs?limit=7&sort={sort}&order={order}");
            for pages in 1.. {
                let (status, page) = get(&router, &path, &[]).await;
                assert_eq!(status, StatusCode::OK, "{path}: {page}");
                assert_eq!(page["total"], 27, "{path}");
                assert!(page["jobs"].as_array().unwrap().len() <= 7, "{path}");
                seen.extend(page["jobs"].as_array().unwrap().iter().cloned());
                match page["next_cursor"].as_str() {
                    Some(cursor) => {
                        path = format!("/api/v1/jobs?limit=7&sort={sort}&order={order}&cursor={cursor}")
                    }
                    None => {
                        assert_eq!(pages, 4, "27 jobs, 7 a page: {sort} {order}");
                        break;
                    }
                }
            }
            let mut walked = names(&serde_json::json!({ "jobs": seen }));
            let in_order = walked.clone();
            walked.sort();
            assert_eq!(walked, every, "each job once, none missing: {sort} {order}");
            // Sorted by the key (jobs without one last), then by name, in the order asked.
            let keys: Vec<(Option<String>, String)> =
                seen.iter().zip(&in_order).map(|(job, name)| (sort_key(job, sort), name.clone())).collect();
            let mut expected = keys.clone();
            expected.sort_by(|a, b| {
                let by_key = match (&a.0, &b.0) {
                    (Some(x), Some(y)) if order == "asc" => x.cmp(y),
                    (Some(x), Some(y)) => y.cmp(x),
                    (x, y) => y.is_some().cmp(&x.is_some()),
                };
                by_key.then_with(|| if order == "asc" { a.1.cmp(&b.1) } else { b.1.cmp(&a.1) })
            });
            assert_eq!(keys, expected, "{sort} {order}");
        }
    }
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_default_page_is_by_name_ascending_and_sorts_by_next_fire_and_last_run() {
    let (mut h, router) = many_jobs().await;
    let (_, page) = get(&router, "/api/v1/jobs?limit=3", &[]).await;
    assert_eq!(names(&page), ["Backup-Nightly", "broken", "job-00"]);
    let (_, next) = get(&router, "/api/v1/jobs?sort=next&limit=3", &[]).await;
    // At 00:01:05: job-00 (every 10 s) fires at 00:01:10, then job-01 (20 s) and job-03
    // (40 s) at 00:01:20, by name; job-02 (30 s) at 00:01:30.
    assert_eq!(names(&next), ["job-00", "job-01", "job-03"], "{next}");
    assert_eq!(next["jobs"][0]["next_triggers"][0], "2024-05-17T00:01:10Z");
    assert_eq!(next["jobs"][0]["next_triggers"].as_array().unwrap().len(), 5, "a page's rows list 5");
    let (_, last) = get(&router, "/api/v1/jobs?sort=last&order=desc&limit=1000", &[]).await;
    let jobs = last["jobs"].as_array().unwrap();
    // 00:01:00 is the latest trigger (then by name, descending); the jobs that never ran
    // (Backup-Nightly, hourly, among them) come last.
    assert_eq!(jobs[0]["last_run"]["trigger"], "2024-05-17T00:01:00Z", "{last}");
    assert_eq!(jobs.last().unwrap()["last_run"], serde_json::Value::Null, "{last}");
    let never_ran = jobs.iter().skip_while(|job| !job["last_run"].is_null());
    assert!(never_ran.clone().all(|job| job["last_run"].is_null()), "{last}");
    assert!(never_ran.clone().any(|job| job["name"] == "Backup-Nightly"), "{last}");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn jobs_are_found_by_part_of_their_name_state_and_last_outcome() {
    let (mut h, router) = many_jobs().await;
    let find = |query: &'static str| {
        let router = router.clone();
        async move {
            let (status, page) = get(&router, &format!("/api/v1/jobs?{query}"), &[]).await;
            assert_eq!(status, StatusCode::OK, "{query}: {page}");
            (names(&page), page["total"].clone())
        }
    };
    assert_eq!(find("q=BACKUP").await, (vec!["Backup-Nightly".to_owned()], 1.into()), "any case");
    assert_eq!(find("q=b-2&limit=2").await.1, 5, "job-20..job-24, total over every page");
    assert_eq!(find("q=").await.1, 27, "an empty filter keeps every job");
    assert_eq!(find("outcome=failed").await.0, ["broken"]);
    let (succeeded, total) = find("outcome=succeeded").await;
    assert!(succeeded.contains(&"job-00".to_owned()) && !succeeded.contains(&"broken".to_owned()));
    assert!(!succeeded.contains(&"Backup-Nightly".to_owned()), "never ran");
    assert_eq!(total, succeeded.len());
    let (_, broken) = get(&router, "/api/v1/jobs?q=broken", &[]).await;
    assert_eq!(broken["jobs"][0]["last_run"]["outcome"], "failed");
    assert_eq!(broken["jobs"][0]["last_run"]["error"], "disk full on /var", "{broken}");

    h.scheduler.pause("job-03").await.unwrap();
    assert_eq!(find("state=paused").await.0, ["job-03"]);
    assert_eq!(find("state=active").await.1, 26);
    assert_eq!(find("state=running").await.1, 0, "no handler runs");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_running_state_is_the_jobs_whose_handler_runs_now() {
    let release = Arc::new(tokio::sync::Notify::new());
    let mut h = Harness::new("2024-05-17T00:00:30Z");
    h.add(Job::builder("slow").every(Duration::from_secs(60)).handler(gated(&release)).build().unwrap());
    h.add(Job::builder("quick").every(Duration::from_secs(60)).handler(ok).build().unwrap());
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:05Z")).await;
    let router = Admin::new(h.scheduler.clone()).router();
    let (_, running) = get(&router, "/api/v1/jobs?state=running", &[]).await;
    assert_eq!(names(&running), ["slow"]);
    assert_eq!(running["jobs"][0]["runs_in_flight"], 1);
    release.notify_one();
    h.advance_to(ts("2024-05-17T00:01:06Z")).await;
    let (_, running) = get(&router, "/api/v1/jobs?state=running", &[]).await;
    assert_eq!(names(&running), Vec::<String>::new(), "{running}");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn bad_jobs_parameters_get_a_400_naming_the_parameter() {
    let (mut h, router) = many_jobs().await;
    let (_, first) = get(&router, "/api/v1/jobs?limit=2&sort=next", &[]).await;
    let next_cursor = first["next_cursor"].as_str().unwrap().to_owned();
    let other_sort = format!("/api/v1/jobs?limit=2&sort=name&cursor={next_cursor}");
    for (path, says) in [
        ("/api/v1/jobs?limit=0", "limit \"0\" must be a whole number from 1 to 1000"),
        ("/api/v1/jobs?limit=1001", "limit \"1001\" must be a whole number from 1 to 1000"),
        ("/api/v1/jobs?limit=ten", "limit \"ten\" must be a whole number from 1 to 1000"),
        ("/api/v1/jobs?cursor=zz", "cursor \"zz\" is not one this API gave"),
        ("/api/v1/jobs?cursor=7b7d", "cursor \"7b7d\" is not one this API gave"),
        (&other_sort, "cursor is of a listing with sort=next and order=asc"),
        ("/api/v1/jobs?state=sleeping", "state \"sleeping\" is not one of: active, paused, running"),
        ("/api/v1/jobs?outcome=ok", "outcome \"ok\" is not one of: succeeded, failed,"),
        ("/api/v1/jobs?sort=size", "sort \"size\" is not one of: name, next, last"),
        ("/api/v1/jobs?order=up", "order \"up\" is not one of: asc, desc"),
        ("/api/v1/jobs?sort=", "sort \"\" is not one of: name, next, last"),
        ("/api/v1/jobs?sortby=name", "unknown field `sortby`"),
    ] {
        let (status, body) = get(&router, path, &[]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        let message = body["error"].as_str().unwrap_or_else(|| panic!("{path}: not JSON: {body}"));
        assert!(message.contains(says), "{path}: {message}");
    }
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_page_has_an_etag_and_is_304_while_it_has_not_changed() {
    let (mut h, router) = many_jobs().await;
    let path = "/api/v1/jobs?limit=5&sort=next";
    let (status, headers, body) = get_raw(&router, path, &[]).await;
    assert_eq!(status, StatusCode::OK);
    let etag = headers["etag"].to_str().unwrap().to_owned();
    assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
    assert!(!body.is_empty());
    let (status, headers, body) = get_raw(&router, path, &[("if-none-match", &etag)]).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert_eq!(headers["etag"], etag.as_str());
    assert!(body.is_empty(), "a 304 has no body");
    let (status, _, _) = get_raw(&router, path, &[("if-none-match", &format!("\"other\", W/{etag}"))]).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED, "one of a list, compared weakly");
    // Another page, or the same one once a job fired, has another tag.
    let (status, _, _) =
        get_raw(&router, "/api/v1/jobs?limit=6&sort=next", &[("if-none-match", &etag)]).await;
    assert_eq!(status, StatusCode::OK);
    h.advance_to(ts("2024-05-17T00:01:15Z")).await;
    let (status, headers, _) = get_raw(&router, path, &[("if-none-match", &etag)]).await;
    assert_eq!(status, StatusCode::OK, "job-00 fired at 00:01:10: its next fire moved");
    assert_ne!(headers["etag"], etag.as_str());
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_status_says_how_the_last_reload_went() {
    let h = Harness::new("2024-05-17T00:00:30Z");
    let reloads = slotcron_admin::ReloadStatus::default();
    let router = Admin::new(h.scheduler.clone()).reloads(reloads.clone()).router();
    let (status, body) = get(&router, "/api/v1/status", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, serde_json::json!({ "last_reload": null }));
    reloads.record(slotcron_admin::Reload {
        at: ts("2024-05-17T00:00:40Z"),
        cause: "SIGHUP".into(),
        successful: false,
        error: Some("jobs.toml: the jobs file does not load: line 3: unknown key".into()),
    });
    let (_, body) = get(&router, "/api/v1/status", &[]).await;
    assert_eq!(
        body["last_reload"],
        serde_json::json!({
            "at": "2024-05-17T00:00:40Z",
            "cause": "SIGHUP",
            "successful": false,
            "error": "jobs.toml: the jobs file does not load: line 3: unknown key",
        })
    );
}

#[tokio::test(start_paused = true)]
async fn a_runs_output_answers_each_attempt_with_its_end_and_both_streams_in_order() {
    let h = Harness::new("2024-05-17T00:00:30Z");
    let outputs = Arc::new(MemoryOutputs::default());
    let trigger = ts("2024-05-17T00:03:00Z");
    let failed = |n: u32, end| {
        let out = format!("out{n}\n");
        fixtures::attempt_output(n, trigger, out.as_bytes(), b"err\n", end)
    };
    let attempts = vec![
        failed(1, AttemptEnd::Exited(3)),
        failed(2, AttemptEnd::Signalled("SIGTERM".into())),
        failed(3, AttemptEnd::Exited(3)),
    ];
    outputs.save_output(&fixtures::run_output("retried", trigger, "test", attempts)).await.unwrap();
    let router = Admin::new(h.scheduler.clone()).outputs(outputs).router();

    let (status, output) = get(&router, "/api/v1/jobs/retried/runs/2024-05-17T00:03:00Z/output", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let run = &output["outputs"][0];
    // The fields of the release before: the last attempt's output.
    assert_eq!((&run["output"], &run["truncated"]), (&json!("out3\nerr\n"), &json!(false)));
    let attempts = run["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 3);
    assert_eq!(
        attempts[1],
        json!({
            "attempt": 2,
            "started": "2024-05-17T00:03:00Z",
            "duration_ms": 1500,
            "status": "killed by SIGTERM",
            "exit_code": null,
            "signal": "SIGTERM",
            "error": null,
            "chunks": [{"stream": "stdout", "text": "out2\n"}, {"stream": "stderr", "text": "err\n"}],
            "truncated": false,
        })
    );
    let ends: Vec<_> = attempts.iter().map(|a| (&a["attempt"], &a["status"], &a["exit_code"])).collect();
    assert_eq!(ends[0], (&json!(1), &json!("exit 3"), &json!(3)));
    assert_eq!(ends[2], (&json!(3), &json!("exit 3"), &json!(3)));
}

/// A chained job (`run_after`) reads as its chain: no next trigger of its own, its last run
/// the one its parent's success fired.
#[tokio::test(start_paused = true)]
async fn a_chained_job_shows_its_parent_as_its_schedule() {
    let mut h = Harness::new("2024-05-17T00:00:30Z");
    h.add(Job::builder("extract").every(Duration::from_secs(60)).handler(ok).build().unwrap());
    h.add(Job::builder("load").run_after("extract").handler(ok).build().unwrap());
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:30Z")).await;
    let router = Admin::new(h.scheduler.clone()).router();
    let (status, load) = get(&router, "/api/v1/jobs/load", &[]).await;
    assert_eq!(status, StatusCode::OK, "{load}");
    assert_eq!(load["schedule"], "after success of extract");
    assert_eq!(load["schedule_english"], "After each successful run of extract");
    assert_eq!(load["next_triggers"], serde_json::json!([]));
    assert_eq!(load["last_run"]["trigger"], "2024-05-17T00:01:00Z");
    assert_eq!(load["last_run"]["outcome"], Outcome::Succeeded.as_str());
    h.stop().await;
}
