//! Fault suite, failure 7 of issue 8: the daemon's threads with the SQLite state under
//! load. Its `Threads:` line in `/proc/PID/status` is read every 20 ms while 300 jobs run
//! every second; the most seen must stay under 32. Bounded: the load lasts until 1,500
//! runs are recorded, or `support::PATIENCE`.

mod support;

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use support::{Daemon, PATIENCE, scratch, write};

/// The daemon's thread count, from `/proc/PID/status`.
fn threads(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| line.strip_prefix("Threads:")).and_then(|n| n.trim().parse().ok())
}

#[test]
fn a_daemon_on_a_sqlite_state_keeps_under_32_threads_under_load() {
    const JOBS: usize = 300;
    let dir = scratch("fault_threads");
    let jobs: String = (0..JOBS)
        .map(|i| format!("[[job]]\nname = \"load-{i}\"\nevery = \"1s\"\ncommand = ':'\n\n"))
        .collect();
    write(&dir, "jobs.toml", &jobs);
    let mut daemon = Daemon::start(&dir, "jobs.toml");
    daemon.wait_for("the daemon running", |line| line.contains("slotcron running"));
    let pid = daemon.pid();
    let deadline = Instant::now() + PATIENCE;
    let (mut most, mut samples) = (0, 0);
    let mut finished = 0;
    while finished < 5 * JOBS && Instant::now() < deadline {
        if let Some(now) = threads(pid) {
            most = most.max(now);
            samples += 1;
        }
        std::thread::sleep(Duration::from_millis(20));
        while let Ok(line) = daemon.try_line() {
            finished += usize::from(line.contains("run finished"));
        }
    }
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0));
    assert!(finished >= 5 * JOBS, "only {finished} runs finished within {PATIENCE:?}");
    assert!(samples > 0);
    eprintln!("most threads seen: {most} ({samples} samples, {finished} runs)");
    assert!(most < 32, "the daemon had {most} threads");
}
