//! Properties of `next_after` over random valid expressions (from `cron_grammar`), the
//! zones of the conformance vectors and instants between 1970 and 2200, half of them
//! just before a DST change:
//!
//! - the result is after the start, and successive calls strictly increase;
//! - the result is a fire time by the grammar's own reading of the rules: its wall time
//!   matches (for a fixed-time job, at its first occurrence), or, for a fixed-time job,
//!   it is the first instant after a gap whose skipped wall time matches;
//! - no fire time is skipped: a brute-force walk over every minute (every second for six
//!   fields) of a bounded window after the start finds the same first fire time.

mod cron_grammar;

use cron_grammar::zones::ZONES;
use cron_grammar::{Dialect, Expr};
use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::{AmbiguousOffset, TimeZone};
use proptest::prelude::*;
use slotcron::CronErrorKind;
use slotcron::{CronSchedule, Schedule};

/// 1970-01-01 and 2200-01-01 in seconds.
const FIRST: i64 = 0;
const LAST: i64 = 7_258_118_400;

/// A zone and a start instant: uniform over 1970-2200, or up to two days before one of
/// the zone's transitions.
fn zone_and_start() -> impl Strategy<Value = (TimeZone, Timestamp)> {
    (0..ZONES.len(), FIRST..LAST, any::<bool>(), 0..2 * 86_400i64).prop_map(|(zone, second, near, before)| {
        let zone = TimeZone::get(ZONES[zone]).unwrap();
        let mut start = Timestamp::from_second(second).unwrap();
        if near && let Some(transition) = zone.following(start).next() {
            start = Timestamp::from_second(transition.timestamp().as_second() - before).unwrap();
        }
        (zone, start)
    })
}

/// The parsed expression, or `None` for a day no selected month has (the one
/// rejection the grammar can produce).
fn parse(expr: &Expr) -> Option<CronSchedule> {
    match CronSchedule::parse(&expr.render()) {
        Ok(schedule) => Some(schedule),
        Err(error) if matches!(error.kind(), CronErrorKind::ImpossibleDay { .. }) => None,
        Err(error) => panic!("{:?} is valid but rejected: {error}", expr.render()),
    }
}

/// The offset change at `at`, as (before, after), if one happens exactly then.
fn transition_at(zone: &TimeZone, at: Timestamp) -> Option<(jiff::tz::Offset, jiff::tz::Offset)> {
    let before = zone.to_offset(Timestamp::from_second(at.as_second() - 1).ok()?);
    let after = zone.to_offset(at);
    (before != after).then_some((before, after))
}

/// Whether `at` is a fire time of `expr` in `zone`, by the rules of docs/design.md.
fn is_fire_time(expr: &Expr, zone: &TimeZone, at: Timestamp) -> bool {
    let wall = zone.to_datetime(at);
    if expr.matches(wall) {
        if !expr.fixed_time() {
            return true;
        }
        // A fixed-time job fires at the first occurrence of a repeated wall time.
        match zone.to_ambiguous_timestamp(wall).offset() {
            AmbiguousOffset::Fold { before, .. } if zone.to_offset(at) != before => {}
            _ => return true,
        }
    }
    // A fixed-time job whose wall time a gap skips fires at the gap's end.
    match transition_at(zone, at) {
        Some((before, after)) if expr.fixed_time() && after > before => {
            let step = if expr.has_seconds() { 1 } else { 60 };
            let (first, end) = (before.to_datetime(at), after.to_datetime(at));
            walls(first, end, step).any(|wall| expr.matches(wall))
        }
        _ => false,
    }
}

/// Wall times from `first` (included) to `end` (excluded) every `step` seconds.
fn walls(first: DateTime, end: DateTime, step: i64) -> impl Iterator<Item = DateTime> {
    let step = jiff::SignedDuration::from_secs(step);
    std::iter::successors(Some(first), move |wall| wall.checked_add(step).ok()).take_while(move |w| *w < end)
}

/// The first fire time after `after` up to `until` (included), by brute force.
fn brute_force_next(expr: &Expr, zone: &TimeZone, after: Timestamp, until: Timestamp) -> Option<Timestamp> {
    let step = if expr.has_seconds() { 1 } else { 60 };
    let first = (after.as_second().div_euclid(step) + 1) * step;
    (first..=until.as_second())
        .step_by(step as usize)
        .map(|second| Timestamp::from_second(second).unwrap())
        .find(|&at| is_fire_time(expr, zone, at))
}

/// How far the brute-force walk looks: two days by minutes, two hours by seconds.
fn window(expr: &Expr) -> i64 {
    if expr.has_seconds() { 2 * 3600 } else { 2 * 86_400 }
}

/// Checks four successive `next_after` calls from `start` against the brute force.
fn check(expr: &Expr, zone: &TimeZone, start: Timestamp) -> Result<(), TestCaseError> {
    let Some(schedule) = parse(expr) else { return Ok(()) };
    let schedule = schedule.with_time_zone(zone.clone());
    let text = expr.render();
    let mut after = start;
    for _ in 0..4 {
        let next = schedule.next_after(after);
        let until = Timestamp::from_second(after.as_second() + window(expr)).unwrap();
        let brute = brute_force_next(expr, zone, after, next.map_or(until, |n| n.min(until)));
        match next {
            Some(next) => {
                prop_assert!(next > after, "{text:?}: {next} is not after {after}");
                prop_assert!(
                    is_fire_time(expr, zone, next),
                    "{text:?} in {zone:?}: {} is not a fire time",
                    zone.to_datetime(next)
                );
                let want = if next <= until { Some(next) } else { None };
                prop_assert_eq!(brute, want, "{:?} in {:?} after {}", text, zone.iana_name(), after);
                after = next;
            }
            None => {
                prop_assert_eq!(brute, None, "{:?} in {:?} after {}", text, zone.iana_name(), after);
                break;
            }
        }
    }
    Ok(())
}

/// A zone with DST changes, one of its transitions between 1970 and 2200, and the hours
/// of the wall clock at that transition before and after it (the skipped or repeated
/// hour among them).
fn zone_and_transition() -> impl Strategy<Value = (TimeZone, Timestamp, [u8; 2])> {
    (1..ZONES.len(), FIRST..LAST).prop_filter_map("a zone with DST", |(zone, second)| {
        let zone = TimeZone::get(ZONES[zone]).unwrap();
        let transition = zone.following(Timestamp::from_second(second).unwrap()).next()?.timestamp();
        let (before, after) = transition_at(&zone, transition)?;
        let hours = [before.to_datetime(transition).hour() as u8, after.to_datetime(transition).hour() as u8];
        Some((zone, transition, hours))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn next_after_is_the_first_fire_time_after_the_start(
        expr in cron_grammar::expr(Dialect::SLOTCRON),
        (zone, start) in zone_and_start(),
    ) {
        check(&expr, &zone, start)?;
    }

    /// Daily expressions whose hours include those of a DST change, from up to a day
    /// before it: the gap and fold rules at work.
    #[test]
    fn next_after_follows_the_dst_rules(
        mut expr in cron_grammar::expr(Dialect::SLOTCRON),
        (zone, transition, hours) in zone_and_transition(),
        before in 1..86_400i64,
    ) {
        expr.aim_at(&hours);
        check(&expr, &zone, Timestamp::from_second(transition.as_second() - before).unwrap())?;
    }
}
