//! `--log-format json`: one JSON object per log line, with the run's fields, and the
//! command's own lines inside the run's span.

mod support;

use nix::sys::signal::Signal;
use support::{Daemon, scratch, write};

#[test]
fn json_lines_carry_the_run_fields_and_the_run_span() {
    let dir = scratch("log-json");
    write(
        &dir,
        "jobs.toml",
        "[[job]]\nname = \"hello\"\nat = \"2020-01-01T00:00:00Z\"\ncommand = \"echo hi there\"\n",
    );
    let mut daemon = Daemon::run(&dir, &["jobs.toml", "--instance", "box-1", "--log-format", "json"]);
    let finished = daemon.wait_for("for the run to finish", |line| line.contains("run finished"));
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    let lines: Vec<serde_json::Value> = daemon
        .log
        .iter()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not one JSON object ({e}): {line}"))
        })
        .collect();
    assert!(lines.iter().all(|l| l["timestamp"].is_string() && l["level"].is_string()));
    assert!(
        lines.iter().all(|l| l["target"].as_str().is_some_and(|t| t.starts_with("slotcron"))),
        "{lines:?}"
    );

    let finished: serde_json::Value = serde_json::from_str(&finished).unwrap();
    assert_eq!(finished["job"], "hello");
    assert_eq!(finished["trigger"], "2020-01-01T00:00:00Z");
    assert_eq!(finished["instance"], "box-1");
    assert_eq!(finished["outcome"], "succeeded");
    assert!(finished["duration_ms"].is_u64(), "{finished}");

    let output =
        lines.iter().find(|l| l["message"] == "stdout: hi there").expect("the command's line is logged");
    assert_eq!(output["stream"], "stdout");
    assert_eq!(output["span"]["name"], "run");
    assert_eq!(output["span"]["job"], "hello");
    assert_eq!(output["span"]["trigger"], "2020-01-01T00:00:00Z");
}

#[test]
fn text_lines_stay_without_the_span_prefix() {
    let dir = scratch("log-text");
    write(
        &dir,
        "jobs.toml",
        "[[job]]\nname = \"hello\"\nat = \"2020-01-01T00:00:00Z\"\ncommand = \"echo hi\"\n",
    );
    let mut daemon = Daemon::start(&dir, "jobs.toml");
    let line = daemon.wait_for("for the command's line", |line| line.contains(" hi "));
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    assert!(!line.contains("run{"), "{line}");
    assert!(line.ends_with(" INFO stdout: hi job=\"hello\" stream=\"stdout\""), "{line}");
}
