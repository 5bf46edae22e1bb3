//! Failure 2 of issue 8: clock skew beyond the claim window doubled runs, silently.
//!
//! Two daemons on one Redis (real time), each with its own SQLite state; one or both run
//! under libfaketime (`LD_PRELOAD`, `FAKETIME`), so their clocks are off the Redis
//! server's by a fixed offset. Counted from the commands' own output and the histories:
//! beyond the slack (+6.5 s, default slack 5 s) the skewed daemon fails closed for every
//! trigger it sees (`skipped-clock-skew`) and says so in its log with the offset, and
//! nothing runs twice; within it (±2 s) nothing runs twice and nothing is missing. Every
//! wait is bounded.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::Signal;
use slotcron::jiff::Timestamp;
use support::redis_server::RedisServer;
use support::{Daemon, history, libfaketime, scratch, slotcron, write};

const JOBS: &str = r#"[[job]]
name = "tick"
every = "1s"
grace = "30s"
command = 'echo "$SLOTCRON_TRIGGER $SLOTCRON_INSTANCE" >> runs.txt'
"#;

/// Starts daemon `name` with its own SQLite state, its clock `offset` off the real one
/// (`None`: not faked), and waits until its scheduler started.
fn daemon(dir: &Path, redis: &RedisServer, name: &str, offset: Option<&str>) -> Daemon {
    let mut command = slotcron();
    let state = format!("sqlite:{name}.db");
    command.args(["run", "jobs.toml", "--redis", &redis.url(), "--instance", name, "--state", &state]);
    if let Some(offset) = offset {
        command.env("LD_PRELOAD", libfaketime()).env("FAKETIME", offset);
    }
    let mut d = Daemon::spawn(command, dir);
    d.wait_for("for the scheduler to start", |line| line.contains("scheduler started"));
    d
}

/// Runs daemons `a` and `b` with these clock offsets for `window`, stops them, and
/// returns each trigger's runs (instances) from `runs.txt` and the daemons.
fn run_pair(
    name: &str,
    a: Option<&str>,
    b: Option<&str>,
    window: Duration,
) -> (PathBuf, BTreeMap<Timestamp, Vec<String>>, Daemon, Daemon) {
    let dir = scratch(name);
    let redis = RedisServer::start(&dir);
    write(&dir, "jobs.toml", JOBS);
    let mut da = daemon(&dir, &redis, "a", a);
    let mut db = daemon(&dir, &redis, "b", b);
    std::thread::sleep(window);
    for d in [&da, &db] {
        d.signal(Signal::SIGTERM);
    }
    for d in [&mut da, &mut db] {
        assert_eq!(d.wait_exit().code(), Some(0), "{}", d.log());
    }
    let text = std::fs::read_to_string(dir.join("runs.txt")).unwrap_or_default();
    let mut runs: BTreeMap<Timestamp, Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        let (trigger, instance) = line.split_once(' ').expect("trigger and instance");
        runs.entry(trigger.parse().unwrap()).or_default().push(instance.to_owned());
    }
    let twice: Vec<_> = runs.iter().filter(|(_, by)| by.len() > 1).collect();
    assert!(twice.is_empty(), "triggers run more than once: {twice:?}");
    drop(redis);
    (dir, runs, da, db)
}

/// The skewed daemon is the owner of `tick` (the daemons share the work): it records each
/// trigger `skipped-clock-skew`, and the other takes each over and runs it.
#[test]
fn a_daemon_skewed_beyond_the_slack_skips_every_trigger_and_says_so_and_nothing_runs_twice() {
    let owner_is_a = slotcron::job_owner("tick", &["a", "b"]) == Some("a");
    let (a, b) = if owner_is_a { (Some("+6.5s"), None) } else { (None, Some("+6.5s")) };
    let (dir, runs, da, db) = run_pair("faults_skew_beyond", a, b, Duration::from_secs(44));
    let (skewed, skewed_name, other_name) = if owner_is_a { (da, "a", "b") } else { (db, "b", "a") };
    assert!(runs.values().all(|by| by == &[other_name]), "only {other_name} ran: {runs:?}");
    let seen = history(&dir, &["--state", &format!("sqlite:{skewed_name}.db"), "tick"]);
    assert!(seen.len() >= 40, "{skewed_name} saw at least 40 triggers: {}", seen.len());
    let other: Vec<_> = seen.iter().filter(|r| r.outcome != "skipped-clock-skew").collect();
    assert!(other.is_empty(), "every trigger {skewed_name} saw was skipped for the skew: {other:?}");
    let warnings = skewed.lines_with(&["skipped-clock-skew", "offset"]);
    assert_eq!(warnings.len(), 1, "one warning, with the offset, in under a minute:\n{}", skewed.log());
    assert!(warnings[0].contains("6.5") || warnings[0].contains("6.4"), "{}", warnings[0]);
}

#[test]
fn daemons_skewed_within_the_slack_run_every_trigger_once() {
    let (_dir, runs, _a, _b) =
        run_pair("faults_skew_within", Some("+2s"), Some("-2s"), Duration::from_secs(14));
    let first = runs.keys().next().expect("the job ran").as_second() + 3;
    let last = runs.keys().next_back().unwrap().as_second() - 3;
    assert!(last - first >= 5, "the window holds at least 6 triggers");
    let missing: Vec<i64> =
        (first..=last).filter(|s| !runs.contains_key(&Timestamp::from_second(*s).unwrap())).collect();
    assert!(missing.is_empty(), "triggers (Unix seconds) that never ran: {missing:?}");
}
