//! A job's process group: signalled as a whole, killed if its run is dropped, killed
//! with all the others by [`kill_all`] when a second stop signal hurries shutdown, and
//! stopped at the next start ([`stop_stale`]) if the daemon died while it ran.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use std::time::{Duration, Instant};

use jiff::Timestamp;
use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use slotcron::{RunProcess, RunRecord};

/// The process group ids of the commands running now. Process-wide, as the signals that
/// make [`kill_all`] run are.
static RUNNING: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn running() -> MutexGuard<'static, BTreeSet<i32>> {
    RUNNING.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Set by [`kill_all`], before its signals: the shutdown has been hurried.
static HURRIED: AtomicBool = AtomicBool::new(false);

/// Sends SIGKILL to the process group of every command running now; returns how many
/// there were.
pub fn kill_all() -> usize {
    HURRIED.store(true, Ordering::SeqCst);
    let running = running();
    for &pgid in running.iter() {
        signal(Pid::from_raw(pgid), Signal::SIGKILL);
    }
    running.len()
}

/// Whether [`kill_all`] has run: a command killed by a signal since was stopped by the
/// hurried shutdown.
pub fn hurried() -> bool {
    HURRIED.load(Ordering::SeqCst)
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

/// The name of signal number `number` (`"SIGTERM"`), or `"signal N"` for one this
/// system does not name.
pub fn signal_name(number: i32) -> String {
    Signal::try_from(number).map_or_else(|_| format!("signal {number}"), |s| s.as_str().to_owned())
}

/// When the process `pid` started, in clock ticks since boot (`/proc/PID/stat` field 22,
/// `starttime`, proc(5)): with the pid, it tells a process from a later one that reused
/// the pid. `None` if there is no such process.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the parenthesized command name start at field 3.
    let (_, rest) = stat.rsplit_once(") ")?;
    rest.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// This machine's host name, as run records name it.
pub fn host() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// The process of a run this daemon starts, for its `running` record.
pub fn run_process(pid: u32) -> Option<RunProcess> {
    Some(RunProcess { host: host().into(), pid, start_time: start_time(pid)? })
}

/// Whether the process `pid` has ended: gone, or a zombie nobody has reaped yet.
fn has_ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')),
        Err(_) => true,
    }
}

/// The process group of `process`, a command a dead daemon left, if it still runs on this
/// host (its pid names the same process: same start time); else what became of it, for
/// the run's record.
fn left_running(process: &RunProcess) -> Result<Pid, String> {
    let pid = process.pid;
    if *process.host != host() {
        return Err(format!("its command (pid {pid}) runs on host {}: not stopped from here", process.host));
    }
    if start_time(pid) != Some(process.start_time) || has_ended(pid) {
        return Err(format!("its command (pid {pid}) had ended"));
    }
    i32::try_from(pid)
        .ok()
        .map(Pid::from_raw)
        .ok_or_else(|| format!("its command (pid {pid}) cannot be signalled"))
}

/// Sends SIGTERM to the process group of `process`, the command of `record`'s run that a
/// dead daemon left, if it still runs on this host; `true` if it did. The start-up sweep
/// signals all of them at once, then [`stop_stale`] waits for each: together, rather
/// than one after another.
pub fn terminate_stale(record: &RunRecord, process: &RunProcess) -> bool {
    let Ok(pgid) = left_running(process) else { return false };
    tracing::warn!(
        job = &*record.job,
        trigger = %record.trigger,
        pid = process.pid,
        "stopping a command left running by a daemon that stopped: SIGTERM to its process group"
    );
    signal(pgid, Signal::SIGTERM);
    true
}

/// Stops the command of a run that a daemon left running when it died: if it runs on
/// this host and its pid still names the same process (same start time), its process
/// group gets SIGTERM (unless [`terminate_stale`] sent it already: `signalled`), then
/// SIGKILL if it has not ended after `grace`. Returns what happened, for the run's
/// record; the log line names the run's job and trigger.
pub async fn stop_stale(
    record: &RunRecord,
    process: &RunProcess,
    grace: Duration,
    signalled: bool,
) -> String {
    let pid = process.pid;
    let pgid = match i32::try_from(pid).ok().map(Pid::from_raw) {
        Some(pgid) if signalled => pgid,
        _ if terminate_stale(record, process) => Pid::from_raw(pid as i32),
        _ => {
            return left_running(process)
                .err()
                .unwrap_or_else(|| format!("its command (pid {pid}) had ended"));
        }
    };
    let deadline = Instant::now() + grace;
    while !has_ended(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if has_ended(pid) {
        return format!("its command (process group {pid}) was still running: stopped with SIGTERM");
    }
    signal(pgid, Signal::SIGKILL);
    format!("its command (process group {pid}) was still running: SIGTERM, then SIGKILL after {grace:?}")
}
