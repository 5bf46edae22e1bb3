//! Changing the jobs kept in the state through the admin API (`PUT` and `DELETE
//! /api/v1/jobs/{name}`) of daemons started with `--jobs-from-state`, the records of those
//! changes (`GET /api/v1/audit`, `slotcron jobs history`), and their refusals.
//!
//! Every wait is bounded (`support::PATIENCE`); nothing asserts how long anything took.

mod support;

use std::path::Path;

use nix::sys::signal::Signal;
use support::http::{self, Answer};
use support::postgres::Schema;
use support::{Daemon, run_in, scratch, slotcron, stderr, stdout, wait_until, write};

const FULL: &str = "full-t0ken";
const READ: &str = "read-t0ken";

const FILE: &str = r#"[[job]]
name = "local"
every = "1h"
command = 'echo local'
"#;

/// A daemon of `jobs.toml` in `dir` on the state `url` as `instance`, with its admin API
/// (both tokens) on a free loopback port: the daemon and that address.
fn start(dir: &Path, url: &str, instance: &str, from_state: bool) -> (Daemon, String) {
    let mut command = slotcron();
    command.args(["run", "jobs.toml", "--state", url, "--instance", instance, "--admin", "127.0.0.1:0"]);
    if from_state {
        command.arg("--jobs-from-state");
    }
    command.envs([("SLOTCRON_ADMIN_TOKEN", FULL), ("SLOTCRON_ADMIN_READ_TOKEN", READ)]);
    let mut daemon = Daemon::spawn(command, dir);
    let addr = daemon.admin_address();
    daemon.wait_for("for the scheduler to start", |line| line.contains("scheduler started"));
    (daemon, addr)
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// `PUT /api/v1/jobs/{job}?note=…` with `token` and a body of `content_type`.
fn put(addr: &str, job: &str, note: &str, token: &str, content_type: &str, body: &str) -> Answer {
    let headers = [("authorization", bearer(token)), ("content-type", content_type.to_owned())];
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    http::send(addr, "PUT", &format!("/api/v1/jobs/{job}?note={note}"), &headers, body)
}

fn delete(addr: &str, job: &str, note: &str, token: &str) -> Answer {
    let authorization = bearer(token);
    http::send(
        addr,
        "DELETE",
        &format!("/api/v1/jobs/{job}?note={note}"),
        &[("authorization", &authorization)],
        "",
    )
}

fn changes(addr: &str, job: &str) -> Vec<serde_json::Value> {
    let answer = http::get(addr, &format!("/api/v1/audit?job={job}"), &[("authorization", &bearer(READ))]);
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.json()["changes"].as_array().unwrap().clone()
}

/// The command of the job as the state keeps it, read by `slotcron jobs ls`.
fn stored_command(dir: &Path, url: &str, job: &str) -> Option<String> {
    let listed = run_in(dir, &["jobs", "ls", "--state", url, "--json"]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    stdout(&listed)
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|line| line["job"] == job)
        .and_then(|line| line["command"].as_str().map(str::to_owned))
}

#[test]
fn a_job_put_through_one_member_runs_on_the_other_and_each_change_is_recorded() {
    let dir = scratch("jobs-api");
    let schema = Schema::new("jobs_api");
    let url = schema.state_url();
    write(&dir, "jobs.toml", FILE);
    let (mut a, addr_a) = start(&dir, &url, "a", true);
    let (mut b, addr_b) = start(&dir, &url, "b", true);

    // Created through a, in TOML: b runs it.
    let v1 = "every = \"1s\"\ngrace = \"30s\"\ncommand = 'echo \"v1 $SLOTCRON_TRIGGER\" >> runs.txt'\n";
    let created = put(&addr_a, "shared", "first", FULL, "application/toml", v1);
    assert_eq!(created.status, 201, "{}", created.body);
    let created = created.json();
    assert_eq!((created["change"].as_str(), created["token"].as_str()), (Some("created"), Some("full")));
    assert_eq!((created["note"].as_str(), created["old"].is_null()), (Some("first"), true));
    let line = b.wait_for("for b to add the job", |l| l.contains("jobs reloaded") && l.contains("added=1"));
    assert!(line.contains("state change") && line.contains("shared"), "{line}");
    let on_b = http::get(&addr_b, "/api/v1/jobs/shared", &[("authorization", &bearer(READ))]);
    assert_eq!(on_b.status, 200, "b schedules the job: {}", on_b.body);
    let runs = || std::fs::read_to_string(dir.join("runs.txt")).unwrap_or_default();
    wait_until("a run of the first definition", || runs().contains("v1 "));

    // Changed through b, in JSON: the new definition runs.
    let v2 = r#"{"every": "1s", "grace": "30s", "command": "echo \"v2 $SLOTCRON_TRIGGER\" >> runs.txt"}"#;
    let changed = put(&addr_b, "shared", "second", FULL, "application/json", v2);
    assert_eq!(changed.status, 200, "{}", changed.body);
    let changed = changed.json();
    assert_eq!(changed["change"], "changed");
    assert!(changed["old"]["payload"]["command"].as_str().unwrap().contains("v1"), "{changed}");
    assert!(changed["new"]["payload"]["command"].as_str().unwrap().contains("v2"), "{changed}");
    a.wait_for("for a to change the job", |l| l.contains("jobs reloaded") && l.contains("changed=1"));
    wait_until("a run of the second definition", || runs().contains("v2 "));

    // The same definition again: 200 "unchanged", nothing stored, no change recorded.
    let again = put(&addr_a, "shared", "again", FULL, "application/json", v2);
    assert_eq!((again.status, again.json()["change"].as_str()), (200, Some("unchanged")), "{}", again.body);

    // A bad field: 400 naming the job and the field, and the stored job is unchanged.
    let bad =
        put(&addr_a, "shared", "third", FULL, "application/json", r#"{"every": "soon", "command": "x"}"#);
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(bad.error().contains(r#"job "shared": every: "#), "{}", bad.error());
    assert!(stored_command(&dir, &url, "shared").unwrap().contains("v2"), "the stored job is unchanged");
    assert_eq!(put(&addr_a, "shared", "x", FULL, "text/plain", v1).status, 415);
    assert_eq!(put(&addr_a, "shared", &"n".repeat(1001), FULL, "application/toml", v1).status, 400);
    // The read-only token may not write: 403, nothing changed.
    let refused = put(&addr_a, "shared", "x", READ, "application/toml", v1);
    assert_eq!(refused.status, 403);
    assert!(refused.body.contains("cannot change a job"), "{}", refused.body);
    let refused = delete(&addr_a, "shared", "x", READ);
    assert_eq!(refused.status, 403);
    assert!(refused.body.contains("cannot delete a job"), "{}", refused.body);
    assert_eq!(delete(&addr_a, "nothing", "x", FULL).status, 404);
    assert_eq!(changes(&addr_a, "shared").len(), 2, "the refused and unchanged requests left no record");

    let deleted = delete(&addr_b, "shared", "done", FULL);
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!((deleted.json()["change"].as_str(), deleted.json()["new"].is_null()), (Some("deleted"), true));
    a.wait_for("for a to remove the job", |l| l.contains("jobs reloaded") && l.contains("removed=1"));
    assert_eq!(stored_command(&dir, &url, "shared"), None);

    // Every member lists the same records, newest first, with the old and new definitions.
    let on_a = changes(&addr_a, "shared");
    assert_eq!(on_a, changes(&addr_b, "shared"));
    let summary: Vec<(&str, &str)> =
        on_a.iter().map(|c| (c["change"].as_str().unwrap(), c["note"].as_str().unwrap())).collect();
    assert_eq!(summary, [("deleted", "done"), ("changed", "second"), ("created", "first")]);
    assert_eq!(on_a[0]["old"], on_a[1]["new"], "the deletion's old definition is the one it removed");

    let history = run_in(&dir, &["jobs", "history", "shared", "--admin-url", &format!("http://{addr_b}")]);
    assert_eq!(history.status.code(), Some(2), "no token: {}", stdout(&history));
    let mut command = slotcron();
    command.current_dir(&dir).args(["jobs", "history", "shared"]);
    command.envs([
        ("SLOTCRON_ADMIN_URL", format!("http://{addr_a}")),
        ("SLOTCRON_ADMIN_TOKEN", READ.to_owned()),
    ]);
    let history = command.output().unwrap();
    assert_eq!(history.status.code(), Some(0), "{}", stderr(&history));
    let printed = stdout(&history);
    let heads: Vec<&str> = printed.lines().filter(|l| !l.starts_with("  ")).collect();
    assert_eq!(heads.len(), 3, "{printed}");
    assert!(heads[0].contains(" shared deleted token full: done"), "{printed}");
    assert!(heads[2].contains(" shared created token full: first"), "{printed}");
    assert_eq!(printed.lines().filter(|l| l.starts_with("  - ")).count(), 2, "{printed}");
    assert_eq!(printed.lines().filter(|l| l.starts_with("  + ")).count(), 2, "{printed}");

    // `slotcron jobs put` and `rm` record their changes too, token `state`; a job put as
    // the state holds it is left alone, unrecorded.
    let job = "[[job]]\nname = \"direct\"\nevery = \"1h\"\ncommand = \"true\"\n";
    write(&dir, "direct.toml", job);
    for (args, said) in [
        (&["jobs", "put", "direct.toml", "--note", "by hand"][..], "put 1 job(s) in the state: direct"),
        (&["jobs", "put", "direct.toml"][..], "the state holds these job(s) already, unchanged: direct"),
        (&["jobs", "rm", "direct", "--note", "gone"][..], "removed job \"direct\" from the state"),
    ] {
        let out = run_in(&dir, &[args, &["--state", &url][..]].concat());
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert_eq!(stdout(&out).trim(), said, "{args:?}");
    }
    let direct = changes(&addr_a, "direct");
    let summary: Vec<(&str, &str, &str)> = direct
        .iter()
        .map(|c| (c["change"].as_str().unwrap(), c["token"].as_str().unwrap(), c["note"].as_str().unwrap()))
        .collect();
    assert_eq!(summary, [("deleted", "state", "gone"), ("created", "state", "by hand")]);

    for daemon in [&mut a, &mut b] {
        daemon.signal(Signal::SIGTERM);
        assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    }
}

#[test]
fn a_daemon_without_jobs_from_state_refuses_changes_with_409() {
    let dir = scratch("jobs-api-off");
    write(&dir, "jobs.toml", FILE);
    let (mut daemon, addr) = start(&dir, "sqlite:state.db", "solo", false);
    let refused = put(&addr, "shared", "x", FULL, "application/toml", "every = \"1s\"\ncommand = 'x'\n");
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert!(refused.error().contains("--jobs-from-state"), "{}", refused.error());
    assert_eq!(delete(&addr, "local", "x", FULL).status, 409);
    let mut command = slotcron();
    command.current_dir(&dir).args(["jobs", "history", "--admin-url", &format!("http://{addr}")]);
    command.env("SLOTCRON_ADMIN_TOKEN", FULL);
    let history = command.output().unwrap();
    assert_eq!(history.status.code(), Some(2));
    assert!(stderr(&history).contains("409"), "{}", stderr(&history));
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
}
