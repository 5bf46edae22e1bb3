//! Fault suite, issue "Nothing lost when a replica dies mid-burst", item 4: a PostgreSQL
//! partition. Daemon `a` reaches the shared state directly, `b` through a proxy that the
//! test cuts while both run long commands. No daemon signals another's command; a
//! `record` job's run on `b` goes on and ends with its real outcome; an
//! `on_interrupt = "rerun"` job's run on `b` is stopped by `b` itself before the rerun
//! starts on `a` — never two at once.

mod support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use nix::sys::signal::Signal;
use support::postgres::{Schema, database_url};
use support::proxy::Proxy;
use support::{Daemon, history, scratch, wait_until, write};

/// The jobs' period and the membership TTL, in seconds.
const PERIOD: u64 = 15;
const TTL: &str = "2s";

/// Six jobs every [`PERIOD`] whose command notes its start, its end and a SIGTERM, with
/// the time, in `witness.txt`.
fn jobs_file(on_interrupt: &str) -> String {
    let command = r#"note() { echo "$1 $SLOTCRON_JOB $SLOTCRON_TRIGGER $SLOTCRON_INSTANCE $SLOTCRON_RECOVERED $(date +%s.%N)" >> witness.txt; }; trap 'note stopped; exit 143' TERM; note start; sleep 9; note end"#;
    (0..6)
        .map(|i| {
            format!(
                "[[job]]\nname = \"job-{i}\"\nevery = \"{PERIOD}s\"\ngrace = \"10s\"\non_interrupt = \"{on_interrupt}\"\n\
                 command = '''{command}'''\n\n"
            )
        })
        .collect()
}

/// One line of `witness.txt`.
#[derive(Debug, Clone)]
struct Note {
    what: String,
    job: String,
    trigger: String,
    instance: String,
    recovered: bool,
    at: f64,
}

fn notes(dir: &Path) -> Vec<Note> {
    let text = std::fs::read_to_string(dir.join("witness.txt")).unwrap_or_default();
    text.lines()
        .map(|line| {
            let f: Vec<&str> = line.split(' ').collect();
            assert_eq!(f.len(), 6, "{line:?}");
            Note {
                what: f[0].into(),
                job: f[1].into(),
                trigger: f[2].into(),
                instance: f[3].into(),
                recovered: f[4] == "1",
                at: f[5].parse().unwrap(),
            }
        })
        .collect()
}

/// The PostgreSQL server's address, from `DATABASE_URL`.
fn server() -> SocketAddr {
    let url = database_url();
    let authority = url.split('@').next_back().unwrap().split('/').next().unwrap();
    authority.parse().expect("DATABASE_URL names the server as IP:port")
}

/// Starts `a` (direct) and `b` (through `proxy`) on `schema`, waits until both have started
/// runs of one instant, cuts the proxy for three membership TTLs and more, heals it,
/// waits until the runs of the instant have ended or stopped, and stops both daemons.
/// Returns the instant.
fn partition(dir: &Path, schema: &Schema, proxy: &Proxy, on_interrupt: &str) -> String {
    write(dir, "jobs.toml", &jobs_file(on_interrupt));
    let direct = schema.state_url();
    let through = direct.replacen(&server().to_string(), &proxy.addr().to_string(), 1);
    let args = |state: &str, instance: &str| {
        ["jobs.toml", "--state", state, "--instance", instance, "--membership-ttl", TTL].map(String::from)
    };
    let mut daemons: Vec<Daemon> = [args(&direct, "a"), args(&through, "b")]
        .iter()
        .map(|args| Daemon::run(dir, &args.iter().map(String::as_str).collect::<Vec<_>>()))
        .collect();
    for daemon in &mut daemons {
        daemon.wait_for("for the scheduler to start", |line| line.contains("scheduler started"));
    }
    let mut instant = String::new();
    wait_until("both daemons running commands of one instant", || {
        let starts: Vec<Note> = notes(dir).into_iter().filter(|n| n.what == "start").collect();
        let both =
            starts.iter().find(|n| starts.iter().any(|m| m.trigger == n.trigger && m.instance != n.instance));
        both.map(|n| instant = n.trigger.clone()).is_some()
    });
    proxy.cut();
    std::thread::sleep(Duration::from_secs(7));
    proxy.heal();
    wait_until("the instant's runs over", || {
        let notes = notes(dir);
        let of_instant = |what: &str| notes.iter().filter(|n| n.trigger == instant && n.what == what).count();
        of_instant("end") >= 6
    });
    for daemon in &daemons {
        daemon.signal(Signal::SIGTERM);
    }
    for (index, daemon) in daemons.iter_mut().enumerate() {
        assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
        write(dir, &format!("daemon-{index}.log"), &daemon.log());
    }
    instant
}

#[test]
fn a_partitioned_daemons_record_runs_go_on_unsignalled_and_end_with_their_real_outcome() {
    let dir = scratch("fault_partition_record");
    let (schema, proxy) = (Schema::new("partition"), Proxy::start(server()));
    let instant = partition(&dir, &schema, &proxy, "record");
    let notes: Vec<Note> = notes(&dir).into_iter().filter(|n| n.trigger == instant).collect();
    assert!(notes.iter().all(|n| n.what != "stopped"), "no command was signalled: {notes:#?}");
    assert_eq!(notes.iter().filter(|n| n.what == "start").count(), 6, "{notes:#?}");
    assert_eq!(notes.iter().filter(|n| n.what == "end").count(), 6, "{notes:#?}");
    let runs = history(&dir, &["--state", &schema.state_url()]);
    let of_instant: Vec<_> = runs
        .iter()
        .filter(|r| r.trigger.to_string() == instant && (r.ran() || r.outcome == "interrupted"))
        .collect();
    let outcomes: BTreeMap<&str, &str> =
        of_instant.iter().map(|r| (r.job.as_str(), r.outcome.as_str())).collect();
    assert!(
        outcomes.values().all(|o| *o == "succeeded"),
        "each run's real end replaced any interrupted: {of_instant:#?}"
    );
    assert_eq!(outcomes.len(), 6, "{of_instant:#?}");
    // The record keeps both: presumed lost by `a` meanwhile, ended for real on `b`.
    let on_b: Vec<_> = of_instant.iter().filter(|r| r.instance == "b").collect();
    assert!(!on_b.is_empty(), "{of_instant:#?}");
    let presumed =
        |r: &&&support::Run| r.error.as_deref().is_some_and(|e| e.contains("presumed lost meanwhile"));
    assert!(on_b.iter().all(presumed), "{on_b:#?}");
}

#[test]
fn a_partitioned_daemon_stops_its_rerun_jobs_runs_before_they_are_rerun_elsewhere() {
    let dir = scratch("fault_partition_rerun");
    let (schema, proxy) = (Schema::new("partition_rerun"), Proxy::start(server()));
    let instant = partition(&dir, &schema, &proxy, "rerun");
    let notes: Vec<Note> = notes(&dir).into_iter().filter(|n| n.trigger == instant).collect();
    let on_b: Vec<&Note> = notes.iter().filter(|n| n.instance == "b" && n.what == "start").collect();
    assert!(!on_b.is_empty(), "{notes:#?}");
    for start in on_b {
        let job = &start.job;
        let stopped = notes.iter().find(|n| n.job == *job && n.instance == "b" && n.what == "stopped");
        let stopped = stopped.unwrap_or_else(|| panic!("b stopped its own run of {job}: {notes:#?}"));
        let rerun = notes.iter().find(|n| n.job == *job && n.recovered && n.what == "start");
        let rerun = rerun.unwrap_or_else(|| panic!("{job} rerun on a live daemon: {notes:#?}"));
        assert_eq!(rerun.instance, "a", "{notes:#?}");
        assert!(stopped.at < rerun.at, "the original stopped before its rerun started: {notes:#?}");
    }
    let on_a: Vec<&Note> =
        notes.iter().filter(|n| n.instance == "a" && !n.recovered && n.what == "start").collect();
    for start in on_a {
        let ended =
            notes.iter().any(|n| n.job == start.job && n.instance == "a" && !n.recovered && n.what == "end");
        assert!(ended, "a's own runs were not signalled: {notes:#?}");
    }
}
