//! `slotcron cancel` against two real daemons sharing a PostgreSQL state (coordinator and
//! history), or Redis with a SQLite history each: a 60 s command runs on one, the cancel
//! is sent to the other's admin API, and the daemon running it stops its process group;
//! the history ends `cancelled`, once, with no retry. Every wait is bounded; nothing
//! asserts how long anything took.

mod support;

use nix::sys::signal::Signal;
use support::http::free_port;
use support::postgres::Schema;
use support::redis_server::RedisServer;
use support::{Daemon, history, run_in, scratch, stderr, stdout, wait_until, wait_until_ended, write};

/// A job that sleeps for a minute (twice, if retried), writing its shell's pid first; on
/// schedule only once an hour, so that it runs here when triggered.
const JOBS: &str = r#"[[job]]
name = "sleepy"
every = "1h"
attempts = 2
command = 'echo $$ > sleepy.pid; sleep 60'
"#;

/// `slotcron ARGS --admin-url http://ADDR` in `dir`: (exit code, stdout, stderr).
fn ask(dir: &std::path::Path, args: &[&str], addr: &str) -> (Option<i32>, String, String) {
    let url = format!("http://{addr}");
    let out = run_in(dir, &[args, &["--admin-url", &url]].concat());
    (out.status.code(), stdout(&out), stderr(&out))
}

/// Starts daemons `d1` and `d2` on `jobs.toml` in `dir`, each with an admin server and the
/// arguments `args` gives its instance; returns them once started, with their admin
/// addresses.
fn two_daemons(dir: &std::path::Path, args: impl Fn(&str) -> Vec<String>) -> (Vec<Daemon>, Vec<String>) {
    let admin: Vec<String> = (0..2).map(|_| format!("127.0.0.1:{}", free_port())).collect();
    let mut daemons: Vec<Daemon> = (0..2)
        .map(|i| {
            let instance = format!("d{}", i + 1);
            let mut all = vec!["jobs.toml".to_owned(), "--instance".into(), instance.clone()];
            all.extend(["--admin".to_owned(), admin[i].clone()]);
            all.extend(args(&instance));
            Daemon::run(dir, &all.iter().map(String::as_str).collect::<Vec<_>>())
        })
        .collect();
    for daemon in &mut daemons {
        daemon.wait_for("for the scheduler", |line| line.contains("scheduler started"));
    }
    (daemons, admin)
}

/// Stops `daemons` with SIGTERM: each exits with status 0.
fn stop(mut daemons: Vec<Daemon>) {
    for daemon in &daemons {
        daemon.signal(Signal::SIGTERM);
    }
    for daemon in &mut daemons {
        assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    }
}

#[test]
fn a_cancel_sent_to_one_daemon_stops_the_command_another_runs() {
    let dir = scratch("cancel_fleet");
    write(&dir, "jobs.toml", JOBS);
    let schema = Schema::new("cancel");
    let state = schema.state_url();
    let (mut daemons, admin) = two_daemons(&dir, |_| vec!["--state".to_owned(), state.clone()]);
    // Nothing runs yet: a cancel says so.
    let (code, _, err) = ask(&dir, &["cancel", "sleepy"], &admin[1]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("job \"sleepy\" has no running run"), "{err}");

    // d1 queues and runs a manual run; d2 is asked to cancel it.
    let (code, out, err) = ask(&dir, &["trigger", "sleepy"], &admin[0]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("manual run queued"), "{out}");
    let runs = || history(&dir, &["sleepy", "--state", &state]);
    wait_until("the command running on d1", || {
        dir.join("sleepy.pid").exists() && runs().iter().any(|r| r.outcome == "running")
    });
    let (code, out, err) = ask(&dir, &["cancel", "sleepy", "--note", "test"], &admin[1]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("is being stopped by d1, which holds it"), "{out}");
    wait_until_ended(&dir.join("sleepy.pid"));
    wait_until("the run recorded cancelled", || runs().iter().all(|r| r.outcome != "running"));
    let runs = runs();
    assert_eq!(runs.len(), 1, "one record: {runs:?}");
    let run = &runs[0];
    assert_eq!((run.outcome.as_str(), run.instance.as_str(), run.attempts), ("cancelled", "d1", 1));
    let error = run.error.as_deref().unwrap_or_default();
    assert!(
        error.starts_with("cancelled: asked through the admin API of d2 with the none token: test"),
        "{error}"
    );
    let log = daemons[0].wait_for("for the SIGTERM", |line| line.contains("the run was cancelled"));
    assert!(log.contains("sending SIGTERM to the command's process group"), "{log}");

    // Asked again: it has ended.
    let trigger = run.trigger.to_string();
    let (code, _, err) = ask(&dir, &["cancel", "sleepy", "--trigger", &trigger], &admin[0]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("has ended already: cancelled"), "{err}");
    stop(daemons);
}

#[test]
fn with_a_history_per_daemon_the_daemon_asked_finds_the_holder_in_the_others_records() {
    let dir = scratch("cancel_redis");
    write(&dir, "jobs.toml", JOBS);
    let redis = RedisServer::start(&dir);
    let (daemons, admin) = two_daemons(&dir, |instance| {
        vec!["--redis".to_owned(), redis.url(), "--state".into(), format!("sqlite:{instance}.db")]
    });
    let (code, _, err) = ask(&dir, &["trigger", "sleepy"], &admin[0]);
    assert_eq!(code, Some(0), "{err}");
    let runs = || history(&dir, &["sleepy", "--state", "sqlite:d1.db"]);
    wait_until("the command running on d1", || {
        dir.join("sleepy.pid").exists() && runs().iter().any(|r| r.outcome == "running")
    });
    // d2 keeps none of d1's records: it finds the run in d1's, through d1's admin API.
    let (code, out, err) = ask(&dir, &["cancel", "sleepy"], &admin[1]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("is being stopped by d1, which holds it"), "{out}");
    wait_until_ended(&dir.join("sleepy.pid"));
    wait_until("the run recorded cancelled", || runs().iter().all(|r| r.outcome != "running"));
    let runs = runs();
    assert_eq!(runs.len(), 1, "one record: {runs:?}");
    assert_eq!((runs[0].outcome.as_str(), runs[0].attempts), ("cancelled", 1));
    stop(daemons);
}
