//! Differential test against the `croner` crate: on random expressions that both accept
//! (from `cron_grammar`, limited to the syntax croner reads the same way), in the zones
//! of the conformance vectors, both give the same next three fire times.
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
//! - **croner's own limits**: an expression croner rejects (e.g. a step wider than the
//!   field) or a search it gives up on is not compared.

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

/// Up to three fire times after `from`, as Unix seconds.
fn ours(schedule: &CronSchedule, from: Timestamp) -> Vec<i64> {
    std::iter::successors(schedule.next_after(from), |&at| schedule.next_after(at))
        .take(3)
        .map(|at| at.as_second())
        .collect()
}

/// croner's next three fire times, or `None` where it gives up.
fn theirs(cron: &Cron, from: DateTime<Tz>) -> Option<Vec<i64>> {
    let mut out = Vec::new();
    let mut at = from;
    for _ in 0..3 {
        at = cron.find_next_occurrence(&at, false).ok()?;
        out.push(at.timestamp());
    }
    Some(out)
}

/// Whether the zone's offset changes in `(from, until]`.
fn offset_changes(zone: &TimeZone, from: Timestamp, until: i64) -> bool {
    zone.following(from).next().is_some_and(|t| t.timestamp().as_second() <= until)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn same_fire_times_as_croner(
        expr in cron_grammar::expr(CRONER),
        zone in 0..ZONES.len(),
        second in 0..TABLES_END - 86_400,
        near_transition in any::<bool>(),
        before in 0..2 * 86_400i64,
    ) {
        prop_assume!(!expr.star_rule_matters() && !expr.range_ends_on_named_sunday());
        let text = expr.render();
        let Ok(schedule) = CronSchedule::parse(&text) else { return Ok(()) };
        let parser = CronParser::builder().seconds(Seconds::Optional).build();
        let Ok(cron) = parser.parse(&text) else { return Ok(()) };

        let zone_name = ZONES[zone];
        let zone = TimeZone::get(zone_name).unwrap();
        let mut from = Timestamp::from_second(second).unwrap();
        if near_transition && let Some(t) = zone.following(from).next() {
            from = Timestamp::from_second(t.timestamp().as_second() - before).unwrap();
        }
        let schedule = schedule.with_time_zone(zone.clone());
        let tz = Tz::from_str(zone_name).unwrap();
        let from_tz = tz.timestamp_opt(from.as_second(), 0).unwrap();

        let Some(theirs) = theirs(&cron, from_tz) else { return Ok(()) };
        let ours = ours(&schedule, from);
        let last = ours.iter().chain(&theirs).copied().max().unwrap_or(from.as_second());
        prop_assume!(zone.to_fixed_offset().is_ok() || last < TABLES_END);
        let croner_fixed = cron.determine_job_type() == JobType::FixedTime;
        if croner_fixed != schedule.is_fixed_time() {
            prop_assume!(!offset_changes(&zone, from, last));
        }
        prop_assert_eq!(ours, theirs, "{:?} in {} after {}", text, zone_name, from);
    }
}
