//! `slotcron run`: reloading the jobs file without a restart, on SIGHUP, SIGUSR2 and
//! (with `--watch`) on a change of the file.
//!
//! The tests wait for log lines and files (each wait bounded by `support::PATIENCE`) and
//! never assert how long anything took.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;

use nix::sys::signal::Signal;
use slotcron::jiff::Timestamp;
use support::redis_server::RedisServer;
use support::{Daemon, KillOnDrop, has_ended, scratch, slotcron, wait_exit, wait_until, write};

const BEFORE: &str = r#"[[job]]
name = "keep"
every = "1s"
command = 'echo $SLOTCRON_TRIGGER >> keep.txt'

[[job]]
name = "edit"
every = "1s"
command = 'echo old >> edit.txt'

[[job]]
name = "drop"
every = "1s"
command = 'echo $SLOTCRON_TRIGGER >> drop.txt'
"#;

const AFTER: &str = r#"[[job]]
name = "keep"
every = "1s"
command = 'echo $SLOTCRON_TRIGGER >> keep.txt'

[[job]]
name = "edit"
every = "1s"
command = 'echo new >> edit.txt'

[[job]]
name = "fresh"
every = "1s"
command = 'echo $SLOTCRON_TRIGGER >> fresh.txt'
"#;

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_default()
}

/// Waits for the `n`th `run finished` line of `job` counted from log line `from`.
fn wait_runs(daemon: &mut Daemon, from: usize, job: &str, n: usize) {
    let tag = format!("job=\"{job}\"");
    let count = |log: &[String]| {
        log[from..].iter().filter(|l| l.contains("run finished") && l.contains(&tag)).count()
    };
    while count(&daemon.log) < n {
        daemon.wait_for(&format!("for a run of {job}"), |line| {
            line.contains("run finished") && line.contains(&tag)
        });
    }
}

/// Edits the jobs file of a running daemon (by `edit`), waits for the reload, and checks
/// each job's fate.
fn edit_and_check(name: &str, args: &[&str], edit: impl FnOnce(&Daemon, &Path)) {
    let dir = scratch(name);
    write(&dir, "jobs.toml", BEFORE);
    edit_and_check_in(&dir, "jobs.toml", args, edit);
}

fn edit_and_check_in(dir: &Path, file: &str, args: &[&str], edit: impl FnOnce(&Daemon, &Path)) {
    let dir = dir.to_owned();
    let mut all = vec![file];
    all.extend_from_slice(args);
    let mut daemon = Daemon::run(&dir, &all);
    let pid = daemon.pid();
    for job in ["keep", "edit", "drop"] {
        wait_runs(&mut daemon, 0, job, 1);
    }
    edit(&daemon, &dir);
    let reloaded = daemon.wait_for("for the reload", |line| line.contains("jobs reloaded"));
    for count in ["added=1", "changed=1", "removed=1", "unchanged=1"] {
        assert!(reloaded.contains(count), "{reloaded}");
    }
    let at = daemon.log.len();
    wait_runs(&mut daemon, at, "fresh", 2);
    wait_runs(&mut daemon, at, "edit", 2);
    wait_runs(&mut daemon, at, "keep", 2);
    assert!(!has_ended(pid), "the same process goes on");
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());

    let log = &daemon.log;
    let dropped_later =
        log[at..].iter().any(|l| l.contains("command started") && l.contains(r#"job="drop""#));
    assert!(!dropped_later, "the removed job never runs again:\n{}", daemon.log());
    let edits = read(&dir, "edit.txt");
    let first_new = edits.lines().position(|l| l == "new").expect("the changed job ran its new command");
    assert!(first_new >= 1, "{edits}");
    assert!(edits.lines().skip(first_new).all(|l| l == "new"), "old command after the new one:\n{edits}");
    let keep: Vec<Timestamp> = read(&dir, "keep.txt").lines().map(|l| l.parse().unwrap()).collect();
    assert!(keep.windows(2).all(|w| w[0] < w[1]), "the unchanged job's triggers go on, none twice: {keep:?}");
    assert!(keep.iter().all(|t| t.subsec_nanosecond() == 0), "on its whole seconds: {keep:?}");
    assert!(!read(&dir, "fresh.txt").is_empty());
    assert!(daemon.lines_with(&["slotcron running"]).len() == 1, "no restart:\n{}", daemon.log());
}

#[test]
fn sighup_reloads_the_edited_file() {
    edit_and_check("reload-sighup", &[], |daemon, dir| {
        write(dir, "jobs.toml", AFTER);
        daemon.signal(Signal::SIGHUP);
    });
}

#[test]
fn sigusr2_reloads_too() {
    edit_and_check("reload-sigusr2", &[], |daemon, dir| {
        write(dir, "jobs.toml", AFTER);
        daemon.signal(Signal::SIGUSR2);
    });
}

#[test]
fn watch_reloads_a_file_renamed_over_the_old_one_without_a_signal() {
    edit_and_check("reload-watch", &["--watch"], |_daemon, dir| {
        // As an editor saves: a new file, renamed over the old one.
        write(dir, "jobs.toml.tmp", AFTER);
        std::fs::rename(dir.join("jobs.toml.tmp"), dir.join("jobs.toml")).unwrap();
    });
}

#[test]
fn watch_sees_a_configmap_symlink_swap() {
    // A Kubernetes ConfigMap volume: jobs.toml -> ..data/jobs.toml, ..data -> ..v1; an
    // update writes ..v2 and renames a new ..data symlink over the old one.
    let dir = scratch("reload-configmap");
    std::fs::create_dir(dir.join("..v1")).unwrap();
    write(&dir.join("..v1"), "jobs.toml", BEFORE);
    std::os::unix::fs::symlink("..v1", dir.join("..data")).unwrap();
    std::os::unix::fs::symlink("..data/jobs.toml", dir.join("jobs.toml")).unwrap();
    edit_and_check_in(&dir, "jobs.toml", &["--watch"], |_daemon, dir| {
        std::fs::create_dir(dir.join("..v2")).unwrap();
        write(&dir.join("..v2"), "jobs.toml", AFTER);
        std::os::unix::fs::symlink("..v2", dir.join("..data_tmp")).unwrap();
        std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
    });
}

#[test]
fn a_broken_edit_keeps_the_old_jobs_and_names_the_problem_with_its_line() {
    let dir = scratch("reload-broken");
    write(&dir, "jobs.toml", BEFORE);
    let mut daemon = Daemon::start(&dir, "jobs.toml");
    wait_runs(&mut daemon, 0, "drop", 1);
    write(
        &dir,
        "jobs.toml",
        &BEFORE.replace(
            r#"every = "1s"
command = 'echo old"#,
            r#"every = "1 parsec"
command = 'echo old"#,
        ),
    );
    daemon.signal(Signal::SIGHUP);
    daemon.wait_for("for the failed reload", |line| line.contains("reload failed"));
    assert!(
        daemon.lines_with(&["jobs.toml:8: ", r#"job "edit""#, "every"]).len() == 1,
        "the problem, with its line, as `slotcron check` prints it:\n{}",
        daemon.log()
    );
    let at = daemon.log.len();
    wait_runs(&mut daemon, at, "drop", 2);
    wait_runs(&mut daemon, at, "edit", 2);
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
}

#[test]
fn with_shared_work_an_edit_giving_a_job_a_grace_below_the_takeover_delay_is_refused() {
    let dir = scratch("reload-grace");
    let redis = RedisServer::start(&dir);
    write(&dir, "jobs.toml", BEFORE);
    let mut daemon = Daemon::run(&dir, &["jobs.toml", "--redis", &redis.url(), "--takeover-delay", "200ms"]);
    wait_runs(&mut daemon, 0, "drop", 1);
    let edited = BEFORE.replace("command = 'echo old", "grace = \"200ms\"\ncommand = 'echo old");
    write(&dir, "jobs.toml", &edited);
    daemon.signal(Signal::SIGHUP);
    daemon.wait_for("for the failed reload", |line| line.contains("reload failed"));
    let problem = [
        r#"jobs.toml:9: job "edit": grace: 200ms must be longer than the takeover delay (200ms, --takeover-delay)"#,
    ];
    assert_eq!(daemon.lines_with(&problem).len(), 1, "the job, its grace and the delay:\n{}", daemon.log());
    let at = daemon.log.len();
    wait_runs(&mut daemon, at, "drop", 2);
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
}

#[test]
fn a_daemon_outlives_a_closed_standard_error_and_reloads() {
    let dir = scratch("reload-closed-stderr");
    write(&dir, "jobs.toml", "[[job]]\nname = \"tick\"\nevery = \"1s\"\ncommand = 'echo tick'\n");
    let mut child = slotcron()
        .args(["run", "jobs.toml"])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    while let Some(Ok(line)) = lines.next() {
        if line.contains("run finished") {
            break;
        }
    }
    let mut child = KillOnDrop(child);
    // The terminal goes away: its reading end closes, and the session's SIGHUP arrives.
    drop(lines);
    write(&dir, "jobs.toml", "[[job]]\nname = \"marker\"\nevery = \"1s\"\ncommand = 'touch marker'\n");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.0.id() as i32), Signal::SIGHUP).unwrap();
    wait_until("the reloaded job runs", || dir.join("marker").exists());
    assert!(child.0.try_wait().unwrap().is_none(), "still running");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.0.id() as i32), Signal::SIGTERM).unwrap();
    assert_eq!(wait_exit(&mut child.0).code(), Some(0));
}

/// Not a test but a benchmark (BENCHMARKS.md): a reload of a 10,000-job TOML file, from
/// SIGHUP to the `jobs reloaded` log line, 1 % of the jobs changed each time. Run with
/// `cargo test --release -p slotcron-cli --test reload -- --ignored --nocapture`.
#[test]
#[ignore = "a benchmark: run it with --ignored --nocapture"]
fn bench_reload_of_10000_jobs() {
    const JOBS: usize = 10_000;
    const RELOADS: usize = 7;
    let file = |version: usize| {
        let mut text = String::new();
        for i in 0..JOBS {
            let v = if i / 100 < version { i / 100 + 1 } else { 0 };
            text.push_str(&format!("[[job]]\nname = \"job-{i}\"\nevery = \"1h\"\ncommand = 'echo {v}'\n\n"));
        }
        text
    };
    let dir = scratch("reload-bench");
    write(&dir, "jobs.toml", &file(0));
    let mut daemon = Daemon::run(&dir, &["jobs.toml", "--state", "memory"]);
    daemon.wait_for("for the start", |line| line.contains("slotcron running"));
    let mut times = Vec::new();
    for version in 1..=RELOADS {
        write(&dir, "jobs.toml", &file(version));
        let started = std::time::Instant::now();
        daemon.signal(Signal::SIGHUP);
        let line = daemon.wait_for("for the reload", |line| line.contains("jobs reloaded"));
        times.push(started.elapsed());
        assert!(line.contains("changed=100"), "{line}");
    }
    times.sort();
    println!(
        "reload of {JOBS} jobs, 1 % changed, SIGHUP to log line: min {:?}, median {:?}, max {:?}",
        times[0],
        times[RELOADS / 2],
        times[RELOADS - 1]
    );
    daemon.signal(Signal::SIGTERM);
    daemon.wait_exit();
}

#[test]
fn a_reload_never_waits_for_a_running_command_and_leaves_it_running() {
    let dir = scratch("reload-in-flight");
    let slow = "[[job]]\nname = \"slow\"\nevery = \"1h\"\nrun_on_start = true\ncommand = 'until [ -e go ]; do sleep 0.1; done'\n";
    write(&dir, "jobs.toml", slow);
    let mut daemon = Daemon::start(&dir, "jobs.toml");
    daemon.wait_for("for the command to start", |l| {
        l.contains("command started") && l.contains(r#"job="slow""#)
    });
    write(
        &dir,
        "jobs.toml",
        &format!("{slow}\n[[job]]\nname = \"other\"\nevery = \"1h\"\ncommand = 'true'\n"),
    );
    daemon.signal(Signal::SIGHUP);
    let reloaded = daemon.wait_for("for the reload", |l| l.contains("jobs reloaded"));
    assert!(reloaded.contains("added=1") && reloaded.contains("unchanged=1"), "{reloaded}");
    assert!(daemon.lines_with(&["run finished", r#"job="slow""#]).is_empty(), "reloaded while it runs");
    write(&dir, "go", "");
    let finished = daemon
        .wait_for("for the run to finish", |l| l.contains("run finished") && l.contains(r#"job="slow""#));
    assert!(finished.contains(r#"outcome="succeeded""#), "{finished}");
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
}

#[test]
fn an_empty_file_starts_an_idle_daemon_and_a_reload_to_empty_stops_every_job() {
    let dir = scratch("reload-empty");
    write(&dir, "jobs.toml", "# no jobs yet\n");
    let mut daemon = Daemon::start(&dir, "jobs.toml");
    daemon.wait_for("for the warning", |line| line.contains("jobs.toml: no jobs (add [[job]] tables)"));
    daemon.wait_for("for the scheduler", |line| line.contains("scheduler started"));

    write(&dir, "jobs.toml", BEFORE);
    daemon.signal(Signal::SIGHUP);
    wait_runs(&mut daemon, 0, "drop", 1);

    write(&dir, "jobs.toml", "");
    daemon.signal(Signal::SIGHUP);
    daemon.wait_for("for the reload to empty", |line| {
        line.contains("every job of the file stops being scheduled")
    });
    let reloaded = daemon.wait_for("for the reload", |line| line.contains("jobs reloaded"));
    assert!(reloaded.contains("removed=3"), "every job removed: {reloaded}");
    for name in ["keep", "edit", "drop"] {
        assert!(
            reloaded.split("removed_jobs=").nth(1).is_some_and(|names| names.contains(name)),
            "{reloaded}"
        );
    }
    assert!(daemon.lines_with(&["reload failed"]).is_empty(), "{}", daemon.log());
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
}

/// A job a reload adds with an `on_failure` hook has its hook: the daemon started with no
/// hook at all, and after SIGHUP the new job's failures run it.
#[test]
fn a_job_added_by_a_reload_runs_its_failure_hook() {
    let dir = scratch("reload-hook");
    write(&dir, "jobs.toml", BEFORE);
    let mut daemon = Daemon::start(&dir, "jobs.toml");
    wait_runs(&mut daemon, 0, "drop", 1);
    let added = "\n[[job]]\nname = \"breaks\"\nevery = \"1s\"\ncommand = \"exit 3\"\n\
                 on_failure = 'echo \"$SLOTCRON_JOB $SLOTCRON_OUTCOME\" >> hook.txt'\n";
    write(&dir, "jobs.toml", &format!("{BEFORE}{added}"));
    daemon.signal(Signal::SIGHUP);
    daemon.wait_for("for the reload", |line| line.contains("jobs reloaded") && line.contains("added=1"));
    wait_until("the new job's hook", || read(&dir, "hook.txt").contains("breaks failed"));
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
}
