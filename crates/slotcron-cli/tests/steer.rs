//! Steering a fleet of two `slotcron run` daemons through one daemon's admin API (with
//! `slotcron pause|resume|trigger|backfill`), on one Redis and again on one PostgreSQL
//! state: a pause stops the job on both (each of its triggers recorded `skipped-paused`
//! by the daemon that claimed it — its owner: the daemons share the work, and the other
//! finds the refusal counted in the owner's tally and records nothing — none run), a
//! resume restarts it, `trigger` runs one extra run across both and
//! a repeated idempotency key nothing more, a backfill of 10 past triggers runs each once
//! across both, oldest first, and a pause survives a restart of both daemons.
//!
//! Every wait is bounded (`support::PATIENCE`) and waits for records, never for a time;
//! no assertion is about how long anything took.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use nix::sys::signal::Signal;
use slotcron::jiff::{SignedDuration, Timestamp};
use support::http::{self, free_port};
use support::postgres::Schema;
use support::redis_server::RedisServer;
use support::{Daemon, Run, history, run_in, scratch, slotcron, stderr, stdout, wait_until, write};

/// A 1 s job whose command appends its trigger and instance to `runs.txt`, with a grace
/// window generous enough that a loaded machine noticing a trigger late does not make it
/// a misfire.
const JOBS: &str = r#"[[job]]
name = "tick"
every = "1s"
grace = "30s"
command = 'echo "$SLOTCRON_TRIGGER $SLOTCRON_INSTANCE" >> runs.txt'
"#;

/// Two daemons in one directory, each with its admin API on a loopback port.
struct Fleet {
    dir: PathBuf,
    /// Per daemon: the arguments after `run jobs.toml`.
    args: Vec<Vec<String>>,
    admin: Vec<String>,
    daemons: Vec<Daemon>,
    /// Per daemon, the `--state` its history is read from.
    states: Vec<String>,
}

impl Fleet {
    fn start(dir: &Path, coordination: impl Fn(usize) -> Vec<String>, states: Vec<String>) -> Self {
        write(dir, "jobs.toml", JOBS);
        let admin: Vec<String> = (0..2).map(|_| format!("127.0.0.1:{}", free_port())).collect();
        let args = (0..2)
            .map(|i| {
                let mut args = coordination(i);
                args.extend(["--instance".into(), format!("d{}", i + 1), "--admin".into(), admin[i].clone()]);
                args
            })
            .collect();
        let mut fleet = Self { dir: dir.to_owned(), args, admin, daemons: Vec::new(), states };
        fleet.restart();
        fleet
    }

    /// Starts the daemons (again) and waits until each serves its API.
    fn restart(&mut self) {
        self.daemons = self
            .args
            .iter()
            .map(|args| {
                let mut all = vec!["jobs.toml"];
                all.extend(args.iter().map(String::as_str));
                Daemon::run(&self.dir, &all)
            })
            .collect();
        for daemon in &mut self.daemons {
            daemon.wait_for("for the admin API", |line| line.contains("admin API listening"));
            daemon.wait_for("for the scheduler", |line| line.contains("scheduler started"));
        }
    }

    fn stop(&mut self) {
        for daemon in &self.daemons {
            daemon.signal(Signal::SIGTERM);
        }
        for daemon in &mut self.daemons {
            assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
        }
    }

    /// `slotcron COMMAND tick ARGS --admin-url` daemon `i`'s API: its standard output;
    /// panics unless it exits 0.
    fn steer(&self, i: usize, command: &str, args: &[&str]) -> String {
        let url = format!("http://{}", self.admin[i]);
        let mut all = vec![command, "tick"];
        all.extend_from_slice(args);
        all.extend(["--admin-url", &url]);
        let out = run_in(&self.dir, &all);
        assert_eq!(out.status.code(), Some(0), "slotcron {all:?}: {}", stderr(&out));
        stdout(&out)
    }

    /// Every record of `tick` in the daemons' histories, oldest trigger first.
    fn records(&self) -> Vec<Run> {
        let states: BTreeSet<&String> = self.states.iter().collect();
        let mut runs: Vec<Run> =
            states.into_iter().flat_map(|state| history(&self.dir, &["tick", "--state", state])).collect();
        runs.sort_by_key(|r| (r.trigger, r.started));
        runs
    }

    /// The triggers of `runs.txt` with the instances that ran them, in the file's order.
    fn ran(&self) -> Vec<(Timestamp, String)> {
        let text = std::fs::read_to_string(self.dir.join("runs.txt")).unwrap_or_default();
        text.lines()
            .map(|line| {
                let (trigger, instance) = line.split_once(' ').unwrap();
                (trigger.parse().unwrap(), instance.to_owned())
            })
            .collect()
    }
}

/// The trigger in a line such as `tick: paused since T` or `… trigger T`: its last word.
fn last_instant(line: &str) -> Timestamp {
    line.split_whitespace().last().unwrap().parse().unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// The `skipped-paused` triggers of `runs` after `after`, each with the instances that
/// recorded it; panics if one instance recorded a trigger twice.
fn paused_triggers(runs: &[Run], after: Timestamp) -> BTreeMap<Timestamp, Vec<String>> {
    let mut paused: BTreeMap<Timestamp, Vec<String>> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.outcome == "skipped-paused" && r.trigger > after) {
        let by = paused.entry(run.trigger).or_default();
        assert!(!by.contains(&run.instance), "{} recorded {} twice", run.instance, run.trigger);
        by.push(run.instance.clone());
    }
    paused
}

/// Waits until the daemons recorded at least `count` `skipped-paused` triggers after
/// `after` (each by the daemon that tried to claim it); returns them.
fn wait_for_paused(fleet: &Fleet, after: Timestamp, count: usize) -> BTreeSet<Timestamp> {
    let mut paused = BTreeSet::new();
    wait_until(&format!("{count} triggers skipped-paused"), || {
        paused = paused_triggers(&fleet.records(), after).into_keys().collect();
        paused.len() >= count
    });
    paused
}

/// Checks the paused span of `paused`: every whole second from its first to its last is
/// recorded `skipped-paused`, and no scheduled run of any of them ran.
fn assert_paused_span(fleet: &Fleet, paused: &BTreeSet<Timestamp>) {
    let (first, last) = (*paused.first().unwrap(), *paused.last().unwrap());
    let span: Vec<Timestamp> =
        (first.as_second()..=last.as_second()).map(|s| Timestamp::from_second(s).unwrap()).collect();
    assert_eq!(paused.iter().copied().collect::<Vec<_>>(), span, "every trigger of the span");
    let runs = fleet.records();
    let ran: Vec<&Run> = runs.iter().filter(|r| r.ran() && r.trigger >= first && r.trigger <= last).collect();
    assert!(ran.is_empty(), "runs while paused: {ran:?}");
    let lines: Vec<_> = fleet.ran().into_iter().filter(|(t, _)| *t >= first && *t <= last).collect();
    assert!(lines.is_empty(), "commands ran while paused: {lines:?}");
}

fn steer_a_fleet(mut fleet: Fleet) {
    wait_until("a first run", || !fleet.ran().is_empty());

    // A pause through d1's API stops the job on both.
    let since = last_instant(fleet.steer(0, "pause", &[]).trim());
    let paused = wait_for_paused(&fleet, since + SignedDuration::from_secs(1), 5);
    assert_paused_span(&fleet, &paused);
    let status = run_in(&fleet.dir, &["status", "--admin-url", &format!("http://{}", fleet.admin[1])]);
    assert!(
        stdout(&status).lines().any(|l| l.starts_with("tick ") && l.contains(" paused ")),
        "{}",
        stdout(&status)
    );
    assert_eq!(http::get(&fleet.admin[1], "/api/v1/jobs/tick", &[]).json()["paused"], true);

    // A resume through d2's restarts it.
    let resumed = fleet.steer(1, "resume", &[]);
    assert!(resumed.starts_with(&format!("tick: resumed (paused since {since})")), "{resumed}");
    let resumed_at = Timestamp::now();
    wait_until("a run after the resume", || fleet.ran().iter().any(|(t, _)| *t > resumed_at));

    // One extra run across both; the same key again runs nothing more.
    let first = last_instant(fleet.steer(0, "trigger", &["--idempotency-key", "deploy-1"]).trim());
    let again = fleet.steer(1, "trigger", &["--idempotency-key", "deploy-1"]);
    assert!(again.contains("given before"), "{again}");
    assert_eq!(last_instant(again.trim()), first, "answers with the first run");
    wait_until("the manual run", || fleet.records().iter().any(|r| r.cause == "manual" && r.finished()));

    // A backfill of 10 past triggers, from before the fleet started.
    let from = Timestamp::from_second(Timestamp::now().as_second() - 600).unwrap();
    let to = from + SignedDuration::from_secs(9);
    let queued = fleet.steer(0, "backfill", &["--from", &from.to_string(), "--to", &to.to_string()]);
    let backfill: Vec<Timestamp> = (0..10).map(|k| from + SignedDuration::from_secs(k)).collect();
    let listed: Vec<Timestamp> = queued.lines().skip(1).map(|l| l.parse().unwrap()).collect();
    assert_eq!(listed, backfill, "{queued}");
    wait_until("the backfill's runs", || {
        fleet.records().iter().filter(|r| r.cause == "backfill" && r.finished()).count() == 10
    });

    // A pause survives a restart of both daemons.
    fleet.steer(1, "pause", &[]);
    fleet.stop();
    fleet.restart();
    let restarted = Timestamp::now();
    let paused = wait_for_paused(&fleet, restarted, 3);
    assert_paused_span(&fleet, &paused);
    fleet.stop();

    let runs = fleet.records();
    let manual: Vec<&Run> = runs.iter().filter(|r| r.cause == "manual").collect();
    assert_eq!(manual.len(), 1, "one manual run across both: {manual:?}");
    assert_eq!((manual[0].trigger, manual[0].outcome.as_str()), (first, "succeeded"));
    let backfilled: Vec<&Run> = runs.iter().filter(|r| r.cause == "backfill").collect();
    assert_eq!(
        backfilled.iter().map(|r| r.trigger).collect::<Vec<_>>(),
        backfill,
        "each once: {backfilled:?}"
    );
    assert!(backfilled.iter().all(|r| r.outcome == "succeeded"), "{backfilled:?}");
    let mut by_start = backfilled.clone();
    by_start.sort_by_key(|r| r.started);
    assert_eq!(by_start.iter().map(|r| r.trigger).collect::<Vec<_>>(), backfill, "oldest first");
    let lines: Vec<Timestamp> =
        fleet.ran().into_iter().map(|(t, _)| t).filter(|t| backfill.contains(t)).collect();
    assert_eq!(lines, backfill, "the commands ran once each, oldest first");
    let manual_lines = fleet.ran().into_iter().filter(|(t, _)| *t == first).count();
    assert_eq!(manual_lines, 1);
}

#[test]
fn two_daemons_on_one_redis_are_paused_resumed_triggered_and_backfilled_as_one() {
    let dir = scratch("steer_redis");
    let redis = RedisServer::start(&dir);
    let url = redis.url();
    let states = vec!["sqlite:d1.db".to_owned(), "sqlite:d2.db".to_owned()];
    let state = states.clone();
    let fleet = Fleet::start(
        &dir,
        |i| vec!["--redis".into(), url.clone(), "--state".into(), state[i].clone()],
        states,
    );
    steer_a_fleet(fleet);
    assert!(redis.keys().contains(&"slotcron:paused:tick".to_owned()), "the pause is in Redis");
}

#[test]
fn two_daemons_on_one_postgresql_state_are_paused_resumed_triggered_and_backfilled_as_one() {
    let dir = scratch("steer_postgres");
    let schema = Schema::new("steer");
    let url = schema.state_url();
    let state = url.clone();
    let fleet = Fleet::start(&dir, |_| vec!["--state".into(), state.clone()], vec![url.clone(), url]);
    steer_a_fleet(fleet);
}

#[test]
fn bad_requests_to_a_daemon_get_a_4xx_with_a_message_and_change_nothing() {
    let dir = scratch("steer_bad_input");
    let mut fleet = Fleet::start(&dir, |i| vec!["--state".into(), format!("sqlite:d{}.db", i + 1)], vec![]);
    let addr = fleet.admin[0].clone();
    let url = format!("http://{addr}");
    let refused = |args: &[&str], message: &str| {
        let mut all = args.to_vec();
        all.extend(["--admin-url", &url]);
        let out = run_in(&dir, &all);
        assert_eq!(out.status.code(), Some(2), "{all:?}");
        assert!(stderr(&out).contains(message), "{all:?}: {}", stderr(&out));
    };
    refused(&["pause", "nope"], "404 Not Found: no job named \"nope\"");
    // The URL from SLOTCRON_ADMIN_URL when --admin-url is not given; neither: a usage error.
    let status =
        slotcron().args(["status"]).env("SLOTCRON_ADMIN_URL", &url).current_dir(&dir).output().unwrap();
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    assert!(stdout(&status).contains("tick"), "{}", stdout(&status));
    let neither = run_in(&dir, &["pause", "tick"]);
    assert_eq!(neither.status.code(), Some(2), "{}", stderr(&neither));
    assert!(stderr(&neither).contains("--admin-url"), "{}", stderr(&neither));
    refused(
        &["backfill", "tick", "--from", "2024-05-17T00:10:00Z", "--to", "2024-05-17T00:00:00Z"],
        "400 Bad Request: backfill of job \"tick\": from 2024-05-17T00:10:00Z is after to 2024-05-17T00:00:00Z",
    );
    refused(
        &["backfill", "tick", "--from", "2024-05-17T00:00:00Z", "--to", "2024-05-17T01:00:00Z"],
        "the range holds 3601 triggers; at most 1000 per request",
    );
    let json = [("content-type", "application/json")];
    let malformed = http::post(&addr, "/api/v1/jobs/tick/resume", &json, "{\"catch_up\": maybe}");
    assert_eq!(malformed.status, 400, "{}", malformed.body);
    assert!(malformed.error().starts_with("the body is not the JSON expected"), "{}", malformed.body);
    let form = http::post(
        &addr,
        "/api/v1/jobs/tick/pause",
        &[("content-type", "application/x-www-form-urlencoded")],
        "",
    );
    assert_eq!(form.status, 415, "{}", form.body);
    assert!(form.error().contains("application/json"), "{}", form.body);
    let bare = http::post(&addr, "/api/v1/jobs/tick/trigger", &[], "");
    assert_eq!(bare.status, 415, "{}", bare.body);
    assert_eq!(http::get(&addr, "/api/v1/jobs/tick", &[]).json()["paused"], false, "nothing paused");
    fleet.stop();
    let runs: Vec<Run> =
        ["sqlite:d1.db", "sqlite:d2.db"].iter().flat_map(|s| history(&dir, &["--state", s])).collect();
    assert!(runs.iter().all(|r| r.cause == "scheduled"), "no manual or backfilled run: {runs:?}");
}

#[test]
fn dry_runs_list_what_would_run_and_nothing_runs() {
    let dir = scratch("steer_dry_run");
    let states = vec!["sqlite:d1.db".to_owned(), "sqlite:d2.db".to_owned()];
    let state = states.clone();
    let mut fleet = Fleet::start(&dir, |i| vec!["--state".into(), state[i].clone()], states);
    wait_until("a first run", || !fleet.ran().is_empty());
    let from = Timestamp::from_second(Timestamp::now().as_second() - 600).unwrap();
    let (from, to) = (from.to_string(), (from + SignedDuration::from_secs(4)).to_string());
    let listed = fleet.steer(0, "backfill", &["--from", &from, "--to", &to, "--dry-run"]);
    let mut lines = listed.lines();
    let head = lines.next().unwrap_or_default();
    assert_eq!(head, "tick: dry run, nothing ran: 5 trigger(s) would be queued, oldest first");
    let want: Vec<Timestamp> =
        (0..5).map(|k| from.parse::<Timestamp>().unwrap() + SignedDuration::from_secs(k)).collect();
    assert_eq!(lines.map(|l| l.parse().unwrap()).collect::<Vec<Timestamp>>(), want, "{listed}");

    let would = fleet.steer(0, "trigger", &["--dry-run"]);
    let prefix = "tick: dry run, nothing ran: a manual run now would get trigger ";
    assert!(would.starts_with(prefix) && would.trim_end().ends_with("; not paused"), "{would}");
    fleet.steer(0, "pause", &[]);
    let would = fleet.steer(0, "trigger", &["--dry-run"]);
    assert!(would.contains("; paused since ") && would.contains("(a manual run runs even so)"), "{would}");

    // A range the backfill refuses, the dry run refuses with the same words.
    let url = format!("http://{}", fleet.admin[0]);
    let reversed = ["--from", "2024-05-17T00:10:00Z", "--to", "2024-05-17T00:00:00Z"];
    let too_many = ["--from", "2024-05-17T00:00:00Z", "--to", "2024-05-17T01:00:00Z"];
    for range in [reversed, too_many] {
        let real = run_in(&dir, &[&["backfill", "tick"][..], &range, &["--admin-url", &url]].concat());
        let dry =
            run_in(&dir, &[&["backfill", "tick"][..], &range, &["--admin-url", &url, "--dry-run"]].concat());
        assert_eq!(real.status.code(), Some(2), "{range:?}: {}", stderr(&real));
        assert_eq!((dry.status.code(), stderr(&dry)), (real.status.code(), stderr(&real)), "{range:?}");
    }
    fleet.stop();
    let runs = fleet.records();
    assert!(runs.iter().all(|r| r.cause == "scheduled"), "no manual or backfilled run: {runs:?}");
}
