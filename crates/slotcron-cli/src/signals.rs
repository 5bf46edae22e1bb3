//! The daemon's signals: SIGINT, SIGTERM and SIGHUP stop it; a second one hurries the
//! shutdown.

use slotcron::CancellationToken;
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::process_group;

/// SIGINT, SIGTERM and SIGHUP, installed before the first job starts. SIGHUP (the
/// terminal or SSH session closing) stops the daemon as SIGTERM does: its default action
/// would kill the daemon at once and leave the commands, in their own process groups,
/// running unwatched and unrecorded.
pub struct StopSignals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl StopSignals {
    pub fn install() -> std::io::Result<Self> {
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    /// The next SIGINT, SIGTERM or SIGHUP: its name.
    pub async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.interrupt.recv() => "SIGINT",
            _ = self.terminate.recv() => "SIGTERM",
            _ = self.hangup.recv() => "SIGHUP",
        }
    }

    /// Cancels `cancel` at the first signal. Each later one hurries the shutdown: the
    /// running commands' process groups get SIGKILL at once, and the daemon exits as soon
    /// as their runs are recorded (still with status 0: the stop was asked for).
    pub async fn cancel_on_signal(mut self, cancel: CancellationToken, shutdown_timeout: String) {
        let name = self.next().await;
        cancel.cancel();
        tracing::info!(
            signal = name,
            "stopping: no new runs; running commands get up to {shutdown_timeout} to finish (signal again to kill them now)"
        );
        loop {
            let name = self.next().await;
            let commands = process_group::kill_all();
            tracing::warn!(
                signal = name,
                commands,
                "stopping now: sending SIGKILL to the running commands' process groups"
            );
        }
    }
}
