//! `[[calendar]]` and `exclude` in a jobs file: `check` and `next --file` leave out the
//! instants a calendar excludes and say which; bad calendars are refused at load, each
//! problem naming the calendar, the field and the reason.

mod support;

use support::{run_in, scratch, stderr, stdout, write};

const JOBS: &str = r#"timezone = "Europe/Berlin"

[[calendar]]
name = "holidays"
dates = ["2026-12-25", "2027-01-01"]
ranges = ["2026-12-31T12:00/2027-01-01T00:00"]
cron = ["* * * * 0,6"]

[[job]]
name = "report"
cron = "0 9 * * *"
exclude = ["holidays"]
command = "true"
"#;

#[test]
fn next_of_a_job_skips_its_holidays_and_weekends_and_explains_which_calendar_removed_them() {
    let dir = scratch("calendar_next");
    write(&dir, "jobs.toml", JOBS);
    let args =
        ["next", "--file", "jobs.toml", "--job", "report", "--from", "2026-12-24T12:00:00Z", "-n", "2"];
    let out = run_in(&dir, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "2026-12-28T09:00:00+01:00\n2026-12-29T09:00:00+01:00\n");
    let out = run_in(&dir, &[&args[..], &["--explain"]].concat());
    let expected = "At 09:00 (Europe/Berlin), except in holidays\n\
                    # 2026-12-25T09:00:00+01:00 excluded by holidays\n\
                    # 2026-12-26T09:00:00+01:00 excluded by holidays\n\
                    # 2026-12-27T09:00:00+01:00 excluded by holidays\n\
                    2026-12-28T09:00:00+01:00\n2026-12-29T09:00:00+01:00\n";
    assert_eq!(stdout(&out), expected);
    let out = run_in(
        &dir,
        &["prev", "--file", "jobs.toml", "--job", "report", "--from", "2026-12-28T00:00:00Z", "-n", "1"],
    );
    assert_eq!(stdout(&out), "2026-12-24T09:00:00+01:00\n");
    let out = run_in(&dir, &["check", "jobs.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("At 09:00 (Europe/Berlin), except in holidays"), "{}", stdout(&out));
    let out = run_in(&dir, &["next", "--file", "jobs.toml", "--job", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no job named \"nope\" in jobs.toml (its jobs: report)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_bad_calendar_or_an_unknown_one_is_refused_naming_the_calendar_the_field_and_the_reason() {
    let lines = [
        "jobs.toml:3: calendar.dates: calendar \"holidays\": \"2026-13-25\" is not a date like 2026-12-25",
        "jobs.toml:4: calendar.ranges: calendar \"holidays\": 2026-12-24T12:00:00 is not later than 2026-12-27T00:00:00",
        "jobs.toml:5: calendar.cron: calendar \"holidays\": \"61 * * * *\": minute field \"61\"",
        "jobs.toml:10: job \"report\": exclude: no [[calendar]] is named \"holidayz\" (defined: holidays)",
    ];
    assert_check_refuses(
        "calendar_problems",
        r#"[[calendar]]
name = "holidays"
dates = ["2026-13-25"]
ranges = ["2026-12-27T00:00/2026-12-24T12:00"]
cron = ["61 * * * *"]

[[job]]
name = "report"
cron = "0 9 * * *"
exclude = ["holidayz"]
command = "true"
"#,
        &lines,
    );
}

#[test]
fn a_job_with_calendars_is_not_stored_in_the_state_and_the_reason_is_given() {
    let dir = scratch("calendar_state");
    write(&dir, "jobs.toml", JOBS);
    let out = run_in(&dir, &["jobs", "put", "jobs.toml", "--state", "sqlite:state.db"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("job \"report\": schedule: jobs with exclude (calendars) cannot be kept in the state"),
        "{err}"
    );
}

#[test]
fn every_problem_of_calendars_is_listed_at_once_each_naming_its_calendar() {
    let lines = [
        "jobs.toml:3: calendar.dates: calendar \"c1\": \"2026-02-30\" is not a date like 2026-12-25",
        "jobs.toml:6: calendar.name: a [[calendar]] named \"c1\" is defined twice",
        "jobs.toml:7: calendar.cron: calendar \"c1\": expected a list of cron expressions",
        "jobs.toml:10: calendar.name: must not be empty",
        "jobs.toml:13: calendar.name: \"bad name!\": a calendar name is letters, digits, '-', '_' and '.', found ' '",
        "job \"report\": run_on_start: cannot be combined with exclude",
    ];
    assert_check_refuses(
        "calendar_all_problems",
        r#"[[calendar]]
name = "c1"
dates = ["2026-02-30"]

[[calendar]]
name = "c1"
cron = "* * * * 0,6"

[[calendar]]
name = ""

[[calendar]]
name = "bad name!"
cron = ["@every 45s"]

[[job]]
name = "report"
every = "10s"
exclude = ["c1"]
run_on_start = true
command = "true"
"#,
        &lines,
    );
}

#[test]
fn next_of_a_job_that_runs_after_the_start_says_it_has_no_fire_time_to_list() {
    let dir = scratch("calendar_after");
    write(&dir, "jobs.toml", "[[job]]\nname = \"warm\"\nafter = \"3s\"\ncommand = \"true\"\n");
    let out = run_in(&dir, &["next", "--file", "jobs.toml", "--job", "warm"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("job \"warm\" runs once, 3s after the daemon first starts: it has no fire time to list"),
        "{err}"
    );
}

/// `slotcron check` of a jobs file holding `text` exits 2 and lists each of `lines` among
/// its problems.
fn assert_check_refuses(name: &str, text: &str, lines: &[&str]) {
    let dir = scratch(name);
    write(&dir, "jobs.toml", text);
    let out = run_in(&dir, &["check", "jobs.toml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    for line in lines {
        assert!(err.contains(line), "missing {line:?} in:\n{err}");
    }
}
