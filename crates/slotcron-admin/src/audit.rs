//! `GET /api/v1/audit[?job=NAME&limit=N]`: the changes made to the jobs kept in the shared
//! state through `PUT` and `DELETE /api/v1/jobs/{name}` ([`crate::jobs_write`]), newest
//! first. They are kept in the state beside the jobs, so every member of a fleet lists the
//! same; each job keeps its newest [`slotcron::DEFINITION_CHANGES_KEPT`].

use axum::Json;
use axum::extract::{Query, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::change_view::ChangeView;
use crate::error::ErrorBody;
use crate::jobs_write::state_jobs;
use crate::{AdminState, ApiError, query};

/// The changes a list holds when no `limit` is given.
pub const DEFAULT_LIMIT: usize = 100;
/// The most changes a list may hold.
pub const MAX_LIMIT: usize = 1000;

/// `?job=NAME&limit=N`, as text so that a bad value gets this API's message.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct AuditQuery {
    /// Only this job's changes (also after it was deleted); default: every job's.
    job: Option<String>,
    /// How many changes the list holds at most (default 100).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    limit: Option<String>,
}

/// `GET /api/v1/audit`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Changes {
    /// Newest first.
    changes: Vec<ChangeView>,
}

/// `{"changes": [{"job", "at", "change", "token", "note", "old", "new"}…]}`, newest first.
#[utoipa::path(
    get,
    path = "/audit",
    operation_id = "list_job_changes",
    tag = "state jobs",
    params(AuditQuery),
    responses(
        (status = 200, description = "The changes made to the state's jobs, newest first", body = Changes),
        (status = 400, description = "A parameter that is not right, named", body = ErrorBody),
    )
)]
pub(crate) async fn list(
    State(state): State<AdminState>,
    Query(asked): Query<AuditQuery>,
) -> Result<Json<Changes>, ApiError> {
    let jobs = state_jobs(&state)?;
    let limit = query::limit(asked.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT)?;
    let changes = jobs.changes(asked.job.as_deref(), limit).await?;
    Ok(Json(Changes { changes: changes.into_iter().map(ChangeView::from).collect() }))
}
