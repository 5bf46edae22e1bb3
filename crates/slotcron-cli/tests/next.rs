//! `slotcron next` and `slotcron prev`: fire times, messages and exit statuses.

mod support;

use support::{run, stderr, stdout};

#[test]
fn weekday_office_hours_in_utc() {
    let out =
        run(&["next", "0 9-17 * * MON-FRI", "--tz", "UTC", "--from", "2026-12-04T16:50:00Z", "-n", "3"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "2026-12-04T17:00:00+00:00\n2026-12-07T09:00:00+00:00\n2026-12-07T10:00:00+00:00\n"
    );
}

#[test]
fn fixed_time_in_a_spring_forward_gap_fires_after_the_jump() {
    let out = run(&[
        "next",
        "30 2 * * *",
        "--tz",
        "America/New_York",
        "--from",
        "2024-03-09T12:00:00-05:00",
        "-n",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "2024-03-10T03:00:00-04:00\n2024-03-11T02:30:00-04:00\n");
}

#[test]
fn explain_prints_the_schedule_in_english_first() {
    let args = ["next", "*/15 9-17 * * MON-FRI", "--tz", "Europe/Paris", "--from", "2026-12-04T16:50:00Z"];
    let out = run(&[&args[..], &["-n", "1", "--explain"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let expected = "Every 15 minutes between 09:00 and 17:59 on Monday through Friday (Europe/Paris)\n\
                    2026-12-07T09:00:00+01:00\n";
    assert_eq!(stdout(&out), expected);
}

#[test]
fn default_count_is_five() {
    let out = run(&["next", "@hourly", "--from", "2026-01-01T00:00:00Z"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out).lines().count(), 5);
    assert_eq!(stdout(&out).lines().last(), Some("2026-01-01T05:00:00+00:00"));
}

#[test]
fn fewer_fire_times_are_printed_and_said_on_stderr() {
    // jiff's timestamps end with the year 9999: two New Years are left.
    let out = run(&["next", "0 0 1 1 *", "--from", "9997-06-01T00:00:00Z", "-n", "5"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "9998-01-01T00:00:00+00:00\n9999-01-01T00:00:00+00:00\n");
    assert!(stderr(&out).contains("only 2 fire time(s) after 9997-06-01T00:00:00Z"), "{}", stderr(&out));
}

#[test]
fn every_takes_days_of_24_hours() {
    let out = run(&["next", "@every 1d", "--from", "2026-01-01T12:00:00Z", "-n", "2", "--explain"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "Every day, anchored to the Unix epoch (UTC)\n2026-01-02T00:00:00+00:00\n2026-01-03T00:00:00+00:00\n"
    );
}

#[test]
fn every_in_months_says_why_it_is_refused() {
    let out = run(&["next", "@every 1mo"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains(r#""1mo" is in months or years, whose lengths vary"#), "{err}");
}

#[test]
fn invalid_expression_names_the_field_and_points_at_it() {
    let out = run(&["next", "0 25 * * *"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).is_empty());
    let err = stderr(&out);
    assert!(err.contains("hour field \"25\" (column 3): 25 is out of range 0-23"), "{err}");
    assert!(err.contains("  0 25 * * *\n    ^^\n"), "{err}");
}

#[test]
fn unknown_zone_exits_2() {
    let out = run(&["next", "* * * * *", "--tz", "Mars/Olympus_Mons"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown time zone \"Mars/Olympus_Mons\""), "{}", stderr(&out));
}

#[test]
fn malformed_from_exits_2() {
    let out = run(&["next", "* * * * *", "--from", "yesterday"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--from \"yesterday\""), "{}", stderr(&out));
}

#[test]
fn prev_looks_back_over_the_weekend_newest_first() {
    let out = run(&["prev", "0 9 * * 1-5", "--from", "2026-12-07T08:00:00Z", "--tz", "UTC", "-n", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "2026-12-04T09:00:00+00:00\n");
    let out = run(&["prev", "0 9 * * 1-5", "--from", "2026-12-07T09:00:00Z", "-n", "3"]);
    assert_eq!(
        stdout(&out),
        "2026-12-04T09:00:00+00:00\n2026-12-03T09:00:00+00:00\n2026-12-02T09:00:00+00:00\n"
    );
}

#[test]
fn prev_is_next_backwards_across_a_spring_forward_gap() {
    let from = ["--tz", "America/New_York", "--from", "2024-03-12T00:00:00-04:00", "-n", "3"];
    let out = run(&[&["prev", "30 2 * * *"][..], &from[..]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "2024-03-11T02:30:00-04:00\n2024-03-10T03:00:00-04:00\n2024-03-09T02:30:00-05:00\n",
        "the fire times next prints from 2024-03-09T12:00-05:00, and the one before them"
    );
}

#[test]
fn prev_of_an_invalid_expression_or_with_nothing_before_says_so() {
    let out = run(&["prev", "0 25 * * *"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).starts_with("slotcron prev: invalid cron expression"), "{}", stderr(&out));
    // The earliest instant there is: -9999-01-02T01:59:59Z.
    let out = run(&["prev", "0 12 * * *", "--from=-009999-01-03T00:00:00Z", "-n", "3"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "-9999-01-02T12:00:00+00:00\n");
    assert!(stderr(&out).contains("only 1 fire time(s) before"), "{}", stderr(&out));
}
