//! `GET /api/v1/audit[?job=NAME&limit=N]`: the changes made to the jobs kept in the shared
//! state through `PUT` and `DELETE /api/v1/jobs/{name}` ([`crate::jobs_write`]), newest
//! first. They are kept in the state beside the jobs, so every member of a fleet lists the
//! same; each job keeps its newest [`slotcron::DEFINITION_CHANGES_KEPT`].

use axum::Json;
use axum::extract::{Query, State};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use slotcron::{DefinitionChange, JobDefinition};
use utoipa::{IntoParams, ToSchema};

use crate::error::ErrorBody;
use crate::jobs_write::state_jobs;
use crate::{AdminState, ApiError, query};

/// The changes a list holds when no `limit` is given.
pub const DEFAULT_LIMIT: usize = 100;
/// The most changes a list may hold.
pub const MAX_LIMIT: usize = 1000;

/// One change of a job kept in the state, as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ChangeView {
    job: String,
    /// When it was made (UTC).
    #[schema(value_type = String, format = DateTime)]
    at: Timestamp,
    /// `created`, `changed` or `deleted`.
    change: &'static str,
    /// The credential it was made with: `full` (the full token) or `none` (a server
    /// without a token).
    token: String,
    /// Why, as the `note` parameter said; `null`: none given.
    #[schema(required = true)]
    note: Option<String>,
    /// The definition before, as the state keeps it; `null` for a creation.
    #[schema(value_type = Option<Object>, required = true)]
    old: Option<JobDefinition>,
    /// The definition after; `null` for a deletion.
    #[schema(value_type = Option<Object>, required = true)]
    new: Option<JobDefinition>,
}

impl From<DefinitionChange> for ChangeView {
    fn from(change: DefinitionChange) -> Self {
        let kind = match (&change.old, &change.new) {
            (None, _) => "created",
            (Some(_), Some(_)) => "changed",
            (Some(_), None) => "deleted",
        };
        Self {
            job: change.job,
            at: change.at,
            change: kind,
            token: change.token,
            note: change.note,
            old: change.old,
            new: change.new,
        }
    }
}

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
