//! The write endpoints: `POST /api/v1/jobs/{name}/pause`, `…/resume`, `…/trigger` and
//! `…/backfill`, over [`Scheduler`](slotcron::Scheduler)'s steering operations.
//!
//! Every one needs `Content-Type: application/json` (so that a page of another site
//! cannot send it as a simple cross-origin request, which a browser sends without asking)
//! and a body of at most [`MAX_BODY`] bytes: a JSON object, or nothing for an endpoint
//! whose fields are all optional. Anything else is a 4xx with a message, and nothing is
//! changed.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use jiff::Timestamp;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use slotcron::ControlError;

use crate::{AdminState, ApiError};

/// The largest request body accepted: 1 MiB.
pub const MAX_BODY: usize = 1024 * 1024;

/// The header carrying a manual run's idempotency key.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// `…/resume`'s body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResumeBody {
    /// Run the paused triggers under the misfire policy (default `false`).
    #[serde(default)]
    catch_up: bool,
}

/// `…/pause` takes no fields.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoFields {}

/// `…/trigger`'s body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TriggerBody {
    /// Only say what would run (default `false`).
    #[serde(default)]
    dry_run: bool,
}

/// `…/backfill`'s body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BackfillBody {
    from: Timestamp,
    to: Timestamp,
    /// Only say what would run (default `false`).
    #[serde(default)]
    dry_run: bool,
}

/// A write endpoint's body: a JSON object.
trait Fields: DeserializeOwned {
    /// What the endpoint takes, in the API's words, for the message of a body that is
    /// not it.
    const EXPECTED: &str;
}

impl Fields for ResumeBody {
    const EXPECTED: &str = r#"no body, or an object {"catch_up": true or false}"#;
}

impl Fields for NoFields {
    const EXPECTED: &str = "no body, or an empty object {}";
}

impl Fields for TriggerBody {
    const EXPECTED: &str = r#"no body, or an object {"dry_run": true or false}"#;
}

impl Fields for BackfillBody {
    const EXPECTED: &str =
        r#"an object {"from": T1, "to": T2} of RFC 3339 timestamps, and "dry_run": true or false if wanted"#;
}

/// What a JSON value is, for a message.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The body as `T`: checks the content type and the size, and reads an empty body as
/// `T::default()` when `empty` gives one.
fn body<T: Fields>(
    headers: &HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
    empty: Option<T>,
) -> Result<T, ApiError> {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let essence = content_type.split(';').next().unwrap_or("").trim();
    if !essence.eq_ignore_ascii_case("application/json") {
        let given = if content_type.is_empty() { "none".to_owned() } else { format!("{content_type:?}") };
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("a POST needs Content-Type: application/json (given: {given})"),
        ));
    }
    let bytes = bytes.map_err(|e| match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, format!("the body is larger than {MAX_BODY} bytes"))
        }
        status => ApiError::new(status, format!("the body cannot be read: {e}")),
    })?;
    let not_expected = |given: &str| {
        ApiError::bad_request(format!("the body is not the JSON expected: {}, given {given}", T::EXPECTED))
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return empty.ok_or_else(|| not_expected("an empty body"));
    }
    let invalid =
        |e: serde_json::Error| ApiError::bad_request(format!("the body is not the JSON expected: {e}"));
    let value: Value = serde_json::from_slice(&bytes).map_err(invalid)?;
    if !value.is_object() {
        return Err(not_expected(kind(&value)));
    }
    // A field's value that is not what it should be: its name and the endpoint's fields
    // in the message, which the parser's own words (`expected a boolean`) lack.
    serde_path_to_error::deserialize(value).map_err(|e| match e.path().to_string() {
        field if field == "." => invalid(e.into_inner()),
        field => ApiError::bad_request(format!(
            "the body is not the JSON expected: field {field:?}: {}; the endpoint takes {}",
            e.inner(),
            T::EXPECTED
        )),
    })
}

/// The answer to a refused operation.
fn refused(error: ControlError) -> ApiError {
    let status = match &error {
        ControlError::NoSuchJob { .. } => StatusCode::NOT_FOUND,
        ControlError::NotRunning | ControlError::Backend(_) => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::BAD_REQUEST,
    };
    ApiError::new(status, error.to_string())
}

/// `POST …/pause`: `{"job", "paused": true, "paused_since"}`.
pub(crate) async fn pause(
    State(state): State<AdminState>,
    Path(name): Path<String>,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    body(&headers, bytes, Some(NoFields::default()))?;
    let since = state.scheduler.pause(&name).await.map_err(refused)?;
    Ok(Json(json!({ "job": name, "paused": true, "paused_since": since })))
}

/// `POST …/resume` (`{"catch_up": bool}`, default false): `{"job", "paused": false,
/// "paused_since", "caught_up"}`.
pub(crate) async fn resume(
    State(state): State<AdminState>,
    Path(name): Path<String>,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let asked: ResumeBody = body(&headers, bytes, Some(ResumeBody::default()))?;
    let resumed = state.scheduler.resume(&name, asked.catch_up).await.map_err(refused)?;
    Ok(Json(json!({
        "job": name,
        "paused": false,
        "paused_since": resumed.paused_since,
        "caught_up": resumed.caught_up,
    })))
}

/// `POST …/trigger` (header `Idempotency-Key` optional): 202 `{"job", "trigger",
/// "repeated": false}`, or 200 with the first run's trigger and `"repeated": true`. With
/// `{"dry_run": true}`: 200 `{"job", "trigger", "paused", "paused_since", "dry_run":
/// true}`, what would run now, checked as the run would be, and nothing runs (a key is
/// checked, not looked up).
pub(crate) async fn trigger(
    State(state): State<AdminState>,
    Path(name): Path<String>,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let asked: TriggerBody = body(&headers, bytes, Some(TriggerBody::default()))?;
    let key = match headers.get(IDEMPOTENCY_KEY) {
        Some(value) => Some(
            value.to_str().map_err(|_| ApiError::bad_request("the Idempotency-Key header is not ASCII"))?,
        ),
        None => None,
    };
    if asked.dry_run {
        let would = state.scheduler.trigger_dry_run(&name, key).await.map_err(refused)?;
        let answer = json!({
            "job": name,
            "trigger": would.trigger,
            "paused": would.paused_since.is_some(),
            "paused_since": would.paused_since,
            "dry_run": true,
        });
        return Ok((StatusCode::OK, Json(answer)));
    }
    let triggered = state.scheduler.trigger_now(&name, key).await.map_err(refused)?;
    let status = if triggered.repeated { StatusCode::OK } else { StatusCode::ACCEPTED };
    Ok((status, Json(json!({ "job": name, "trigger": triggered.trigger, "repeated": triggered.repeated }))))
}

/// `POST …/backfill` (`{"from": T1, "to": T2}`, RFC 3339, both included): 202
/// `{"job", "triggers"}`, the triggers queued, oldest first (at most 1,000). With
/// `"dry_run": true`: 200 `{"job", "triggers", "dry_run": true}`, the triggers it would
/// queue, checked as the backfill would be (the same errors), and nothing is queued.
pub(crate) async fn backfill(
    State(state): State<AdminState>,
    Path(name): Path<String>,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let range: BackfillBody = body(&headers, bytes, None)?;
    if range.dry_run {
        let triggers = state.scheduler.backfill_dry_run(&name, range.from, range.to).map_err(refused)?;
        return Ok((StatusCode::OK, Json(json!({ "job": name, "triggers": triggers, "dry_run": true }))));
    }
    let triggers = state.scheduler.backfill(&name, range.from, range.to).await.map_err(refused)?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "job": name, "triggers": triggers }))))
}
