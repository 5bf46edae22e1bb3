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
use axum::response::{IntoResponse, Response};
use jiff::Timestamp;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use slotcron::ControlError;
use utoipa::ToSchema;
use utoipa_axum::router::UtoipaMethodRouter;

use crate::error::ErrorBody;
use crate::jobs::JobPath;
use crate::{AdminState, ApiError, access, openapi};

/// The largest request body accepted: 1 MiB.
pub const MAX_BODY: usize = 1024 * 1024;

/// The header carrying a manual run's idempotency key.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// `…/resume`'s body.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResumeBody {
    /// Run the paused triggers under the misfire policy (default `false`).
    #[serde(default)]
    catch_up: bool,
}

/// `…/pause` takes no fields.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoFields {}

/// `…/trigger`'s body.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TriggerBody {
    /// Only say what would run (default `false`).
    #[serde(default)]
    dry_run: bool,
}

/// `…/backfill`'s body: the range of triggers to run, both ends included.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"from": "2024-05-17T00:00:00Z", "to": "2024-05-17T00:02:00Z"}))]
pub(crate) struct BackfillBody {
    #[schema(value_type = String, format = DateTime)]
    from: Timestamp,
    /// Not after now.
    #[schema(value_type = String, format = DateTime)]
    to: Timestamp,
    /// Only say what would run (default `false`).
    #[serde(default)]
    dry_run: bool,
}

/// `…/pause`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Paused {
    job: String,
    /// Always `true`.
    paused: bool,
    /// When the job was paused: now, or the first pause's instant if it was paused.
    #[schema(value_type = String, format = DateTime)]
    paused_since: Timestamp,
}

/// `…/resume`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Resumed {
    job: String,
    /// Always `false`.
    paused: bool,
    /// When the job had been paused; `null` if it was not.
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    paused_since: Option<Timestamp>,
    /// The paused triggers queued to run (with `catch_up`), oldest first.
    #[schema(value_type = Vec<String>, format = DateTime)]
    caught_up: Vec<Timestamp>,
}

/// `…/trigger`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Triggered {
    job: String,
    /// The manual run's trigger; the first request's for a repeated key.
    #[schema(value_type = String, format = DateTime)]
    trigger: Timestamp,
    /// Whether the `Idempotency-Key` was given before: nothing more was queued.
    repeated: bool,
}

/// What `…/trigger` with `dry_run` says would run.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TriggerPreview {
    job: String,
    /// The trigger the run would get.
    #[schema(value_type = String, format = DateTime)]
    trigger: Timestamp,
    /// Whether the job is paused (a manual run still runs).
    paused: bool,
    /// Since when, if it is.
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    paused_since: Option<Timestamp>,
    /// Always `true`.
    dry_run: bool,
}

/// `…/trigger`'s answer: the run queued, or (with `dry_run`) what would run.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub(crate) enum TriggerAnswer {
    /// A run queued, or the first run of a repeated key.
    Triggered(Triggered),
    /// What would run.
    Preview(TriggerPreview),
}

/// What `…/backfill` with `dry_run` says it would queue.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct BackfillPreview {
    job: String,
    /// The triggers it would queue, oldest first.
    #[schema(value_type = Vec<String>, format = DateTime)]
    triggers: Vec<Timestamp>,
    /// Always `true`.
    dry_run: bool,
}

/// `…/backfill`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Backfilled {
    job: String,
    /// The triggers queued, oldest first.
    #[schema(value_type = Vec<String>, format = DateTime)]
    triggers: Vec<Timestamp>,
}

/// A write endpoint's body: a JSON object.
pub(crate) trait Fields: DeserializeOwned {
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

/// The request's `Content-Type` (empty if none) and its essence (without parameters).
pub(crate) fn content_type(headers: &HeaderMap) -> (&str, &str) {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    (content_type, content_type.split(';').next().unwrap_or("").trim())
}

/// 415: `needs`, and the `Content-Type` given.
pub(crate) fn unsupported_media_type(needs: &str, content_type: &str) -> ApiError {
    let given = if content_type.is_empty() { "none".to_owned() } else { format!("{content_type:?}") };
    ApiError::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, format!("{needs} (given: {given})"))
}

/// The body's bytes: 413 beyond [`MAX_BODY`].
pub(crate) fn read(bytes: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    bytes.map_err(|e| match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, format!("the body is larger than {MAX_BODY} bytes"))
        }
        status => ApiError::new(status, format!("the body cannot be read: {e}")),
    })
}

/// The body as `T`: checks the content type and the size, and reads an empty body as
/// `T::default()` when `empty` gives one.
pub(crate) fn body<T: Fields>(
    headers: &HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
    empty: Option<T>,
) -> Result<T, ApiError> {
    let (content_type, essence) = content_type(headers);
    if !essence.eq_ignore_ascii_case("application/json") {
        return Err(unsupported_media_type("a POST needs Content-Type: application/json", content_type));
    }
    let bytes = read(bytes)?;
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
pub(crate) fn refused(error: ControlError) -> ApiError {
    let status = match &error {
        ControlError::NoSuchJob { .. } | ControlError::NoSuchRun { .. } => StatusCode::NOT_FOUND,
        ControlError::RunEnded { .. } => StatusCode::CONFLICT,
        ControlError::NotRunning | ControlError::Backend(_) => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::BAD_REQUEST,
    };
    ApiError::new(status, error.to_string())
}

/// `POST …/pause`: `{"job", "paused": true, "paused_since"}`.
#[utoipa::path(
    post,
    path = "/jobs/{name}/pause",
    operation_id = "pause_job",
    tag = "steering",
    params(JobPath),
    request_body(content = Option<NoFields>, description = "No body, or `{}`"),
    responses(
        (status = 200, description = "The job is paused across the fleet", body = Paused),
        (status = 404, description = "No job of that name", body = ErrorBody),
        (status = 503, description = "The coordinator or store of the pauses failed", body = ErrorBody),
    )
)]
pub(crate) async fn pause(
    State(state): State<AdminState>,
    Path(JobPath { name }): Path<JobPath>,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Json<Paused>, ApiError> {
    body(&headers, bytes, Some(NoFields::default()))?;
    let paused_since = state.scheduler.pause(&name).await.map_err(refused)?;
    Ok(Json(Paused { job: name, paused: true, paused_since }))
}

/// `POST …/resume` (`{"catch_up": bool}`, default false): `{"job", "paused": false,
/// "paused_since", "caught_up"}`.
#[utoipa::path(
    post,
    path = "/jobs/{name}/resume",
    operation_id = "resume_job",
    tag = "steering",
    params(JobPath),
    request_body(content = Option<ResumeBody>, description = "No body, or `{\"catch_up\": bool}`"),
    responses(
        (status = 200, description = "The job is resumed across the fleet", body = Resumed),
        (status = 404, description = "No job of that name", body = ErrorBody),
        (status = 503, description = "The coordinator or store of the pauses failed", body = ErrorBody),
    )
)]
pub(crate) async fn resume(
    State(state): State<AdminState>,
    Path(JobPath { name }): Path<JobPath>,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Json<Resumed>, ApiError> {
    let asked: ResumeBody = body(&headers, bytes, Some(ResumeBody::default()))?;
    let resumed = state.scheduler.resume(&name, asked.catch_up).await.map_err(refused)?;
    Ok(Json(Resumed {
        job: name,
        paused: false,
        paused_since: resumed.paused_since,
        caught_up: resumed.caught_up,
    }))
}

/// `POST …/trigger` (header `Idempotency-Key` optional): 202 `{"job", "trigger",
/// "repeated": false}`, or 200 with the first run's trigger and `"repeated": true`. With
/// `{"dry_run": true}`: 200 `{"job", "trigger", "paused", "paused_since", "dry_run":
/// true}`, what would run now, checked as the run would be, and nothing runs (a key is
/// checked, not looked up).
#[utoipa::path(
    post,
    path = "/jobs/{name}/trigger",
    operation_id = "trigger_job",
    tag = "steering",
    params(
        JobPath,
        ("Idempotency-Key" = Option<String>, Header,
            description = "1 to 128 ASCII letters, digits, `.`, `_`, `-`: a key given within 24 h runs nothing more"),
    ),
    request_body(content = Option<TriggerBody>, description = "No body, `{}`, or `{\"dry_run\": true}`"),
    responses(
        (status = 202, description = "One manual run is queued", body = Triggered),
        (status = 200, description = "The key was given before: the first run's trigger; or, with `dry_run`, what would run",
            body = TriggerAnswer),
        (status = 400, description = "The Idempotency-Key is not one", body = ErrorBody),
        (status = 404, description = "No job of that name", body = ErrorBody),
        (status = 503, description = "The scheduler is not running, or a backend failed", body = ErrorBody),
    )
)]
pub(crate) async fn trigger(
    State(state): State<AdminState>,
    Path(JobPath { name }): Path<JobPath>,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<TriggerAnswer>), ApiError> {
    let asked: TriggerBody = body(&headers, bytes, Some(TriggerBody::default()))?;
    let key = match headers.get(IDEMPOTENCY_KEY) {
        Some(value) => Some(
            value.to_str().map_err(|_| ApiError::bad_request("the Idempotency-Key header is not ASCII"))?,
        ),
        None => None,
    };
    if asked.dry_run {
        let would = state.scheduler.trigger_dry_run(&name, key).await.map_err(refused)?;
        let preview = TriggerPreview {
            job: name,
            trigger: would.trigger,
            paused: would.paused_since.is_some(),
            paused_since: would.paused_since,
            dry_run: true,
        };
        return Ok((StatusCode::OK, Json(TriggerAnswer::Preview(preview))));
    }
    let triggered = state.scheduler.trigger_now(&name, key).await.map_err(refused)?;
    let status = if triggered.repeated { StatusCode::OK } else { StatusCode::ACCEPTED };
    let answer = Triggered { job: name, trigger: triggered.trigger, repeated: triggered.repeated };
    Ok((status, Json(TriggerAnswer::Triggered(answer))))
}

/// `POST …/backfill` (`{"from": T1, "to": T2}`, RFC 3339, both included): 202
/// `{"job", "triggers"}`, the triggers queued, oldest first (at most 1,000). With
/// `"dry_run": true`: 200 `{"job", "triggers", "dry_run": true}`, the triggers it would
/// queue, checked as the backfill would be (the same errors), and nothing is queued.
#[utoipa::path(
    post,
    path = "/jobs/{name}/backfill",
    operation_id = "backfill_job",
    tag = "steering",
    params(JobPath),
    request_body(content = BackfillBody, description = "The range of triggers to run"),
    responses(
        (status = 202, description = "The range's triggers are queued", body = Backfilled),
        (status = 200, description = "With `dry_run`: the triggers it would queue; nothing is", body = BackfillPreview),
        (status = 400, description = "The range is inverted, reaches past now or holds over 1,000 triggers",
            body = ErrorBody),
        (status = 404, description = "No job of that name", body = ErrorBody),
        (status = 503, description = "The scheduler is not running, or a backend failed", body = ErrorBody),
    )
)]
pub(crate) async fn backfill(
    State(state): State<AdminState>,
    Path(JobPath { name }): Path<JobPath>,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let range: BackfillBody = body(&headers, bytes, None)?;
    if range.dry_run {
        let triggers = state.scheduler.backfill_dry_run(&name, range.from, range.to).map_err(refused)?;
        return Ok(
            (StatusCode::OK, Json(BackfillPreview { job: name, triggers, dry_run: true })).into_response()
        );
    }
    let triggers = state.scheduler.backfill(&name, range.from, range.to).await.map_err(refused)?;
    Ok((StatusCode::ACCEPTED, Json(Backfilled { job: name, triggers })).into_response())
}

/// A write route of this module: the full token ([`access::full_token`]), and documented
/// with the answers of a body that is not the endpoint's ([`body`]).
pub(crate) fn write(routes: UtoipaMethodRouter<AdminState>) -> UtoipaMethodRouter<AdminState> {
    let (schemas, mut paths, method_router) = access::full_token(routes);
    openapi::each_operation(&mut paths, |operation| {
        openapi::answer(operation, StatusCode::BAD_REQUEST, "The body is not the JSON the endpoint takes");
        openapi::answer(
            operation,
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("The body is larger than {MAX_BODY} bytes"),
        );
        openapi::answer(
            operation,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "The Content-Type is not application/json",
        );
    });
    (schemas, paths, method_router)
}
