//! What a command starts with: a TOML job's `env` and `working_dir`, a crontab's
//! `SHELL=` and `MAILTO=`.
//!
//! Each wait is bounded by `support::PATIENCE`.

mod support;

use nix::sys::signal::Signal;
use support::{Daemon, run_in, scratch, stderr, write};

#[test]
fn toml_env_and_working_dir_reach_the_command_the_jobs_own_winning() {
    let dir = scratch("toml_env");
    let work = dir.join("work");
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let file = format!(
        r#"env = {{ A = "file", B = "file b" }}
working_dir = "{work}"

[[job]]
name = "inherits"
after = "0s"
command = "echo \"$A|$B\" > out"

[[job]]
name = "overrides"
after = "0s"
env = {{ B = "job b", C = "c" }}
working_dir = "{elsewhere}"
command = "echo \"$A|$B|$C|$SLOTCRON_JOB\" > out"
"#,
        work = work.display(),
        elsewhere = elsewhere.display()
    );
    write(&dir, "jobs.toml", &file);
    let mut daemon = Daemon::run(&dir, &["jobs.toml", "--state", "memory"]);
    for _ in 0..2 {
        daemon.wait_for("each run to finish", |line| line.contains("run finished"));
    }
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    assert_eq!(daemon.lines_with(&["outcome=\"succeeded\""]).len(), 2, "{}", daemon.log());
    assert_eq!(std::fs::read_to_string(work.join("out")).unwrap(), "file|file b\n");
    assert_eq!(std::fs::read_to_string(elsewhere.join("out")).unwrap(), "file|job b|c|overrides\n");
}

#[test]
fn a_missing_working_dir_fails_the_run_naming_the_directory() {
    let dir = scratch("missing_working_dir");
    write(
        &dir,
        "jobs.toml",
        "[[job]]\nname = \"lost\"\nafter = \"0s\"\nworking_dir = \"/nonexistent/dir\"\ncommand = \"true\"\n",
    );
    let mut daemon = Daemon::run(&dir, &["jobs.toml", "--state", "memory"]);
    let finished = daemon.wait_for("the run to finish", |line| line.contains("run finished"));
    assert!(finished.contains("outcome=\"failed\""), "{finished}");
    assert!(
        finished.contains("cannot start /bin/sh in the working directory /nonexistent/dir"),
        "{finished}"
    );
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0));
}

#[test]
fn bad_env_and_working_dir_values_are_load_time_problems_naming_line_job_and_key() {
    let dir = scratch("bad_env");
    write(
        &dir,
        "jobs.toml",
        r#"env = "PATH=/bin"
working_dir = "relative/dir"

[[job]]
name = "bad"
every = "1m"
command = "true"
env = { "" = "x", "A=B" = "x", SLOTCRON_JOB = "x", N = 3, OK = "fine" }
working_dir = 7
"#,
    );
    let out = run_in(&dir, &["check", "jobs.toml"]);
    assert_eq!(out.status.code(), Some(2));
    let text = stderr(&out);
    for expected in [
        "jobs.toml:1: env: expected a table of strings like { PATH = \"/usr/bin:/bin\" }, found string \"PATH=/bin\"",
        "jobs.toml:2: working_dir: must be an absolute path (starting with /)",
        "jobs.toml:8: job \"bad\": env.: an environment variable name must not be empty",
        "jobs.toml:8: job \"bad\": env.A=B: an environment variable name must not contain = or a NUL byte",
        "jobs.toml:8: job \"bad\": env.SLOTCRON_JOB: SLOTCRON_* variables are set by the daemon for each run",
        "jobs.toml:8: job \"bad\": env.N: expected a string, found integer 3",
        "jobs.toml:9: job \"bad\": working_dir: expected an absolute directory path string like \"/srv/app\", found integer 7",
        "7 problems in jobs.toml",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}
