//! Every line of the cron conformance vectors (a copy of `shared/conformance/`, see
//! `data/cron_conformance.md` for the rules they encode): valid expressions yield exactly
//! the listed fire times, compared as RFC 3339 strings in the case's zone; invalid ones
//! are rejected.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde::Deserialize;
use slotcron::{CronSchedule, Schedule};

#[derive(Deserialize)]
struct Case {
    id: String,
    expr: String,
    #[serde(default)]
    tz: Option<String>,
    #[serde(default)]
    start: Option<String>,
    #[serde(default)]
    next: Vec<String>,
    #[serde(default)]
    error: bool,
}

fn cases() -> Vec<Case> {
    include_str!("data/cron_conformance.jsonl")
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).expect("a valid vector line"))
        .collect()
}

fn fire_times(case: &Case) -> Result<Vec<String>, String> {
    let zone = TimeZone::get(case.tz.as_deref().unwrap()).map_err(|e| e.to_string())?;
    let schedule = CronSchedule::parse(&case.expr).map_err(|e| e.to_string())?.with_time_zone(zone.clone());
    let mut at: Timestamp = case.start.as_deref().unwrap().parse().map_err(|e: jiff::Error| e.to_string())?;
    let mut out = Vec::new();
    while out.len() < 5 {
        let Some(next) = schedule.next_after(at) else {
            break;
        };
        out.push(next.display_with_offset(zone.to_offset(next)).to_string());
        at = next;
    }
    Ok(out)
}

#[test]
fn every_conformance_vector_passes() {
    let cases = cases();
    assert!(cases.len() >= 300, "the vectors file is complete");
    let mut failures = Vec::new();
    for case in &cases {
        if case.error {
            if let Ok(schedule) = CronSchedule::parse(&case.expr) {
                failures.push(format!("{}: {:?} was accepted as {schedule:?}", case.id, case.expr));
            }
            continue;
        }
        match fire_times(case) {
            Ok(got) if got == case.next => {}
            Ok(got) => failures.push(format!(
                "{}: {:?} in {:?} from {:?}\n  want {:?}\n  got  {:?}",
                case.id, case.expr, case.tz, case.start, case.next, got
            )),
            Err(e) => failures.push(format!("{}: {:?} rejected: {e}", case.id, case.expr)),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} vectors fail:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
