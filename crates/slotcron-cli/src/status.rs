//! `slotcron status --admin-url URL`: the jobs table of a running daemon, read from its
//! admin API.

use std::process::ExitCode;

use jiff::Timestamp;
use serde::Deserialize;
use slotcron_admin::MAX_JOBS_LIMIT;

use crate::admin_client::{Call, call};
use crate::cli::StatusArgs;
use crate::{INVALID_INPUT, relative, table};

/// A page of `GET /api/v1/jobs`.
#[derive(Debug, Deserialize)]
struct Jobs {
    jobs: Vec<JobRow>,
    /// `None` on the last page.
    next_cursor: Option<String>,
}

#[derive(Debug, Deserialize)]
struct JobRow {
    name: String,
    schedule: String,
    schedule_english: Option<String>,
    /// The IANA zone of the schedule's wall-clock times, if it has any.
    time_zone: Option<String>,
    /// `null` when the daemon cannot read its pauses.
    paused: Option<bool>,
    /// Why it was paused, for a pause its failures made. Absent from a daemon of an
    /// earlier release.
    #[serde(default)]
    paused_reason: Option<String>,
    next_triggers: Vec<String>,
    last_run: Option<LastRun>,
    /// Absent from a daemon of an earlier release.
    #[serde(default)]
    policies: Limits,
    /// The runs counted for `max_runs` across the fleet; `null` without, or unknown.
    #[serde(default)]
    runs: Option<u64>,
    /// Whether the job's `max_runs` were reached.
    #[serde(default)]
    ended: bool,
}

/// The part of a job's `policies` the status shows.
#[derive(Debug, Default, Deserialize)]
struct Limits {
    max_runs: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct LastRun {
    trigger: String,
    outcome: Option<String>,
}

/// Prints the daemon's jobs as columns `JOB SCHEDULE NEXT IN LAST AGO OUTCOME` with a
/// header (NEXT and LAST as the daemon writes them, RFC 3339 UTC; IN and AGO the same
/// instants relative to this machine's clock, e.g. `in 4m`, `12s ago`), then the
/// [`notes`] of its jobs: exit status 0; 2 with the reason on standard error if the daemon cannot be reached
/// or answers with an error (a missing or wrong token: 401).
pub fn run(args: &StatusArgs) -> ExitCode {
    match every_job(&args.admin_url) {
        Ok(mut jobs) => {
            jobs.sort_by(|a, b| a.name.cmp(&b.name));
            let notes = notes(&jobs);
            print(jobs);
            if !notes.is_empty() {
                println!("\n{}", notes.join("\n"));
            }
            print_fleet(&args.admin_url);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("slotcron status: {e}");
            ExitCode::from(INVALID_INPUT)
        }
    }
}

/// Every job of the daemon at `admin_url`, a page of [`MAX_JOBS_LIMIT`] at a time.
fn every_job(admin_url: &str) -> Result<Vec<JobRow>, String> {
    let mut jobs = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut path = format!("/api/v1/jobs?limit={MAX_JOBS_LIMIT}");
        if let Some(cursor) = &cursor {
            path.push_str(&format!("&cursor={cursor}"));
        }
        let page = call(admin_url, Call::get(&path)).and_then(|answer| {
            serde_json::from_value::<Jobs>(answer)
                .map_err(|e| format!("{admin_url}: not a slotcron admin API answer: {e}"))
        })?;
        jobs.extend(page.jobs);
        cursor = page.next_cursor;
        if cursor.is_none() {
            return Ok(jobs);
        }
    }
}

/// Prints the jobs as columns, in the order given; an ended job's NEXT is `ended`, a
/// paused one's `paused`.
fn print(jobs: Vec<JobRow>) {
    let now = Timestamp::now();
    let relative = |instant: &str| relative::cell(instant.parse().ok(), now);
    let rows: Vec<[String; 7]> = jobs
        .into_iter()
        .map(|job| {
            let schedule = match (job.schedule_english, job.time_zone) {
                // The zone its wall-clock times are read in, as `check` shows it.
                (Some(english), Some(zone)) => format!("{english} ({zone})"),
                (english, _) => english.unwrap_or(job.schedule),
            };
            let next = match (job.paused, job.next_triggers.first()) {
                _ if job.ended => "ended".to_owned(),
                (Some(true), _) => "paused".to_owned(),
                (_, Some(next)) => next.clone(),
                (_, None) => "-".to_owned(),
            };
            let (last, outcome) = match job.last_run {
                Some(run) => (run.trigger, run.outcome.unwrap_or_else(|| "running".into())),
                None => ("-".into(), "-".into()),
            };
            let (next_in, last_ago) = (relative(&next), relative(&last));
            [job.name, schedule, next, next_in, last, last_ago, outcome]
        })
        .collect();
    table::print(Some(["JOB", "SCHEDULE", "NEXT", "IN", "LAST", "AGO", "OUTCOME"]), &rows, 0);
}

/// After the jobs, a line for each job with `max_runs`: `JOB: runs N of M` (`?` for a
/// count the daemon cannot read), and `, ended` once they are reached; and one for each
/// job its failures paused: `JOB: paused after N failed triggers in a row, the last at T`.
fn notes(jobs: &[JobRow]) -> Vec<String> {
    let runs = |job: &JobRow| {
        let max_runs = job.policies.max_runs?;
        let runs = job.runs.map_or_else(|| "?".to_owned(), |runs| runs.to_string());
        let ended = if job.ended { ", ended" } else { "" };
        Some(format!("{}: runs {runs} of {max_runs}{ended}", job.name))
    };
    let reason = |job: &JobRow| Some(format!("{}: {}", job.name, job.paused_reason.as_ref()?));
    jobs.iter().flat_map(|job| [runs(job), reason(job)]).flatten().collect()
}

/// `GET /api/v1/fleet`: the members, `None` for a daemon alone.
#[derive(Debug, Deserialize)]
struct Fleet {
    members: Option<Vec<Member>>,
}

#[derive(Debug, Deserialize)]
struct Member {
    instance: String,
    host: Option<String>,
    version: Option<String>,
    last_heartbeat: String,
    runs_in_flight: Option<u64>,
    owned_jobs: usize,
    /// Absent from a daemon of an earlier release.
    #[serde(default)]
    labels: Vec<String>,
}

/// After the jobs, a daemon of a fleet prints its members as columns `MEMBER HOST
/// VERSION HEARTBEAT RUNNING JOBS LABELS` (the last heartbeat, RFC 3339 UTC; runs in
/// flight; jobs owned; its `--label`s, comma-separated). Nothing for a daemon alone, or one whose membership cannot be read (a
/// line on standard error says why).
fn print_fleet(admin_url: &str) {
    let fleet = call(admin_url, Call::get("/api/v1/fleet"))
        .and_then(|answer| serde_json::from_value::<Fleet>(answer).map_err(|e| e.to_string()));
    let members = match fleet {
        Ok(Fleet { members: Some(members) }) => members,
        Ok(Fleet { members: None }) => return,
        Err(e) => return eprintln!("slotcron status: the fleet's members are unknown: {e}"),
    };
    let dash = || "-".to_owned();
    let rows: Vec<[String; 7]> = members
        .into_iter()
        .map(|m| {
            let running = m.runs_in_flight.map_or_else(dash, |n| n.to_string());
            [
                m.instance,
                m.host.unwrap_or_else(dash),
                m.version.unwrap_or_else(dash),
                m.last_heartbeat,
                running,
                m.owned_jobs.to_string(),
                if m.labels.is_empty() { dash() } else { m.labels.join(",") },
            ]
        })
        .collect();
    println!();
    table::print(Some(["MEMBER", "HOST", "VERSION", "HEARTBEAT", "RUNNING", "JOBS", "LABELS"]), &rows, 0);
}
