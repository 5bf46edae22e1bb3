//! A directory of crontabs (`slotcron run DIR`, `slotcron check DIR`), `enabled = false`
//! on a TOML job, and the `[history]` retention, with real daemons on SQLite states.
//!
//! The tests wait for log lines (each wait bounded by `support::PATIENCE`) and never
//! assert how long anything took.

mod support;

use std::path::Path;

use nix::sys::signal::Signal;
use slotcron::jiff::Timestamp;
use support::{Daemon, history, run_in, scratch, stderr, stdout, write};

/// A directory `crontabs` in a new scratch directory: two crontabs, each with a job every
/// second that appends to its own file, and files cron skips by name.
fn cron_dir(test: &str) -> std::path::PathBuf {
    let dir = scratch(test);
    let crontabs = dir.join("crontabs");
    std::fs::create_dir(&crontabs).unwrap();
    write(&crontabs, "backup", "# name: tick\n@every 1s echo backup >> ../backup.txt\n");
    write(&crontabs, "logs", "@every 1s echo logs >> ../logs.txt\n");
    for skipped in ["logs.dpkg-dist", "logs~", ".hidden", "old.bak"] {
        write(&crontabs, skipped, "@every 1s echo skipped >> ../skipped.txt\n");
    }
    dir
}

/// Waits for a `run finished` line of `job` after log line `from`.
fn wait_run(daemon: &mut Daemon, from: usize, job: &str) {
    let tag = format!("job=\"{job}\"");
    let ran = |log: &[String]| log[from..].iter().any(|l| l.contains("run finished") && l.contains(&tag));
    while !ran(&daemon.log) {
        daemon.wait_for(&format!("for a run of {job}"), |line| line.contains("run finished"));
    }
}

fn stop(daemon: &mut Daemon) {
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
}

#[test]
fn check_lists_each_files_jobs_named_by_file_and_the_files_skipped() {
    let dir = cron_dir("cron_dir_check");
    let out = run_in(&dir, &["check", "crontabs"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = stdout(&out);
    assert!(listing.contains(" backup/tick "), "{listing}");
    assert!(listing.contains(" logs/echo-logs-"), "{listing}");
    for skipped in ["logs.dpkg-dist", "logs~", ".hidden", "old.bak"] {
        assert!(listing.contains(&format!("skipped crontabs/{skipped}: ")), "{skipped}: {listing}");
    }
    assert!(listing.contains("crontabs: 2 job(s) in 2 crontab(s) of a directory, all valid"), "{listing}");
}

#[test]
fn a_problem_names_its_file_and_line() {
    let dir = cron_dir("cron_dir_problem");
    write(&dir.join("crontabs"), "broken", "@hourly echo fine\n61 * * * * echo never\n");
    let out = run_in(&dir, &["check", "crontabs"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let problems = stderr(&out);
    assert!(problems.contains("crontabs/broken:2: job \"broken/echo-never-"), "{problems}");
    assert!(problems.contains("schedule: minute field \"61\""), "{problems}");
}

#[test]
fn an_empty_directory_is_zero_jobs_with_a_warning() {
    let dir = scratch("cron_dir_empty");
    std::fs::create_dir(dir.join("crontabs")).unwrap();
    let out = run_in(&dir, &["check", "crontabs"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("crontabs: no jobs (add lines such as"), "{}", stderr(&out));
}

/// A directory named as a TOML jobs file is most likely the file missing (a bind mount
/// of one that does not exist makes a directory): `check` and `run` refuse it alike
/// rather than read it as an empty directory of crontabs.
#[test]
fn a_directory_named_like_a_toml_jobs_file_is_refused_by_check_and_run() {
    let dir = scratch("cron_dir_toml");
    std::fs::create_dir(dir.join("jobs.toml")).unwrap();
    let problem = "jobs.toml: is a directory, not the TOML jobs file its .toml name says (a directory of \
                   crontabs is read under any other name; a bind mount of a missing file leaves an empty \
                   directory in its place)";
    let out = run_in(&dir, &["check", "jobs.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert_eq!(stderr(&out).lines().collect::<Vec<_>>(), [problem, "1 problem in jobs.toml"]);
    let out = run_in(&dir, &["run", "jobs.toml", "--state", "sqlite:state.db"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains(problem), "{}", stderr(&out));
    assert!(!dir.join("state.db").exists(), "nothing was started");
}

#[test]
fn the_daemon_runs_every_files_jobs_and_sighup_adds_a_new_files() {
    let dir = cron_dir("cron_dir_run");
    let mut daemon = Daemon::run(&dir, &["crontabs"]);
    wait_run(&mut daemon, 0, "backup/tick");
    let logs = daemon.wait_for("a run of logs/", |l| l.contains("run finished") && l.contains("job=\"logs/"));
    assert!(logs.contains("job=\"logs/echo-logs-"), "{logs}");
    write(&dir.join("crontabs"), "fresh", "# name: new\n@every 1s echo fresh >> ../fresh.txt\n");
    daemon.signal(Signal::SIGHUP);
    let reloaded = daemon.wait_for("the reload", |line| line.contains("jobs reloaded"));
    assert!(reloaded.contains("added_jobs=fresh/new"), "{reloaded}");
    let at = daemon.log.len();
    wait_run(&mut daemon, at, "fresh/new");
    std::fs::remove_file(dir.join("crontabs/backup")).unwrap();
    daemon.signal(Signal::SIGHUP);
    let reloaded = daemon.wait_for("the second reload", |line| line.contains("jobs reloaded"));
    assert!(reloaded.contains("removed_jobs=backup/tick"), "{reloaded}");
    stop(&mut daemon);
    assert!(!dir.join("skipped.txt").exists(), "a skipped file's job never runs");
    assert!(!daemon.lines_with(&["skipped: a name with a dot", "old.bak"]).is_empty(), "{}", daemon.log());
}

const TOGGLED: &str = r#"[[job]]
name = "on"
every = "1s"
command = "echo on >> on.txt"

[[job]]
name = "off"
every = "1s"
command = "echo off >> off.txt"
enabled = false
"#;

#[test]
fn a_disabled_job_is_listed_and_never_runs_until_enabled() {
    let dir = scratch("cron_dir_disabled");
    write(&dir, "jobs.toml", TOGGLED);
    let out = run_in(&dir, &["check", "jobs.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = stdout(&out);
    let off = listing.lines().find(|l| l.contains(" off ")).unwrap_or_default();
    assert!(off.contains("disabled"), "{listing}");
    assert!(listing.contains("2 job(s) (1 disabled) in a TOML jobs file"), "{listing}");

    let mut daemon = Daemon::run(&dir, &["jobs.toml"]);
    for _ in 0..3 {
        let at = daemon.log.len();
        wait_run(&mut daemon, at, "on");
    }
    assert!(daemon.lines_with(&["command started", "job=\"off\""]).is_empty(), "{}", daemon.log());
    assert!(history(&dir, &["off"]).is_empty(), "no record of a disabled job");
    // Enabled by a reload, it runs.
    write(&dir, "jobs.toml", &TOGGLED.replace("enabled = false", "enabled = true"));
    daemon.signal(Signal::SIGHUP);
    let reloaded = daemon.wait_for("the reload", |line| line.contains("jobs reloaded"));
    assert!(reloaded.contains("added_jobs=off"), "{reloaded}");
    let at = daemon.log.len();
    wait_run(&mut daemon, at, "off");
    // Disabled again, it stops.
    write(&dir, "jobs.toml", TOGGLED);
    daemon.signal(Signal::SIGHUP);
    let reloaded = daemon.wait_for("the reload", |line| line.contains("jobs reloaded"));
    assert!(reloaded.contains("removed_jobs=off"), "{reloaded}");
    let at = daemon.log.len();
    for _ in 0..2 {
        let from = daemon.log.len();
        wait_run(&mut daemon, from, "on");
    }
    stop(&mut daemon);
    let started_later =
        daemon.log[at..].iter().any(|l| l.contains("command started") && l.contains("job=\"off\""));
    assert!(!started_later, "{}", daemon.log());
}

/// A job that fails at its first run and succeeds at every later one.
const FLAKY: &str = r#"[history]
retention = "30d"
per_job = 2

[[job]]
name = "flaky"
every = "1s"
command = 'n=$(cat n 2>/dev/null || echo 0); n=$((n+1)); echo $n > n; [ $n -ne 1 ]'
"#;

/// The finished records of `flaky`: trigger and outcome, oldest first.
fn outcomes(dir: &Path) -> Vec<(Timestamp, String)> {
    let runs = history(dir, &["flaky"]).into_iter().filter(|r| r.finished());
    runs.map(|r| (r.trigger, r.outcome)).collect()
}

#[test]
fn retention_prunes_old_records_but_keeps_the_last_success_and_failure() {
    let dir = scratch("cron_dir_retention");
    write(&dir, "jobs.toml", FLAKY);
    let out = run_in(&dir, &["check", "jobs.toml"]);
    assert!(stdout(&out).contains("history: run records are kept for 30d, at most 2 record(s) per job"));
    let mut daemon = Daemon::run(&dir, &["jobs.toml"]);
    wait_run(&mut daemon, 0, "flaky");
    support::wait_until("five runs recorded", || outcomes(&dir).len() >= 5);
    stop(&mut daemon);
    let before = outcomes(&dir);
    assert_eq!(before[0].1, "failed", "{before:?}");
    let last = before.last().unwrap().0;
    // A restarted daemon prunes at start: of the records written before, the newest two
    // stay, and the first run, the job's last failure; its own runs come on top.
    let mut daemon = Daemon::run(&dir, &["jobs.toml"]);
    daemon.wait_for("the start", |line| line.contains("slotcron running"));
    let old = || outcomes(&dir).into_iter().filter(|(trigger, _)| *trigger <= last).collect::<Vec<_>>();
    support::wait_until("the old records pruned", || old().len() <= 3);
    stop(&mut daemon);
    let kept: Vec<String> = old().into_iter().map(|(_, outcome)| outcome).collect();
    assert_eq!(kept, ["failed", "succeeded", "succeeded"], "the last failure stays, however old");
}
