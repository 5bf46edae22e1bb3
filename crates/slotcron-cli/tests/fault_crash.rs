//! Fault suite, failure 4 of issue 8: `kill -9` of the daemon while an `after` job's
//! command runs. The restarted daemon finds the run's `running` record, stops the command
//! still going from before, and records the run `interrupted`; the one-shot is not run
//! again. Every wait is bounded by `support::PATIENCE`.

mod support;

use nix::sys::signal::Signal;
use support::{Daemon, has_ended, history, run_in, scratch, stdout, wait_until, write};

#[test]
fn a_run_cut_short_by_kill_9_is_recorded_interrupted_and_its_command_stopped() {
    let dir = scratch("fault_crash_after");
    write(
        &dir,
        "jobs.toml",
        r#"[[job]]
name = "migrate"
after = "1s"
command = 'echo $$ > pid.txt; exec sleep 300'
"#,
    );
    let mut first = Daemon::start(&dir, "jobs.toml");
    first.wait_for("for the command to start", |line| line.contains("command started"));
    wait_until("the command's pid written", || {
        std::fs::read_to_string(dir.join("pid.txt")).is_ok_and(|pid| pid.ends_with('\n'))
    });
    let pid: u32 = std::fs::read_to_string(dir.join("pid.txt")).unwrap().trim().parse().unwrap();
    // Mid-run: the run's record says `running`, with its command's pid (the ledger is
    // written asynchronously: a kill within its first milliseconds may beat it).
    wait_until("the run recorded running with its pid", || {
        history(&dir, &["migrate"]).iter().any(|run| run.outcome == "running" && run.pid == Some(pid))
    });
    first.signal(Signal::SIGKILL);
    first.wait_exit();
    assert!(!has_ended(pid), "the command outlives its killed daemon (the scenario)");

    let mut second = Daemon::start(&dir, "jobs.toml");
    second.wait_for("the one-shot found done", |line| line.contains("one-shot job already ran"));
    wait_until("the command from before stopped", || has_ended(pid));
    wait_until("the run recorded interrupted", || {
        history(&dir, &["migrate"]).iter().any(|run| run.outcome == "interrupted")
    });
    second.signal(Signal::SIGTERM);
    assert_eq!(second.wait_exit().code(), Some(0), "{}", second.log());
    // The stale sweep's warning names the run it stops.
    let stopping = second.lines_with(&["stopping a command left running", r#"job="migrate""#, " trigger="]);
    assert_eq!(stopping.len(), 1, "{}", second.log());

    let runs = history(&dir, &["migrate"]);
    assert_eq!(runs.len(), 1, "one record for the one trigger: {runs:?}");
    assert_eq!(runs[0].outcome, "interrupted", "{runs:?}");
    assert_eq!(runs[0].duration_ms, None, "its end was never seen: {runs:?}");
    // The text table shows no duration for it (its end was never seen), as the API gives none.
    let text = stdout(&run_in(&dir, &["history", "migrate"]));
    let columns: Vec<&str> = text
        .lines()
        .next()
        .unwrap_or_default()
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!((columns.get(4), columns.get(7)), (Some(&"interrupted"), Some(&"-")), "{text}");
    assert!(second.lines_with(&["command started"]).is_empty(), "not run again:\n{}", second.log());
    assert!(has_ended(pid), "no copy of the command runs on");
}

#[test]
fn every_command_left_running_is_stopped_at_the_next_start_and_each_record_says_so() {
    let dir = scratch("fault_crash_many");
    let jobs: String = (0..5)
        .map(|i| format!("[[job]]\nname = \"m{i}\"\nafter = \"1s\"\ncommand = 'echo $$ >> pids.txt; exec sleep 300'\n\n"))
        .collect();
    write(&dir, "jobs.toml", &jobs);
    let mut first = Daemon::start(&dir, "jobs.toml");
    first.wait_for("for a command to start", |line| line.contains("command started"));
    let pids = || -> Vec<u32> {
        let text = std::fs::read_to_string(dir.join("pids.txt")).unwrap_or_default();
        text.lines().filter_map(|line| line.trim().parse().ok()).collect()
    };
    wait_until("five runs recorded running with their pids", || {
        history(&dir, &[]).iter().filter(|run| run.outcome == "running" && run.pid.is_some()).count() == 5
    });
    first.signal(Signal::SIGKILL);
    first.wait_exit();
    let left = pids();
    assert_eq!(left.len(), 5);

    let mut second = Daemon::start(&dir, "jobs.toml");
    wait_until("the commands from before stopped", || left.iter().all(|pid| has_ended(*pid)));
    wait_until("the runs recorded interrupted", || {
        history(&dir, &[]).iter().filter(|run| run.outcome == "interrupted").count() == 5
    });
    second.signal(Signal::SIGTERM);
    assert_eq!(second.wait_exit().code(), Some(0), "{}", second.log());
    assert_eq!(second.lines_with(&["stopping a command left running"]).len(), 5, "{}", second.log());
    for run in history(&dir, &[]) {
        let error = run.error.unwrap_or_default();
        assert!(error.contains("was still running: stopped with SIGTERM"), "{error}");
    }
}
