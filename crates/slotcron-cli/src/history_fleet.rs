//! `slotcron history JOB --admin-url URL`: a job's runs across the fleet, read through a
//! daemon's admin API, which merges its records with those of the other live members that
//! keep a ledger of their own and names the members that did not answer.

use std::time::Duration;

use jiff::Timestamp;
use serde::Deserialize;
use slotcron::{Cause, Outcome, RunRecord};

use crate::admin_client::{Call, call};
use crate::cli::HistoryArgs;
use slotcron_admin::client::encode;

/// What the fleet's history holds for the arguments, and whose runs it lacks.
#[derive(Debug, Default)]
pub struct FleetHistory {
    /// The runs, newest trigger first, at most `--limit`.
    pub runs: Vec<RunRecord>,
    /// One line per member whose runs are missing: its instance id and why.
    pub unanswered: Vec<String>,
}

/// One page of `GET /api/v1/jobs/{name}/runs`.
#[derive(Debug, Deserialize)]
struct Page {
    runs: Vec<ApiRun>,
    next_before: Option<Timestamp>,
    #[serde(default)]
    unanswered: Vec<Unanswered>,
    #[serde(default)]
    membership_error: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Unanswered {
    instance: String,
    reason: String,
}

/// A run as the admin API shows it.
#[derive(Debug, Deserialize)]
struct ApiRun {
    job: String,
    trigger: Timestamp,
    instance: String,
    outcome: String,
    cause: String,
    #[serde(default)]
    attempts: u32,
    fencing_token: Option<u64>,
    started: Timestamp,
    duration_ms: Option<u64>,
    error: Option<String>,
}

impl From<ApiRun> for RunRecord {
    fn from(run: ApiRun) -> Self {
        Self {
            job: run.job.into(),
            trigger: run.trigger,
            instance: run.instance.into(),
            cause: Cause::from_name(&run.cause),
            attempts: run.attempts,
            outcome: Outcome::from_name(&run.outcome),
            fencing_token: run.fencing_token,
            started: run.started,
            duration: Duration::from_millis(run.duration_ms.unwrap_or_default()),
            error: run.error,
            process: None,
        }
    }
}

/// The runs of `job` that `args` asks for (`--limit`, `--since`, `--until`, `--outcome`),
/// read a page at a time from the admin API at `admin_url`.
///
/// # Errors
/// The admin API's, as [`call`] words them, or an answer that is not a page of runs.
pub fn read(admin_url: &str, job: &str, args: &HistoryArgs) -> Result<FleetHistory, String> {
    let limit = args.limit as usize;
    let mut history = FleetHistory::default();
    let mut before = args.until;
    loop {
        let asked = (limit - history.runs.len()).min(slotcron_admin::MAX_RUNS_LIMIT);
        let mut path = format!("/api/v1/jobs/{}/runs?limit={asked}", encode(job));
        if let Some(before) = before {
            path.push_str(&format!("&before={}", encode(&before.to_string())));
        }
        let answer = call(admin_url, Call::get(&path))?;
        let page: Page =
            serde_json::from_value(answer).map_err(|e| format!("{admin_url}: not a page of runs: {e}"))?;
        if history.unanswered.is_empty() {
            history.unanswered =
                page.unanswered.iter().map(|m| format!("{}: {}", m.instance, m.reason)).collect();
            history.unanswered.extend(page.membership_error);
        }
        let older = |run: &ApiRun| args.since.is_some_and(|since| run.trigger < since);
        let ended = page.runs.iter().any(older);
        let wanted = page.runs.into_iter().filter(|run| !older(run));
        let wanted =
            wanted.map(RunRecord::from).filter(|run| args.outcome.as_ref().is_none_or(|o| run.outcome == *o));
        history.runs.extend(wanted);
        match page.next_before {
            Some(next) if !ended && history.runs.len() < limit => before = Some(next),
            _ => break,
        }
    }
    history.runs.truncate(limit);
    Ok(history)
}
