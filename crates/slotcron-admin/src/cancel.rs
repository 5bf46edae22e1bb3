//! `POST /api/v1/jobs/{name}/runs/{trigger}/cancel[?note=TEXT]`: stops a run on whichever
//! member holds it ([`Scheduler::cancel`](slotcron::Scheduler::cancel)), recorded
//! `cancelled` with who asked.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::{Extension, Json};
use jiff::Timestamp;
use serde::Serialize;
use slotcron::{ControlError, Outcome};
use utoipa::ToSchema;

use crate::access::TokenKind;
use crate::error::ErrorBody;
use crate::fleet_runs::{self, MemberPage, PageRequest};
use crate::jobs_write::NoteParam;
use crate::runs::{self, RunPath};
use crate::steer::{self, NoFields};
use crate::{AdminState, ApiError};

/// `…/cancel`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Cancelled {
    job: String,
    #[schema(value_type = String, format = DateTime)]
    trigger: Timestamp,
    /// The instance id of the member holding the run.
    holder: String,
    /// `false`: this member holds the run and stopped it at once; `true`: the request was
    /// relayed to the holder through the coordinator, which stops it within about a second.
    relayed: bool,
}

/// `POST …/runs/{trigger}/cancel[?note=TEXT]`: 202 `{"job", "trigger", "holder",
/// "relayed"}`. The run's handler is asked to stop (a command's process group gets
/// SIGTERM, then SIGKILL after the kill grace), no retry starts, and its record ends
/// `cancelled`, its error naming this member, the token kind and the note. This member
/// finds a run another holds in its ledger (a ledger the fleet shares shows every run),
/// else in the records of the members that keep their own, asked as for the fleet's
/// history ([`crate::fleet_runs`]).
#[utoipa::path(
    post,
    path = "/jobs/{name}/runs/{trigger}/cancel",
    operation_id = "cancel_run",
    tag = "steering",
    params(RunPath, NoteParam),
    request_body(content = Option<NoFields>, description = "No body, or `{}`"),
    responses(
        (status = 202, description = "The run is being stopped, here or by its holder", body = Cancelled),
        (status = 400, description = "The trigger is not an RFC 3339 instant, or the note is too long",
            body = ErrorBody),
        (status = 404, description = "No job of that name, or no run of it at that trigger going on",
            body = ErrorBody),
        (status = 409, description = "The run has ended already", body = ErrorBody),
        (status = 503, description = "The run history or the coordinator failed", body = ErrorBody),
    )
)]
pub(crate) async fn cancel(
    State(state): State<AdminState>,
    Path(RunPath { name, trigger }): Path<RunPath>,
    Query(note): Query<NoteParam>,
    Extension(token): Extension<TokenKind>,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Cancelled>), ApiError> {
    steer::body(&headers, bytes, Some(NoFields::default()))?;
    let trigger = runs::instant("trigger", &trigger)?;
    let by = note.by(token)?;
    let scheduler = &state.scheduler;
    let asker =
        format!("asked through the admin API of {} with the {} token", scheduler.instance(), by.token.0);
    let reason = match by.note {
        Some(note) => format!("{asker}: {note}"),
        None => asker,
    };
    let asked = match scheduler.cancel(&name, trigger, &reason).await {
        Err(ControlError::NoSuchRun { .. }) => {
            let authorization = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
            held_elsewhere(&state, (&name, trigger), &reason, authorization.map(str::to_owned)).await?
        }
        asked => asked.map_err(steer::refused)?,
    };
    let answer = Cancelled { job: name, trigger, holder: asked.holder, relayed: asked.relayed };
    Ok((StatusCode::ACCEPTED, Json(answer)))
}

/// The run of `job` at `trigger` as the members that keep their own ledger record it: a
/// `running` record names its holder, asked to stop it through the coordinator; an ended
/// one is 409; none is 404, naming the members that did not answer.
async fn held_elsewhere(
    state: &AdminState,
    (job, trigger): (&str, Timestamp),
    reason: &str,
    authorization: Option<String>,
) -> Result<slotcron::CancelAsked, ApiError> {
    let before = trigger.checked_add(jiff::SignedDuration::from_micros(1)).ok();
    // The members' newest whole trigger before `before`: every record at `trigger`.
    let request = PageRequest { job, limit: 1, before, authorization };
    let none = MemberPage { runs: Vec::new(), next_before: None };
    let fleet = fleet_runs::fleet_page(state, &request, none).await;
    let records: Vec<_> = fleet.page.runs.iter().filter(|run| run.trigger == trigger).collect();
    let owned = || job.to_owned();
    if let Some(held) = records.iter().find(|run| run.outcome == "running") {
        let asked = state.scheduler.cancel_held_by(job, trigger, reason, &held.instance).await;
        return asked.map_err(steer::refused);
    }
    let refusal = match records.iter().rev().find(|run| Outcome::from_name(&run.outcome).ran()) {
        Some(ended) => ControlError::RunEnded { job: owned(), trigger, outcome: ended.outcome.clone() },
        None => ControlError::NoSuchRun { job: owned(), trigger },
    };
    let mut error = steer::refused(refusal);
    let unanswered: Vec<String> =
        fleet.unanswered.iter().map(|u| format!("{} ({})", u.instance, u.reason)).collect();
    if !unanswered.is_empty() {
        error.message.push_str(&format!("; members that did not answer: {}", unanswered.join(", ")));
    }
    Err(error)
}
