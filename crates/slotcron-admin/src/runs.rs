//! `/api/v1/jobs/{name}/runs` and a run's output.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, header};
use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Serialize};
use slotcron::{LedgerQuery, RunRecord};
use utoipa::{IntoParams, ToSchema};

use crate::client::encode;
use crate::error::ErrorBody;
use crate::fleet_runs::{self, FleetPage, MemberPage, PageRequest};
use crate::jobs::{JobPath, unknown_job};
use crate::output_view::RunOutputs;
use crate::peers::{Scope, Unanswered, ask_others};
use crate::run_view::RunView;
use crate::{AdminState, ApiError, query};

/// The runs a page holds unless `limit` says otherwise.
pub const DEFAULT_LIMIT: usize = 20;
/// The most runs a page may hold.
pub const MAX_LIMIT: usize = 1000;

/// `?limit=N&before=T`, as text so that a bad value gets this API's message.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct Page {
    /// How many records the page holds (default 20), more to end at a whole trigger.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000)]
    limit: Option<String>,
    /// Only triggers before this instant (RFC 3339 with an offset): the previous page's
    /// `next_before`.
    #[param(value_type = Option<String>, format = DateTime)]
    before: Option<String>,
    /// `fleet` (the default): this member's records and those of the other live members
    /// that keep a ledger of their own, asked through their admin addresses; `member`:
    /// this member's only.
    #[param(value_type = Option<String>, example = "fleet")]
    scope: Option<String>,
}

/// The query parameter `what`'s `text` as an instant; the message names the parameter,
/// the value and the form expected (the parser's own words say less).
pub(crate) fn instant(what: &str, text: &str) -> Result<Timestamp, ApiError> {
    text.parse().map_err(|_| {
        ApiError::bad_request(format!(
            "{what} {text:?} is not an RFC 3339 timestamp with an offset, e.g. 2026-12-04T16:00:00Z"
        ))
    })
}

impl Page {
    fn query(&self, job: &str) -> Result<LedgerQuery, ApiError> {
        let limit = query::limit(self.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT)?;
        let until = self.before.as_deref().map(|text| instant("before", text)).transpose()?;
        Ok(LedgerQuery { job: Some(job.to_owned()), until, limit, ..LedgerQuery::default() })
    }
}

/// `{"runs": [...], "next_before": T|null, "merged": [...], "unanswered": [...],
/// "membership_error": null}`: the job's records, newest trigger first, triggers strictly
/// before `before`; `next_before` is the `before` of the next page (`null` on the last
/// one). A page ends at a whole trigger: past `limit` records, it holds the other records
/// of its last trigger too, and `next_before` is that trigger. With `scope=fleet` (the
/// default) the page merges the records of the live members that keep a ledger of their
/// own (`merged`), and names those that did not answer (`unanswered`).
#[utoipa::path(
    get,
    path = "/jobs/{name}/runs",
    operation_id = "list_runs",
    tag = "runs",
    params(JobPath, Page),
    responses(
        (status = 200, description = "A page of the job's runs, newest trigger first", body = RunsPage),
        (status = 400, description = "A parameter that is not right, named", body = ErrorBody),
        (status = 404, description = "No job of that name", body = ErrorBody),
        (status = 503, description = "The run history cannot be read", body = ErrorBody),
    )
)]
pub(crate) async fn list(
    State(state): State<AdminState>,
    Path(JobPath { name }): Path<JobPath>,
    Query(page): Query<Page>,
    headers: HeaderMap,
) -> Result<Json<RunsPage>, ApiError> {
    if state.scheduler.job(&name, 0).is_none() {
        return Err(unknown_job(&name));
    }
    let (query, scope) = (page.query(&name)?, Scope::parse(page.scope.as_deref())?);
    let own = member_page(&state, &query).await?;
    let instance = state.scheduler.instance().to_owned();
    let fleet = match scope {
        Scope::Member => {
            FleetPage { page: own, merged: vec![instance], unanswered: Vec::new(), membership_error: None }
        }
        Scope::Fleet => {
            let authorization =
                headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).map(str::to_owned);
            let request = PageRequest { job: &name, limit: query.limit, before: query.until, authorization };
            fleet_runs::fleet_page(&state, &request, own).await
        }
    };
    let FleetPage { page: MemberPage { runs, next_before }, merged, unanswered, membership_error } = fleet;
    Ok(Json(RunsPage { runs, next_before, merged, unanswered, membership_error }))
}

/// This member's page of the records `query` asks for.
async fn member_page(state: &AdminState, query: &LedgerQuery) -> Result<MemberPage, ApiError> {
    let mut runs = history(state, query).await?;
    let full = (runs.len() == query.limit).then(|| runs.last().map(|r| r.trigger)).flatten();
    let mut next_before = None;
    if let Some(last) = full {
        // The page ends at a whole trigger: the records of its last trigger that the
        // limit cut off (one per replica on a shared ledger) join it, or the next page,
        // which starts before that trigger, would never show them.
        runs.retain(|r| r.trigger != last);
        let group = history(state, &trigger_records(query, last)).await?;
        runs.extend(group.into_iter().filter(|r| r.trigger == last));
        // A next page only if a record is left before this one's last trigger.
        let rest = LedgerQuery { until: Some(last), limit: 1, ..query.clone() };
        next_before = (!history(state, &rest).await?.is_empty()).then_some(last);
    }
    Ok(MemberPage { runs: runs.into_iter().map(RunView::from).collect(), next_before })
}

/// `{"runs", "next_before", "merged", "unanswered", "membership_error"}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RunsPage {
    runs: Vec<RunView>,
    /// The `before` of the next page; `null` on the last.
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    next_before: Option<Timestamp>,
    /// The members whose records the page holds, this one first.
    merged: Vec<String>,
    /// The live members whose records the page should hold and does not, each with why.
    unanswered: Vec<Unanswered>,
    /// Why the fleet's membership could not be read (the page holds this member's
    /// records only); `null` when it was, or not needed (`scope=member`).
    #[schema(required = true)]
    membership_error: Option<String>,
}

/// The records `query` asks for, or 503.
async fn history(state: &AdminState, query: &LedgerQuery) -> Result<Vec<RunRecord>, ApiError> {
    state
        .scheduler
        .history(query)
        .await
        .map_err(|e| ApiError::unavailable(format!("cannot read the run history: {e}")))
}

/// Every record of `query`'s job at `trigger`, whatever the limit, and those up to 1 µs
/// later: a durable ledger keeps microseconds (its bound `trigger` + 1 ns would be
/// `trigger` itself), so the caller keeps the records at `trigger` only.
fn trigger_records(query: &LedgerQuery, trigger: Timestamp) -> LedgerQuery {
    LedgerQuery {
        since: Some(trigger),
        until: trigger.checked_add(SignedDuration::from_micros(1)).ok(),
        limit: usize::MAX,
        ..query.clone()
    }
}

/// The run a request names, in its path.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct RunPath {
    /// The job's name.
    #[param(example = "backup")]
    pub(crate) name: String,
    /// The run's trigger, RFC 3339 with an offset.
    #[param(format = DateTime, example = "2024-05-17T00:03:00Z")]
    pub(crate) trigger: String,
}

/// `?scope=fleet|member`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct OutputScope {
    /// `fleet` (the default): the output this member keeps and that of the other live
    /// members that keep their own, asked through their admin addresses; `member`: this
    /// member's only.
    #[param(value_type = Option<String>, example = "fleet")]
    scope: Option<String>,
}

/// `{"job", "trigger", "outputs": [{"instance", "output", "truncated", "attempts"}]}`: per
/// instance, each attempt kept (number, start, duration, how it ended, what it wrote to
/// each stream in order), and the last one's text as `output`; or 404.
#[utoipa::path(
    get,
    path = "/jobs/{name}/runs/{trigger}/output",
    operation_id = "get_run_output",
    tag = "runs",
    params(RunPath, OutputScope),
    responses(
        (status = 200, description = "What the run wrote, per instance and attempt", body = RunOutputs),
        (status = 400, description = "The trigger is not an RFC 3339 instant", body = ErrorBody),
        (status = 404, description = "No output kept for that run, or none at all", body = ErrorBody),
        (status = 503, description = "The run output cannot be read", body = ErrorBody),
    )
)]
pub(crate) async fn output(
    State(state): State<AdminState>,
    Path(RunPath { name, trigger }): Path<RunPath>,
    Query(OutputScope { scope }): Query<OutputScope>,
    headers: HeaderMap,
) -> Result<Json<RunOutputs>, ApiError> {
    let (trigger, scope) = (instant("trigger", &trigger)?, Scope::parse(scope.as_deref())?);
    let found = match &state.outputs {
        Some(outputs) => outputs
            .output(&name, trigger)
            .await
            .map_err(|e| ApiError::unavailable(format!("cannot read the run output: {e}")))?,
        None => Vec::new(),
    };
    let mut answer = RunOutputs::new(name, trigger, &found);
    if scope == Scope::Fleet {
        let path = format!(
            "/api/v1/jobs/{}/runs/{}/output?scope=member",
            encode(&answer.job),
            encode(&trigger.to_string())
        );
        let authorization = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        let asked = ask_others::<RunOutputs>(&state, &path, authorization).await;
        let theirs = asked.answered.into_iter().filter_map(|(_, outputs)| outputs).flat_map(|o| o.outputs);
        for output in theirs {
            if !answer.outputs.iter().any(|o| o.instance == output.instance) {
                answer.outputs.push(output);
            }
        }
        answer.outputs.sort_by(|a, b| a.instance.cmp(&b.instance));
        answer.unanswered = asked.unanswered;
    }
    if answer.outputs.is_empty() {
        let missing = answer.unanswered.iter().map(|m| m.instance.as_str()).collect::<Vec<_>>();
        let note = match missing.is_empty() {
            true => String::new(),
            false => format!(" (members that did not answer: {})", missing.join(", ")),
        };
        return Err(ApiError::not_found(format!(
            "no output kept for job {:?} at {trigger}{note}",
            answer.job
        )));
    }
    Ok(Json(answer))
}
