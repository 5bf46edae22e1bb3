//! Restarting `slotcron run` on the same state (the default, `sqlite:slotcron.db` in the
//! working directory): a one-shot that ran never runs again, even after SIGKILL, and the
//! triggers missed while the daemon was down follow the job's misfire policy.
//!
//! Every wait is bounded; the 10 s of downtime is the scenario, not a measurement.

mod support;

use std::path::Path;
use std::time::Duration;

use nix::sys::signal::Signal;
use slotcron::jiff::{SignedDuration, Timestamp};
use support::{Daemon, Run, history, run_in, scratch, stderr, stdout, write};

#[test]
fn an_at_job_that_ran_before_sigkill_does_not_run_again() {
    let dir = scratch("restart_at");
    write(
        &dir,
        "jobs.toml",
        r#"[[job]]
name = "launch"
at = "2020-01-01T00:00:00Z"
command = "echo launched >> runs.txt"
"#,
    );
    let mut first = Daemon::start(&dir, "jobs.toml");
    // The instant is past: it runs at start-up (misfire run_once, the one-shot default).
    // The log line comes just before the record is written: wait for both.
    first.wait_for("for the run to finish", |line| line.contains("run finished"));
    support::wait_until("the run recorded in the history", || {
        history(&dir, &[]).iter().filter(|r| r.finished()).count() == 1
    });
    first.signal(Signal::SIGKILL);
    first.wait_exit();

    let mut second = Daemon::start(&dir, "jobs.toml");
    second.wait_for("for the one-shot to be found done", |line| {
        line.contains("one-shot job already ran (the state says so)") && line.contains("launch")
    });
    second.signal(Signal::SIGTERM);
    assert_eq!(second.wait_exit().code(), Some(0), "{}", second.log());
    assert!(second.lines_with(&["command started"]).is_empty(), "{}", second.log());

    assert_eq!(std::fs::read_to_string(dir.join("runs.txt")).unwrap(), "launched\n");
    let out = run_in(&dir, &["history"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = stdout(&out);
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 1, "exactly one run:\n{listing}");
    let columns: Vec<&str> = lines[0].split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(columns[..2], ["launch", "2020-01-01T00:00:00Z"]);
    assert_eq!(columns[4], "succeeded");
}

/// The misfire grace window of the jobs below (the default, `Misfire::DEFAULT_GRACE`): at
/// restart, a trigger less than this old is a live trigger, not a misfire.
const GRACE: SignedDuration = SignedDuration::from_secs(1);
const PERIOD: SignedDuration = SignedDuration::from_secs(2);

/// What a restart after 10 s of downtime did with an every-2-seconds job whose misfire
/// settings are `policy` (TOML lines).
struct Downtime {
    /// The last trigger handled before the stop.
    last: Timestamp,
    /// The records of the restarted daemon, oldest trigger first.
    after: Vec<Run>,
    /// Every trigger the command ran for (`SLOTCRON_TRIGGER`), in order.
    ran: Vec<Timestamp>,
}

impl Downtime {
    /// Runs the job until it has run once, stops the daemon (SIGTERM) for 10 s, starts it
    /// again on the same state and stops it once `wanted` runs have finished.
    fn of(test: &str, policy: &str, wanted: usize) -> Self {
        let dir = scratch(test);
        write(
            &dir,
            "jobs.toml",
            &format!(
                "[[job]]\nname = \"tick\"\nevery = \"2s\"\n{policy}\ncommand = 'echo $SLOTCRON_TRIGGER >> runs.txt'\n"
            ),
        );
        let mut before = Daemon::run(&dir, &["jobs.toml", "--instance", "before"]);
        before.wait_for("for a run", |line| line.contains("run finished") && line.contains("succeeded"));
        before.signal(Signal::SIGTERM);
        assert_eq!(before.wait_exit().code(), Some(0), "{}", before.log());
        let last = history(&dir, &[]).iter().map(|r| r.trigger).max().unwrap();

        std::thread::sleep(Duration::from_secs(10));

        let mut after = Daemon::run(&dir, &["jobs.toml", "--instance", "after"]);
        for _ in 0..wanted {
            after.wait_for("for a run to finish", |line| line.contains("run finished"));
        }
        after.signal(Signal::SIGTERM);
        assert_eq!(after.wait_exit().code(), Some(0), "{}", after.log());
        Self::read(&dir, last)
    }

    fn read(dir: &Path, last: Timestamp) -> Self {
        let after: Vec<Run> = history(dir, &["tick"]).into_iter().filter(|r| r.instance == "after").collect();
        assert!(after.iter().all(|r| r.trigger > last), "only triggers after {last}: {after:#?}");
        let ran = std::fs::read_to_string(dir.join("runs.txt"))
            .unwrap()
            .lines()
            .map(|line| line.parse().unwrap())
            .collect();
        Self { last, after, ran }
    }

    fn missed(&self) -> Vec<&Run> {
        self.after.iter().filter(|r| r.outcome == "missed").collect()
    }

    /// The restarted daemon's runs, oldest trigger first.
    fn runs(&self) -> Vec<&Run> {
        self.after.iter().filter(|r| r.ran()).collect()
    }

    /// Checks that the restarted daemon's runs are one per trigger from `first` on, every
    /// 2 s, each also in the command's own output; returns them.
    fn runs_from(&self, first: Timestamp) -> Vec<&Run> {
        let runs = self.runs();
        for (k, run) in runs.iter().enumerate() {
            assert_eq!(run.trigger, first + PERIOD * k as i32, "runs every 2 s from {first}: {runs:#?}");
            assert!(self.ran.contains(&run.trigger), "SLOTCRON_TRIGGER {} in runs.txt", run.trigger);
        }
        runs
    }
}

/// How many triggers a `missed` record stands for, from its reason.
fn missed_count(record: &Run) -> i32 {
    let reason = record.error.as_deref().unwrap_or_default();
    let count = reason.split(" trigger(s) noticed after").next().unwrap();
    count.parse().unwrap_or_else(|_| panic!("no count in {reason:?}"))
}

/// Whether `run` started later than the grace window after its trigger: a catch-up run.
fn caught_up(run: &Run) -> bool {
    run.started.duration_since(run.trigger) > GRACE
}

// The daemon was down at least 10 s after the last trigger L it handled, so at restart
// the triggers L+2 s ... L+8 s at least are older than the grace window: misfires. A
// trigger within the grace window at restart, and those after it, are live.

#[test]
fn skip_drops_the_missed_triggers() {
    let downtime = Downtime::of("misfire_skip", "misfire = \"skip\"", 2);
    let missed = downtime.missed();
    assert_eq!(missed.len(), 1, "one record for the missed triggers: {:#?}", downtime.after);
    let (newest, count) = (missed[0].trigger, missed_count(missed[0]));
    assert!(count >= 4, "at least L+2 s ... L+8 s: {count}");
    assert_eq!(newest - PERIOD * (count - 1), downtime.last + PERIOD, "they start after the last run");
    // No catch-up run: the first run is the first trigger after the missed ones.
    let runs = downtime.runs_from(newest + PERIOD);
    assert!(!runs.is_empty(), "{:#?}", downtime.after);
}

#[test]
fn run_once_coalesces_the_missed_triggers_into_one_run() {
    let downtime = Downtime::of("misfire_run_once", "misfire = \"run_once\"", 2);
    assert!(downtime.missed().is_empty(), "{:#?}", downtime.after);
    let first = downtime.runs()[0].trigger;
    assert!(first >= downtime.last + PERIOD * 4, "it stands for the newest missed trigger: {first}");
    let runs = downtime.runs_from(first);
    assert!(caught_up(runs[0]), "one catch-up run for L+2 s ... {first}: {:#?}", runs[0]);
    assert!(runs.len() >= 2, "then the live triggers: {runs:#?}");
}

#[test]
fn run_all_runs_the_newest_cap_missed_triggers() {
    let downtime = Downtime::of("misfire_run_all", "misfire = \"run_all\"\nmisfire_cap = 3", 5);
    let missed = downtime.missed();
    assert_eq!(missed.len(), 1, "the triggers beyond the cap: {:#?}", downtime.after);
    let (newest_dropped, count) = (missed[0].trigger, missed_count(missed[0]));
    assert_eq!(newest_dropped - PERIOD * (count - 1), downtime.last + PERIOD, "dropped: the oldest ones");
    let runs = downtime.runs_from(newest_dropped + PERIOD);
    assert!(runs.len() >= 4, "three catch-up runs, then a live one: {runs:#?}");
    for run in &runs[..3] {
        assert!(caught_up(run), "a catch-up run recorded with its own trigger: {run:#?}");
    }
}
