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

/// The schedule of a valid vector, in its zone, and its fire times as instants.
fn schedule_and_fires(case: &Case) -> (CronSchedule, Timestamp, Vec<Timestamp>) {
    let zone = TimeZone::get(case.tz.as_deref().unwrap()).unwrap();
    let schedule = CronSchedule::parse(&case.expr).unwrap().with_time_zone(zone);
    let start: Timestamp = case.start.as_deref().unwrap().parse().unwrap();
    let fires = case.next.iter().map(|t| t.parse::<Timestamp>().unwrap()).collect();
    (schedule, start, fires)
}

/// `prev_before` walks every vector's fire times back, each to the one listed before it,
/// and from the first to a fire time at or before the vector's start (nothing fires
/// between the start and the first); at the instants between and just after them, it is
/// the inverse of `next_after` (`next_after(prev_before(t)) >= t`, `prev_before(t) < t`);
/// an expression that never fires has none.
#[test]
fn every_conformance_vector_runs_backwards_with_prev_before() {
    let mut failures = Vec::new();
    for case in cases().iter().filter(|case| !case.error) {
        let (schedule, start, fires) = schedule_and_fires(case);
        for pair in fires.windows(2) {
            let prev = schedule.prev_before(pair[1]);
            if prev != Some(pair[0]) {
                failures.push(format!("{}: prev_before({}) = {prev:?}, want {}", case.id, pair[1], pair[0]));
            }
        }
        if let Some(&first) = fires.first() {
            match schedule.prev_before(first) {
                Some(prev) if prev <= start && schedule.next_after(prev) == Some(first) => {}
                prev => failures.push(format!("{}: prev_before({first}) = {prev:?}, from {start}", case.id)),
            }
        }
        let probes = fires.iter().flat_map(|&fire| {
            [-1_000_000_000_i64, -1, 1, 1_000_000_000].map(|ns| fire + jiff::SignedDuration::from_nanos(ns))
        });
        for t in probes.chain([start]) {
            let prev = schedule.prev_before(t);
            if fires.is_empty() {
                // An expression that never fires has no previous fire time either.
                if prev.is_some() {
                    failures.push(format!(
                        "{}: prev_before({t}) = {prev:?} of a schedule that never fires",
                        case.id
                    ));
                }
                continue;
            }
            let inverse = prev.is_some_and(|p| p < t && schedule.next_after(p).is_some_and(|next| next >= t));
            if !inverse {
                failures
                    .push(format!("{}: prev_before({t}) = {prev:?} is no inverse of next_after", case.id));
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
