//! `/healthz`, `/readyz` and `/metrics`.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use slotcron::LedgerQuery;

use crate::{AdminState, ApiError};

/// How long `/readyz` waits for the state to answer.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// 200 while the engine runs, else 503.
pub(crate) async fn healthz(State(state): State<AdminState>) -> Response {
    if state.scheduler.is_running() {
        Json(serde_json::json!({ "status": "running" })).into_response()
    } else {
        ApiError::unavailable("the scheduler is not running").into_response()
    }
}

/// 200 while the coordinator answered its last claim and the state answers a read now,
/// else 503 naming which does not.
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
        Json(serde_json::json!({ "ready": true })).into_response()
    } else {
        ApiError::unavailable(problems.join("; ")).into_response()
    }
}

/// The Prometheus text exposition, format 0.0.4, after a flush of the scheduler's
/// metrics: the counters hold every record written so far.
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
