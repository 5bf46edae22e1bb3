//! Differential test against the `croner` crate: on random expressions that both accept
//! (from `cron_grammar`, limited to the syntax croner reads the same way), in the zones
//! of the conformance vectors, both give the same next three fire times, and the same
//! previous three (`Schedule::prev_before` against croner's `find_previous_occurrence`).
//! `oracle_sample` draws a fixed sample of (expression, zone, instant) triples and counts
//! every verdict by kind (`SLOTCRON_ORACLE_CASES`, default 10,000; `scripts/cron-oracle`
//! runs 1,000,000 and prints the table BENCHMARKS.md shows).
//!
//! Skipped by construction, each a documented difference rather than a bug:
//!
//! - **The Vixie star rule.** slotcron ANDs day-of-month and day-of-week when either
//!   starts with `*` (`*/2`, or is `?`); croner only when either is exactly `*`
//!   (`Expr::star_rule_matters`).
//! - **A day-of-week range ending on `SUN`.** Sunday is 0, so `MON-SUN` is a reversed
//!   range and `SUN-SUN` is Sunday alone (slotcron); croner reads the end as 7
//!   (`Expr::range_ends_on_named_sunday`).
//! - **`a/n` steps and `LW`**, which croner rejects by default: not generated.
//! - **What is a fixed-time job.** slotcron follows cronie (minute and hour, and seconds,
//!   do not start with `*`: `0 1-5 * * *` is fixed-time); croner requires a single value
//!   in each. Where the two disagree, the DST rules differ, so such cases are compared
//!   only when no offset change lies between the start and the last fire time.
//! - **Time zone data after 2037.** chrono-tz, which croner uses for zones, lists
//!   transitions up to 2037 and keeps the last offset after that, while jiff follows the
//!   zone's rule for ever (New York still changes to EDT in 2121). Starts are drawn from
//!   1970-2036 and fire times after 2037 in a zone with DST are not compared.
//! - **An expression that can never fire** (`* * 30W FEB *`: no February has a 30th):
//!   slotcron refuses it when it is parsed; croner accepts it and finds nothing.
//! - **croner's own limits**: an expression croner rejects (e.g. a step wider than the
//!   field) or a search it gives up on is not compared.
//! - **Looking back across an offset change.** slotcron's previous fire time is the exact
//!   inverse of its next (a wall time skipped by spring-forward fires at the jump, as
//!   cronie does, so it is also the previous fire time after the jump); croner looks back
//!   by its own rules. Previous fire times are compared only when no offset change lies
//!   between the earliest of them and the start.

mod cron_grammar;

use std::str::FromStr;

use chrono::{DateTime, TimeZone as _};
use chrono_tz::Tz;
use cron_grammar::Dialect;
use cron_grammar::zones::ZONES;
use croner::parser::{CronParser, Seconds};
use croner::{Cron, JobType};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use proptest::prelude::*;
use slotcron::{CronSchedule, Schedule};

/// 2037-01-01T00:00:00Z: the end of chrono-tz's transition tables.
const TABLES_END: i64 = 2_114_380_800;

/// What croner reads as slotcron does: no `a/n`, no `LW`.
const CRONER: Dialect = Dialect { from_steps: false, last_weekday: false };

/// Which way fire times are counted from the start.
#[derive(Clone, Copy, Debug)]
enum Direction {
    Next,
    Prev,
}

/// Up to three fire times from `from` the `direction` says, as Unix seconds.
fn ours(schedule: &CronSchedule, from: Timestamp, direction: Direction) -> Vec<i64> {
    let step = |at: Timestamp| match direction {
        Direction::Next => schedule.next_after(at),
        Direction::Prev => schedule.prev_before(at),
    };
    std::iter::successors(step(from), |&at| step(at)).take(3).map(|at| at.as_second()).collect()
}

/// croner's three fire times from `from`, or `None` where it gives up.
fn theirs(cron: &Cron, from: DateTime<Tz>, direction: Direction) -> Option<Vec<i64>> {
    let mut out = Vec::new();
    let mut at = from;
    for _ in 0..3 {
        at = match direction {
            Direction::Next => cron.find_next_occurrence(&at, false).ok()?,
            Direction::Prev => cron.find_previous_occurrence(&at, false).ok()?,
        };
        out.push(at.timestamp());
    }
    Some(out)
}

/// Whether the zone's offset changes in `(from, until]`.
fn offset_changes(zone: &TimeZone, from: Timestamp, until: i64) -> bool {
    zone.following(from).next().is_some_and(|t| t.timestamp().as_second() <= until)
}

/// What one comparison found: the same fire times, a case skipped (by the documented
/// difference named), or a disagreement (described).
#[derive(Debug, PartialEq)]
enum Verdict {
    Same,
    Skipped(&'static str),
    Differ(String),
}

/// One triple: an expression (from the grammar), a zone (an index into [`ZONES`]), a
/// start in Unix seconds, moved to `before` seconds ahead of the zone's next offset change
/// when `near_transition`.
type Triple = (cron_grammar::Expr, usize, i64, bool, i64);

/// The triples drawn: the documented differences are told apart in [`compare`].
fn triple() -> impl Strategy<Value = Triple> {
    (cron_grammar::expr(CRONER), 0..ZONES.len(), 0..TABLES_END - 86_400, any::<bool>(), 0..2 * 86_400i64)
}

/// Compares slotcron and croner on one triple, in one direction.
fn compare((expr, zone, second, near_transition, before): &Triple, direction: Direction) -> Verdict {
    if expr.star_rule_matters() {
        return Verdict::Skipped("Vixie star rule");
    }
    if expr.range_ends_on_named_sunday() {
        return Verdict::Skipped("range ending on SUN");
    }
    let text = expr.render();
    let Ok(schedule) = CronSchedule::parse(&text) else {
        return Verdict::Skipped("slotcron refuses an expression that can never fire");
    };
    let parser = CronParser::builder().seconds(Seconds::Optional).build();
    let Ok(cron) = parser.parse(&text) else { return Verdict::Skipped("croner rejects") };
    let zone_name = ZONES[*zone];
    let zone = TimeZone::get(zone_name).unwrap();
    let mut from = Timestamp::from_second(*second).unwrap();
    if *near_transition && let Some(t) = zone.following(from).next() {
        from = Timestamp::from_second(t.timestamp().as_second() - before).unwrap();
    }
    let schedule = schedule.with_time_zone(zone.clone());
    let tz = Tz::from_str(zone_name).unwrap();
    let from_tz = tz.timestamp_opt(from.as_second(), 0).unwrap();
    let Some(theirs) = theirs(&cron, from_tz, direction) else { return Verdict::Skipped("croner gives up") };
    let ours = ours(&schedule, from, direction);
    let all = || ours.iter().chain(&theirs).copied();
    if zone.to_fixed_offset().is_err() && all().max().unwrap_or(from.as_second()) >= TABLES_END {
        return Verdict::Skipped("zone data after 2037");
    }
    if ours == theirs {
        return Verdict::Same;
    }
    let earliest = all().min().unwrap_or(from.as_second()).min(from.as_second());
    let latest = all().max().unwrap_or(from.as_second()).max(from.as_second());
    let offset_change = offset_changes(&zone, Timestamp::from_second(earliest).unwrap(), latest);
    if offset_change && matches!(direction, Direction::Prev) {
        return Verdict::Skipped("looking back across an offset change");
    }
    if offset_change && (cron.determine_job_type() == JobType::FixedTime) != schedule.is_fixed_time() {
        return Verdict::Skipped("fixed-time rule across an offset change");
    }
    Verdict::Differ(format!(
        "{text:?} in {zone_name} {direction:?} from {from}: ours {ours:?}, croner {theirs:?}"
    ))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn same_fire_times_as_croner(triple in triple()) {
        for direction in [Direction::Next, Direction::Prev] {
            let verdict = compare(&triple, direction);
            prop_assert!(!matches!(verdict, Verdict::Differ(_)), "{:?}", verdict);
        }
    }
}

/// A fixed sample of triples (deterministic), each compared both ways: every verdict
/// counted by kind and printed, and no disagreement.
#[test]
fn oracle_sample() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{RngAlgorithm, TestRng, TestRunner};
    let cases: usize =
        std::env::var("SLOTCRON_ORACLE_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(10_000);
    let rng = TestRng::deterministic_rng(RngAlgorithm::ChaCha);
    let mut runner = TestRunner::new_with_rng(ProptestConfig::default(), rng);
    let strategy = triple();
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    let mut differ = Vec::new();
    for _ in 0..cases {
        let triple = strategy.new_tree(&mut runner).unwrap().current();
        for direction in [Direction::Next, Direction::Prev] {
            let kind = match compare(&triple, direction) {
                Verdict::Same => "same".to_owned(),
                Verdict::Skipped(why) => format!("skipped: {why}"),
                Verdict::Differ(what) => {
                    differ.push(what);
                    "differ".to_owned()
                }
            };
            *counts.entry(format!("{direction:?}, {kind}")).or_default() += 1;
        }
    }
    println!("{cases} triples, each compared next and prev:");
    for (kind, n) in &counts {
        println!("  {kind}: {n}");
    }
    assert!(differ.is_empty(), "{} disagreements:\n{}", differ.len(), differ.join("\n"));
}
