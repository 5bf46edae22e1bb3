//! `slotcron cancel JOB [--trigger T] [--note TEXT] --admin-url URL`: stops a running run
//! on whichever daemon holds it, through one daemon's admin API
//! (`POST /api/v1/jobs/{name}/runs/{trigger}/cancel`).

use std::collections::BTreeSet;
use std::process::ExitCode;

use jiff::Timestamp;
use serde_json::json;

use crate::INVALID_INPUT;
use crate::admin_client::{Call, call};
use crate::cli::{CancelArgs, SteerArgs};
use slotcron_admin::client::encode;

/// How many of the job's newest records are searched for its running runs when no
/// trigger is given.
const RECENT: usize = 100;

/// Asks the daemon to cancel the run of the job at `--trigger` (default: its one running
/// run) and prints who stops it: exit status 0; 2 with the reason on standard error when
/// the daemon cannot be reached or refuses (no such run: 404, ended: 409), when the job
/// runs nothing, or when several of its runs go on and no trigger was given (each listed).
pub fn run(args: &CancelArgs) -> ExitCode {
    match cancel(&args.steer, args.trigger, args.note.as_deref()) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("slotcron cancel: {e}");
            ExitCode::from(INVALID_INPUT)
        }
    }
}

fn cancel(args: &SteerArgs, trigger: Option<Timestamp>, note: Option<&str>) -> Result<String, String> {
    let job = &args.job;
    let trigger = match trigger {
        Some(trigger) => trigger,
        None => running_trigger(args)?,
    };
    let mut path = format!("/api/v1/jobs/{}/runs/{trigger}/cancel", encode(job));
    if let Some(note) = note {
        path.push_str(&format!("?note={}", encode(note)));
    }
    let answer = call(&args.admin_url, Call::post(&path, json!({})))?;
    let holder = answer["holder"].as_str().unwrap_or("-");
    Ok(match answer["relayed"] == true {
        true => format!("{job}: the run at {trigger} is being stopped by {holder}, which holds it"),
        false => format!("{job}: the run at {trigger} is being stopped by {holder}, the daemon asked"),
    })
}

/// The trigger of the job's one running run, as the daemon's history shows it.
fn running_trigger(args: &SteerArgs) -> Result<Timestamp, String> {
    let path = format!("/api/v1/jobs/{}/runs?limit={RECENT}", encode(&args.job));
    let answer = call(&args.admin_url, Call::get(&path))?;
    let runs = answer["runs"].as_array().map_or(&[][..], Vec::as_slice);
    let running: BTreeSet<&str> = runs
        .iter()
        .filter(|run| run["outcome"] == "running")
        .filter_map(|run| run["trigger"].as_str())
        .collect();
    let triggers: Vec<&str> = running.into_iter().collect();
    match triggers.as_slice() {
        [] => {
            // Runs of members whose history could not be read may be going.
            let mut missing: Vec<String> = answer["unanswered"]
                .as_array()
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .map(|m| {
                    format!(
                        "{}: {}",
                        m["instance"].as_str().unwrap_or("?"),
                        m["reason"].as_str().unwrap_or("?")
                    )
                })
                .collect();
            missing.extend(answer["membership_error"].as_str().map(str::to_owned));
            let unread = match missing.is_empty() {
                true => String::new(),
                false => format!("; the history of other daemons could not be read ({})", missing.join("; ")),
            };
            Err(format!("job {:?} has no running run in the daemon's history{unread}", args.job))
        }
        [one] => {
            one.parse().map_err(|e| format!("the daemon answered a trigger {one:?} that is not one: {e}"))
        }
        several => Err(format!(
            "job {:?} has {} running runs; name one with --trigger: {}",
            args.job,
            several.len(),
            several.join(", ")
        )),
    }
}
