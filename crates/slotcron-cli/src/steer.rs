//! `slotcron pause|resume|trigger|backfill JOB --admin-url URL`: steering a running fleet
//! through one daemon's admin API.

use std::process::ExitCode;

use serde_json::{Value, json};
use slotcron_admin::client::encode;

use crate::INVALID_INPUT;
use crate::admin_client::{Call, call};
use crate::cli::SteerCommand;

/// Asks the daemon and prints what it did, or with `--dry-run` what it would do, one line
/// (a backfill: then each trigger, RFC 3339 UTC, oldest first): exit status 0; 2 with the
/// reason on standard error if the daemon cannot be reached or refuses (unknown job: 404,
/// missing token: 401, bad range: 400), and nothing changed.
pub fn run(command: &SteerCommand) -> ExitCode {
    let (name, args) = command.parts();
    let (body, key) = match command {
        SteerCommand::Pause(_) => (json!({}), None),
        SteerCommand::Resume { catch_up, .. } => (json!({ "catch_up": catch_up }), None),
        SteerCommand::Trigger { idempotency_key, dry_run, .. } => {
            (with_dry_run(json!({}), *dry_run), idempotency_key.clone())
        }
        SteerCommand::Backfill { from, to, dry_run, .. } => {
            (with_dry_run(json!({ "from": from, "to": to }), *dry_run), None)
        }
    };
    let path = format!("/api/v1/jobs/{}/{name}", encode(&args.job));
    let mut request = Call::post(&path, body);
    request.headers.extend(key.map(|key| ("idempotency-key", key)));
    match call(&args.admin_url, request) {
        Ok(answer) => {
            print(command, &answer);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("slotcron {name}: {e}");
            ExitCode::from(INVALID_INPUT)
        }
    }
}

/// `body` asking for a dry run if `dry_run`; without, as before dry runs existed, so that
/// a daemon of an earlier release takes it.
fn with_dry_run(mut body: Value, dry_run: bool) -> Value {
    if dry_run {
        body["dry_run"] = true.into();
    }
    body
}

fn print(command: &SteerCommand, answer: &Value) {
    let job = answer["job"].as_str().unwrap_or_default();
    let text = |field: &str| answer[field].as_str().unwrap_or("-").to_owned();
    match command {
        SteerCommand::Pause(_) => println!("{job}: paused since {}", text("paused_since")),
        SteerCommand::Resume { .. } => {
            let caught: Vec<&str> =
                answer["caught_up"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            match answer["paused_since"].as_str() {
                Some(since) => {
                    println!("{job}: resumed (paused since {since}); {} trigger(s) caught up", caught.len())
                }
                None => println!("{job}: was not paused"),
            }
            caught.iter().for_each(|t| println!("{t}"));
        }
        SteerCommand::Trigger { dry_run: true, .. } => {
            let paused = match answer["paused_since"].as_str() {
                Some(since) => format!("paused since {since} (a manual run runs even so)"),
                None => "not paused".to_owned(),
            };
            println!(
                "{job}: dry run, nothing ran: a manual run now would get trigger {}; {paused}",
                text("trigger")
            )
        }
        SteerCommand::Trigger { .. } if answer["repeated"] == true => {
            println!(
                "{job}: idempotency key given before: nothing more runs; the first run's trigger is {}",
                text("trigger")
            )
        }
        SteerCommand::Trigger { .. } => println!("{job}: manual run queued, trigger {}", text("trigger")),
        SteerCommand::Backfill { dry_run, .. } => {
            let triggers: Vec<&str> =
                answer["triggers"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            match dry_run {
                true => println!(
                    "{job}: dry run, nothing ran: {} trigger(s) would be queued, oldest first",
                    triggers.len()
                ),
                false => println!("{job}: {} trigger(s) queued, oldest first", triggers.len()),
            }
            triggers.iter().for_each(|t| println!("{t}"));
        }
    }
}
