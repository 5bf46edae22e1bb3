//! Fault suite, issue "Nothing lost when a replica dies mid-burst": three daemons share a
//! coordinator; one is killed with SIGKILL just after an instant, while it starts its
//! share of a burst, and started again 3 s later under the same instance name. Per
//! trigger, every job ran exactly once (late is fine) — a run killed between its start
//! mark and its command's start too: its spawn journal has no line of it, so the next
//! incarnation runs it — and every run has exactly one terminal record in the ledger of
//! the daemon that ran it. Small sizes for CI; the
//! full-size trial is `scripts/crash-trial` (figures in BENCHMARKS.md).

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use nix::sys::signal::Signal;
use slotcron::jiff::Timestamp;
use support::postgres::Schema;
use support::redis_server::RedisServer;
use support::{Daemon, Run, history, scratch, write};

/// Jobs in the burst.
const JOBS: usize = 60;
/// Their period, in seconds.
const PERIOD: i64 = 2;

/// `JOBS` jobs every [`PERIOD`] whose command appends its trigger, job and instance to
/// `witness.txt`.
fn jobs_file() -> String {
    (0..JOBS)
        .map(|i| {
            format!(
                "[[job]]\nname = \"job-{i:03}\"\nevery = \"{PERIOD}s\"\ngrace = \"60s\"\n\
                 command = 'echo \"$SLOTCRON_TRIGGER $SLOTCRON_JOB $SLOTCRON_INSTANCE\" >> witness.txt'\n\n"
            )
        })
        .collect()
}

/// Sleeps until `offset_ms` (negative: before) the next instant of the jobs' period at
/// least 300 ms away; returns that instant.
fn sleep_near_next_instant(offset_ms: i64) -> Timestamp {
    let now = Timestamp::now();
    let mut next = (now.as_millisecond() / 1000 / PERIOD + 1) * PERIOD * 1000;
    if next + offset_ms < now.as_millisecond() + 300 {
        next += PERIOD * 1000;
    }
    let wait = next + offset_ms - now.as_millisecond();
    std::thread::sleep(Duration::from_millis(wait.max(0) as u64));
    Timestamp::from_millisecond(next).unwrap()
}

/// Starts a daemon with `args` (after `run jobs.toml`) and waits until it runs.
fn start(dir: &Path, args: &[String]) -> Daemon {
    let mut all = vec!["jobs.toml"];
    all.extend(args.iter().map(String::as_str));
    let mut daemon = Daemon::run(dir, &all);
    daemon.wait_for("for the scheduler to start", |line| line.contains("scheduler started"));
    daemon
}

/// The trial: starts the daemons, kills the first `kill_at_ms` from an instant (negative:
/// before it, while it holds claims ahead), starts it again 3 s later, runs two periods
/// more, stops every daemon. Returns the instants at which every job was due with the
/// fleet up (from the first after the start to the last before the stop), and the
/// witness lines (trigger, job, instance).
fn trial(
    dir: &Path,
    daemons: &[Vec<String>],
    kill_at_ms: i64,
) -> (Vec<Timestamp>, Vec<(Timestamp, String, String)>) {
    write(dir, "jobs.toml", &jobs_file());
    let mut running: Vec<Daemon> = daemons.iter().map(|args| start(dir, args)).collect();
    let first = sleep_near_next_instant(0);
    let killed = sleep_near_next_instant(kill_at_ms);
    running[0].signal(Signal::SIGKILL);
    running[0].wait_exit();
    // The daemons' logs stay beside the witness, for a failure's post-mortem.
    write(dir, "killed.log", &running[0].log());
    std::thread::sleep(Duration::from_secs(3));
    running[0] = start(dir, &daemons[0]);
    let last = sleep_near_next_instant(0) + Duration::from_secs(2 * PERIOD as u64);
    // Past the last instant by its takeover delay and a late start.
    std::thread::sleep(Duration::from_secs(2 * PERIOD as u64 + 2));
    for daemon in &running {
        daemon.signal(Signal::SIGTERM);
    }
    for (index, daemon) in running.iter_mut().enumerate() {
        assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
        write(dir, &format!("daemon-{index}.log"), &daemon.log());
    }
    assert!(first <= killed && killed < last);
    let instants = (first.as_second()..=last.as_second())
        .step_by(PERIOD as usize)
        .map(|s| Timestamp::from_second(s).unwrap())
        .collect();
    let text = std::fs::read_to_string(dir.join("witness.txt")).expect("the jobs ran");
    let lines = text
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            assert_eq!(fields.len(), 3, "{line:?}");
            (fields[0].parse().unwrap(), fields[1].to_owned(), fields[2].to_owned())
        })
        .collect();
    (instants, lines)
}

/// Nothing ran twice, and every job ran at each of `instants`.
fn assert_exactly_once(instants: &[Timestamp], lines: &[(Timestamp, String, String)]) {
    let mut runs: BTreeMap<(Timestamp, &str), Vec<&str>> = BTreeMap::new();
    for (trigger, job, instance) in lines {
        runs.entry((*trigger, job)).or_default().push(instance);
    }
    let twice: Vec<_> = runs.iter().filter(|(_, by)| by.len() > 1).collect();
    assert!(twice.is_empty(), "triggers run more than once: {twice:?}");
    let missing: Vec<(Timestamp, String)> = instants
        .iter()
        .flat_map(|at| (0..JOBS).map(move |i| (*at, format!("job-{i:03}"))))
        .filter(|(at, job)| !runs.contains_key(&(*at, job.as_str())))
        .collect();
    assert!(missing.is_empty(), "{} triggers did not run: {missing:?}", missing.len());
}

/// Every witness line has exactly one terminal record in `ledger` (the records of the
/// daemons that ran them), and no record is left `running`.
fn assert_one_terminal_record(ledger: &[Run], lines: &[(Timestamp, String, String)]) {
    let running: Vec<&Run> = ledger.iter().filter(|r| r.outcome == "running").collect();
    assert!(running.is_empty(), "records left running: {running:?}");
    let mut records: BTreeMap<(Timestamp, &str, &str), Vec<&str>> = BTreeMap::new();
    for run in ledger.iter().filter(|r| r.ran() || r.outcome == "interrupted") {
        records.entry((run.trigger, &run.job, &run.instance)).or_default().push(&run.outcome);
    }
    let witnessed: BTreeSet<(Timestamp, &str, &str)> =
        lines.iter().map(|(t, job, instance)| (*t, job.as_str(), instance.as_str())).collect();
    let unrecorded: Vec<_> = witnessed.iter().filter(|run| !records.contains_key(run)).collect();
    assert!(unrecorded.is_empty(), "{} runs without a record: {unrecorded:?}", unrecorded.len());
    let doubled: Vec<_> = records.iter().filter(|(_, outcomes)| outcomes.len() > 1).collect();
    assert!(doubled.is_empty(), "runs with more than one record: {doubled:?}");
    let ghosts: Vec<_> = records
        .iter()
        .filter(|(run, outcomes)| outcomes[0] != "interrupted" && !witnessed.contains(*run))
        .collect();
    assert!(ghosts.is_empty(), "records of runs that did not run: {ghosts:?}");
}

fn redis_daemons(redis: &RedisServer) -> Vec<Vec<String>> {
    ["a", "b", "c"]
        .iter()
        .map(|i| {
            ["--redis", &redis.url(), "--instance", i, "--state", &format!("sqlite:{i}.db")]
                .map(String::from)
                .to_vec()
        })
        .collect()
}

fn redis_ledgers(dir: &Path) -> Vec<Run> {
    ["a", "b", "c"].iter().flat_map(|i| history(dir, &["--state", &format!("sqlite:{i}.db")])).collect()
}

#[test]
fn a_daemon_killed_mid_burst_on_redis_loses_no_trigger_and_no_record() {
    // Killed before an instant (holding claims ahead), and twice after it.
    for (round, kill_at_ms) in [-200, 30, 150].into_iter().enumerate() {
        let dir = scratch(&format!("fault_burst_redis_{round}"));
        let redis = RedisServer::start(&dir);
        let (instants, lines) = trial(&dir, &redis_daemons(&redis), kill_at_ms);
        let ledger = redis_ledgers(&dir);
        assert_exactly_once(&instants, &lines);
        assert_one_terminal_record(&ledger, &lines);
    }
}

#[test]
fn a_daemon_killed_mid_burst_on_postgres_loses_no_trigger_and_no_record() {
    for (round, kill_at_ms) in [-200, 30, 150].into_iter().enumerate() {
        let dir = scratch(&format!("fault_burst_postgres_{round}"));
        let schema = Schema::new("fault_burst");
        let state = schema.state_url();
        let daemons: Vec<Vec<String>> = ["a", "b", "c"]
            .iter()
            .map(|i| ["--state", &state, "--instance", i].map(String::from).to_vec())
            .collect();
        let (instants, lines) = trial(&dir, &daemons, kill_at_ms);
        let ledger = history(&dir, &["--state", &state]);
        assert_exactly_once(&instants, &lines);
        assert_one_terminal_record(&ledger, &lines);
    }
}

#[test]
fn a_single_daemon_killed_mid_burst_loses_no_trigger_and_no_record() {
    // No coordinator: the triggers it took and never recorded run at its next start.
    for (round, kill_at_ms) in [10, 30, 150].into_iter().enumerate() {
        let dir = scratch(&format!("fault_burst_single_{round}"));
        let daemons = [["--state", "sqlite:a.db", "--instance", "a"].map(String::from).to_vec()];
        let (instants, lines) = trial(&dir, &daemons, kill_at_ms);
        let ledger = history(&dir, &["--state", "sqlite:a.db"]);
        assert_exactly_once(&instants, &lines);
        assert_one_terminal_record(&ledger, &lines);
    }
}
