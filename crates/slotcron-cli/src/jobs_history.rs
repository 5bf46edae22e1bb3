//! `slotcron jobs history [JOB] --admin-url URL`: the changes made to the jobs kept in the
//! state through the admin API (`PUT` and `DELETE /api/v1/jobs/{name}`), newest first,
//! read from any daemon of the fleet started with `--jobs-from-state`.

use std::process::ExitCode;

use serde::Deserialize;
use serde_json::Value;

use crate::INVALID_INPUT;
use crate::admin_client::{Call, call};
use slotcron_admin::client::encode;

/// `GET /api/v1/audit`'s answer.
#[derive(Debug, Deserialize)]
struct Changes {
    changes: Vec<Value>,
}

/// Prints the changes: per change a line `AT JOB CHANGE token TOKEN[: NOTE]`, then `- OLD`
/// and `+ NEW`, each definition as one line of JSON as the state keeps it (environment
/// values hidden); or with `json`, each change as one JSON object per line. Exit status
/// 0; 2 with the reason on standard error if the daemon cannot be reached or refuses (a
/// daemon without `--jobs-from-state`: 409).
pub fn run(job: Option<&str>, admin_url: &str, limit: usize, json: bool) -> ExitCode {
    let mut path = format!("/api/v1/audit?limit={limit}");
    if let Some(job) = job {
        path.push_str(&format!("&job={}", encode(job)));
    }
    let answer = call(admin_url, Call::get(&path)).and_then(|answer| {
        serde_json::from_value::<Changes>(answer)
            .map_err(|e| format!("{admin_url}: not a slotcron admin API answer: {e}"))
    });
    match answer {
        Ok(answer) => {
            for change in &answer.changes {
                print(change, json);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("slotcron jobs history: {e}");
            ExitCode::from(INVALID_INPUT)
        }
    }
}

fn print(change: &Value, json: bool) {
    if json {
        println!("{change}");
        return;
    }
    let text = |field: &str| change[field].as_str().unwrap_or("-");
    let note = change["note"].as_str().map(|note| format!(": {note}")).unwrap_or_default();
    println!("{} {} {} token {}{note}", text("at"), text("job"), text("change"), text("token"));
    for (sign, field) in [('-', "old"), ('+', "new")] {
        if !change[field].is_null() {
            println!("  {sign} {}", change[field]);
        }
    }
}
