//! `slotcron run` and the signals that do not stop it: SIGUSR1, SIGQUIT, SIGWINCH and
//! SIGPIPE are each logged and ignored, none ends the daemon (SIGHUP and SIGUSR2 reload:
//! tests/reload.rs).
//!
//! Each wait is bounded by `support::PATIENCE`.

mod support;

use nix::sys::signal::Signal;
use support::{Daemon, has_ended, scratch, write};

#[test]
fn signals_other_than_the_stop_signals_are_logged_and_ignored() {
    let dir = scratch("ignored_signals");
    write(&dir, "crontab", "# name: hello\n@reboot echo hello\n");
    let mut daemon = Daemon::start(&dir, "crontab");
    daemon.wait_for("for the run to finish", |line| line.contains("run finished"));
    for (signal, says) in [
        (Signal::SIGUSR1, "ignoring SIGUSR1"),
        (Signal::SIGQUIT, "ignoring SIGQUIT: stop with Ctrl-C or SIGTERM"),
        (Signal::SIGWINCH, "ignoring SIGWINCH"),
        (Signal::SIGPIPE, "ignoring SIGPIPE"),
    ] {
        daemon.signal(signal);
        daemon.wait_for(says, |line| line.contains(says));
        assert!(!has_ended(daemon.pid()), "{signal} ended the daemon:\n{}", daemon.log());
    }
    // SIGWINCH comes in bursts (each resize of the terminal): logged once.
    daemon.signal(Signal::SIGWINCH);
    daemon.signal(Signal::SIGUSR1);
    daemon.wait_for("the second SIGUSR1", |line| line.contains("ignoring SIGUSR1"));
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    assert_eq!(daemon.lines_with(&["ignoring SIGWINCH"]).len(), 1, "{}", daemon.log());
    assert_eq!(daemon.lines_with(&["ignoring SIGUSR1"]).len(), 2, "{}", daemon.log());
}

/// Starts `slotcron run ARGS` on `file` (a `sleeper` job running `sleep 600` at start),
/// stops it once the command runs, and returns the daemon once it exited with status 0.
fn stopped_during_a_run(name: &str, file: &str, text: &str, args: &[&str]) -> Daemon {
    let dir = scratch(name);
    write(&dir, file, text);
    let mut all = vec![file, "--state", "memory"];
    all.extend_from_slice(args);
    let mut daemon = Daemon::run(&dir, &all);
    daemon.wait_for("the command to start", |line| line.contains("command started"));
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    daemon
}

#[test]
fn shutdown_timeout_bounds_how_long_running_commands_may_go_on() {
    let toml =
        "shutdown_timeout = \"1h\"\n\n[[job]]\nname = \"sleeper\"\nafter = \"0s\"\ncommand = \"sleep 600\"\n";
    // The flag wins over the file's key.
    let daemon =
        stopped_during_a_run("shutdown_timeout_flag", "jobs.toml", toml, &["--shutdown-timeout", "1s"]);
    assert_eq!(daemon.lines_with(&["running commands get up to 1s to finish"]).len(), 1, "{}", daemon.log());
    let finished = daemon.lines_with(&["run finished", "job=\"sleeper\""]);
    assert_eq!(finished.len(), 1, "the run is recorded before the daemon exits:\n{}", daemon.log());
    // Stopped by the shutdown (SIGTERM at its timeout): aborted, not failed.
    assert!(finished[0].contains(r#"outcome="aborted""#), "{}", finished[0]);
    let stopping =
        daemon.lines_with(&["the daemon is stopping: sending SIGTERM to the command", "job=\"sleeper\""]);
    assert_eq!(stopping.len(), 1, "{}", daemon.log());
    assert!(daemon.lines_with(&["timed out"]).is_empty(), "{}", daemon.log());

    // The file's key, without the flag.
    let daemon = stopped_during_a_run("shutdown_timeout_key", "jobs.toml", &toml.replace("1h", "500ms"), &[]);
    assert_eq!(
        daemon.lines_with(&["running commands get up to 500ms to finish"]).len(),
        1,
        "{}",
        daemon.log()
    );

    // The default, on a crontab.
    let crontab = "# name: sleeper\n@reboot exit 0\n";
    let dir = scratch("shutdown_timeout_default");
    write(&dir, "crontab", crontab);
    let mut daemon = Daemon::run(&dir, &["crontab", "--state", "memory"]);
    daemon.wait_for("the run", |line| line.contains("run finished"));
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0));
    assert_eq!(daemon.lines_with(&["running commands get up to 20s to finish"]).len(), 1, "{}", daemon.log());
}

#[test]
fn a_bad_shutdown_timeout_is_refused_at_start() {
    let out = support::run(&["run", "crontab", "--shutdown-timeout", "soon"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        support::stderr(&out).contains("invalid value 'soon' for '--shutdown-timeout <DURATION>'"),
        "{}",
        support::stderr(&out)
    );
}
