//! Several `slotcron run` daemons sharing a coordinator — a Redis or a three-master Redis
//! Cluster the test starts, or a PostgreSQL state — run each trigger of a 1 s job exactly
//! once between them.
//!
//! The daemons run together for a 10 s window; the assertions are about which triggers
//! ran and how often, never about how long anything took. Every wait is bounded.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use nix::sys::signal::Signal;
use slotcron::jiff::Timestamp;
use slotcron::redact;
use support::postgres::Schema;
use support::redis_cluster::RedisCluster;
use support::redis_server::RedisServer;
use support::{Daemon, history, scratch, write};

/// A 1 s job whose command appends its trigger, instance and fencing token to a file.
/// The grace window is generous so that a loaded test machine noticing a trigger late
/// does not turn it into a misfire: these tests are about claims.
const JOBS: &str = r#"[[job]]
name = "tick"
every = "1s"
grace = "30s"
command = 'echo "$SLOTCRON_TRIGGER $SLOTCRON_INSTANCE $SLOTCRON_FENCING_TOKEN" >> runs.txt'
"#;

/// How long the daemons run together.
const WINDOW: Duration = Duration::from_secs(10);

/// One line of `runs.txt`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Line {
    trigger: Timestamp,
    instance: String,
    fencing_token: u64,
}

/// Starts one daemon per entry of `daemons` (the arguments after `run jobs.toml`) in
/// `dir`, waits until each has started with the coordinator whose log line contains
/// `coordinator`, lets them run for [`WINDOW`], stops them with SIGTERM (exit status 0)
/// and checks `runs.txt`: no trigger twice, none missing in the middle of the window,
/// fencing tokens growing with the triggers. Returns its lines.
fn run_fleet(dir: &Path, daemons: &[Vec<String>], coordinator: &str) -> Vec<Line> {
    write(dir, "jobs.toml", JOBS);
    let mut running: Vec<Daemon> = daemons
        .iter()
        .map(|args| {
            let mut all = vec!["jobs.toml"];
            all.extend(args.iter().map(String::as_str));
            Daemon::run(dir, &all)
        })
        .collect();
    for daemon in &mut running {
        daemon.wait_for("for the scheduler to start", |line| line.contains("scheduler started"));
        assert_eq!(daemon.lines_with(&[coordinator]).len(), 1, "{}", daemon.log());
        assert!(daemon.lines_with(&["single-replica mode"]).is_empty(), "{}", daemon.log());
    }
    let start = Timestamp::now();
    std::thread::sleep(WINDOW);
    let end = Timestamp::now();
    for daemon in &running {
        daemon.signal(Signal::SIGTERM);
    }
    for daemon in &mut running {
        assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    }

    let text = std::fs::read_to_string(dir.join("runs.txt")).expect("the job ran");
    let lines: Vec<Line> = text
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            assert_eq!(fields.len(), 3, "{line:?}");
            Line {
                trigger: fields[0].parse().unwrap(),
                instance: fields[1].to_owned(),
                fencing_token: fields[2].parse().unwrap(),
            }
        })
        .collect();
    let mut by_trigger: BTreeMap<Timestamp, Vec<&Line>> = BTreeMap::new();
    for line in &lines {
        by_trigger.entry(line.trigger).or_default().push(line);
    }
    let twice: Vec<_> = by_trigger.values().filter(|runs| runs.len() > 1).collect();
    assert!(twice.is_empty(), "triggers run more than once: {twice:?}");
    // The middle of the window: whole seconds from 2 s after the start to 2 s before the
    // end, when every daemon was running.
    let first = start.as_second() + 2;
    let last = end.as_second() - 2;
    let missing: Vec<i64> =
        (first..=last).filter(|s| !by_trigger.contains_key(&Timestamp::from_second(*s).unwrap())).collect();
    assert!(missing.is_empty(), "triggers (Unix seconds) missing: {missing:?}\n{text}");
    assert!(last - first >= 5, "the window holds at least 6 triggers");
    let tokens: Vec<u64> = by_trigger.values().map(|runs| runs[0].fencing_token).collect();
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "fencing tokens grow with the triggers: {tokens:?}");
    lines
}

/// The (trigger, instance) pairs of the successful runs in `runs`.
fn succeeded(runs: &[support::Run]) -> BTreeSet<(Timestamp, String)> {
    runs.iter().filter(|r| r.outcome == "succeeded").map(|r| (r.trigger, r.instance.clone())).collect()
}

#[test]
fn three_daemons_sharing_a_redis_run_each_trigger_once() {
    let dir = scratch("fleet_redis");
    let redis = RedisServer::start(&dir);
    // Each daemon keeps its own SQLite state: Redis claims with SQL stores.
    let daemons: Vec<Vec<String>> = (1..=3)
        .map(|i| {
            ["--redis", &redis.url(), "--instance", &format!("d{i}"), "--state", &format!("sqlite:d{i}.db")]
                .map(String::from)
                .to_vec()
        })
        .collect();
    let lines = run_fleet(&dir, &daemons, "coordination through Redis");

    // Each run is in the ledger of the daemon that ran it, and no ledger has another.
    let mut recorded = BTreeSet::new();
    for i in 1..=3 {
        let runs = history(&dir, &["--state", &format!("sqlite:d{i}.db")]);
        assert!(runs.iter().all(|r| r.instance == format!("d{i}")));
        let outcomes: BTreeSet<&str> = runs.iter().map(|r| r.outcome.as_str()).collect();
        assert!(outcomes.is_subset(&BTreeSet::from(["succeeded", "skipped-lost"])), "{outcomes:?}");
        recorded.extend(succeeded(&runs));
    }
    let ran: BTreeSet<_> = lines.iter().map(|l| (l.trigger, l.instance.clone())).collect();
    assert_eq!(recorded, ran);
}

#[test]
fn three_daemons_sharing_a_redis_cluster_run_each_trigger_once() {
    let dir = scratch("fleet_redis_cluster");
    let cluster = RedisCluster::start();
    let daemons: Vec<Vec<String>> = (1..=3)
        .map(|i| {
            ["--redis", &cluster.url(), "--instance", &format!("c{i}"), "--state", &format!("sqlite:c{i}.db")]
                .map(String::from)
                .to_vec()
        })
        .collect();
    let lines = run_fleet(&dir, &daemons, "coordination through Redis");
    let ran: BTreeSet<_> = lines.iter().map(|l| (l.trigger, l.instance.clone())).collect();
    let mut recorded = BTreeSet::new();
    for i in 1..=3 {
        recorded.extend(succeeded(&history(&dir, &["--state", &format!("sqlite:c{i}.db")])));
    }
    assert_eq!(recorded, ran);
    // The job's keys carry its hash tag, all on one node; the fleet's membership and the
    // owners' tallies (`slotcron:fleet:…`) are keys apart, wherever their slots are.
    let job_keys = |keys: Vec<String>| -> Vec<String> {
        keys.into_iter().filter(|key| !key.starts_with("slotcron:fleet:")).collect()
    };
    let holding: Vec<Vec<String>> =
        cluster.keys_by_node().into_iter().map(job_keys).filter(|keys| !keys.is_empty()).collect();
    assert_eq!(holding.len(), 1, "{holding:?}");
    assert!(holding[0].contains(&"slotcron:{tick}:fencing".to_owned()), "{holding:?}");
    assert!(holding[0].iter().all(|key| key.starts_with("slotcron:{tick}")), "{holding:?}");
}

#[test]
fn two_daemons_sharing_a_postgres_state_run_each_trigger_once() {
    let dir = scratch("fleet_postgres");
    let schema = Schema::new("fleet");
    let state = schema.state_url();
    let daemons: Vec<Vec<String>> = (1..=2)
        .map(|i| ["--state", state.as_str(), "--instance", &format!("p{i}")].map(String::from).to_vec())
        .collect();
    // The log names the state's URL, schema included, without its password.
    let coordinator =
        format!("coordination through PostgreSQL (the state's database) url={}", redact(&state));
    let lines = run_fleet(&dir, &daemons, &coordinator);

    // One shared ledger: every trigger's success once, and the other daemon's loss.
    let runs = history(&dir, &["--state", &state]);
    let ran: BTreeSet<_> = lines.iter().map(|l| (l.trigger, l.instance.clone())).collect();
    assert_eq!(succeeded(&runs), ran);
    let outcomes: BTreeSet<&str> = runs.iter().map(|r| r.outcome.as_str()).collect();
    assert!(outcomes.is_subset(&BTreeSet::from(["succeeded", "skipped-lost"])), "{outcomes:?}");
}

#[test]
fn every_daemon_sharing_a_redis_runs_its_own_reboot_without_a_claim() {
    let dir = scratch("fleet_reboot");
    let redis = RedisServer::start(&dir);
    write(&dir, "crontab", "# name: boot\n@reboot echo \"$SLOTCRON_INSTANCE\" >> boots.txt\n");
    let mut daemons: Vec<Daemon> = (1..=2)
        .map(|i| {
            let (instance, state) = (format!("r{i}"), format!("sqlite:r{i}.db"));
            Daemon::run(
                &dir,
                &["crontab", "--redis", &redis.url(), "--instance", &instance, "--state", &state],
            )
        })
        .collect();
    for daemon in &mut daemons {
        let finished = daemon.wait_for("for the @reboot run to finish", |line| {
            line.contains("run finished") && line.contains(r#"job="boot""#)
        });
        assert!(finished.contains(r#"outcome="succeeded""#), "{}", daemon.log());
        assert_eq!(daemon.lines_with(&["coordination through Redis"]).len(), 1, "{}", daemon.log());
    }
    for daemon in &daemons {
        daemon.signal(Signal::SIGTERM);
    }
    for daemon in &mut daemons {
        assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    }

    let boots = std::fs::read_to_string(dir.join("boots.txt")).expect("the job ran");
    let mut instances: Vec<&str> = boots.lines().collect();
    instances.sort_unstable();
    assert_eq!(instances, ["r1", "r2"]);
    // No claim was made, so no claim key (one-shot claims never expire) nor fencing counter.
    assert_eq!(redis.keys(), Vec::<String>::new());
}

/// Starts daemons `a`, `b` and `c` in `dir` on the Redis at `redis`, each with a SQLite
/// state of its own, an admin server and the extra arguments of its entry in `extra`;
/// returns them once each has started, with their admin addresses.
fn three_daemons(dir: &Path, redis: &str, extra: [&[&str]; 3]) -> (Vec<Daemon>, Vec<String>) {
    let addrs: Vec<String> = (0..3).map(|_| format!("127.0.0.1:{}", support::http::free_port())).collect();
    let mut daemons: Vec<Daemon> = ["a", "b", "c"]
        .iter()
        .zip(&addrs)
        .zip(extra)
        .map(|((name, addr), extra)| {
            let state = format!("sqlite:{name}.db");
            let mut args =
                vec!["jobs.toml", "--redis", redis, "--instance", name, "--state", &state, "--admin", addr];
            args.extend_from_slice(extra);
            Daemon::run(dir, &args)
        })
        .collect();
    for daemon in &mut daemons {
        daemon.wait_for("for the scheduler to start", |line| line.contains("scheduler started"));
    }
    (daemons, addrs)
}

#[test]
fn the_fleet_view_lists_the_three_members_of_a_three_daemon_fleet_with_their_heartbeats_and_labels() {
    let dir = scratch("fleet-view");
    let redis = RedisServer::start(&dir);
    write(&dir, "jobs.toml", JOBS);
    let labels = [&["--label", "gpu=a100"][..], &["--label", "region=eu"], &["--label", "region=eu"]];
    let (mut daemons, addrs) = three_daemons(&dir, &redis.url(), labels);
    let members = |addr: &str| -> Vec<serde_json::Value> {
        let answer = support::http::get(addr, "/api/v1/fleet", &[]);
        assert_eq!(answer.status, 200, "{}", answer.body);
        answer.json()["members"].as_array().cloned().unwrap_or_default()
    };
    support::wait_until("three members with their details", || {
        members(&addrs[0]).iter().filter(|m| m["version"].is_string()).count() == 3
    });
    let seen = members(&addrs[2]);
    let names: Vec<&str> = seen.iter().map(|m| m["instance"].as_str().unwrap()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    for (member, addr) in seen.iter().zip(&addrs) {
        let heartbeat: Timestamp = member["last_heartbeat"].as_str().unwrap().parse().unwrap();
        assert!(
            heartbeat <= Timestamp::now() && heartbeat > Timestamp::now() - Duration::from_secs(60),
            "{member}"
        );
        assert_eq!(member["admin"], addr.as_str(), "{member}");
        assert_eq!(member["version"], env!("CARGO_PKG_VERSION"));
        assert!(member["runs_in_flight"].is_u64(), "{member}");
    }
    let labels: Vec<&serde_json::Value> = seen.iter().map(|m| &m["labels"]).collect();
    assert_eq!(
        labels,
        [
            &serde_json::json!(["gpu=a100"]),
            &serde_json::json!(["region=eu"]),
            &serde_json::json!(["region=eu"])
        ]
    );
    let owned: u64 = seen.iter().map(|m| m["owned_jobs"].as_u64().unwrap()).sum();
    assert_eq!(owned, 1, "the one job has one owner");

    let url = format!("http://{}", addrs[1]);
    let status = support::slotcron().args(["status", "--admin-url", &url]).output().unwrap();
    assert_eq!(status.status.code(), Some(0), "{}", support::stderr(&status));
    let out = support::stdout(&status);
    let table: Vec<&str> = out.lines().skip_while(|line| !line.starts_with("MEMBER")).collect();
    assert_eq!(table.len(), 4, "a header and three members:\n{out}");
    assert!(table[0].contains("HEARTBEAT"), "{out}");
    assert!(table[0].trim_end().ends_with("LABELS"), "{out}");
    for (row, (name, label)) in
        table[1..].iter().zip([("a", "gpu=a100"), ("b", "region=eu"), ("c", "region=eu")])
    {
        assert_eq!(row.split_whitespace().next(), Some(name), "{out}");
        assert_eq!(row.split_whitespace().last(), Some(label), "{out}");
    }
    for daemon in &mut daemons {
        daemon.signal(Signal::SIGTERM);
        assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    }
}

/// A second daemon started under an instance id that a running daemon uses is refused
/// at start (exit status 2, naming the id and the other's host), and the first runs on;
/// a daemon restarted under its own id after `kill -9` (its entry still live, silent) is
/// not refused.
#[test]
fn a_second_daemon_under_a_live_instance_id_is_refused_and_a_restart_after_kill_9_is_not() {
    let dir = scratch("duplicate-instance");
    let redis = RedisServer::start(&dir);
    write(&dir, "jobs.toml", JOBS);
    let url = redis.url();
    let args =
        |state: &'static str| ["jobs.toml", "--redis", url.as_str(), "--instance", "same", "--state", state];
    let mut first = Daemon::run(&dir, &args("sqlite:first.db"));
    first.wait_for("for the scheduler to start", |line| line.contains("scheduler started"));
    let mut second = Daemon::run(&dir, &args("sqlite:second.db"));
    assert_eq!(second.wait_exit().code(), Some(2), "{}", second.log());
    let log = second.log();
    assert!(log.contains(r#"instance "same" is a live member of the fleet"#), "{log}");
    assert!(log.contains("give each its own --instance") && log.contains("(host "), "{log}");
    assert!(!log.contains("scheduler started"), "{log}");

    first.signal(Signal::SIGKILL);
    first.wait_exit();
    let mut restarted = Daemon::run(&dir, &args("sqlite:first.db"));
    restarted.wait_for("for the restarted scheduler to start", |line| line.contains("scheduler started"));
    restarted.signal(Signal::SIGTERM);
    assert_eq!(restarted.wait_exit().code(), Some(0), "{}", restarted.log());
}

/// The admin API's page of `job`'s runs at `addr`, with the query `query`.
fn runs_page(addr: &str, job: &str, query: &str) -> serde_json::Value {
    let answer = support::http::get(addr, &format!("/api/v1/jobs/{job}/runs?{query}"), &[]);
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.json()
}

/// The (trigger, instance, outcome) of each run of a page.
fn runs_of(page: &serde_json::Value) -> BTreeSet<(String, String, String)> {
    let runs = page["runs"].as_array().unwrap();
    runs.iter()
        .map(|r| (r["trigger"].to_string(), r["instance"].to_string(), r["outcome"].to_string()))
        .collect()
}

/// With a SQLite state per daemon, each daemon keeps only its own runs; any daemon's admin
/// API (and `slotcron history --admin-url`) shows the fleet's, merged from every member's,
/// and after a member is killed it names that member as one that did not answer.
#[test]
fn the_history_of_a_job_merges_the_runs_every_member_keeps_and_names_a_member_that_did_not_answer() {
    let dir = scratch("fleet-history");
    let redis = RedisServer::start(&dir);
    // The runs also write output, which only the daemon that ran them keeps.
    write(&dir, "jobs.toml", &JOBS.replace(">> runs.txt'", ">> runs.txt; echo said by $SLOTCRON_INSTANCE'"));
    // A membership that outlives the test: the killed member stays in it.
    let ttl: &[&str] = &["--membership-ttl", "10m"];
    let (mut daemons, addrs) = three_daemons(&dir, &redis.url(), [ttl, ttl, ttl]);
    support::wait_until("three runs of tick", || {
        runs_of(&runs_page(&addrs[0], "tick", "limit=1000")).iter().filter(|r| r.2 == "\"succeeded\"").count()
            >= 3
    });
    // The daemon that ran the newest trigger, and another, which has no record of that run.
    // (A trigger may also have records of members that found it claimed: the run's.)
    let page = runs_page(&addrs[0], "tick", "limit=100");
    let runs = page["runs"].as_array().unwrap();
    let newest = runs.iter().find(|r| r["outcome"] == "succeeded").unwrap().clone();
    let ran_by = newest["instance"].as_str().unwrap().to_owned();
    let owner = ["a", "b", "c"].iter().position(|name| *name == ran_by).unwrap();
    let other = (owner + 1) % 3;
    // Up to just past that run's trigger, so that the pages compared hold the same
    // triggers, each run of them ended.
    let trigger: Timestamp = newest["trigger"].as_str().unwrap().parse().unwrap();
    let before = (trigger + Duration::from_millis(1)).to_string();
    let query = format!("limit=1000&before={before}");
    let mut union = BTreeSet::new();
    for (name, addr) in ["a", "b", "c"].iter().zip(&addrs) {
        let own = runs_of(&runs_page(addr, "tick", &format!("{query}&scope=member")));
        assert!(own.iter().all(|r| r.1 == format!("{name:?}")), "{name} keeps only its own runs: {own:?}");
        union.extend(own);
    }
    let fleet = runs_page(&addrs[other], "tick", &query);
    assert_eq!(runs_of(&fleet), union, "the fleet's page holds every member's runs");
    let newest =
        (newest["trigger"].to_string(), newest["instance"].to_string(), newest["outcome"].to_string());
    assert!(
        runs_of(&fleet).contains(&newest),
        "asked of {}, the page holds {ran_by}'s run",
        ["a", "b", "c"][other]
    );
    assert_eq!(fleet["merged"].as_array().unwrap().len(), 3, "{}", fleet["merged"]);
    assert_eq!(fleet["unanswered"], serde_json::json!([]));

    let url = format!("http://{}", addrs[other]);
    let runs = history(&dir, &["tick", "--admin-url", &url, "--until", &before]);
    let printed: BTreeSet<(String, String, String)> = runs
        .iter()
        .map(|r| {
            (format!("{:?}", r.trigger.to_string()), format!("{:?}", r.instance), format!("{:?}", r.outcome))
        })
        .collect();
    assert_eq!(printed, union, "the CLI prints the fleet's runs");

    // The output of ran_by's run, asked of another daemon: ran_by's, through its API.
    let output = format!("/api/v1/jobs/tick/runs/{}/output", newest.0.trim_matches('"'));
    let answer = support::http::get(&addrs[other], &output, &[]);
    assert_eq!(answer.status, 200, "{}", answer.body);
    let outputs = answer.json()["outputs"].clone();
    assert_eq!(outputs[0]["instance"], ran_by.as_str(), "{outputs}");
    assert_eq!(outputs[0]["output"], format!("said by {ran_by}\n"), "{outputs}");
    let own = support::http::get(&addrs[other], &format!("{output}?scope=member"), &[]);
    assert_eq!(own.status, 404, "the other daemon keeps none of it: {}", own.body);

    daemons[owner].signal(Signal::SIGKILL);
    daemons[owner].wait_exit();
    let fleet = runs_page(&addrs[other], "tick", &query);
    let unanswered = fleet["unanswered"].as_array().unwrap();
    assert_eq!(unanswered.len(), 1, "{fleet}");
    assert_eq!(unanswered[0]["instance"], ran_by.as_str());
    assert!(unanswered[0]["reason"].as_str().unwrap().contains("cannot connect"), "{fleet}");
    let gone = support::http::get(&addrs[other], &output, &[]);
    assert_eq!(gone.status, 404, "{}", gone.body);
    assert!(gone.error().contains(&format!("members that did not answer: {ran_by}")), "{}", gone.body);
    let out = support::run_in(&dir, &["history", "tick", "--admin-url", &url]);
    assert_eq!(out.status.code(), Some(0), "{}", support::stderr(&out));
    assert!(
        support::stderr(&out).contains(&format!("did not answer are missing: {ran_by}: ")),
        "{}",
        support::stderr(&out)
    );
}
