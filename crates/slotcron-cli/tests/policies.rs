//! Run policies in the daemon: `forbid` across three `slotcron run` sharing a Redis, and
//! again sharing a PostgreSQL state (one of them killed with SIGKILL while it holds the
//! lease), `max_concurrent_runs`, and `on_failure` with its variables, rate-limited
//! during a Redis outage.
//!
//! Assertions are about which commands ran and whether they overlapped (their own
//! start and end instants), never about how long anything took. Every wait is bounded.

mod support;

use std::path::Path;

use nix::sys::signal::Signal;
use support::postgres::Schema;
use support::redis_server::RedisServer;
use support::{Daemon, history, scratch, wait_until, write};

/// One command run: its start and end (Unix nanoseconds) and what it printed after.
#[derive(Debug, Clone)]
struct Span {
    start: u128,
    end: u128,
    rest: String,
}

/// The lines `START END REST...` of `dir/name`.
fn spans(dir: &Path, name: &str) -> Vec<Span> {
    let text = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    text.lines()
        .map(|line| {
            let mut fields = line.splitn(3, ' ');
            let mut number =
                || fields.next().and_then(|f| f.parse().ok()).unwrap_or_else(|| panic!("{line:?}"));
            let (start, end) = (number(), number());
            Span { start, end, rest: fields.next().unwrap_or_default().to_owned() }
        })
        .collect()
}

/// The most spans running at one instant.
fn most_at_once(spans: &[Span]) -> usize {
    let mut edges: Vec<(u128, i32)> = spans.iter().flat_map(|s| [(s.start, 1), (s.end, -1)]).collect();
    // An end and a start at the same nanosecond do not overlap.
    edges.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, step) in edges {
        now += step;
        most = most.max(now);
    }
    most as usize
}

/// A command that works `seconds`, then appends its start, end and `what` to `file`.
fn timed(seconds: &str, file: &str, what: &str) -> String {
    format!(r#"s=$(date +%s%N); sleep {seconds}; echo "$s $(date +%s%N) {what}" >> {file}"#)
}

/// Three daemons in `dir`, daemon `i` (from 1) started with `args(i)` after `run
/// jobs.toml --instance d{i}`, run a 1 s `forbid` job whose command takes 2.5 s; once
/// three runs are done, the daemon whose command is running gets SIGKILL, and its lease
/// expires within its TTL (15 s): later triggers run on the others. No two commands
/// overlap; the histories read with `histories` (`--state` arguments) record
/// `skipped-overlap`.
fn forbid_fleet(dir: &Path, args: impl Fn(usize) -> Vec<String>, histories: &[Vec<String>]) {
    let command = format!(
        "echo $SLOTCRON_INSTANCE > running.txt; {}; rm -f running.txt",
        timed("2.5", "spans.txt", "$SLOTCRON_INSTANCE $SLOTCRON_TRIGGER")
    );
    write(
        dir,
        "jobs.toml",
        &format!(
            "[[job]]\nname = \"long\"\nevery = \"1s\"\ngrace = \"30s\"\noverlap = \"forbid\"\ncommand = '{command}'\n"
        ),
    );
    let mut daemons: Vec<Daemon> = (1..=3)
        .map(|i| {
            let mut all = vec!["jobs.toml".to_owned(), "--instance".to_owned(), format!("d{i}")];
            all.extend(args(i));
            Daemon::run(dir, &all.iter().map(String::as_str).collect::<Vec<_>>())
        })
        .collect();
    for daemon in &mut daemons {
        daemon.wait_for("for the scheduler to start", |line| line.contains("scheduler started"));
    }
    // Three runs, then kill the daemon whose command is running.
    wait_until("three runs", || spans(dir, "spans.txt").len() >= 3);
    let mut running = String::new();
    wait_until("a run going", || {
        running = std::fs::read_to_string(dir.join("running.txt")).unwrap_or_default().trim().to_owned();
        !running.is_empty()
    });
    let killed = (0..3).find(|k| running == format!("d{}", k + 1)).expect("a daemon's instance");
    daemons[killed].signal(Signal::SIGKILL);
    let killed_instance = format!("d{}", killed + 1);
    let before = spans(dir, "spans.txt").len();
    // Its lease expires within its TTL (15 s): a later trigger runs on another daemon.
    wait_until("a run on another daemon after the kill", || {
        spans(dir, "spans.txt")[before..].iter().filter(|s| !s.rest.starts_with(&killed_instance)).count()
            >= 2
    });
    for (k, daemon) in daemons.iter().enumerate() {
        if k != killed {
            daemon.signal(Signal::SIGTERM);
        }
    }
    for (k, daemon) in daemons.iter_mut().enumerate() {
        if k != killed {
            assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
        }
    }
    let all = spans(dir, "spans.txt");
    assert_eq!(most_at_once(&all), 1, "no two runs overlap: {all:?}");
    let skipped: usize = histories
        .iter()
        .map(|args| history(dir, &args.iter().map(String::as_str).collect::<Vec<_>>()))
        .map(|runs| runs.iter().filter(|r| r.outcome == "skipped-overlap").count())
        .sum();
    assert!(skipped >= 1, "forbid skipped the triggers that found a run going");
}

#[test]
fn forbid_keeps_three_daemons_on_a_redis_apart_and_survives_a_killed_lease_holder() {
    let dir = scratch("policies_forbid_redis");
    let redis = RedisServer::start(&dir);
    let state = |i: usize| format!("sqlite:d{i}.db");
    let histories: Vec<Vec<String>> = (1..=3).map(|i| vec!["--state".to_owned(), state(i)]).collect();
    forbid_fleet(
        &dir,
        |i| vec!["--redis".to_owned(), redis.url(), "--state".to_owned(), state(i)],
        &histories,
    );
}

#[test]
fn forbid_keeps_three_daemons_on_a_postgres_state_apart_and_survives_a_killed_lease_holder() {
    let dir = scratch("policies_forbid_postgres");
    let schema = Schema::new("forbid");
    let state = schema.state_url();
    let histories = vec![vec!["--state".to_owned(), state.clone()]];
    forbid_fleet(&dir, |_| vec!["--state".to_owned(), state.clone()], &histories);
}

#[test]
fn max_concurrent_runs_runs_two_of_five_due_together_at_once_never_more() {
    let dir = scratch("policies_cap");
    let mut jobs = String::from("max_concurrent_runs = 2\n");
    for k in 1..=5 {
        let command = timed("3", "spans.txt", &format!("j{k}"));
        jobs += &format!(
            "\n[[job]]\nname = \"j{k}\"\nevery = \"1h\"\nrun_on_start = true\ngrace = \"1m\"\ncommand = '{command}'\n"
        );
    }
    write(&dir, "jobs.toml", &jobs);
    let mut daemon = Daemon::run(&dir, &["jobs.toml", "--state", "sqlite:state.db"]);
    daemon.wait_for("for the scheduler to start", |line| line.contains("scheduler started"));
    wait_until("the five runs", || spans(&dir, "spans.txt").len() >= 5);
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    let all = spans(&dir, "spans.txt");
    assert_eq!(most_at_once(&all), 2, "two commands ran at once, never more: {all:?}");
}

#[test]
fn on_failure_gets_the_variables_and_is_rate_limited_during_an_outage() {
    let dir = scratch("policies_hook");
    let redis = RedisServer::start(&dir);
    let hook = r#"echo "$SLOTCRON_JOB|$SLOTCRON_TRIGGER|$SLOTCRON_OUTCOME|$SLOTCRON_ATTEMPTS|$SLOTCRON_SUPPRESSED|$SLOTCRON_ERROR" >> hooks.txt"#;
    write(
        &dir,
        "jobs.toml",
        &format!(
            "on_failure = '{hook}'\n\n[[job]]\nname = \"broken\"\nevery = \"1s\"\nattempts = 2\ncommand = 'echo $SLOTCRON_ATTEMPT >> attempts.txt; echo no disk >&2; exit 3'\n"
        ),
    );
    let mut daemon = Daemon::run(
        &dir,
        &["jobs.toml", "--redis", &redis.url(), "--state", "sqlite:state.db", "--instance", "h1"],
    );
    daemon.wait_for("for the scheduler to start", |line| line.contains("scheduler started"));
    let hooks = || std::fs::read_to_string(dir.join("hooks.txt")).unwrap_or_default();
    wait_until("the first hook", || hooks().lines().count() >= 1);
    drop(redis);
    wait_until("the outage's hook", || hooks().contains("skipped-backend-unavailable"));
    // Several more seconds of outage and failures: no more hooks within the minute.
    let outage_runs = || {
        history(&dir, &["--state", "sqlite:state.db"])
            .iter()
            .filter(|r| r.outcome == "skipped-backend-unavailable")
            .count()
    };
    wait_until("three more unavailable triggers", || outage_runs() >= 4);
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    let text = hooks();
    let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split('|').collect()).collect();
    assert_eq!(lines.len(), 2, "one hook per outcome per minute:\n{text}");
    let failed = &lines[0];
    assert_eq!((failed[0], failed[2], failed[3], failed[4]), ("broken", "failed", "2", "0"), "{text}");
    assert!(failed[1].ends_with('Z') && failed[5].contains("no disk"), "{text}");
    let attempts = std::fs::read_to_string(dir.join("attempts.txt")).unwrap();
    assert!(attempts.starts_with("1\n2\n"), "SLOTCRON_ATTEMPT counts the attempts: {attempts}");
    let outage = &lines[1];
    assert_eq!((outage[0], outage[2], outage[3]), ("broken", "skipped-backend-unavailable", "0"), "{text}");
    // The hook's process is logged as the hook, not as a run's command.
    assert_eq!(daemon.lines_with(&["failure hook started", r#"job="broken""#]).len(), 2, "{}", daemon.log());
    let commands = daemon.lines_with(&["command started"]).len();
    assert_eq!(commands, attempts.lines().count(), "one `command started` per attempt: {}", daemon.log());
    // The hooks held back are said, once per job and outcome in the minute.
    let held = daemon.lines_with(&["failure hook held back", r#"outcome="skipped-backend-unavailable""#]);
    assert_eq!(held.len(), 1, "{}", daemon.log());
}
