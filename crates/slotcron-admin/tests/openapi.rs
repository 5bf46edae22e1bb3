//! `GET /openapi.json` against the router that serves it, over a running scheduler: each
//! documented operation, called with the document's example parameters, answers a status
//! the document lists, with a body its schema accepts; the document's security is the
//! one the router enforces; and the document's paths are the router's.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use slotcron::AttemptEnd;
use slotcron::{Job, JobContext, JobDefinition, MemoryOutputs, MemoryStore, OutputStore, ScheduleSpec};
use slotcron_admin::{Admin, DefinitionReader, JobBody};
use slotcron_testkit::fixtures;
use slotcron_testkit::harness::{Harness, ts};
use tower::ServiceExt;

/// The tokens of the server under test.
const FULL: &str = "Bearer full-t0ken";
const READ: &str = "Bearer read-t0ken";

/// An answer: its status, `Content-Type` and body bytes.
struct Answer {
    status: StatusCode,
    content_type: String,
    body: axum::body::Bytes,
}

/// Sends `method path` with these headers and body.
async fn send(
    router: &axum::Router,
    method: &Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let mut request = Request::builder().method(method).uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = router.clone().oneshot(request.body(Body::from(body.to_owned())).unwrap()).await.unwrap();
    let status = response.status();
    let content_type =
        response.headers().get(header::CONTENT_TYPE).map_or("", |v| v.to_str().unwrap()).to_owned();
    Answer { status, content_type, body: response.into_body().collect().await.unwrap().to_bytes() }
}

/// The document as a router serves it, without a token.
async fn document(router: &axum::Router) -> Value {
    let answer = send(router, &Method::GET, "/openapi.json", &[], "").await;
    assert_eq!(answer.status, StatusCode::OK);
    serde_json::from_slice(&answer.body).unwrap()
}

/// The example of the path parameter `name` wherever the document has one.
fn example(doc: &Value, name: &str) -> String {
    let mut examples = operations(doc).flat_map(|(_, _, operation)| {
        let parameters = operation["parameters"].as_array().cloned().unwrap_or_default();
        parameters
            .into_iter()
            .filter(|p| p["name"] == name)
            .filter_map(|p| p["example"].as_str().map(str::to_owned))
    });
    examples.next().unwrap_or_else(|| panic!("no example of {name}"))
}

/// The methods a path item may hold.
const METHODS: [Method; 8] = [
    Method::GET,
    Method::PUT,
    Method::POST,
    Method::DELETE,
    Method::OPTIONS,
    Method::HEAD,
    Method::PATCH,
    Method::TRACE,
];

/// Every operation of the document: its method, path and operation object.
fn operations(doc: &Value) -> impl Iterator<Item = (Method, String, Value)> + '_ {
    doc["paths"].as_object().unwrap().iter().flat_map(|(path, item)| {
        METHODS.iter().filter_map(move |method| {
            let operation = item.get(method.as_str().to_lowercase())?;
            Some((method.clone(), path.clone(), operation.clone()))
        })
    })
}

/// A reader of `PUT` bodies that keeps the body's text as the payload of a one-shot: the
/// document's examples are checked here, the daemon's reader by the CLI's tests.
struct AsPayload;

impl DefinitionReader for AsPayload {
    fn read(&self, name: &str, body: JobBody<'_>, _: &[JobDefinition]) -> Result<JobDefinition, String> {
        let mut definition = JobDefinition::new(name, ScheduleSpec::After { delay_ms: 0 }, "payload");
        definition.payload = body.text.into();
        Ok(definition)
    }

    fn owns(&self, definition: &JobDefinition) -> bool {
        definition.handler == "payload"
    }
}

/// A running scheduler with the job the document's examples name, its runs up to the
/// example trigger and that run's output, behind a router with a full and a read token.
/// The example trigger's run goes on until it is cancelled (so that a cancel succeeds).
async fn fixture() -> (Harness, axum::Router, Value) {
    let mut h = Harness::new("2024-05-17T00:00:30Z");
    let doc = document(&Admin::new(h.scheduler.clone()).router()).await;
    let (name, trigger) = (example(&doc, "name"), example(&doc, "trigger"));
    let held = ts(&trigger);
    let handler = move |ctx: JobContext| async move {
        if ctx.trigger() == held {
            ctx.cancellation_token().cancelled().await;
        }
        Ok::<(), std::io::Error>(())
    };
    h.add(Job::builder(&name).every(Duration::from_secs(60)).handler(handler).build().unwrap());
    h.start().await;
    h.advance_to(ts("2024-05-17T00:03:30Z")).await;
    let outputs = Arc::new(MemoryOutputs::default());
    let output = fixtures::run_output(
        &name,
        ts(&trigger),
        "test",
        vec![fixtures::attempt_output(1, ts(&trigger), b"hi\n", b"", AttemptEnd::Exited(0))],
    );
    outputs.save_output(&output).await.unwrap();
    let router = Admin::new(h.scheduler.clone())
        .outputs(outputs)
        .metrics(|| "slotcron_up 1\n".to_owned())
        .state_jobs(Arc::new(MemoryStore::new()), Arc::new(AsPayload))
        .token(FULL.trim_start_matches("Bearer "))
        .read_token(READ.trim_start_matches("Bearer "))
        .router();
    (h, router, doc)
}

/// `path` with each `{parameter}` replaced by its example.
fn with_examples(doc: &Value, path: &str) -> String {
    path.split('/')
        .map(|segment| match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(parameter) => example(doc, parameter),
            None => segment.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The JSON request body an operation is sent: its content's example, else its schema's,
/// else none.
fn request_body(doc: &Value, operation: &Value) -> String {
    let content = &operation["requestBody"]["content"]["application/json"];
    let schema = &content["schema"];
    let schema = match schema["$ref"].as_str() {
        Some(reference) => doc.pointer(reference.trim_start_matches('#')).unwrap(),
        None => schema,
    };
    content.get("example").or_else(|| schema.get("example")).map_or_else(String::new, Value::to_string)
}

/// Calls `method path` as the document describes it, with `authorization` if any.
async fn call(
    router: &axum::Router,
    doc: &Value,
    method: &Method,
    path: &str,
    authorization: Option<&str>,
) -> Answer {
    let operation = &doc["paths"][path][method.as_str().to_lowercase()];
    let mut headers = vec![(header::CONTENT_TYPE.as_str(), "application/json")];
    headers.extend(authorization.map(|a| (header::AUTHORIZATION.as_str(), a)));
    send(router, method, &with_examples(doc, path), &headers, &request_body(doc, operation)).await
}

/// Whether `body` is what the document says `method path` answers with `status`.
fn check_answer(doc: &Value, method: &Method, path: &str, answer: &Answer) {
    let what = format!("{method} {path}: {} {}", answer.status, String::from_utf8_lossy(&answer.body));
    let response = &doc["paths"][path][method.as_str().to_lowercase()]["responses"][answer.status.as_str()];
    assert!(response.is_object(), "an undocumented status: {what}");
    let Some((content_type, content)) = response["content"].as_object().and_then(|c| c.iter().next()) else {
        return assert!(answer.body.is_empty(), "documented without a body: {what}");
    };
    assert_eq!(&answer.content_type, content_type, "{what}");
    if content_type == "application/json" {
        let body: Value = serde_json::from_slice(&answer.body).unwrap();
        if let Err(error) = validate(doc, &content["schema"], &body) {
            panic!("not the documented schema: {error}: {what}");
        }
    }
}

/// Whether `body` is valid against `schema`, a schema of the document (whose
/// `#/components/...` references it may hold).
fn validate(doc: &Value, schema: &Value, body: &Value) -> Result<(), String> {
    let schema = json!({"components": doc["components"], "allOf": [schema]});
    let validator = jsonschema::validator_for(&schema).map_err(|e| format!("no schema: {e}"))?;
    validator.validate(body).map_err(|e| e.to_string())
}

#[tokio::test(start_paused = true)]
async fn every_documented_operation_answers_as_documented() {
    let (mut h, router, doc) = fixture().await;
    assert_eq!(doc["openapi"], "3.1.0");
    let mut called = Vec::new();
    for (method, path, _) in operations(&doc) {
        let answer = call(&router, &doc, &method, &path, Some(FULL)).await;
        assert!(answer.status.is_success(), "the examples are valid: {method} {path}: {}", answer.status);
        check_answer(&doc, &method, &path, &answer);
        called.push(format!("{method} {path}"));
    }
    assert!(called.len() >= 17, "every route, probes to writes: {called:?}");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_body_that_is_not_the_documented_one_fails_validation() {
    let (mut h, _router, doc) = fixture().await;
    let page =
        &doc["paths"]["/api/v1/jobs"]["get"]["responses"]["200"]["content"]["application/json"]["schema"];
    let job = json!({
        "name": "backup", "schedule": "every 1m", "schedule_english": null, "time_zone": null, "policies": {},
        "paused": false, "paused_since": null, "next_triggers": [], "last_run": null, "runs_in_flight": 0,
    });
    assert!(validate(&doc, page, &json!({"jobs": [], "next_cursor": null, "total": 0})).is_ok());
    let missing = validate(&doc, page, &json!({"jobs": [], "next_cursor": null})).unwrap_err();
    assert!(missing.contains("total"), "{missing}");
    let null_left_out = validate(&doc, page, &json!({"jobs": [], "total": 0})).unwrap_err();
    assert!(
        null_left_out.contains("next_cursor"),
        "a field without a value is there as null: {null_left_out}"
    );
    let nested = validate(&doc, page, &json!({"jobs": [job], "next_cursor": null, "total": 1})).unwrap_err();
    assert!(nested.contains("is a required property"), "the referenced policies are checked: {nested}");
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_documented_security_is_what_the_router_enforces() {
    let (mut h, router, doc) = fixture().await;
    for (method, path, operation) in operations(&doc) {
        let scopes: Vec<&str> = operation["security"]
            .as_array()
            .map(|s| {
                s.iter().flat_map(|r| r["bearer"].as_array().unwrap()).map(|s| s.as_str().unwrap()).collect()
            })
            .unwrap_or_default();
        let without = call(&router, &doc, &method, &path, None).await;
        check_answer(&doc, &method, &path, &without);
        let read = call(&router, &doc, &method, &path, Some(READ)).await;
        check_answer(&doc, &method, &path, &read);
        let expected = match scopes.as_slice() {
            [] => (without.status.is_success(), read.status.is_success()),
            ["read"] => (without.status == StatusCode::UNAUTHORIZED, read.status.is_success()),
            ["full"] => (without.status == StatusCode::UNAUTHORIZED, read.status == StatusCode::FORBIDDEN),
            other => panic!("{method} {path}: unknown scopes {other:?}"),
        };
        assert_eq!(expected, (true, true), "{method} {path} {scopes:?}: {} {}", without.status, read.status);
    }
    h.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_router_serves_no_method_the_document_does_not_list() {
    let (mut h, router, doc) = fixture().await;
    // HEAD is GET's; OPTIONS and TRACE no route serves.
    let methods = [Method::GET, Method::POST, Method::PUT, Method::DELETE, Method::PATCH];
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in methods.iter().filter(|m| item.get(m.as_str().to_lowercase()).is_none()) {
            let answer = call(&router, &doc, method, path, Some(FULL)).await;
            assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
        }
    }
    let answer = send(&router, &Method::GET, "/api/v1/undocumented", &[("authorization", FULL)], "").await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND, "a path the document lacks is the fallback's");
    h.stop().await;
}
