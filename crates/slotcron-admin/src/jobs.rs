//! `/api/v1/jobs` (a page of them: see [`crate::listing`]) and `/api/v1/jobs/{name}`.

use std::collections::HashMap;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use slotcron::{JobInfo, LastRun};
use utoipa::{IntoParams, ToSchema};

use crate::error::ErrorBody;
use crate::listing::{JobsQuery, Row};
use crate::{AdminState, ApiError, etag};

/// How many next fire times each job lists.
pub const NEXT_FIRE_TIMES: usize = 5;

/// The job a request names, in its path.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct JobPath {
    /// The job's name.
    #[param(example = "backup")]
    pub name: String,
}

/// A job as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct JobView {
    name: String,
    /// The schedule as spelled: `*/5 * * * *`, `every 10s`...
    schedule: String,
    /// One line of English, if the schedule gives one.
    #[schema(required = true)]
    schedule_english: Option<String>,
    /// The IANA zone of the schedule's wall-clock times, if it has any.
    #[schema(required = true)]
    time_zone: Option<String>,
    policies: Policies,
    /// Whether the job is paused across the fleet; `null` when the coordinator (or
    /// store) that keeps the pauses cannot be read.
    #[schema(required = true)]
    paused: Option<bool>,
    /// When it was paused, while it is.
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    paused_since: Option<Timestamp>,
    /// Why it was paused, for a pause its failures made (`pause_after_failures`): `paused
    /// after N failed triggers in a row, the last at T`; `null` otherwise (a pause by
    /// hand, or a reason that cannot be read).
    #[schema(required = true)]
    paused_reason: Option<String>,
    /// RFC 3339 UTC, earliest first.
    #[schema(value_type = Vec<String>, format = DateTime)]
    next_triggers: Vec<Timestamp>,
    #[schema(required = true)]
    last_run: Option<LastRunView>,
    /// How many of its runs have a handler running now on this scheduler (not on other
    /// replicas).
    runs_in_flight: u32,
    /// For a job with `max_runs`: its scheduled triggers started so far across the fleet
    /// (`runs N of max_runs`); `null` for a job without, or when the count cannot be read.
    #[schema(required = true)]
    runs: Option<u64>,
    /// Whether the job has ended (its `max_runs` reached): no trigger is queued any more.
    ended: bool,
}

/// How the job runs.
#[derive(Debug, Serialize, ToSchema)]
struct Policies {
    /// Milliseconds; `null`: none.
    #[schema(required = true)]
    timeout_ms: Option<u128>,
    misfire: &'static str,
    grace_ms: u128,
    on_every_replica: bool,
    run_on_start: bool,
    /// Attempts in all, the first included (1: no retry).
    attempts: u32,
    /// Milliseconds before the first retry.
    backoff_ms: u128,
    backoff_multiplier: f64,
    /// Milliseconds; `null`: uncapped.
    #[schema(required = true)]
    backoff_max_ms: Option<u128>,
    /// `allow`, `forbid`, `buffer_one` or `replace`.
    overlap: &'static str,
    /// Milliseconds; `null`: none.
    #[schema(required = true)]
    jitter_ms: Option<u128>,
    /// The most scheduled triggers the job runs across the fleet; `null`: no limit.
    #[schema(required = true)]
    max_runs: Option<u64>,
    /// How many failed triggers in a row pause the job across the fleet; `null`: never.
    #[schema(required = true)]
    pause_after_failures: Option<u64>,
}

/// The last trigger the scheduler handled.
#[derive(Debug, Serialize, ToSchema)]
struct LastRunView {
    #[schema(value_type = String, format = DateTime)]
    trigger: Timestamp,
    #[schema(required = true)]
    outcome: Option<String>,
    #[schema(required = true)]
    instance: Option<String>,
    #[schema(required = true)]
    duration_ms: Option<u128>,
    /// What a failed run returned, or why the trigger was skipped (`null` when none, and
    /// after a restart, when the last run is what the store kept).
    #[schema(required = true)]
    error: Option<String>,
}

impl From<&LastRun> for LastRunView {
    fn from(last: &LastRun) -> Self {
        Self {
            trigger: last.trigger,
            outcome: last.outcome.map(|o| o.to_string()),
            instance: last.instance.as_deref().map(str::to_owned),
            duration_ms: last.duration.map(|d| d.as_millis()),
            error: last.error.clone(),
        }
    }
}

impl From<JobInfo> for JobView {
    fn from(info: JobInfo) -> Self {
        let job = &info.job;
        let description = job.schedule().describe();
        Self {
            name: job.name().to_owned(),
            schedule: description.text,
            schedule_english: description.english,
            time_zone: description.zone,
            policies: Policies {
                timeout_ms: job.timeout().map(|t| t.as_millis()),
                misfire: job.misfire().name(),
                grace_ms: job.grace().as_millis(),
                on_every_replica: job.on_every_replica(),
                run_on_start: job.run_on_start(),
                attempts: job.retry().attempts(),
                backoff_ms: job.retry().backoff().as_millis(),
                backoff_multiplier: job.retry().multiplier(),
                backoff_max_ms: job.retry().max_backoff().map(|d| d.as_millis()),
                overlap: job.overlap().name(),
                jitter_ms: job.jitter().map(|d| d.as_millis()),
                max_runs: job.max_runs(),
                pause_after_failures: job.pause_after_failures(),
            },
            paused: None,
            paused_since: None,
            paused_reason: None,
            next_triggers: info.next_triggers,
            last_run: info.last_run.as_ref().map(LastRunView::from),
            runs_in_flight: info.runs_in_flight,
            runs: None,
            ended: info.ended,
        }
    }
}

impl JobView {
    /// Sets `runs` from the counts of the jobs with `max_runs` (`None`: unknown).
    fn with_runs(mut self, counts: &HashMap<String, u64>) -> Self {
        if self.policies.max_runs.is_some() {
            self.runs = counts.get(&self.name).copied();
        }
        self
    }

    /// Sets `paused_reason` from the reasons kept beside the pauses, while it is paused.
    fn with_reason(mut self, reasons: &HashMap<String, String>) -> Self {
        if self.paused == Some(true) {
            self.paused_reason = reasons.get(&self.name).cloned();
        }
        self
    }

    /// Sets `paused` from whether the job is paused and since when (`None`: unknown).
    fn with_paused(mut self, paused: Option<Option<Timestamp>>) -> Self {
        if let Some(since) = paused {
            self.paused_since = since;
            self.paused = Some(since.is_some());
        }
        self
    }
}

/// The reasons kept beside the fleet's pauses, read only when one of `jobs` is paused.
async fn reasons(state: &AdminState, jobs: &[JobView]) -> HashMap<String, String> {
    match jobs.iter().any(|job| job.paused == Some(true)) {
        true => state.scheduler.pause_reasons().await,
        false => HashMap::new(),
    }
}

/// The fleet's paused jobs, or `None` (logged) when they cannot be read.
async fn pauses(state: &AdminState) -> Option<HashMap<String, Timestamp>> {
    state.scheduler.paused_jobs().await.inspect_err(|e| tracing::warn!("paused jobs unknown: {e}")).ok()
}

/// A page of jobs: `{"jobs": [...], "next_cursor": "…"|null, "total": N}`, with an
/// `ETag` (304 for a matching `If-None-Match`). The order and filters are computed on
/// each job's queued trigger; only the page's rows get their [`NEXT_FIRE_TIMES`].
#[utoipa::path(
    get,
    path = "/jobs",
    operation_id = "list_jobs",
    tag = "jobs",
    params(JobsQuery, ("If-None-Match" = Option<String>, Header, description = "The `ETag` of a page held")),
    responses(
        (status = 200, description = "A page of the jobs the filter keeps", body = JobsPage,
            headers(("ETag" = String, description = "A tag of this page, for `If-None-Match`"))),
        (status = 304, description = "The page is the one `If-None-Match` names"),
        (status = 400, description = "A parameter that is not right, named", body = ErrorBody),
        (status = 503, description = "`state=active` or `state=paused` while the pauses cannot be read", body = ErrorBody),
    )
)]
pub(crate) async fn list(
    State(state): State<AdminState>,
    headers: HeaderMap,
    Query(query): Query<JobsQuery>,
) -> Result<Response, ApiError> {
    let listing = query.parse()?;
    let paused = pauses(&state).await;
    if paused.is_none() && listing.filters_pauses() {
        let reason = "the fleet's pauses cannot be read now (the coordinator or store that keeps them failed), \
                      so which jobs are active or paused is unknown; ask again, or without state";
        return Err(ApiError::unavailable(reason));
    }
    // The counts first: a job whose count has reached its max_runs shows ended.
    let counts = state.scheduler.run_counts().await;
    let page = listing.page(state.scheduler.jobs(1), paused.as_ref());
    let jobs: Vec<JobView> =
        page.rows.into_iter().map(|row| row_view(&state, row).with_runs(&counts)).collect();
    let reasons = reasons(&state, &jobs).await;
    let jobs = jobs.into_iter().map(|job| job.with_reason(&reasons)).collect();
    let body = JobsPage { jobs, next_cursor: page.next_cursor, total: page.total };
    Ok(etag::json(&headers, &body))
}

/// `{"jobs", "next_cursor", "total"}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct JobsPage {
    jobs: Vec<JobView>,
    /// The `cursor` of the next page; `null` on the last.
    #[schema(required = true)]
    next_cursor: Option<String>,
    /// How many jobs the filter keeps, on every page.
    total: usize,
}

/// A page's row with its next [`NEXT_FIRE_TIMES`] (as it was listed if the job was
/// removed meanwhile).
fn row_view(state: &AdminState, row: Row) -> JobView {
    let info = state.scheduler.job(row.info.job.name(), NEXT_FIRE_TIMES).unwrap_or(row.info);
    JobView::from(info).with_paused(row.paused)
}

/// One job, or 404.
#[utoipa::path(
    get,
    path = "/jobs/{name}",
    operation_id = "get_job",
    tag = "jobs",
    params(JobPath),
    responses(
        (status = 200, description = "The job", body = JobView),
        (status = 404, description = "No job of that name", body = ErrorBody),
    )
)]
pub(crate) async fn one(
    State(state): State<AdminState>,
    Path(JobPath { name }): Path<JobPath>,
) -> Result<Json<JobView>, ApiError> {
    // The counts first: a job whose count has reached its max_runs shows ended.
    let counts = state.scheduler.run_counts().await;
    let info = state.scheduler.job(&name, NEXT_FIRE_TIMES).ok_or_else(|| unknown_job(&name))?;
    let paused = pauses(&state).await.map(|paused| paused.get(&name).copied());
    let job = JobView::from(info).with_paused(paused).with_runs(&counts);
    let reasons = reasons(&state, std::slice::from_ref(&job)).await;
    Ok(Json(job.with_reason(&reasons)))
}

/// The 404 of a job name the scheduler does not have.
pub(crate) fn unknown_job(name: &str) -> ApiError {
    ApiError::not_found(format!("no job named {name:?}"))
}
