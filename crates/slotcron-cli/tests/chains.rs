//! Job chains in a jobs file (`run_after`): `slotcron check` shows the chain; an unknown
//! parent, a cycle or a second schedule is refused at load, naming the jobs and the field,
//! on its line; and three daemons sharing a Redis run a chain `a → b → c` once per
//! trigger of `a`, also when the daemon that ran `a` is killed after `a` succeeded and
//! before `b` started.

mod support;

use std::collections::BTreeSet;
use std::path::Path;

use nix::sys::signal::Signal;
use slotcron::jiff::{Timestamp, ToSpan};
use support::redis_server::RedisServer;
use support::{Daemon, Run, history, run_in, scratch, slotcron, stderr, stdout, wait_until, write};

/// Runs `slotcron check jobs.toml` on `text`; (exit code, stdout, stderr).
fn check(test: &str, text: &str) -> (Option<i32>, String, String) {
    let dir = scratch(test);
    write(&dir, "jobs.toml", text);
    let out = slotcron().args(["check", "jobs.toml"]).env("TZ", "UTC").current_dir(&dir).output().unwrap();
    (out.status.code(), stdout(&out), stderr(&out))
}

#[test]
fn check_shows_each_chained_job_after_its_parent() {
    let (code, out, err) = check(
        "check_chain",
        r#"[[job]]
name = "extract"
every = "1h"
command = "echo extract"

[[job]]
name = "load"
run_after = "extract"
command = "echo load"
"#,
    );
    assert_eq!(code, Some(0), "{err}");
    let row = out.lines().find(|line| line.contains(" load ")).unwrap_or_else(|| panic!("{out}"));
    assert!(row.contains("after success of extract"), "{row}");
    assert!(row.contains("After each successful run of extract"), "{row}");
}

#[test]
fn an_unknown_parent_a_cycle_and_a_second_schedule_are_refused_at_load_naming_the_jobs_and_run_after_line() {
    let (code, out, err) = check(
        "chain_errors",
        r#"[[job]]
name = "orphan"
run_after = "extrct"
command = "true"

[[job]]
name = "a"
run_after = "c"
command = "true"

[[job]]
name = "b"
run_after = "a"
command = "true"

[[job]]
name = "c"
run_after = "b"
command = "true"
"#,
    );
    assert_eq!(code, Some(2));
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains(
            r#"jobs.toml:3: job "orphan": run_after: no job named "extrct" (the parent it runs after)"#
        ),
        "{err}"
    );
    assert!(
        err.contains(
            r#"jobs.toml:8: job "a": run_after: a cycle of jobs that run after each other: a → c → b → a"#
        ),
        "{err}"
    );
    assert!(err.contains("2 problems in jobs.toml"), "{err}");

    let (code, _, err) = check(
        "chain_and_every",
        r#"[[job]]
name = "load"
every = "1h"
run_after = "load"
command = "true"
"#,
    );
    assert_eq!(code, Some(2));
    assert!(
        err.contains(r#"job "load": run_after: run_after and every (line 3) both set; a job has exactly one of every, cron, at, after, run_after"#),
        "{err}"
    );
}

/// Every setting a chained job cannot have is reported at once, each against
/// `run_after` on its line, as the keys of other jobs are.
#[test]
fn every_setting_a_chained_job_cannot_have_is_reported_at_once() {
    let (code, out, err) = check(
        "chain_settings",
        r#"[[job]]
name = "extract"
every = "1h"
command = "true"

[[job]]
name = "load"
command = "true"
run_after = "extract"
start = "2027-01-01T00:00:00Z"
end = "2028-01-01T00:00:00Z"
jitter = "5s"
on = ["gpu"]
on_every_replica = true
"#,
    );
    assert_eq!(code, Some(2), "{out}");
    let reasons = [
        "start: the parent's triggers are the job's",
        "end: the parent's triggers are the job's",
        "jitter: its trigger fires as its parent's run ends",
        "on: the replica that ran the parent's trigger runs it",
        "on_every_replica: the replica that ran the parent's trigger fires it",
    ];
    let mut expected: Vec<String> = reasons
        .iter()
        .map(|reason| format!(r#"jobs.toml:9: job "load": run_after: cannot be combined with {reason}"#))
        .collect();
    expected.push("5 problems in jobs.toml".into());
    assert_eq!(err.lines().collect::<Vec<_>>(), expected, "{err}");
}

/// A failing `a`: the daemon records `b`'s trigger and `c`'s `skipped-parent`, each naming its
/// parent's outcome, and runs neither.
#[test]
fn a_failing_parent_records_skipped_parent_down_the_chain() {
    let dir = scratch("chain_failing_parent");
    write(
        &dir,
        "jobs.toml",
        r#"[[job]]
name = "a"
after = "1s"
command = "exit 3"

[[job]]
name = "b"
run_after = "a"
command = "touch b-ran"

[[job]]
name = "c"
run_after = "b"
command = "touch c-ran"
"#,
    );
    let mut daemon = Daemon::start(&dir, "jobs.toml");
    daemon.wait_for("for the scheduler to start", |line| line.contains("scheduler started"));
    wait_until("c's trigger recorded", || history(&dir, &["c"]).iter().any(Run::finished));
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    let a = history(&dir, &["a"]);
    assert_eq!(a.len(), 1, "{a:?}");
    assert_eq!(a[0].outcome, "failed");
    let stopped =
        "b's run of this trigger ended skipped-parent; the chain stopped at a's run, which ended failed";
    for (job, parent) in [("b", "a's run of this trigger ended failed"), ("c", stopped)] {
        let runs = history(&dir, &[job]);
        assert_eq!(runs.len(), 1, "{runs:?}");
        assert_eq!((runs[0].trigger, runs[0].outcome.as_str()), (a[0].trigger, "skipped-parent"), "{runs:?}");
        assert_eq!(runs[0].error.as_deref(), Some(format!("its parent {parent}").as_str()));
    }
    assert!(!dir.join("b-ran").exists() && !dir.join("c-ran").exists());
}

/// The daemons' membership TTL (a heartbeat every third of it): X's entry lapses at least
/// 18 s after its last heartbeat, once the buffer lease its waiting trigger of `b` held
/// (the default lease TTL, 15 s, renewed every 5 s) has expired, so that the trigger taken
/// over is not refused as a second waiting trigger.
const MEMBERSHIP_TTL: &str = "27s";

/// How long after the test starts `a` comes due: past the membership TTL, so that the
/// other daemons vouch for a view of the fleet that has X in it before X is killed (only
/// a member of such a view is seen to leave it).
const A_DUE_IN: i64 = 35;

/// `a` once (at `at`), its command waiting for the file `go`; `b` after
/// it, its command waiting for the file `release` (so a manual run of `b` holds the job's
/// lease as long as the test wants), `buffer_one`: a trigger of `b` that finds the lease
/// held has won its claim and waits, unstarted; `c` after `b`. Each command writes its
/// trigger and instance to `JOB.txt`.
fn chain_jobs(at: Timestamp) -> String {
    format!(
        r#"[[job]]
name = "a"
at = "{at}"
command = 'echo "$SLOTCRON_INSTANCE" > a-started; while [ ! -e go ]; do sleep 0.05; done; echo "$SLOTCRON_TRIGGER $SLOTCRON_INSTANCE" >> a.txt'

[[job]]
name = "b"
run_after = "a"
overlap = "buffer_one"
command = 'echo "$SLOTCRON_TRIGGER $SLOTCRON_INSTANCE" >> b.txt; while [ ! -e release ]; do sleep 0.05; done'

[[job]]
name = "c"
run_after = "b"
command = 'echo "$SLOTCRON_TRIGGER $SLOTCRON_INSTANCE" >> c.txt'
"#
    )
}

/// The lines of `dir/JOB.txt` whose trigger is `trigger`: the instances that ran it.
fn ran(dir: &Path, job: &str, trigger: Timestamp) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join(format!("{job}.txt"))).unwrap_or_default();
    text.lines()
        .filter_map(|line| line.split_once(' '))
        .filter(|(at, _)| at.parse::<Timestamp>().is_ok_and(|at| at == trigger))
        .map(|(_, instance)| instance.to_owned())
        .collect()
}

/// The records of `job`'s `trigger` in every daemon's ledger but `skipped-lost` ones.
fn records(dir: &Path, job: &str, trigger: Timestamp) -> Vec<Run> {
    (1..=3)
        .flat_map(|i| history(dir, &[job, "--state", &format!("sqlite:d{i}.db")]))
        .filter(|run| run.trigger == trigger && run.outcome != "skipped-lost")
        .collect()
}

/// The daemon that ran `a` (X) is killed with `kill -9` once `a` has succeeded and X has
/// won the claim of `b`'s trigger, which waits for `b`'s lease (held by a manual run of `b`
/// on another daemon): unstarted. Once X has left the membership a live daemon takes the
/// claim over and runs `b`, and `b`'s success runs `c`: each of `a`, `b` and `c` ran once
/// for `a`'s trigger, each with one terminal record.
#[test]
fn three_daemons_run_a_chain_once_per_trigger_even_when_the_parents_daemon_is_killed_before_the_child_starts()
{
    let dir = scratch("chain_fleet_kill");
    let redis = RedisServer::start(&dir);
    let at = Timestamp::from_second(Timestamp::now().as_second()).unwrap() + A_DUE_IN.seconds();
    write(&dir, "jobs.toml", &chain_jobs(at));
    let admin: Vec<String> = (0..3).map(|_| format!("127.0.0.1:{}", support::http::free_port())).collect();
    let mut daemons: Vec<Daemon> = (0..3)
        .map(|i| {
            let (instance, state) = (format!("d{}", i + 1), format!("sqlite:d{}.db", i + 1));
            let args = ["jobs.toml", "--redis", &redis.url(), "--instance", &instance, "--state", &state];
            let more =
                ["--admin", &admin[i], "--membership-ttl", MEMBERSHIP_TTL, "--takeover-delay", "300ms"];
            Daemon::run(&dir, &[&args[..], &more[..]].concat())
        })
        .collect();
    for daemon in &mut daemons {
        daemon.wait_for("for the admin API", |line| line.contains("admin API listening"));
    }
    wait_until("a started", || {
        std::fs::read_to_string(dir.join("a-started")).is_ok_and(|s| s.ends_with('\n'))
    });
    let x: usize =
        std::fs::read_to_string(dir.join("a-started")).unwrap().trim()[1..].parse::<usize>().unwrap() - 1;
    let y = (x + 1) % 3;
    // A manual run of `b` on Y holds `b`'s lease until `release` exists.
    let manual = run_in(&dir, &["trigger", "b", "--admin-url", &format!("http://{}", admin[y])]);
    assert_eq!(manual.status.code(), Some(0), "{}", stderr(&manual));
    wait_until("the manual run of b started", || std::fs::read_to_string(dir.join("b.txt")).is_ok());
    write(&dir, "go", "");
    // X won `b`'s trigger and waits for the lease, as the waiting trigger of `buffer_one`.
    wait_until("b's trigger waiting for its lease", || {
        redis.keys().iter().any(|k| k.ends_with("lease:b:buffer"))
    });
    daemons[x].signal(Signal::SIGKILL);
    daemons[x].wait_exit();
    let at_ran = ran(&dir, "a", at);
    assert_eq!(at_ran, [format!("d{}", x + 1)], "a ran once, on X");
    assert!(ran(&dir, "b", at).is_empty(), "b had not started when X was killed");
    write(&dir, "release", "");
    wait_until("c ran for a's trigger", || !ran(&dir, "c", at).is_empty());
    for (i, daemon) in daemons.iter_mut().enumerate().filter(|(i, _)| *i != x) {
        daemon.signal(Signal::SIGTERM);
        assert_eq!(daemon.wait_exit().code(), Some(0), "d{}: {}", i + 1, daemon.log());
    }

    let killed = format!("d{}", x + 1);
    for job in ["a", "b", "c"] {
        assert_eq!(ran(&dir, job, at).len(), 1, "{job} ran once for {at}");
        let records = records(&dir, job, at);
        assert_eq!(records.len(), 1, "{job}: one terminal record for {at}: {records:?}");
        assert_eq!(records[0].outcome, "succeeded", "{records:?}");
    }
    let b = &records(&dir, "b", at)[0];
    assert_eq!(b.cause, "taken-over", "{b:?}");
    assert_ne!(b.instance, killed, "{b:?}");
    assert!(b.error.as_deref().unwrap_or_default().contains(&killed), "{b:?}");
    let instances: BTreeSet<String> = records(&dir, "a", at).into_iter().map(|r| r.instance).collect();
    assert_eq!(instances, BTreeSet::from([killed]), "a's success is in the killed daemon's own ledger");
}

/// A chain's problems are listed beside the file's other problems, all at once; a parent
/// the file has but could not build for its own problems is not called unknown.
#[test]
fn chain_problems_are_listed_beside_the_files_other_problems() {
    let (code, _, err) = check(
        "chain_and_other_problems",
        r#"[[job]]
name = "x"
run_after = "y"
command = "true"

[[job]]
name = "y"
run_after = "x"
command = "true"

[[job]]
name = "u"
run_after = "nosuch"
command = "true"

[[job]]
name = "broken"
every = "often"
command = "true"

[[job]]
name = "after-broken"
run_after = "broken"
command = "true"
"#,
    );
    assert_eq!(code, Some(2));
    assert!(
        err.contains(r#"job "x": run_after: a cycle of jobs that run after each other: x → y → x"#),
        "{err}"
    );
    assert!(err.contains(r#"job "u": run_after: no job named "nosuch" (the parent it runs after)"#), "{err}");
    assert!(err.contains(r#"job "broken": every"#), "{err}");
    assert!(!err.contains(r#"job "after-broken""#), "its parent is in the file: {err}");
    assert!(err.contains("3 problems in jobs.toml"), "{err}");
}
