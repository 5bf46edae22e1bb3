//! `/api/v1/jobs` and `/api/v1/jobs/{name}`.

use std::collections::HashMap;

use axum::Json;
use axum::extract::{Path, State};
use jiff::Timestamp;
use serde::Serialize;
use slotcron::{JobInfo, LastRun};

use crate::{AdminState, ApiError};

/// How many next fire times each job lists.
pub const NEXT_FIRE_TIMES: usize = 5;

/// A job as the API shows it.
#[derive(Debug, Serialize)]
pub(crate) struct JobView {
    name: String,
    /// The schedule as spelled: `*/5 * * * *`, `every 10s`...
    schedule: String,
    /// One line of English, if the schedule gives one.
    schedule_english: Option<String>,
    /// The IANA zone of the schedule's wall-clock times, if it has any.
    time_zone: Option<String>,
    policies: Policies,
    /// Whether the job is paused across the fleet; `null` when the coordinator (or
    /// store) that keeps the pauses cannot be read.
    paused: Option<bool>,
    /// When it was paused, while it is.
    paused_since: Option<Timestamp>,
    /// RFC 3339 UTC, earliest first.
    next_triggers: Vec<Timestamp>,
    last_run: Option<LastRunView>,
}

#[derive(Debug, Serialize)]
struct Policies {
    /// Milliseconds; `null`: none.
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
    backoff_max_ms: Option<u128>,
    /// `allow`, `forbid`, `buffer_one` or `replace`.
    overlap: &'static str,
    /// Milliseconds; `null`: none.
    jitter_ms: Option<u128>,
}

#[derive(Debug, Serialize)]
struct LastRunView {
    trigger: Timestamp,
    outcome: Option<String>,
    instance: Option<String>,
    duration_ms: Option<u128>,
}

impl From<&LastRun> for LastRunView {
    fn from(last: &LastRun) -> Self {
        Self {
            trigger: last.trigger,
            outcome: last.outcome.map(|o| o.to_string()),
            instance: last.instance.as_deref().map(str::to_owned),
            duration_ms: last.duration.map(|d| d.as_millis()),
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
            },
            paused: None,
            paused_since: None,
            next_triggers: info.next_triggers,
            last_run: info.last_run.as_ref().map(LastRunView::from),
        }
    }
}

impl JobView {
    /// Sets `paused` from the fleet's paused jobs (`None`: unknown).
    fn with_pauses(mut self, paused: Option<&HashMap<String, Timestamp>>) -> Self {
        if let Some(paused) = paused {
            self.paused_since = paused.get(&self.name).copied();
            self.paused = Some(self.paused_since.is_some());
        }
        self
    }
}

/// The fleet's paused jobs, or `None` (logged) when they cannot be read.
async fn pauses(state: &AdminState) -> Option<HashMap<String, Timestamp>> {
    state.scheduler.paused_jobs().await.inspect_err(|e| tracing::warn!("paused jobs unknown: {e}")).ok()
}

/// `{"jobs": [...]}`, by name.
pub(crate) async fn list(State(state): State<AdminState>) -> Json<serde_json::Value> {
    let paused = pauses(&state).await;
    let mut jobs = state.scheduler.jobs(NEXT_FIRE_TIMES);
    jobs.sort_unstable_by(|a, b| a.job.name().cmp(b.job.name()));
    let jobs: Vec<JobView> =
        jobs.into_iter().map(|info| JobView::from(info).with_pauses(paused.as_ref())).collect();
    Json(serde_json::json!({ "jobs": jobs }))
}

/// One job, or 404.
pub(crate) async fn one(
    State(state): State<AdminState>,
    Path(name): Path<String>,
) -> Result<Json<JobView>, ApiError> {
    let info = state.scheduler.job(&name, NEXT_FIRE_TIMES).ok_or_else(|| unknown_job(&name))?;
    let paused = pauses(&state).await;
    Ok(Json(JobView::from(info).with_pauses(paused.as_ref())))
}

/// The 404 of a job name the scheduler does not have.
pub(crate) fn unknown_job(name: &str) -> ApiError {
    ApiError::not_found(format!("no job named {name:?}"))
}
