//! `/healthz`, `/readyz` and `/metrics`.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use slotcron::LedgerQuery;
use utoipa::ToSchema;

use crate::error::ErrorBody;
use crate::{AdminState, ApiError};

/// How long `/readyz` waits for the state to answer.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// `/healthz`'s answer while the engine runs.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Healthy {
    /// `running`.
    #[schema(value_type = String, pattern = "^running$")]
    status: &'static str,
}

/// `/readyz`'s answer while the backends answer.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Ready {
    /// `true`.
    ready: bool,
}

/// 200 while the engine runs, else 503.
#[utoipa::path(
    get,
    path = "/healthz",
    operation_id = "healthz",
    tag = "probes",
    responses(
        (status = 200, description = "The scheduler runs", body = Healthy),
        (status = 503, description = "The scheduler is not running", body = ErrorBody),
    )
)]
pub(crate) async fn healthz(State(state): State<AdminState>) -> Response {
    if state.scheduler.is_running() {
        Json(Healthy { status: "running" }).into_response()
    } else {
        ApiError::unavailable("the scheduler is not running").into_response()
    }
}

/// 200 while the coordinator answered its last claim and the state answers a read now,
/// else 503 naming which does not.
#[utoipa::path(
    get,
    path = "/readyz",
    operation_id = "readyz",
    tag = "probes",
    responses(
        (status = 200, description = "The coordinator and the state answer", body = Ready),
        (status = 503, description = "A backend does not answer, named", body = ErrorBody),
    )
)]
pub(crate) async fn readyz(State(state): State<AdminState>) -> Response {
    let reachable = state.scheduler.backends_reachable();
    let probe = LedgerQuery { limit: 1, ..LedgerQuery::default() };
    let read = match tokio::time::timeout(READY_TIMEOUT, state.scheduler.history(&probe)).await {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(e.to_string()),
        Err(_) => Some(format!("the state did not answer within {READY_TIMEOUT:?}")),
    };
    let mut problems = Vec::new();
    if !reachable.coordinator {
        problems.push(match &reachable.coordinator_error {
            Some(error) => format!("the coordinator failed the last claim: {error}"),
            None => "the coordinator failed the last claim".to_owned(),
        });
    }
    if let Some(read) = read {
        problems.push(read);
    } else if !reachable.state {
        problems.push("the last write to the state failed".to_owned());
    }
    if problems.is_empty() {
        Json(Ready { ready: true }).into_response()
    } else {
        ApiError::unavailable(problems.join("; ")).into_response()
    }
}

/// The Prometheus text exposition, format 0.0.4, after a flush of the scheduler's
/// metrics: the counters hold every record written so far.
#[utoipa::path(
    get,
    path = "/metrics",
    operation_id = "metrics",
    tag = "server",
    responses(
        (status = 200, description = "The Prometheus text exposition, format 0.0.4", body = String,
            content_type = "text/plain; version=0.0.4; charset=utf-8"),
        (status = 404, description = "This server exports no metrics", body = ErrorBody),
    )
)]
pub(crate) async fn metrics(State(state): State<AdminState>) -> Response {
    match &state.metrics {
        Some(render) => {
            state.scheduler.refresh_metrics().await;
            (StatusCode::OK, [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], render())
                .into_response()
        }
        None => ApiError::not_found("this server exports no metrics").into_response(),
    }
}
