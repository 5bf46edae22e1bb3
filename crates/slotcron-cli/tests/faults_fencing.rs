//! Failure 3 of issue 8: in single-replica mode (SQLite state, no coordinator) the
//! fencing token restarted at 1 after every restart. It lives in the state now: after
//! `kill -9` and a restart, tokens go on growing. Counted from the commands' own output;
//! every wait is bounded.

mod support;

use std::time::Duration;

use nix::sys::signal::Signal;
use support::{Daemon, scratch, wait_until, write};

const JOBS: &str = r#"[[job]]
name = "tick"
every = "1s"
command = 'echo "$SLOTCRON_TRIGGER $SLOTCRON_FENCING_TOKEN" >> runs.txt'
"#;

/// The fencing tokens in `runs.txt`, in the order the runs wrote them.
fn tokens(dir: &std::path::Path) -> Vec<u64> {
    let text = std::fs::read_to_string(dir.join("runs.txt")).unwrap_or_default();
    text.lines().map(|line| line.split(' ').nth(1).unwrap().parse().unwrap()).collect()
}

#[test]
fn fencing_tokens_keep_growing_after_kill_9_in_single_replica_mode() {
    let dir = scratch("faults_fencing");
    write(&dir, "jobs.toml", JOBS);
    let mut first = Daemon::run(&dir, &["jobs.toml", "--state", "sqlite:state.db"]);
    first.wait_for("for the scheduler to start", |line| line.contains("scheduler started"));
    wait_until("three runs", || tokens(&dir).len() >= 3);
    first.signal(Signal::SIGKILL);
    first.wait_exit();
    // A command of the killed daemon may still append its line.
    std::thread::sleep(Duration::from_millis(200));
    let before = tokens(&dir);
    let mut second = Daemon::run(&dir, &["jobs.toml", "--state", "sqlite:state.db"]);
    second.wait_for("for the scheduler to start", |line| line.contains("scheduler started"));
    wait_until("three more runs", || tokens(&dir).len() >= before.len() + 3);
    second.signal(Signal::SIGTERM);
    assert_eq!(second.wait_exit().code(), Some(0), "{}", second.log());
    let all = tokens(&dir);
    assert!(all.windows(2).all(|w| w[0] < w[1]), "fencing tokens keep growing across kill -9: {all:?}");
}
