//! A job's process group: signalled as a whole, killed if its run is dropped, and killed
//! with all the others by [`kill_all`] when a second stop signal hurries shutdown.

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard};

use jiff::Timestamp;
use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The process group ids of the commands running now. Process-wide, as the signals that
/// make [`kill_all`] run are.
static RUNNING: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn running() -> MutexGuard<'static, BTreeSet<i32>> {
    RUNNING.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Sends SIGKILL to the process group of every command running now; returns how many
/// there were.
pub fn kill_all() -> usize {
    let running = running();
    for &pgid in running.iter() {
        signal(Pid::from_raw(pgid), Signal::SIGKILL);
    }
    running.len()
}

/// The process group a run's shell leads (spawned with `process_group(0)`, so the group
/// id is the shell's pid). Signals reach the shell and everything it started.
///
/// Dropping it while armed sends SIGKILL to the group and logs a warning naming the job
/// and the trigger: the engine drops a run's future when the run ignores cancellation
/// past the cancel grace, and the job's processes must not outlive it.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: Pid,
    job: String,
    trigger: Timestamp,
    armed: bool,
}

impl ProcessGroup {
    /// The group led by the process `leader` (its pid), running `job` for `trigger`.
    pub fn led_by(leader: u32, job: &str, trigger: Timestamp) -> Option<Self> {
        let pgid = i32::try_from(leader).ok().filter(|pid| *pid > 0)?;
        running().insert(pgid);
        Some(Self { pgid: Pid::from_raw(pgid), job: job.to_owned(), trigger, armed: true })
    }

    /// Asks every process of the group to stop (SIGTERM).
    pub fn terminate(&self) {
        signal(self.pgid, Signal::SIGTERM);
    }

    /// The group's shell has exited and its run is over: dropping it no longer kills
    /// anything, and [`kill_all`] leaves it alone (what the shell left running in the
    /// background goes on, as under cron).
    pub fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        running().remove(&self.pgid.as_raw());
        if self.armed {
            tracing::warn!(
                job = self.job.as_str(),
                trigger = %self.trigger,
                pgid = self.pgid.as_raw(),
                "the command did not stop within its grace period: sending SIGKILL to its process group"
            );
            signal(self.pgid, Signal::SIGKILL);
        }
    }
}

fn signal(pgid: Pid, signal: Signal) {
    match killpg(pgid, signal) {
        // The group is gone already.
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(e) => tracing::warn!(pgid = pgid.as_raw(), %signal, "cannot signal process group: {e}"),
    }
}
