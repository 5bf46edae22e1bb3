//! `slotcron history`: the runs a daemon recorded in its state, as columns or JSON,
//! filtered by job, time and count.

mod support;

use std::path::PathBuf;

use nix::sys::signal::Signal;
use support::{Daemon, history, run_in, scratch, stderr, stdout, write};

/// A state in `dir` holding one run of `ok` (trigger 2020-01-01) and one of `broken`
/// (trigger 2021-01-01), written by a daemon.
fn recorded(test: &str) -> PathBuf {
    let dir = scratch(test);
    write(
        &dir,
        "jobs.toml",
        r#"[[job]]
name = "ok"
at = "2020-01-01T00:00:00Z"
command = "echo fine"

[[job]]
name = "broken"
at = "2021-01-01T00:00:00Z"
command = "echo last words >&2; exit 3"
"#,
    );
    let mut daemon = Daemon::run(&dir, &["jobs.toml", "--instance", "box-1"]);
    for _ in 0..2 {
        daemon.wait_for("for both runs to finish", |line| line.contains("run finished"));
    }
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    dir
}

#[test]
fn prints_one_run_per_line_newest_trigger_first() {
    let dir = recorded("history_columns");
    let out = run_in(&dir, &["history"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = stdout(&out);
    let rows: Vec<Vec<&str>> = listing
        .lines()
        .map(|line| line.split("  ").map(str::trim).filter(|cell| !cell.is_empty()).collect())
        .collect();
    assert_eq!(rows.len(), 2, "{listing}");
    assert_eq!(rows[0][..4], ["broken", "2021-01-01T00:00:00Z", "box-1", "failed"]);
    assert_eq!(rows[0][5], "command failed: exit status: 3; last stderr line: last words");
    assert_eq!(rows[1][..4], ["ok", "2020-01-01T00:00:00Z", "box-1", "succeeded"]);
    assert_eq!(rows[1].len(), 5, "no error: {listing}");
    for row in &rows {
        assert!(row[4].ends_with('s'), "a duration such as 3ms: {}", row[4]);
    }
}

#[test]
fn json_has_every_field_and_filters_apply() {
    let dir = recorded("history_json");
    let runs = history(&dir, &[]);
    assert_eq!(runs.len(), 2);
    let ok = &runs[0];
    assert_eq!((ok.job.as_str(), ok.instance.as_str(), ok.outcome.as_str()), ("ok", "box-1", "succeeded"));
    assert_eq!(ok.trigger, "2020-01-01T00:00:00Z".parse().unwrap());
    assert!(ok.fencing_token.is_some() && ok.error.is_none() && ok.started > ok.trigger);
    assert_eq!(
        runs[1].error.as_deref(),
        Some("command failed: exit status: 3; last stderr line: last words")
    );

    let jobs = |args: &[&str]| history(&dir, args).into_iter().map(|r| r.job).collect::<Vec<_>>();
    assert_eq!(jobs(&["ok"]), ["ok"]);
    assert_eq!(jobs(&["--limit", "1"]), ["broken"]);
    assert_eq!(jobs(&["--since", "2020-06-01T00:00:00Z"]), ["broken"]);
    // At or after; any offset.
    assert_eq!(jobs(&["--since", "2020-01-01T01:00:00+01:00"]), ["ok", "broken"]);
}

#[test]
fn no_matching_runs_prints_nothing_and_says_so() {
    let dir = recorded("history_none");
    let out = run_in(&dir, &["history", "nosuchjob"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "");
    assert_eq!(stderr(&out), "slotcron history: no runs recorded for job \"nosuchjob\"\n");
}

#[test]
fn a_missing_state_file_is_an_error_and_is_not_created() {
    let dir = scratch("history_missing");
    let out = run_in(&dir, &["history"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("sqlite:slotcron.db: no such file: slotcron.db"), "{}", stderr(&out));
    assert!(!dir.join("slotcron.db").exists());

    let out = run_in(&dir, &["history", "--state", "memory"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("there is no history to read"), "{}", stderr(&out));

    let out = run_in(&dir, &["history", "--since", "yesterday"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not an RFC 3339 instant"), "{}", stderr(&out));
}
