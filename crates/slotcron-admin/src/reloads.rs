//! `/api/v1/status`: how the last reload of the jobs went, as whoever reloads them (the
//! daemon, at SIGHUP) reports it to a [`ReloadStatus`].

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use jiff::Timestamp;
use serde::Serialize;
use utoipa::ToSchema;

use crate::AdminState;

/// One load or reload of the jobs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Reload {
    /// When it ended (UTC).
    #[schema(value_type = String, format = DateTime)]
    pub at: Timestamp,
    /// What asked for it: `start`, `SIGHUP`, `file change`...
    pub cause: String,
    /// Whether the jobs loaded and every one was applied.
    pub successful: bool,
    /// Why it failed (the jobs stay as they were), for a person; `None` when it did not.
    #[schema(required = true)]
    pub error: Option<String>,
}

/// Where the last [`Reload`] is kept: given to [`Admin::reloads`](crate::Admin::reloads)
/// and to whatever reloads the jobs. Clones share it.
#[derive(Debug, Clone, Default)]
pub struct ReloadStatus(Arc<Mutex<Option<Reload>>>);

impl ReloadStatus {
    /// Keeps `reload` as the last one.
    pub fn record(&self, reload: Reload) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(reload);
    }

    /// The last reload recorded, if any.
    pub fn last(&self) -> Option<Reload> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// `/api/v1/status`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Status {
    /// The last load or reload of the jobs; `null` before the first, or where none are
    /// recorded.
    #[schema(required = true)]
    last_reload: Option<Reload>,
}

/// `{"last_reload": {"at", "cause", "successful", "error"}|null}`.
#[utoipa::path(
    get,
    path = "/status",
    operation_id = "status",
    tag = "jobs",
    responses((status = 200, description = "How the last reload of the jobs went", body = Status))
)]
pub(crate) async fn status(State(state): State<AdminState>) -> Json<Status> {
    Json(Status { last_reload: state.reloads.last() })
}
