//! Run limits on a fleet: two `slotcron run` daemons sharing a Redis the test starts run a
//! job with `max_runs = 3` exactly three times between them, and a daemon restarted
//! after the end runs it no more and shows it ended at once; a job with
//! `pause_after_failures` is paused across the fleet by its failures, with the reason
//! shown by `slotcron status`.
//!
//! Every wait is for a condition, bounded; nothing is asserted about how long anything
//! took.

mod support;

use nix::sys::signal::Signal;
use serde_json::Value;
use support::redis_server::RedisServer;
use support::{Daemon, history, scratch, wait_until, write};

/// A 1 s job limited to three runs, each appending its trigger and instance to
/// `runs.txt`, and a 1 s job without a limit appending to `ticks.txt`: the witness that
/// triggers go on being handled. The grace window is generous so that a loaded machine
/// noticing a trigger late does not turn it into a misfire.
const JOBS: &str = r#"[[job]]
name = "limited"
every = "1s"
grace = "30s"
max_runs = 3
command = 'echo "$SLOTCRON_TRIGGER $SLOTCRON_INSTANCE" >> runs.txt'

[[job]]
name = "tick"
every = "1s"
grace = "30s"
command = 'echo "$SLOTCRON_TRIGGER $SLOTCRON_INSTANCE" >> ticks.txt'
"#;

/// The lines of `name` in `dir` (none before it exists).
fn lines(dir: &std::path::Path, name: &str) -> Vec<String> {
    std::fs::read_to_string(dir.join(name)).unwrap_or_default().lines().map(str::to_owned).collect()
}

/// `GET /api/v1/jobs/limited` of the daemon whose admin API listens at `addr`.
fn limited(addr: &str) -> Value {
    let answer = support::http::get(addr, "/api/v1/jobs/limited", &[]);
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.json()
}

/// Starts daemon `name` on `redis` in `dir`, with a SQLite state of its own and an admin
/// API at `addr`, and waits until its scheduler has started.
fn daemon(dir: &std::path::Path, redis: &str, name: &str, addr: &str) -> Daemon {
    let state = format!("sqlite:{name}.db");
    let args = ["jobs.toml", "--redis", redis, "--instance", name, "--state", &state, "--admin", addr];
    let mut daemon = Daemon::run(dir, &args);
    daemon.wait_for("for the scheduler to start", |line| line.contains("scheduler started"));
    daemon
}

/// The records of `limited` refused at its `max_runs` in daemon `name`'s state.
fn refused(dir: &std::path::Path, name: &str) -> usize {
    let state = format!("sqlite:{name}.db");
    history(dir, &["limited", "--state", &state]).iter().filter(|r| r.outcome == "skipped-max-runs").count()
}

#[test]
fn max_runs_3_runs_three_times_across_two_daemons_and_a_restarted_one_runs_it_no_more() {
    let dir = scratch("max_runs_fleet");
    let redis = RedisServer::start(&dir);
    write(&dir, "jobs.toml", JOBS);
    let addrs: Vec<String> = (0..2).map(|_| format!("127.0.0.1:{}", support::http::free_port())).collect();
    let mut a = daemon(&dir, &redis.url(), "a", &addrs[0]);
    let mut b = daemon(&dir, &redis.url(), "b", &addrs[1]);

    // Each daemon ends the job once it meets the end: the one that marks the fourth
    // trigger, and the other at the next trigger it claims.
    wait_until("the job ended on both daemons", || addrs.iter().all(|addr| limited(addr)["ended"] == true));
    let runs = lines(&dir, "runs.txt");
    assert_eq!(runs.len(), 3, "three runs across the fleet: {runs:?}");
    let mut triggers: Vec<&str> = runs.iter().filter_map(|line| line.split(' ').next()).collect();
    triggers.dedup();
    assert_eq!(triggers.len(), 3, "three triggers, each run once: {runs:?}");
    for addr in &addrs {
        let job = limited(addr);
        assert_eq!((&job["runs"], &job["policies"]["max_runs"]), (&Value::from(3), &Value::from(3)), "{job}");
        assert!(job["next_triggers"].as_array().is_some_and(Vec::is_empty), "{job}");
    }
    let status = support::run_in(&dir, &["status", "--admin-url", &format!("http://{}", addrs[0])]);
    assert_eq!(status.status.code(), Some(0), "{}", support::stderr(&status));
    let out = support::stdout(&status);
    assert!(out.lines().any(|l| l == "limited: runs 3 of 3, ended"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("limited ") && l.contains(" ended ")), "{out}");

    // A restart of b: it reads the count as it starts, and has ended at once.
    b.signal(Signal::SIGTERM);
    assert_eq!(b.wait_exit().code(), Some(0), "{}", b.log());
    let refused_before = refused(&dir, "b");
    assert!(refused_before <= 1, "at most one refused trigger per daemon: {refused_before}");
    let mut b = daemon(&dir, &redis.url(), "b", &addrs[1]);
    let job = limited(&addrs[1]);
    assert_eq!((&job["ended"], &job["runs"]), (&Value::from(true), &Value::from(3)), "{job}");
    // Triggers go on being handled meanwhile: three more of `tick` after the restart.
    let ticks = lines(&dir, "ticks.txt").len();
    wait_until("three more ticks", || lines(&dir, "ticks.txt").len() >= ticks + 3);
    assert_eq!(lines(&dir, "runs.txt").len(), 3, "still three runs in all");
    for daemon in [&mut a, &mut b] {
        daemon.signal(Signal::SIGTERM);
        assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    }
    assert_eq!(refused(&dir, "b"), refused_before, "the restarted daemon refused no trigger");
}

#[test]
fn three_failed_triggers_pause_the_job_on_both_daemons_and_status_shows_why() {
    let dir = scratch("pause_after_failures_fleet");
    let redis = RedisServer::start(&dir);
    let jobs = "[[job]]\nname = \"broken\"\nevery = \"1s\"\ngrace = \"30s\"\npause_after_failures = 3\n\
                command = 'echo \"$SLOTCRON_TRIGGER\" >> runs.txt; exit 1'\n";
    write(&dir, "jobs.toml", jobs);
    let addrs: Vec<String> = (0..2).map(|_| format!("127.0.0.1:{}", support::http::free_port())).collect();
    let mut daemons =
        [daemon(&dir, &redis.url(), "a", &addrs[0]), daemon(&dir, &redis.url(), "b", &addrs[1])];
    let job = |addr: &str| {
        let answer = support::http::get(addr, "/api/v1/jobs/broken", &[]);
        assert_eq!(answer.status, 200, "{}", answer.body);
        answer.json()
    };
    wait_until("the job paused on both", || addrs.iter().all(|addr| job(addr)["paused"] == true));
    let reason = job(&addrs[0])["paused_reason"].as_str().unwrap_or_default().to_owned();
    assert!(reason.starts_with("paused after 3 failed triggers in a row, the last at "), "{reason}");
    let runs = lines(&dir, "runs.txt");
    assert!(runs.len() >= 3, "three failed runs at least (runs in flight may end after): {runs:?}");
    let status = support::run_in(&dir, &["status", "--admin-url", &format!("http://{}", addrs[1])]);
    let out = support::stdout(&status);
    assert!(out.lines().any(|l| l == format!("broken: {reason}")), "{out}");
    for daemon in &mut daemons {
        daemon.signal(Signal::SIGTERM);
        assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    }
}

/// A job limited to three runs and one paused after two failures, each on lines 1 to 5.
const COUNTED: &str = "[[job]]\nname = \"once\"\nevery = \"1s\"\nmax_runs = 3\ncommand = \"true\"\n\n\
                       [[job]]\nname = \"flaky\"\nevery = \"1s\"\npause_after_failures = 2\ncommand = \"exit 1\"\n";

/// Alone (no Redis, no PostgreSQL state), nothing could count a job's runs or failures
/// across restarts: the daemon refuses such jobs at start, each named with its field, on
/// the field's line, and `slotcron check` refuses them alike.
#[test]
fn without_a_coordinator_run_and_check_refuse_max_runs_and_pause_after_failures_alike() {
    let dir = scratch("limits_alone");
    write(&dir, "jobs.toml", COUNTED);
    let out = support::run_in(&dir, &["run", "jobs.toml", "--state", "sqlite:alone.db"]);
    let err = support::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let reason = "needs a coordinator to count across the fleet and restarts: give --redis URL or a PostgreSQL --state";
    let refused = [
        format!("jobs.toml:4: job \"once\": max_runs: {reason}"),
        format!("jobs.toml:10: job \"flaky\": pause_after_failures: {reason}"),
        "2 problems in jobs.toml".to_owned(),
    ];
    assert_eq!(err.trim_end(), format!("slotcron run: {}", refused.join("; ")));
    let out = support::run_in(&dir, &["check", "jobs.toml", "--state", "sqlite:alone.db"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(support::stderr(&out).lines().collect::<Vec<_>>(), refused);
    assert!(support::stdout(&out).is_empty(), "no listing: {}", support::stdout(&out));
}

/// `slotcron check` passes the same jobs when the daemon would have a coordinator: a
/// Redis from `--redis`, `SLOTCRON_REDIS_URL` or the file (never connected to: port 1).
#[test]
fn check_passes_counted_jobs_with_a_coordinator_from_the_flag_the_variable_or_the_file() {
    let dir = scratch("limits_check_coordinated");
    write(&dir, "jobs.toml", COUNTED);
    write(&dir, "fleet.toml", &format!("[coordination]\nredis = \"redis://127.0.0.1:1\"\n\n{COUNTED}"));
    let runs = [
        support::run_in(&dir, &["check", "jobs.toml", "--redis", "redis://127.0.0.1:1"]),
        support::slotcron()
            .args(["check", "jobs.toml"])
            .env("SLOTCRON_REDIS_URL", "redis://127.0.0.1:1")
            .current_dir(&dir)
            .output()
            .unwrap(),
        support::run_in(&dir, &["check", "fleet.toml"]),
    ];
    for out in runs {
        let listing = support::stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{}", support::stderr(&out));
        assert!(
            listing.contains("once: ends after 3 scheduled runs across the fleet (max_runs)"),
            "{listing}"
        );
    }
}
