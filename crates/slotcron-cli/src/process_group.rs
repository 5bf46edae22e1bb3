//! A job's process group: signalled as a whole, and killed if its run is dropped.

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The process group a job's shell leads (spawned with `process_group(0)`, so the
/// group id is the shell's pid). Signals reach the shell and everything it started.
///
/// Dropping it while armed sends SIGKILL to the group: the engine drops a run's future
/// when the run ignores cancellation past the cancel grace, and the job's processes must
/// not outlive it.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: Pid,
    armed: bool,
}

impl ProcessGroup {
    /// The group led by the process `leader` (its pid).
    pub fn led_by(leader: u32) -> Option<Self> {
        let pgid = i32::try_from(leader).ok().filter(|pid| *pid > 0)?;
        Some(Self { pgid: Pid::from_raw(pgid), armed: true })
    }

    /// Asks every process of the group to stop (SIGTERM).
    pub fn terminate(&self) {
        self.signal(Signal::SIGTERM);
    }

    /// The group has finished: dropping it no longer kills anything.
    pub fn disarm(mut self) {
        self.armed = false;
    }

    fn signal(&self, signal: Signal) {
        match killpg(self.pgid, signal) {
            // The group is gone already.
            Ok(()) | Err(Errno::ESRCH) => {}
            Err(e) => tracing::warn!(pgid = self.pgid.as_raw(), %signal, "cannot signal process group: {e}"),
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if self.armed {
            self.signal(Signal::SIGKILL);
        }
    }
}
