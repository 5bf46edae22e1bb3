//! Failure 1 of issue 8: a daemon catching up after downtime must not run again what
//! another daemon of the fleet ran while it was down.
//!
//! Two daemons on one Redis, each with its own SQLite state (the README's fleet setup),
//! a 1 s job with `misfire = "run_all"`. Daemon `a` stops for at least 10 triggers while
//! `b` runs every one; `a` starts again and catches up from its state. Counted from the
//! commands' own output: no trigger ran twice, `a` caught up none that `b` ran, and every
//! trigger of the window ran exactly once. Every wait is bounded.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use nix::sys::signal::Signal;
use slotcron::jiff::Timestamp;
use support::redis_server::RedisServer;
use support::{Daemon, history, scratch, write};

const JOBS: &str = r#"[[job]]
name = "tick"
every = "1s"
misfire = "run_all"
command = 'echo "$SLOTCRON_TRIGGER $SLOTCRON_INSTANCE $SLOTCRON_FENCING_TOKEN" >> runs.txt'
"#;

/// How long `a` stays down: at least 10 triggers.
const DOWN: Duration = Duration::from_secs(12);

fn daemon(dir: &std::path::Path, redis: &RedisServer, name: &str) -> Daemon {
    let state = format!("sqlite:{name}.db");
    let mut d =
        Daemon::run(dir, &["jobs.toml", "--redis", &redis.url(), "--instance", name, "--state", &state]);
    d.wait_for("for the scheduler to start", |line| line.contains("scheduler started"));
    d
}

#[test]
fn a_daemon_catching_up_runs_none_of_the_triggers_another_ran_while_it_was_down() {
    let dir = scratch("faults_catch_up");
    let redis = RedisServer::start(&dir);
    write(&dir, "jobs.toml", JOBS);
    let mut a = daemon(&dir, &redis, "a");
    let mut b = daemon(&dir, &redis, "b");
    std::thread::sleep(Duration::from_secs(3));
    a.signal(Signal::SIGTERM);
    assert_eq!(a.wait_exit().code(), Some(0), "{}", a.log());
    let down_from = Timestamp::now();
    std::thread::sleep(DOWN);
    let down_until = Timestamp::now();
    let mut a = daemon(&dir, &redis, "a");
    std::thread::sleep(Duration::from_secs(4));
    for d in [&a, &b] {
        d.signal(Signal::SIGTERM);
    }
    for d in [&mut a, &mut b] {
        assert_eq!(d.wait_exit().code(), Some(0), "{}", d.log());
    }

    let text = std::fs::read_to_string(dir.join("runs.txt")).expect("the job ran");
    let mut runs: BTreeMap<Timestamp, Vec<String>> = BTreeMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        runs.entry(fields[0].parse().unwrap()).or_default().push(fields[1].to_owned());
    }
    let twice: Vec<_> = runs.iter().filter(|(_, by)| by.len() > 1).collect();
    assert!(twice.is_empty(), "triggers run more than once: {twice:?}\n{text}");
    let down: Vec<Timestamp> = (down_from.as_second() + 1..down_until.as_second())
        .map(|s| Timestamp::from_second(s).unwrap())
        .collect();
    assert!(down.len() >= 10, "a was down for at least 10 triggers: {down:?}");
    let caught_up: Vec<_> =
        down.iter().filter(|t| runs.get(t).is_some_and(|by| by.iter().any(|i| i == "a"))).collect();
    assert_eq!(caught_up, Vec::<&Timestamp>::new(), "a caught up triggers b ran\n{text}");
    let first = runs.keys().next().unwrap().as_second() + 1;
    let last = runs.keys().next_back().unwrap().as_second() - 1;
    let missing: Vec<i64> =
        (first..=last).filter(|s| !runs.contains_key(&Timestamp::from_second(*s).unwrap())).collect();
    assert!(missing.is_empty(), "triggers (Unix seconds) that never ran: {missing:?}\n{text}");
    // Each state's history agrees: one success per trigger across the two.
    let mut successes: BTreeMap<Timestamp, usize> = BTreeMap::new();
    for state in ["sqlite:a.db", "sqlite:b.db"] {
        for run in history(&dir, &["--state", state]) {
            if run.outcome == "succeeded" {
                *successes.entry(run.trigger).or_default() += 1;
            }
        }
    }
    let doubled: Vec<_> = successes.iter().filter(|(_, n)| **n > 1).collect();
    assert!(doubled.is_empty(), "triggers with two successes in the histories: {doubled:?}");
}
