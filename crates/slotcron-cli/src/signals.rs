//! The daemon's signals: SIGINT and SIGTERM stop it, a second one hurries the
//! shutdown ([`StopSignals`]); SIGHUP and SIGUSR2 reload the jobs file
//! ([`crate::reload::Triggers`]); SIGUSR1, SIGQUIT, SIGWINCH and SIGPIPE are
//! ignored, each with a log line ([`ignore_others`]), so that none ends the daemon
//! silently (their default actions would kill it, SIGQUIT with a core dump).

use slotcron::CancellationToken;
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::process_group;

/// SIGINT and SIGTERM, installed before the first job starts. (SIGHUP reloads, see
/// [`crate::reload::Triggers`]: a daemon started from a terminal outlives the closed
/// session.)
pub struct StopSignals {
    interrupt: Signal,
    terminate: Signal,
}

impl StopSignals {
    pub fn install() -> std::io::Result<Self> {
        Ok(Self { interrupt: signal(SignalKind::interrupt())?, terminate: signal(SignalKind::terminate())? })
    }

    /// The next SIGINT or SIGTERM: its name.
    pub async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.interrupt.recv() => "SIGINT",
            _ = self.terminate.recv() => "SIGTERM",
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

/// A signal the daemon ignores, and what it logs when one arrives.
struct Ignored {
    kind: SignalKind,
    name: &'static str,
    why: &'static str,
    /// Logged at the first one only: signals that come in bursts, and SIGPIPE, which a
    /// log line written to a closed standard error would raise again.
    once: bool,
}

/// The signals [`ignore_others`] installs.
fn ignored() -> [Ignored; 4] {
    [
        Ignored {
            kind: SignalKind::user_defined1(),
            name: "SIGUSR1",
            why: "it has no meaning to slotcron",
            once: false,
        },
        Ignored {
            kind: SignalKind::quit(),
            name: "SIGQUIT",
            why: "stop with Ctrl-C or SIGTERM",
            once: false,
        },
        Ignored {
            kind: SignalKind::window_change(),
            name: "SIGWINCH",
            why: "the terminal was resized; later ones are not logged",
            once: true,
        },
        Ignored {
            kind: SignalKind::pipe(),
            name: "SIGPIPE",
            why: "something read the log or a command's output and went away; later ones are not logged",
            once: true,
        },
    ]
}

/// Installs handlers for SIGUSR1, SIGQUIT, SIGWINCH and SIGPIPE that log the
/// signal (at info level) and otherwise ignore it. SIGWINCH and SIGPIPE are logged the
/// first time only. Must be called inside the runtime; the handlers stay for the life of
/// the process.
///
/// # Errors
/// A handler cannot be installed.
pub fn ignore_others() -> std::io::Result<()> {
    for ignored in ignored() {
        let mut stream = signal(ignored.kind)?;
        tokio::spawn(async move {
            let mut logged = false;
            while stream.recv().await.is_some() {
                if !(ignored.once && logged) {
                    tracing::info!(signal = ignored.name, "ignoring {}: {}", ignored.name, ignored.why);
                    logged = true;
                }
            }
        });
    }
    Ok(())
}
