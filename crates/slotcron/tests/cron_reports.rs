//! The real-world cron reports of issue 3, one test each: DST days in Europe and New
//! York, the Vixie day rule, `#`, `LW`, impossible and never-matching days, and five
//! fields never read as seconds-first. (The London scheduler that keeps its offset
//! across a DST change is `zoned_job_keeps_the_right_offset_across_a_dst_change` in
//! `engine.rs`, on the manual clock.)

use jiff::civil::{Date, Weekday};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};
use slotcron::{CronErrorKind, CronField};
use slotcron::{CronSchedule, Schedule};

fn schedule(expression: &str, zone: &str) -> CronSchedule {
    CronSchedule::parse(expression).unwrap().with_time_zone(TimeZone::get(zone).unwrap())
}

/// The next `n` fire times after `from`, as RFC 3339 in the schedule's zone.
fn next(expression: &str, zone: &str, from: &str, n: usize) -> Vec<String> {
    let schedule = schedule(expression, zone);
    let mut at: Timestamp = from.parse().unwrap();
    let mut out = Vec::new();
    for _ in 0..n {
        let Some(fire) = schedule.next_after(at) else { break };
        out.push(fire.display_with_offset(schedule.time_zone().to_offset(fire)).to_string());
        at = fire;
    }
    out
}

/// The dates on which `expression` fires (in UTC) from `first` up to, not including,
/// `end`.
fn fire_dates(expression: &str, first: Date, end: Date) -> Vec<Date> {
    let schedule = schedule(expression, "UTC");
    let midnight = TimeZone::UTC.to_timestamp(first.at(0, 0, 0, 0)).unwrap();
    let mut at = Timestamp::from_second(midnight.as_second() - 1).unwrap();
    let mut dates = Vec::new();
    while let Some(fire) = schedule.next_after(at) {
        let date = TimeZone::UTC.to_datetime(fire).date();
        if date >= end {
            break;
        }
        dates.push(date);
        at = fire;
    }
    dates
}

/// Every date from `first` up to, not including, `end` that `keep` accepts.
fn dates_where(first: Date, end: Date, keep: impl Fn(Date) -> bool) -> Vec<Date> {
    first.series(1.day()).take_while(|d| *d < end).filter(|d| keep(*d)).collect()
}

fn date(s: &str) -> Date {
    s.parse().unwrap()
}

#[test]
fn berlin_fall_back_day_fires_two_oclock_once_at_the_first_occurrence() {
    assert_eq!(
        next("0 2 * * *", "Europe/Berlin", "2024-10-26T12:00:00+02:00", 2),
        ["2024-10-27T02:00:00+02:00", "2024-10-28T02:00:00+01:00"]
    );
}

#[test]
fn zurich_spring_forward_day_fires_right_after_the_gap_not_the_next_day() {
    assert_eq!(
        next("30 2 * * *", "Europe/Zurich", "2024-03-30T12:00:00+01:00", 2),
        ["2024-03-31T03:00:00+02:00", "2024-04-01T02:30:00+02:00"]
    );
}

#[test]
fn new_york_hourly_across_the_gap_never_repeats_an_instant() {
    assert_eq!(
        next("0 * * * *", "America/New_York", "2024-03-10T00:30:00-05:00", 3),
        ["2024-03-10T01:00:00-05:00", "2024-03-10T03:00:00-04:00", "2024-03-10T04:00:00-04:00"]
    );
}

#[test]
fn restricted_day_of_month_and_day_of_week_are_ored() {
    let (first, end) = (date("2024-01-01"), date("2025-01-01"));
    let want = dates_where(first, end, |d| d.day() <= 7 || d.weekday() == Weekday::Monday);
    assert_eq!(fire_dates("0 0 1-7 * 1", first, end), want);
}

#[test]
fn a_day_field_starting_with_a_star_is_anded() {
    let (first, end) = (date("2024-01-01"), date("2025-01-01"));
    let want = dates_where(first, end, |d| d.day() % 2 == 1 && d.weekday() == Weekday::Monday);
    assert!(!want.is_empty());
    assert_eq!(fire_dates("0 0 */2 * 1", first, end), want);
}

#[test]
fn fifth_monday_fires_only_on_fifth_mondays_over_decades() {
    let (first, end) = (date("2024-01-01"), date("2064-01-01"));
    let want = dates_where(first, end, |d| d.weekday() == Weekday::Monday && d.day() > 28);
    assert!(want.len() > 100);
    assert_eq!(fire_dates("0 12 * * MON#5", first, end), want);
}

#[test]
fn last_weekday_of_each_month_in_2024() {
    let want = [
        "2024-01-31",
        "2024-02-29",
        "2024-03-29",
        "2024-04-30",
        "2024-05-31",
        "2024-06-28",
        "2024-07-31",
        "2024-08-30",
        "2024-09-30",
        "2024-10-31",
        "2024-11-29",
        "2024-12-31",
    ]
    .map(date);
    assert_eq!(fire_dates("0 0 LW * *", date("2024-01-01"), date("2025-01-01")), want);
}

#[test]
fn april_31st_is_rejected_when_parsed() {
    let error = CronSchedule::parse("0 0 31 4 *").unwrap_err();
    assert_eq!(error.field(), Some(CronField::DayOfMonth));
    assert_eq!(error.kind(), &CronErrorKind::ImpossibleDay { day: 31 });
    assert_eq!(error.token(), "31");
}

#[test]
fn a_day_rule_that_can_never_be_met_yields_no_fire_time() {
    let schedule = schedule("0 0 */31 * MON#5", "UTC");
    assert_eq!(schedule.next_after("2024-01-01T00:00:00Z".parse().unwrap()), None);
    assert_eq!(schedule.next_after(Timestamp::MIN), None);
}

#[test]
fn five_fields_are_minute_first_and_six_fields_second_first() {
    assert_eq!(
        next("30 6 * * *", "UTC", "2024-05-01T00:00:00Z", 3),
        ["2024-05-01T06:30:00+00:00", "2024-05-02T06:30:00+00:00", "2024-05-03T06:30:00+00:00"]
    );
    assert_eq!(
        next("30 6 * * * *", "UTC", "2024-05-01T00:00:00Z", 3),
        ["2024-05-01T00:06:30+00:00", "2024-05-01T01:06:30+00:00", "2024-05-01T02:06:30+00:00"]
    );
}

/// `slotcron next "30 2 * * *" --tz America/New_York --from 2024-03-09T12:00:00-05:00 -n 2`
#[test]
fn next_in_new_york_across_spring_forward() {
    assert_eq!(
        next("30 2 * * *", "America/New_York", "2024-03-09T12:00:00-05:00", 2),
        ["2024-03-10T03:00:00-04:00", "2024-03-11T02:30:00-04:00"]
    );
}

/// `slotcron next "30 1 * * *" --tz America/New_York --from 2024-11-02T12:00:00-04:00 -n 2`
#[test]
fn next_in_new_york_across_fall_back() {
    assert_eq!(
        next("30 1 * * *", "America/New_York", "2024-11-02T12:00:00-04:00", 2),
        ["2024-11-03T01:30:00-04:00", "2024-11-04T01:30:00-05:00"]
    );
}
