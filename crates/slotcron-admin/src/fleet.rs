//! `/api/v1/fleet`: the fleet's live members as the coordinator's membership shows them.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use jiff::Timestamp;
use serde::Serialize;
use slotcron::{FleetMember, RUNS_IN_FLIGHT};
use utoipa::ToSchema;

use crate::error::ErrorBody;
use crate::{AdminState, ApiError};

/// `{"instance": this daemon's, "members": [...]}`; `members` is `null` without a
/// coordinator that keeps a membership (a daemon alone).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct FleetView {
    /// This daemon's instance id.
    instance: String,
    /// The live members, by instance id; `null` for a daemon alone.
    #[schema(required = true)]
    members: Option<Vec<MemberView>>,
}

/// One member.
#[derive(Debug, Serialize, ToSchema)]
struct MemberView {
    instance: String,
    /// Its host, version, start time (RFC 3339 UTC) and admin address, as it published
    /// them; `null` when it did not.
    #[schema(required = true)]
    host: Option<String>,
    #[schema(required = true)]
    version: Option<String>,
    #[schema(required = true)]
    started: Option<String>,
    #[schema(required = true)]
    admin: Option<String>,
    /// Its last heartbeat, RFC 3339 UTC, on the coordinator's clock.
    #[schema(value_type = String, format = DateTime)]
    last_heartbeat: Timestamp,
    /// Its runs in flight at its last heartbeat; `null` when it does not count them.
    #[schema(required = true)]
    runs_in_flight: Option<u64>,
    /// How many of this daemon's jobs it owns (claims first).
    owned_jobs: usize,
    /// The settings every member must share (e.g. `crontab_zone`).
    settings: BTreeMap<String, String>,
    /// The labels it carries (`--label`), each `KEY` or `KEY=VALUE`: the jobs placed on
    /// labels (`on`) run only on the members that carry them.
    labels: Vec<String>,
}

impl From<FleetMember> for MemberView {
    fn from(member: FleetMember) -> Self {
        let FleetMember { instance, last_heartbeat, details, owned_jobs } = member;
        let about = |name: &str| details.about.get(name).cloned();
        Self {
            host: about("host"),
            version: about("version"),
            started: about("started"),
            admin: about("admin"),
            runs_in_flight: about(RUNS_IN_FLIGHT).and_then(|n| n.parse().ok()),
            instance,
            last_heartbeat,
            owned_jobs,
            settings: details.settings,
            labels: details.labels,
        }
    }
}

/// The fleet, or 503 when the coordinator cannot be read.
#[utoipa::path(
    get,
    path = "/fleet",
    operation_id = "fleet",
    tag = "fleet",
    responses(
        (status = 200, description = "The fleet's live members", body = FleetView),
        (status = 503, description = "The coordinator's membership cannot be read", body = ErrorBody),
    )
)]
pub(crate) async fn fleet(State(state): State<AdminState>) -> Result<Json<FleetView>, ApiError> {
    let members = state
        .scheduler
        .fleet()
        .await
        .map_err(|e| ApiError::unavailable(format!("the fleet's membership cannot be read: {e}")))?;
    let instance = state.scheduler.instance().to_owned();
    Ok(Json(FleetView { instance, members: members.map(|m| m.into_iter().map(MemberView::from).collect()) }))
}
