//! Jobs kept in the shared state: `slotcron jobs put | rm | ls`, and daemons started with
//! `--jobs-from-state` on one PostgreSQL schema following them without a restart.
//!
//! Every wait is bounded (`support::PATIENCE`); nothing asserts how long anything took.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use nix::sys::signal::Signal;
use support::postgres::Schema;
use support::{Daemon, run_in, scratch, stderr, stdout, wait_until, write};

const FILE: &str = r#"[[job]]
name = "local"
every = "1h"
command = 'echo local'
"#;

const SHARED: &str = r#"[[job]]
name = "shared"
every = "1s"
grace = "30s"
command = 'echo "$SLOTCRON_TRIGGER $SLOTCRON_INSTANCE" >> shared.txt'
"#;

#[test]
fn daemons_on_one_state_pick_up_a_job_put_there_run_it_once_per_trigger_and_drop_it_when_removed() {
    let dir = scratch("state-jobs");
    let schema = Schema::new("state_jobs");
    let url = schema.state_url();
    write(&dir, "jobs.toml", FILE);
    write(&dir, "shared.toml", SHARED);
    let start = |instance: &str, from_state: bool| {
        let mut args = vec!["jobs.toml", "--state", &url, "--instance", instance];
        if from_state {
            args.push("--jobs-from-state");
        }
        let mut daemon = Daemon::run(&dir, &args);
        daemon.wait_for("for the scheduler to start", |line| line.contains("scheduler started"));
        daemon
    };
    let mut followers = [start("a", true), start("b", true)];
    let mut ignorer = start("c", false);

    let put = run_in(&dir, &["jobs", "put", "shared.toml", "--state", &url]);
    assert_eq!(put.status.code(), Some(0), "{}", stderr(&put));
    assert!(stdout(&put).contains("shared"), "{}", stdout(&put));
    for daemon in &mut followers {
        let line = daemon
            .wait_for("for the state's job", |l| l.contains("jobs reloaded") && l.contains("state change"));
        assert!(line.contains("added=1"), "{line}");
    }
    let runs = || std::fs::read_to_string(dir.join("shared.txt")).unwrap_or_default();
    wait_until("six runs of the state's job", || runs().lines().count() >= 6);

    let listed = run_in(&dir, &["jobs", "ls", "--state", &url, "--json"]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    let listed = stdout(&listed);
    assert!(listed.contains(r#""job":"shared""#) && listed.contains(r#""source":"state""#), "{listed}");
    assert!(listed.contains(r#""instance":"a""#) && listed.contains(r#""source":"file:b""#), "{listed}");
    assert!(
        !listed.contains(r#""source":"file:c""#),
        "only daemons with --jobs-from-state publish: {listed}"
    );

    // A name a daemon's file defines is refused, and nothing is written.
    write(&dir, "clash.toml", &format!("{SHARED}\n{}", FILE.replace("1h", "2h")));
    let clash = run_in(&dir, &["jobs", "put", "clash.toml", "--state", &url]);
    assert_eq!(clash.status.code(), Some(2), "{}", stdout(&clash));
    assert!(
        stderr(&clash).contains(r#"clash.toml:7: job "local": name: the jobs file of the daemon"#),
        "{}",
        stderr(&clash)
    );

    let rm = run_in(&dir, &["jobs", "rm", "shared", "--state", &url]);
    assert_eq!(rm.status.code(), Some(0), "{}", stderr(&rm));
    let mut removed_at = Vec::new();
    for daemon in &mut followers {
        let line =
            daemon.wait_for("for the removal", |l| l.contains("jobs reloaded") && l.contains("removed=1"));
        assert!(line.contains("state change"), "{line}");
        removed_at.push(daemon.log.len());
    }
    // Long enough for several more triggers, had the job not been removed.
    std::thread::sleep(Duration::from_secs(3));
    for daemon in followers.iter_mut().chain([&mut ignorer]) {
        daemon.signal(Signal::SIGTERM);
        assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    }
    for (daemon, at) in followers.iter().zip(removed_at) {
        let later =
            daemon.log[at..].iter().any(|l| l.contains("command started") && l.contains(r#"job="shared""#));
        assert!(!later, "the removed job ran again:\n{}", daemon.log());
    }
    assert!(ignorer.lines_with(&[r#"job="shared""#]).is_empty(), "{}", ignorer.log());

    let lines = runs();
    let triggers: Vec<&str> = lines.lines().map(|l| l.split(' ').next().unwrap()).collect();
    let distinct: BTreeSet<&str> = triggers.iter().copied().collect();
    assert_eq!(distinct.len(), triggers.len(), "a trigger ran twice:\n{lines}");
    let instances: BTreeSet<&str> = lines.lines().filter_map(|l| l.split(' ').nth(1)).collect();
    assert!(instances.is_subset(&BTreeSet::from(["a", "b"])), "{lines}");
}

#[test]
fn jobs_put_rejects_an_invalid_job_with_the_jobs_file_message_and_writes_nothing() {
    let dir = scratch("state-jobs-invalid");
    write(
        &dir,
        "bad.toml",
        &format!("{SHARED}\n[[job]]\nname = \"broken\"\ncron = \"61 * * * *\"\ncommand = 'x'\n"),
    );
    let put = run_in(&dir, &["jobs", "put", "bad.toml", "--state", "sqlite:state.db"]);
    assert_eq!(put.status.code(), Some(2));
    assert!(stderr(&put).contains(r#"bad.toml:9: job "broken": cron: "#), "{}", stderr(&put));
    // Nothing written, not even the state file; `jobs ls` only reads, so it says so.
    let listed = run_in(&dir, &["jobs", "ls", "--state", "sqlite:state.db"]);
    assert_eq!(listed.status.code(), Some(2), "{}", stderr(&listed));
    assert!(stderr(&listed).contains("no such file"), "{}", stderr(&listed));
    assert!(!dir.join("state.db").exists(), "jobs ls created the state");

    write(&dir, "good.toml", SHARED);
    let put = run_in(&dir, &["jobs", "put", "good.toml", "--state", "sqlite:state.db"]);
    assert_eq!(put.status.code(), Some(0), "{}", stderr(&put));
    let listed = run_in(&dir, &["jobs", "ls", "--state", "sqlite:state.db"]);
    assert!(stdout(&listed).contains("shared"), "{}", stdout(&listed));
    let rm = run_in(&dir, &["jobs", "rm", "nothing", "--state", "sqlite:state.db"]);
    assert_eq!(rm.status.code(), Some(1));
}

#[test]
fn jobs_put_refuses_settings_the_state_cannot_keep_naming_each_and_writes_nothing() {
    let dir = scratch("state-jobs-not-kept");
    let settings = [
        ("attempts = 3", "attempts"),
        ("overlap = \"forbid\"", "overlap"),
        ("jitter = \"5s\"", "jitter"),
        ("on_interrupt = \"rerun\"", "on_interrupt"),
        ("on_failure = \"echo failed\"", "on_failure"),
        ("start = \"2027-01-01T00:00:00Z\"", "start"),
        ("end = \"2027-01-01T00:00:00Z\"", "end"),
        ("enabled = false", "enabled"),
        ("on = [\"gpu\"]", "on"),
    ];
    let file: String = settings
        .iter()
        .enumerate()
        .map(|(i, (setting, _))| {
            format!("[[job]]\nname = \"j{i}\"\nevery = \"1m\"\ncommand = 'x'\n{setting}\n\n")
        })
        .collect();
    let both = "[[job]]\nname = \"both\"\nevery = \"1m\"\ncommand = 'x'\nattempts = 2\njitter = \"1s\"\n";
    write(&dir, "jobs.toml", &format!("{file}{both}"));
    let put = run_in(&dir, &["jobs", "put", "jobs.toml", "--state", "sqlite:state.db"]);
    assert_eq!(put.status.code(), Some(2), "{}", stderr(&put));
    let err = stderr(&put);
    for (i, (_, field)) in settings.iter().enumerate() {
        let refused = format!("job \"j{i}\": {field}: cannot be kept in the state (");
        assert!(err.contains(&refused), "{refused} not in:\n{err}");
    }
    for field in ["attempts", "jitter"] {
        let refused = format!("job \"both\": {field}: cannot be kept in the state (");
        assert!(err.contains(&refused), "each setting of one job is named: {refused} not in:\n{err}");
    }
    // Nothing written: the state (opened to check names against the daemons' files)
    // holds no job.
    let listed = run_in(&dir, &["jobs", "ls", "--state", "sqlite:state.db"]);
    assert!(!stdout(&listed).contains("j0"), "{}", stdout(&listed));
}

#[test]
fn a_name_the_file_gains_at_a_reload_is_the_files_and_the_warning_names_both() {
    let dir = scratch("state-jobs-clash");
    write(&dir, "jobs.toml", FILE);
    write(&dir, "shared.toml", SHARED);
    let put = run_in(&dir, &["jobs", "put", "shared.toml", "--state", "sqlite:state.db"]);
    assert_eq!(put.status.code(), Some(0), "{}", stderr(&put));
    let mut daemon = Daemon::run(&dir, &["jobs.toml", "--state", "sqlite:state.db", "--jobs-from-state"]);
    daemon.wait_for("for a run of the state's job", |l| {
        l.contains("run finished") && l.contains(r#"job="shared""#)
    });
    let file_version = SHARED.replace(">> shared.txt", ">> from-file.txt");
    write(&dir, "jobs.toml", &format!("{FILE}\n{file_version}"));
    daemon.signal(Signal::SIGHUP);
    let warning =
        daemon.wait_for("for the warning", |l| l.contains("defined both in the jobs file and in the state"));
    assert!(warning.contains("job=shared") && warning.contains("jobs.toml"), "{warning}");
    let reloaded = daemon.wait_for("for the reload", |l| l.contains("jobs reloaded"));
    assert!(reloaded.contains("changed=1"), "{reloaded}");
    wait_until("the file's version runs", || dir.join("from-file.txt").exists());
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
}

#[test]
fn a_daemon_with_an_empty_file_runs_the_states_jobs() {
    let dir = scratch("state-jobs-empty-file");
    let schema = Schema::new("state_jobs_empty");
    let url = schema.state_url();
    write(&dir, "jobs.toml", "# every job is in the state\n");
    write(&dir, "shared.toml", SHARED);
    let put = run_in(&dir, &["jobs", "put", "shared.toml", "--state", &url]);
    assert_eq!(put.status.code(), Some(0), "{}", stderr(&put));
    let mut daemon =
        Daemon::run(&dir, &["jobs.toml", "--state", &url, "--instance", "a", "--jobs-from-state"]);
    daemon.wait_for("for the warning", |line| {
        line.contains("jobs.toml: no jobs") && line.contains("only the state's jobs run")
    });
    let runs = || std::fs::read_to_string(dir.join("shared.txt")).unwrap_or_default();
    wait_until("a run of the state's job", || !runs().is_empty());
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
}
