//! `slotcron check`: the TOML jobs file and the crontab, as a user sees them — job
//! listings, and every problem with its file, line, job and field.

mod support;

use support::{run_in, scratch, slotcron, stderr, stdout, write};

/// Runs `slotcron check NAME` on a file holding `text`, in the zone UTC (`TZ=UTC`: crontab
/// lines without `CRON_TZ=` are read in it, whatever this machine's zone and its name, such
/// as `Etc/UTC`); (exit code, stdout, stderr).
fn check(test: &str, name: &str, text: &str) -> (Option<i32>, String, String) {
    let dir = scratch(test);
    write(&dir, name, text);
    let out = slotcron().args(["check", name]).env("TZ", "UTC").current_dir(&dir).output().unwrap();
    (out.status.code(), stdout(&out), stderr(&out))
}

/// The listing row of job `name`: its columns split on runs of two or more spaces.
fn row<'a>(listing: &'a str, name: &str) -> Vec<&'a str> {
    let line = listing
        .lines()
        .find(|line| line.split("  ").any(|cell| cell.trim() == name))
        .unwrap_or_else(|| panic!("no job {name} in:\n{listing}"));
    line.split("  ").map(str::trim).filter(|cell| !cell.is_empty()).collect()
}

/// The job names a crontab listing shows, in order.
fn names(listing: &str) -> Vec<String> {
    listing
        .lines()
        .filter_map(|line| {
            let mut cells = line.split_whitespace();
            cells.next()?.parse::<usize>().ok()?;
            cells.next().map(str::to_owned)
        })
        .collect()
}

#[test]
fn reports_all_four_problems_and_exits_2() {
    let (code, out, err) = check(
        "four_problems",
        "jobs.toml",
        r#"timezone = "Europe/Berlin"

[[job]]
name = "report"
cron = "0 25 * * *"
command = "echo report"

[[job]]
name = "standup"
cron = "0 9 * * MON-FRI"
timezone = "Europe/Berln"
command = "echo standup"

[[job]]
name = "sync"
every = "10s"
cron = "*/5 * * * *"
command = "echo sync"

[[job]]
name = "cleanup"
every = "1m"
command = "echo one"

[[job]]
name = "cleanup"
after = "5s"
command = "echo two"
"#,
    );
    assert_eq!(code, Some(2));
    assert!(out.is_empty(), "{out}");
    let expected = [
        r#"jobs.toml:5: job "report": cron: hour field "25" (column 3): 25 is out of range 0-23"#,
        r#"jobs.toml:11: job "standup": timezone: unknown time zone "Europe/Berln""#,
        r#"jobs.toml:17: job "sync": cron: cron and every (line 16) both set; a job has exactly one of every, cron, at, after, run_after"#,
        r#"jobs.toml:26: job "cleanup": name: the job on line 21 has the same name; names must be unique"#,
    ];
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 5, "{err}");
    for (line, expected) in lines.iter().zip(expected) {
        assert!(line.starts_with(expected), "expected {expected:?}, got {line:?}");
    }
    assert_eq!(lines[4], "4 problems in jobs.toml");
}

/// A job with a duplicate name is not loaded, and its other problems are reported too.
#[test]
fn a_duplicate_job_has_its_other_problems_reported_too() {
    let (code, _, err) = check(
        "duplicate_and_more",
        "jobs.toml",
        r#"[[job]]
name = "dup"
every = "1m"
command = "echo one"

[[job]]
name = "dup"
every = "0s"
command = "echo two"
"#,
    );
    assert_eq!(code, Some(2));
    assert!(err.contains(r#"jobs.toml:7: job "dup": name: the job on line 2 has the same name"#), "{err}");
    assert!(
        err.contains(r#"jobs.toml:8: job "dup": every: "#),
        "the duplicate's bad `every` is reported: {err}"
    );
    assert!(err.contains("2 problems in jobs.toml"), "{err}");
}

#[test]
fn valid_jobs_file_lists_every_job_with_its_next_fire_time() {
    let (code, out, err) = check(
        "valid_toml",
        "jobs.toml",
        r#"timezone = "America/New_York"

[[job]]
name = "heartbeat"
every = "10s"
run_on_start = true
command = "echo alive"

[[job]]
name = "nightly"
cron = "30 2 * * *"
timeout = "1h30m"
command = "echo nightly"

[[job]]
name = "tokyo-report"
cron = "0 9 * * *"
timezone = "Asia/Tokyo"
command = "echo report"

[[job]]
name = "launch"
at = "2020-01-01T00:00:00Z"
command = "echo launch"

[[job]]
name = "warm-up"
after = "1m30s"
command = "echo warm"
"#,
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        row(&out, "heartbeat")[..],
        [
            "3",
            "heartbeat",
            "every 10s",
            row(&out, "heartbeat")[3],
            row(&out, "heartbeat")[4],
            "Every 10 seconds, anchored to the Unix epoch"
        ]
    );
    // Beside the next fire time, within 10 s: how far off it is, in seconds.
    let next_in = row(&out, "heartbeat")[4];
    assert!(next_in == "now" || next_in.starts_with("in ") && next_in.ends_with('s'), "{out}");
    let nightly = row(&out, "nightly");
    assert_eq!(nightly[2], r#"cron "30 2 * * *" in America/New_York"#);
    assert!(nightly[3].ends_with("T02:30:00-05:00") || nightly[3].ends_with("T02:30:00-04:00"), "{out}");
    assert_eq!(nightly[5], "At 02:30 (America/New_York)");
    let tokyo = row(&out, "tokyo-report");
    assert_eq!(tokyo[2], r#"cron "0 9 * * *" in Asia/Tokyo"#);
    assert!(tokyo[3].ends_with("T09:00:00+09:00"), "{out}");
    assert_eq!(row(&out, "launch")[3..], ["at start-up", "-", "Once, at 2020-01-01T00:00:00Z"]);
    assert_eq!(
        row(&out, "warm-up")[2..],
        ["after 1m 30s", "1m 30s after start-up", "-", "Once, 1m 30s after the daemon first starts"]
    );
    assert!(out.ends_with("\njobs.toml: 5 job(s) in a TOML jobs file, all valid\n"), "{out}");
}

#[test]
fn every_problem_of_a_toml_file_is_listed_key_by_key() {
    let (code, out, err) = check(
        "every_toml_problem",
        "jobs.toml",
        r#"timezone = "UTC"
colour = "red"

[coordination]
redis = "redis://10.0.0.5:6379"
prefx = "myapp:"

[[job]]
name = "a"
every = "10s"
comand = "true"

[[job]]
name = "b"
every = "10s"
timeout = 5
run_on_start = "yes"
command = "true"

[[job]]
cron = 5
command = ["true"]

[[job]]
name = "d"
every = "1m"
on_every_replica = 1
command = "true"
[job.labels]
X = "1"
"#,
    );
    assert_eq!(code, Some(2), "{out}");
    assert!(out.is_empty(), "{out}");
    let job_keys = "name, every, at_time, cron, at, after, run_after, command, timeout, run_on_start, on_every_replica, \
                    timezone, misfire, misfire_cap, grace, env, working_dir, attempts, backoff, \
                    backoff_multiplier, backoff_max, overlap, jitter, on_failure, on_interrupt, enabled, start, end, exclude, on, max_runs, pause_after_failures";
    let expected = [
        "jobs.toml:2: colour: unknown key; the top level takes timezone, env, working_dir, shutdown_timeout, \
         max_concurrent_runs, on_failure, coordination, admin, history, calendar, job"
            .to_owned(),
        "jobs.toml:6: coordination.prefx: unknown key; did you mean prefix?".to_owned(),
        r#"jobs.toml:11: job "a": comand: unknown key; did you mean command?"#.to_owned(),
        r#"jobs.toml:16: job "b": timeout: expected a duration string like "90s", found integer 5"#.to_owned(),
        r#"jobs.toml:17: job "b": run_on_start: expected true or false, found string "yes""#.to_owned(),
        "jobs.toml:20: job #3: name: missing: every [[job]] needs a name".to_owned(),
        r#"jobs.toml:21: job #3: cron: expected a cron expression string like "0 3 * * *", found integer 5"#.to_owned(),
        "jobs.toml:22: job #3: command: expected a shell command string, found an array".to_owned(),
        r#"jobs.toml:27: job "d": on_every_replica: expected true or false, found integer 1"#.to_owned(),
        format!(r#"jobs.toml:29: job "d": labels: unknown key; a [[job]] table takes {job_keys}"#),
        "10 problems in jobs.toml".to_owned(),
    ];
    assert_eq!(err.lines().collect::<Vec<_>>(), expected, "{err}");
}

/// A job whose name is not a string is named by its place among the `[[job]]` tables;
/// a duration too large for any field says so in our words, naming the job and field.
#[test]
fn a_job_without_a_string_name_is_named_by_its_number_and_a_huge_duration_is_too_large() {
    let (code, _, err) = check(
        "job_number",
        "jobs.toml",
        "[[job]]\nname = \"a\"\nevery = \"100000000d\"\ncommand = \"true\"\n\n\
         [[job]]\nname = \"b\"\nevery = \"1h\"\ntimeout = \"999999999999h\"\ncommand = \"true\"\n\n\
         [[job]]\nname = 5\nevery = \"1h\"\ncommand = \"true\"\n",
    );
    assert_eq!(code, Some(2));
    let expected = [
        r#"jobs.toml:3: job "a": every: "100000000d" is too large: a job's durations are at most 100 years (36500d)"#,
        r#"jobs.toml:9: job "b": timeout: "999999999999h" is too large: a job's durations are at most 100 years (36500d)"#,
        r#"jobs.toml:13: job #3: name: expected a string like "backup", found integer 5"#,
        "3 problems in jobs.toml",
    ];
    assert_eq!(err.lines().collect::<Vec<_>>(), expected, "{err}");
}

#[test]
fn a_single_job_table_and_syntax_errors_are_reported() {
    let (code, _, err) = check("single_job_table", "jobs.toml", "[job]\nname = \"a\"\n");
    assert_eq!(code, Some(2));
    assert!(
        err.starts_with(
            "jobs.toml:1: job: expected [[job]] tables (write [[job]], not [job]), found a table"
        ),
        "{err}"
    );

    let (code, _, err) =
        check("syntax_errors", "jobs.toml", "[[job]]\nname = \"a\"\nname = \"b\"\nevery = 10s\n");
    assert_eq!(code, Some(2));
    let duplicate = "jobs.toml:3: duplicate key `name`: a table sets each key once";
    assert!(err.lines().any(|line| line == duplicate), "{err}");
    assert!(err.lines().any(|line| line.starts_with("jobs.toml:4: ")), "{err}");
    // A string left open is said in plain words, on its line.
    let (code, _, err) =
        check("unclosed", "jobs.toml", "[[job]]\nname = \"a\nevery = \"1m\"\ncommand = \"true\"\n");
    assert_eq!(code, Some(2));
    let unclosed =
        r#"jobs.toml:2: unclosed string: a closing `"` is missing (a "..." string ends on its line)"#;
    assert!(err.lines().any(|line| line == unclosed), "{err}");

    // One mistake is one problem, however often the recovering parser meets it.
    let (code, _, err) = check(
        "syntax_once",
        "jobs.toml",
        "[[job]]\nname = \"a\"\nevery = \"1s\"\ncommand = \"true\"\n<script> = 1\n",
    );
    assert_eq!(code, Some(2));
    assert_eq!(err.lines().filter(|line| line.starts_with("jobs.toml:5: ")).count(), 1, "{err}");
    assert!(err.contains("1 problem in jobs.toml"), "{err}");
}

#[test]
fn at_takes_an_unquoted_date_time_and_durations_take_days() {
    let (code, out, err) = check(
        "at_and_days",
        "jobs.toml",
        r#"timezone = "Europe/Berlin"

[[job]]
name = "offset"
at = 2026-12-24T18:00:00+01:00
command = "true"

[[job]]
name = "local"
at = 2026-12-24T18:00:00
command = "true"

[[job]]
name = "local-string"
at = "2026-12-24T12:00:00"
timezone = "America/New_York"
command = "true"

[[job]]
name = "every-other-day"
every = "2d"
timeout = "1d12h"
grace = "1d"
command = "true"
"#,
    );
    assert_eq!(code, Some(0), "{err}");
    for name in ["offset", "local", "local-string"] {
        assert_eq!(row(&out, name)[2], "at 2026-12-24T17:00:00Z", "{out}");
    }
    assert_eq!(row(&out, "every-other-day")[2], "every 2d", "{out}");
}

#[test]
fn the_extension_is_read_in_any_case() {
    let (code, out, err) =
        check("upper_case_toml", "jobs.TOML", "[[job]]\nname = \"a\"\nevery = \"1m\"\ncommand = \"true\"\n");
    assert_eq!(code, Some(0), "{err}");
    assert!(out.ends_with("jobs.TOML: 1 job(s) in a TOML jobs file, all valid\n"), "{out}");
}

#[test]
fn toml_field_problems_name_job_field_and_line() {
    let (code, _, err) = check(
        "toml_fields",
        "jobs.toml",
        r#"[[job]]
name = "a"
cron = "*/5 * * * *"
run_on_start = true
command = "true"

[[job]]
name = "b"
every = "soon"
command = "true"

[[job]]
name = "c"
at = "tomorrow"
command = "true"

[[job]]
name = "d"
every = "1m"
timezone = "UTC"
timeout = "0s"
command = "true"

[[job]]
name = "e"
every = "1m"
"#,
    );
    assert_eq!(code, Some(2));
    for expected in [
        r#"jobs.toml:4: job "a": run_on_start: only interval schedules (every, @every) can run on start"#,
        r#"jobs.toml:9: job "b": every: "soon" is not a duration"#,
        r#"jobs.toml:14: job "c": at: "tomorrow" is not an RFC 3339 date-time"#,
        r#"jobs.toml:20: job "d": timezone: applies to cron and at schedules only, and this job's schedule is every"#,
        r#"jobs.toml:24: job "e": command: missing: the shell command to run"#,
    ] {
        assert!(err.lines().any(|line| line.starts_with(expected)), "missing {expected:?} in:\n{err}");
    }
}

#[test]
fn grace_is_at_most_100_years() {
    let toml = "[[job]]\nname = \"late\"\nevery = \"1m\"\ngrace = \"99999d\"\ncommand = \"true\"\n";
    let (code, _, err) = check("grace_bound", "jobs.toml", toml);
    assert_eq!(code, Some(2));
    assert!(err.starts_with(r#"jobs.toml:4: job "late": grace: must be at most 100 years"#), "{err}");
}

#[test]
fn misfire_keys_and_the_coordination_table_are_checked_with_their_lines() {
    let (code, out, err) = check(
        "misfire_keys",
        "jobs.toml",
        r#"[coordination]
redis = "http://:hunter2@cache:6379"
prefix = ""

[[job]]
name = "a"
every = "2s"
misfire = "sometimes"
command = "true"

[[job]]
name = "b"
every = "2s"
misfire = "skip"
misfire_cap = 3
command = "true"

[[job]]
name = "c"
every = "2s"
misfire_cap = 3
command = "true"

[[job]]
name = "d"
every = "2s"
misfire = "run_all"
misfire_cap = 0
command = "true"

[[job]]
name = "e"
every = "2s"
misfire = "run_all"
misfire_cap = -1
command = "true"

[[job]]
name = "f"
every = "2s"
grace = "a while"
command = "true"
"#,
    );
    assert_eq!(code, Some(2), "{out}");
    for expected in [
        r#"jobs.toml:2: coordination.redis: "http://cache:6379" is not a Redis URL"#,
        r#"jobs.toml:3: coordination.prefix: must not be empty (the default is "slotcron:")"#,
        r#"jobs.toml:8: job "a": misfire: "sometimes" is not a misfire policy: write skip, run_once or run_all"#,
        r#"jobs.toml:15: job "b": misfire_cap: applies to misfire = "run_all" only"#,
        r#"jobs.toml:21: job "c": misfire_cap: applies to misfire = "run_all" only"#,
        r#"jobs.toml:28: job "d": misfire_cap: must be at least 1"#,
        r#"jobs.toml:35: job "e": misfire_cap: -1 is out of range: write a number from 1 to 4294967295"#,
        r#"jobs.toml:41: job "f": grace: "a while" is not a duration"#,
    ] {
        assert!(err.lines().any(|line| line.starts_with(expected)), "missing {expected:?} in:\n{err}");
    }
    assert!(!err.contains("hunter2"), "the password is not shown:\n{err}");
    assert!(err.ends_with("8 problems in jobs.toml\n"), "{err}");

    let (code, _, err) = check(
        "misfire_cap_type",
        "jobs.toml",
        "[[job]]\nname = \"g\"\nevery = \"2s\"\nmisfire = \"run_all\"\nmisfire_cap = \"3\"\ncommand = \"true\"\n",
    );
    assert_eq!(code, Some(2));
    assert!(
        err.starts_with(r#"jobs.toml:5: job "g": misfire_cap: expected an integer, found string "3""#),
        "{err}"
    );
}

#[test]
fn valid_misfire_keys_and_coordination_pass() {
    let (code, out, err) = check(
        "misfire_valid",
        "jobs.toml",
        r#"[coordination]
redis = "redis://:secret@10.0.0.5:6379/2"

[[job]]
name = "catch-up"
every = "2s"
misfire = "run_all"
misfire_cap = 3
grace = "30s"
command = "true"

[[job]]
name = "coalesce"
cron = "0 * * * *"
misfire = "run_once"
command = "true"

[[job]]
name = "drop"
at = "2020-01-01T00:00:00Z"
misfire = "skip"
grace = "1m"
command = "true"
"#,
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.ends_with("jobs.toml: 3 job(s) in a TOML jobs file, all valid\n"), "{out}");
}

#[test]
fn crontab_lists_its_jobs_in_their_zones() {
    let (code, out, err) = check(
        "crontab_zones",
        "crontab",
        "\
# a comment, then a blank line

*/5 * * * * echo utc
CRON_TZ=Asia/Shanghai
# name: morning
30 9 * * MON-FRI echo morning
TZ=America/New_York
@daily echo daily
@every 30s echo often
@reboot echo booted
",
    );
    assert_eq!(code, Some(0), "{err}");
    let utc = names(&out)[0].clone();
    assert_eq!(row(&out, &utc)[2], r#"cron "*/5 * * * *" in UTC"#);
    let morning = row(&out, "morning");
    assert_eq!(morning[..3], ["6", "morning", r#"cron "30 9 * * MON-FRI" in Asia/Shanghai"#]);
    assert!(morning[3].ends_with("T09:30:00+08:00"), "{out}");
    assert_eq!(morning[5], "At 09:30 on Monday through Friday (Asia/Shanghai)");
    let daily = names(&out)[2].clone();
    assert_eq!(row(&out, &daily)[2], r#"cron "@daily" in America/New_York"#);
    let reboot = names(&out)[4].clone();
    assert_eq!(row(&out, &reboot)[2..], ["@reboot", "at start-up", "-", "Once each time the daemon starts"]);
    assert!(out.ends_with("\ncrontab: 5 job(s) in a crontab, all valid\n"), "{out}");
}

#[test]
fn crontab_names_are_stable_when_lines_are_added() {
    let before = "0 3 * * * /usr/local/bin/backup.sh --full\n*/10 * * * * echo poll\n";
    let after = "\
MAILTO=ops@example.com
# new job first
0 * * * * echo hourly
0 3 * * * /usr/local/bin/backup.sh --full
15 * * * * echo another
*/10 * * * * echo poll
";
    let (code, out_before, err) = check("names_before", "crontab", before);
    assert_eq!(code, Some(0), "{err}");
    let (code, out_after, err) = check("names_after", "crontab", after);
    assert_eq!(code, Some(0), "{err}");
    let (before, after) = (names(&out_before), names(&out_after));
    assert_eq!(before.len(), 2);
    assert!(before[0].starts_with("usr-local-bin-backup-sh-full-"), "{}", before[0]);
    assert!(before[1].starts_with("echo-poll-"), "{}", before[1]);
    assert_eq!(after[1], before[0]);
    assert_eq!(after[3], before[1]);
}

#[test]
fn crontab_names_depend_on_the_zone() {
    let (_, utc, _) = check("names_utc", "crontab", "0 3 * * * echo x\n");
    let (_, berlin, _) = check("names_berlin", "crontab", "CRON_TZ=Europe/Berlin\n0 3 * * * echo x\n");
    assert_ne!(names(&utc), names(&berlin));
}

#[test]
fn identical_crontab_lines_get_a_stable_suffix() {
    let (code, out, err) =
        check("identical", "crontab", "@hourly echo x\n@hourly   echo x\n@hourly echo x\n");
    assert_eq!(code, Some(0), "{err}");
    let names = names(&out);
    assert_eq!(names[1], format!("{}-2", names[0]));
    assert_eq!(names[2], format!("{}-3", names[0]));
}

#[test]
fn crontab_problems_name_line_and_field() {
    let (code, _, err) = check(
        "crontab_problems",
        "crontab",
        "\
0 25 * * * echo bad hour
CRON_TZ=Mars/Base
0 1 * * * echo in an unknown zone
CRON_TZ=UTC
* * * *
this is not a line
# name: orphan

# name: twice
@hourly echo one
# name: twice
@daily echo two
@every
@fortnightly echo unknown
*/5 * * * *
",
    );
    assert_eq!(code, Some(2));
    for expected in [
        r#"crontab:1: job "echo-bad-hour-"#,
        r#"crontab:2: CRON_TZ: unknown time zone "Mars/Base""#,
        "crontab:5: schedule: expected 5 time fields",
        "crontab:6: neither a job",
        r#"crontab:7: job "orphan": name: a `# name:` comment must be directly followed by the job line it names"#,
        r#"crontab:12: job "twice": name: the job on line 10 has the same name"#,
        "crontab:13: schedule: @every needs a duration",
        r#"crontab:14: job "echo-unknown-"#,
        r#"crontab:15: job "job-"#,
    ] {
        assert!(err.lines().any(|line| line.starts_with(expected)), "missing {expected:?} in:\n{err}");
    }
    assert!(err.contains(r#"schedule: hour field "25" (column 3): 25 is out of range 0-23"#), "{err}");
    assert!(err.contains("unknown descriptor \"@fortnightly\""), "{err}");
    assert!(
        err.contains("crontab:15: job \"job-") && err.contains("command: missing after the schedule"),
        "{err}"
    );
    assert!(err.ends_with("9 problems in crontab\n"), "{err}");
}

#[test]
fn a_nul_byte_in_a_command_is_a_problem_at_load_time() {
    let (code, _, err) = check(
        "nul_toml",
        "jobs.toml",
        "[[job]]\nname = \"a\"\nevery = \"1m\"\ncommand = \"echo a\\u0000b\"\n",
    );
    assert_eq!(code, Some(2));
    assert!(
        err.starts_with(
            r#"jobs.toml:4: job "a": command: contains a NUL byte, which a shell command cannot hold"#
        ),
        "{err}"
    );

    let (code, _, err) = check(
        "nul_crontab",
        "crontab",
        "FOO=a\0b\n# name: nul\n* * * * * echo a\0b\n# name: input\n* * * * * cat%a\0b\n",
    );
    assert_eq!(code, Some(2));
    assert!(
        err.starts_with(
            "crontab:1: FOO: contains a NUL byte, which an environment variable cannot hold\n\
             crontab:3: job \"nul\": command: contains a NUL byte, which a shell command cannot hold\n\
             2 problems in crontab"
        ),
        "{err}"
    );
}

#[test]
fn every_takes_days_in_both_formats() {
    let toml = "[[job]]\nname = \"daily\"\ncron = \"@every 1d\"\ncommand = \"true\"\n";
    let (code, out, err) = check("every_days_toml", "jobs.toml", toml);
    assert_eq!(code, Some(0), "{err}");
    assert!(row(&out, "daily").contains(&"Every day, anchored to the Unix epoch (UTC)"), "{out}");

    let (code, out, err) = check("every_days_crontab", "crontab", "# name: daily\n@every 1d echo e\n");
    assert_eq!(code, Some(0), "{err}");
    assert!(row(&out, "daily").contains(&"Every day, anchored to the Unix epoch (UTC)"), "{out}");
}

#[test]
fn an_empty_file_is_valid_and_said_to_have_no_jobs() {
    let (code, _, err) = check("empty", "crontab", "# nothing yet\n");
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("crontab: no jobs (add lines such as `*/5 * * * * command`)"), "{err}");
    let (code, _, err) = check("empty_toml", "jobs.toml", "");
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("jobs.toml: no jobs (add [[job]] tables): a daemon on it would idle"), "{err}");
}

#[test]
fn a_missing_file_is_reported() {
    let dir = scratch("missing_file");
    let out = run_in(&dir, &["check", "absent.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).starts_with("absent.toml: cannot read"), "{}", stderr(&out));
}

#[test]
fn a_bad_name_is_reported_beside_the_job_s_other_problems() {
    let source = "[[job]]\nname = \"a b\"\ncron = \"0 99 * * *\"\ncommand = \"x\"\n";
    let (code, _, err) = check("bad_name_and_cron", "jobs.toml", source);
    assert_eq!(code, Some(2));
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines[0].ends_with(
            "jobs.toml:2: job \"a b\": name: ' ' is not allowed; use ASCII letters, digits and - _ . @ /"
        ),
        "{err}"
    );
    assert!(
        lines[1].ends_with(
            "jobs.toml:3: job \"a b\": cron: hour field \"99\" (column 3): 99 is out of range 0-23"
        ),
        "{err}"
    );
    assert_eq!(lines[2], "2 problems in jobs.toml", "{err}");
}

#[test]
fn shows_each_jobs_policies_in_english() {
    let (code, out, err) = check(
        "policies",
        "jobs.toml",
        r#"max_concurrent_runs = 2
on_failure = "echo failed"

[[job]]
name = "backup"
every = "1m"
command = "true"
attempts = 3
backoff = "10s"
backoff_multiplier = 2
backoff_max = "1m"
overlap = "forbid"
jitter = "30s"

[[job]]
name = "plain"
cron = "0 * * * *"
command = "true"
on_failure = "echo plain failed"

[[job]]
name = "etl"
every = "1h"
command = "true"
on_interrupt = "rerun"
"#,
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains(
            "backup: up to 3 attempts, the first retry 10s after a failure, each later wait 2x the one \
             before (at most 1m); a trigger that finds a run still going anywhere is skipped (forbid); \
             each trigger starts up to 30s late, the same on every replica (jitter); on failure runs `echo failed`"
        ),
        "{out}"
    );
    assert!(out.contains("plain: on failure runs `echo plain failed`"), "{out}");
    assert!(
        out.contains(
            "etl: a run cut short by its daemon's death runs once more on a live daemon (on_interrupt rerun); \
             on failure runs `echo failed`"
        ),
        "{out}"
    );
    assert!(out.contains("max_concurrent_runs: at most 2 run(s) at once on each daemon"), "{out}");
}

#[test]
fn bad_policy_values_name_the_file_line_job_and_key() {
    let (code, _, err) = check(
        "bad_policies",
        "jobs.toml",
        r#"max_concurrent_runs = 0

[[job]]
name = "backup"
every = "1m"
command = "true"
attempts = 0
backoff_multiplier = 0.5
overlap = "never"
on_failure = ""
on_interrupt = "retry"

[[job]]
name = "wide"
every = "1m"
command = "true"
jitter = "2m"

[[job]]
name = "flag"
every = "1m"
command = "true"
on_interrupt = true
"#,
    );
    assert_eq!(code, Some(2));
    for expected in [
        "jobs.toml:1: max_concurrent_runs: 0 is out of range: write a number from 1 to 4294967295",
        "jobs.toml:7: job \"backup\": attempts: 0 is out of range",
        "jobs.toml:8: job \"backup\": backoff_multiplier: 0.5 is out of range: write a number from 1 (a fixed backoff) to 100",
        "jobs.toml:9: job \"backup\": overlap: \"never\" is not an overlap policy: write allow, forbid, buffer_one, replace",
        "jobs.toml:10: job \"backup\": on_failure: must not be empty",
        "jobs.toml:11: job \"backup\": on_interrupt: \"retry\" is not an on_interrupt choice: write record, rerun",
        "jobs.toml:17: job \"wide\": jitter: 120s is not shorter than the schedule's shortest slot, 60s",
        "jobs.toml:23: job \"flag\": on_interrupt: expected a string: \"record\", \"rerun\", found boolean true",
    ] {
        assert!(err.contains(expected), "{expected}\nnot in\n{err}");
    }
}

#[test]
fn a_clock_skew_slack_of_zero_or_not_a_duration_is_refused_naming_the_key() {
    let (code, _out, err) = check(
        "slack_problems",
        "jobs.toml",
        "[coordination]\nslack = \"0s\"\n\n[[job]]\nname = \"a\"\nevery = \"10s\"\ncommand = \"true\"\n",
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("jobs.toml:2: coordination.slack: must be longer than zero (the default is 5s)"),
        "{err}"
    );
    let (code, _out, err) = check(
        "slack_not_a_duration",
        "jobs.toml",
        "[coordination]\nslack = 5\n\n[[job]]\nname = \"a\"\nevery = \"10s\"\ncommand = \"true\"\n",
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("jobs.toml:2: coordination.slack: expected a duration string"), "{err}");
}

#[test]
fn shared_work_settings_are_checked_naming_the_key() {
    let job = "\n[[job]]\nname = \"a\"\nevery = \"10s\"\ncommand = \"true\"\n";
    let refused = [
        (
            "takeover_delay = \"10s\"",
            "jobs.toml:2: coordination.takeover_delay: 10s must be shorter than the membership TTL (10s, the default)",
        ),
        (
            "membership_ttl = \"2s\"\ntakeover_delay = \"3s\"",
            "jobs.toml:3: coordination.takeover_delay: 3s must be shorter than the membership TTL (2s, membership_ttl)",
        ),
        (
            "membership_ttl = \"0s\"",
            "jobs.toml:2: coordination.membership_ttl: must be longer than zero (the default is 10s)",
        ),
        (
            "membership_ttl = \"100ms\"",
            "jobs.toml:2: coordination.membership_ttl: the default takeover delay, 300ms must be shorter than the membership TTL (100ms, membership_ttl)",
        ),
        ("takeover_delay = 300", "jobs.toml:2: coordination.takeover_delay: expected a duration string"),
        ("shared_work = \"no\"", "jobs.toml:2: coordination.shared_work: expected true or false"),
    ];
    for (i, (keys, expected)) in refused.into_iter().enumerate() {
        let (code, _out, err) =
            check(&format!("fleet_problems_{i}"), "jobs.toml", &format!("[coordination]\n{keys}\n{job}"));
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(expected), "{expected}\nnot in\n{err}");
    }
    let keys = "takeover_delay = \"500ms\"\nmembership_ttl = \"30s\"\nshared_work = false";
    let (code, _out, err) = check("fleet_settings", "jobs.toml", &format!("[coordination]\n{keys}\n{job}"));
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn with_state_check_shows_done_one_shots_and_each_job_s_last_trigger() {
    let dir = scratch("check_state");
    write(
        &dir,
        "jobs.toml",
        "[[job]]\nname = \"once\"\nafter = \"0s\"\ncommand = \"true\"\n\n\
         [[job]]\nname = \"past\"\nat = \"2020-01-01T00:00:00Z\"\ncommand = \"exit 1\"\n\n\
         [[job]]\nname = \"hourly\"\ncron = \"0 * * * *\"\ncommand = \"true\"\n",
    );
    let mut daemon = support::Daemon::start(&dir, "jobs.toml");
    for _ in 0..2 {
        daemon.wait_for("the one-shots to run", |line| line.contains("run finished"));
    }
    support::wait_until("both runs recorded", || support::history(&dir, &[]).len() == 2);
    daemon.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());

    let out = run_in(&dir, &["check", "jobs.toml", "--state", "sqlite:slotcron.db"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = stdout(&out);
    assert!(listing.starts_with("LINE  JOB     SCHEDULE"), "{listing}");
    assert!(
        listing.lines().next().unwrap().contains("  NEXT  ") && listing.contains("  LAST  "),
        "{listing}"
    );
    let once = row(&listing, "once");
    assert_eq!(once[3..5], ["never (done)", "-"], "{listing}");
    assert!(
        once[5].ends_with(" succeeded") && once[5].parse::<slotcron::jiff::Timestamp>().is_err(),
        "{listing}"
    );
    let past = row(&listing, "past");
    assert_eq!(past[3..6], ["never (done)", "-", "2020-01-01T00:00:00Z failed"], "{listing}");
    assert!(past[6].ends_with("d ago"), "AGO: the last trigger, days ago: {listing}");
    assert_eq!(row(&listing, "hourly")[5..7], ["never", "-"], "{listing}");

    // Without --state, the file alone: both one-shots look due.
    let out = run_in(&dir, &["check", "jobs.toml"]);
    let listing = stdout(&out);
    assert_eq!(row(&listing, "once")[3], "0s after start-up", "{listing}");
    assert_eq!(row(&listing, "past")[3], "at start-up", "{listing}");
    assert!(!listing.contains("LAST"), "{listing}");

    let out = run_in(&dir, &["check", "jobs.toml", "--state", "sqlite:missing.db"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("slotcron check: cannot open the state: sqlite:missing.db: no such file"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_admin_table_is_checked_with_its_lines() {
    let (code, _, err) = check(
        "admin_table",
        "jobs.toml",
        "[admin]\nlisten = \"everywhere\"\nport = 9090\n\n[[job]]\nname = \"a\"\nevery = \"2s\"\ncommand = \"true\"\n",
    );
    assert_eq!(code, Some(2), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines.contains(
            &"jobs.toml:2: admin.listen: \"everywhere\" is not an address to listen on: write IP:PORT (e.g. 127.0.0.1:9090) or unix:PATH"
        ),
        "{err}"
    );
    assert!(lines.contains(&"jobs.toml:3: admin.port: unknown key; [admin] takes listen"), "{err}");
    let (code, out, err) = check(
        "admin_ok",
        "jobs.toml",
        "[admin]\nlisten = \"unix:/run/slotcron.sock\"\n\n[[job]]\nname = \"a\"\nevery = \"2s\"\ncommand = \"true\"\n",
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains('a'), "{out}");
}

#[test]
fn a_backoff_max_below_the_backoff_is_refused_naming_job_field_and_reason() {
    let (code, _, err) = check(
        "backoff_max_below_backoff",
        "jobs.toml",
        "[[job]]\nname = \"sync\"\nevery = \"1m\"\ncommand = \"true\"\nattempts = 3\nbackoff = \"30s\"\nbackoff_max = \"10s\"\n",
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(
            "job \"sync\": backoff_max: 10s is shorter than the backoff of 30s: the cap must be at least the first wait"
        ),
        "{err}"
    );
}

#[test]
fn a_negative_or_zero_interval_is_refused_with_a_true_reason() {
    let (code, _, err) = check(
        "negative_interval",
        "jobs.toml",
        "[[job]]\nname = \"a\"\nevery = \"-5s\"\ncommand = \"true\"\n\n\
         [[job]]\nname = \"b\"\nevery = \"0s\"\ncommand = \"true\"\n",
    );
    assert_eq!(code, Some(2));
    let expected = [
        r#"jobs.toml:3: job "a": every: "-5s" is negative; a duration takes no minus sign"#,
        r#"jobs.toml:8: job "b": every: 0s is shorter than 1s, the shortest interval: each trigger starts a command, and a second is cron's finest step"#,
        "2 problems in jobs.toml",
    ];
    assert_eq!(err.lines().collect::<Vec<_>>(), expected, "{err}");
}

/// An interval under a second — `every`, or `@every` in a cron expression or a crontab —
/// is refused naming the job, the field and the minimum; a second is accepted.
#[test]
fn an_interval_under_a_second_is_refused_in_every_format() {
    let reason = "is shorter than 1s, the shortest interval: each trigger starts a command, and a second is \
                  cron's finest step";
    let (code, _, err) = check(
        "interval_under_a_second",
        "jobs.toml",
        "[[job]]\nname = \"a\"\nevery = \"1ms\"\ncommand = \"true\"\n\n\
         [[job]]\nname = \"b\"\ncron = \"@every 999ms\"\ncommand = \"true\"\n\n\
         [[job]]\nname = \"c\"\nevery = \"1s\"\ncommand = \"true\"\n",
    );
    assert_eq!(code, Some(2));
    let expected = [
        format!(r#"jobs.toml:3: job "a": every: 1ms {reason}"#),
        format!(r#"jobs.toml:8: job "b": cron: 999ms {reason}"#),
        "2 problems in jobs.toml".to_owned(),
    ];
    assert_eq!(err.lines().collect::<Vec<_>>(), expected, "{err}");
    let (code, _, err) = check("crontab_under_a_second", "crontab", "@every 500ms true\n@every 1s true\n");
    assert_eq!(code, Some(2));
    assert!(
        err.starts_with("crontab:1: job \"true-") && err.contains(&format!(": schedule: 500ms {reason}")),
        "{err}"
    );
    assert!(err.ends_with("1 problem in crontab\n"), "{err}");
    // Zero, which the core refuses before a jobs file's own rule is asked: the same reason
    // (not the core's 1 ms minimum).
    let (code, _, err) = check("crontab_every_zero", "crontab", "@every 0s true\n");
    assert_eq!(code, Some(2));
    assert!(err.contains(&format!(": schedule: 0s {reason}")), "{err}");
    let (code, _, err) = check(
        "cron_every_zero",
        "jobs.toml",
        "[[job]]\nname = \"z\"\ncron = \"@every 0s\"\ncommand = \"true\"\n",
    );
    assert_eq!(code, Some(2));
    assert!(err.contains(&format!(r#"job "z": cron: 0s {reason}"#)), "{err}");
}

/// A bare number where a duration goes is told to name its unit.
#[test]
fn a_duration_without_a_unit_is_told_to_name_it() {
    let (code, _, err) = check(
        "duration_without_unit",
        "jobs.toml",
        "[[job]]\nname = \"a\"\nevery = \"5\"\ncommand = \"true\"\n",
    );
    assert_eq!(code, Some(2));
    assert_eq!(
        err.lines().next(),
        Some(
            r#"jobs.toml:3: job "a": every: "5" has no unit: write e.g. "5s" (seconds), "5m" (minutes) or "5h" (hours)"#
        ),
        "{err}"
    );
}

#[test]
fn a_zero_grace_is_refused_as_it_would_miss_every_trigger() {
    let (code, _, err) = check(
        "zero_grace",
        "jobs.toml",
        "[[job]]\nname = \"a\"\nevery = \"1m\"\ngrace = \"0s\"\ncommand = \"true\"\n",
    );
    assert_eq!(code, Some(2));
    let expected = [
        r#"jobs.toml:4: job "a": grace: must be longer than zero (every trigger would be missed)"#,
        "1 problem in jobs.toml",
    ];
    assert_eq!(err.lines().collect::<Vec<_>>(), expected, "{err}");
}

#[test]
fn output_cut_short_ends_check_quietly() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    let dir = scratch("check_cut_short");
    let jobs: String = (0..5000)
        .map(|i| format!("[[job]]\nname = \"j{i}\"\nevery = \"1h\"\ncommand = \"true\"\n\n"))
        .collect();
    write(&dir, "jobs.toml", &jobs);
    let mut child = support::slotcron()
        .args(["check", "jobs.toml"])
        .current_dir(&dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(first.contains("LINE"), "{first}");
    // The reader is gone, as `| head -1` leaves it.
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.signal(), Some(13), "ended by SIGPIPE: {:?}", out.status);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_n_days_at_a_time_of_day_fires_on_the_same_days_for_every_replica() {
    let jobs = r#"[[job]]
name = "compact"
every = "2d"
at_time = "04:30"
timezone = "Europe/Berlin"
command = "true"
"#;
    let (code, out, err) = check("every_days_at_time", "jobs.toml", jobs);
    assert_eq!(code, Some(0), "{err}");
    let cells = row(&out, "compact");
    assert_eq!(cells[2], "every 2 days at 04:30 in Europe/Berlin", "{out}");
    let next: slotcron::jiff::Timestamp = cells[3].parse().expect(cells[3]);
    let local = next.to_zoned_datetime(slotcron::jiff::tz::TimeZone::get("Europe/Berlin").unwrap());
    assert_eq!((local.hour(), local.minute()), (4, 30), "{out}");
    // The days are counted from 1970-01-01 in the zone: every replica picks the same.
    let days = local.date().since(slotcron::jiff::civil::date(1970, 1, 1)).unwrap().get_days();
    assert_eq!(days % 2, 0, "{out}");

    let bad = [
        ("every = \"36h\"\nat_time = \"04:30\"", "every", "with at_time, every is a whole number of days"),
        ("every = \"1d\"\nat_time = \"25:00\"", "at_time", "expected a time of day as hh:mm"),
        ("cron = \"0 4 * * *\"\nat_time = \"04:30\"", "at_time", "applies to an every of whole days only"),
    ];
    refused_with("compact", &bad);
}

#[test]
fn start_and_end_bound_a_recurring_jobs_triggers_and_an_empty_window_is_refused() {
    let jobs = r#"[[job]]
name = "campaign"
every = "1h"
start = "2100-03-01T10:30:00Z"
end = "2100-03-02T00:00:00Z"
command = "true"

[[job]]
name = "over"
cron = "* * * * *"
end = "2001-01-01T00:00:00Z"
command = "true"
"#;
    let (code, out, err) = check("window", "jobs.toml", jobs);
    assert_eq!(code, Some(0), "{err}");
    // The interval's anchor is unchanged: the first hour at or after the start.
    assert_eq!(row(&out, "campaign")[3], "2100-03-01T11:00:00+00:00", "{out}");
    assert!(row(&out, "over")[3].starts_with("never"), "{out}");

    let bad = [
        (
            "every = \"1h\"\nstart = \"2100-03-02T00:00:00Z\"\nend = \"2100-03-01T00:00:00Z\"",
            "end",
            "is not later than start",
        ),
        (
            "at = \"2100-03-01T00:00:00Z\"\nstart = \"2100-01-01T00:00:00Z\"",
            "start",
            "bounds recurring schedules only",
        ),
        ("every = \"1h\"\nend = \"tomorrow\"", "end", "is not an RFC 3339 instant with an offset"),
        (
            "every = \"1h\"\nrun_on_start = true\nstart = \"2100-01-01T00:00:00Z\"",
            "run_on_start",
            "cannot be combined with start or end",
        ),
    ];
    refused_with("campaign", &bad);
}

/// Checks that a job `name` with each of `bad`'s lines (TOML keys beside a `command`) is
/// refused (exit status 2) with a problem line `job "NAME": FIELD: …` that says `reason`.
fn refused_with(name: &str, bad: &[(&str, &str, &str)]) {
    for (lines, field, reason) in bad {
        let text = format!("[[job]]\nname = \"{name}\"\n{lines}\ncommand = \"true\"\n");
        // A directory of its own: the tests calling this run at once.
        let (code, _, err) = check(&format!("refused_with_{name}"), "jobs.toml", &text);
        assert_eq!(code, Some(2), "{lines}");
        let problem = format!("job \"{name}\": {field}: ");
        assert!(err.lines().any(|line| line.contains(&problem) && line.contains(reason)), "{lines}: {err}");
    }
}

/// A TOML jobs file under a name that does not end in `.toml` is read as a crontab; the
/// problem on its first table says why.
#[test]
fn a_toml_file_named_otherwise_is_told_to_end_in_toml() {
    let (code, _, err) = check(
        "toml_named_otherwise",
        "jobs.tml",
        "[[job]]\nname = \"a\"\nevery = \"1m\"\ncommand = \"true\"\n",
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.starts_with("jobs.tml:1: neither a job")
            && err.contains("read as TOML only when its name ends in .toml"),
        "{err}"
    );
}

/// A `[coordination]` table naming a Redis, never connected to by `check`: the daemon
/// would have a coordinator to count the runs of `max_runs` and `pause_after_failures`.
const COORDINATED: &str = "[coordination]\nredis = \"redis://127.0.0.1:1\"\n\n";

#[test]
fn max_runs_takes_a_positive_integer_and_anything_else_is_refused_naming_job_and_field() {
    let (code, _, err) = check(
        "max_runs",
        "jobs.toml",
        &format!(
            "{COORDINATED}[[job]]\nname = \"limited\"\nevery = \"1h\"\nmax_runs = 3\ncommand = \"true\"\n"
        ),
    );
    assert_eq!(code, Some(0), "{err}");
    let bad = [
        (
            "every = \"1h\"\nmax_runs = 0",
            "max_runs",
            "0 is out of range: write a number from 1 to 4294967295",
        ),
        (
            "every = \"1h\"\nmax_runs = -1",
            "max_runs",
            "-1 is out of range: write a number from 1 to 4294967295",
        ),
        ("every = \"1h\"\nmax_runs = \"3\"", "max_runs", "expected an integer, found string \"3\""),
        ("every = \"1h\"\nmax_runs = 1.5", "max_runs", "expected an integer, found float 1.5"),
    ];
    refused_with("limited", &bad);
}

#[test]
fn pause_after_failures_takes_a_positive_integer_and_anything_else_is_refused_naming_job_and_field() {
    let jobs = format!(
        "{COORDINATED}[[job]]\nname = \"flaky\"\nevery = \"1h\"\nmax_runs = 5\npause_after_failures = 3\ncommand = \"true\"\n"
    );
    let (code, out, err) = check("pause_after_failures", "jobs.toml", &jobs);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("paused after 3 failed triggers in a row (pause_after_failures)"), "{out}");
    assert!(out.contains("ends after 5 scheduled runs across the fleet (max_runs)"), "{out}");
    let range = "is out of range: write a number from 1 to 4294967295";
    let bad = [
        ("every = \"1h\"\npause_after_failures = 0", "pause_after_failures", &*format!("0 {range}")),
        ("every = \"1h\"\npause_after_failures = -2", "pause_after_failures", &*format!("-2 {range}")),
        (
            "every = \"1h\"\npause_after_failures = \"3\"",
            "pause_after_failures",
            "expected an integer, found string",
        ),
        (
            "every = \"1h\"\npause_after_failures = 2.5",
            "pause_after_failures",
            "expected an integer, found float",
        ),
    ];
    refused_with("flaky", &bad);
}

/// A past `at` runs at start-up only where its misfire policy catches it up: with
/// `misfire = "skip"` it is recorded missed, and the listing says it never fires.
#[test]
fn a_past_at_that_skips_its_misfires_is_listed_as_never_firing() {
    let (code, out, err) = check(
        "past_at_skip",
        "jobs.toml",
        "[[job]]\nname = \"caught-up\"\nat = \"2020-01-01T00:00:00Z\"\ncommand = \"true\"\n\n\
         [[job]]\nname = \"skipped\"\nat = \"2020-01-01T00:00:00Z\"\nmisfire = \"skip\"\ncommand = \"true\"\n",
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(row(&out, "caught-up")[3], "at start-up", "{out}");
    assert_eq!(row(&out, "skipped")[3], "never (past the grace; misfire = skip)", "{out}");
    let warning = r#"jobs.toml:6: warning: job "skipped": at: 2020-01-01T00:00:00Z is past, beyond the grace, and misfire = "skip": it never runs"#;
    assert!(err.lines().any(|line| line.starts_with(warning)), "{err}");
    assert!(!err.contains("\"caught-up\""), "{err}");
}
