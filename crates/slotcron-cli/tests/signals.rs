//! `slotcron run` and the signals that do not stop it: SIGUSR1, SIGUSR2, SIGQUIT,
//! SIGWINCH and SIGPIPE are each logged and ignored, none ends the daemon.
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
        (Signal::SIGUSR2, "ignoring SIGUSR2: reload is not supported yet"),
        (Signal::SIGQUIT, "ignoring SIGQUIT: stop with Ctrl-C, SIGTERM or SIGHUP"),
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
