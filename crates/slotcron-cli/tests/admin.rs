//! `slotcron run --admin`: the admin API of a running daemon, its metrics, a run's
//! output, access rules, `slotcron status`, and the status page in a real browser.
//!
//! Each test runs one daemon on its own SQLite state and waits for log lines or API
//! answers (each wait bounded by `support::PATIENCE`); none asserts how long anything
//! took.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use nix::sys::signal::Signal;
use slotcron::jiff::Timestamp;
use support::http::{self, Answer, free_port};
use support::{Daemon, history, run_in, scratch, slotcron, stderr, stdout, wait_until, write};

/// Three one-shots already past at start-up, so each is handled once, right away: `ok`
/// succeeds, `broken` fails (each of its three attempts), `dropped` is missed (misfire
/// skip); and `daily`, which does not fire during a test.
const JOBS: &str = r#"[[job]]
name = "ok"
at = "2020-01-01T00:00:00Z"
command = "echo fine; echo also on stderr >&2"

[[job]]
name = "broken"
at = "2021-01-01T00:00:00Z"
attempts = 3
command = "echo out$SLOTCRON_ATTEMPT; echo last words >&2; exit 3"

[[job]]
name = "dropped"
at = "2022-01-01T00:00:00Z"
misfire = "skip"
command = "echo never"

[[job]]
name = "daily"
cron = "0 3 * * *"
timezone = "Europe/Paris"
command = "echo nightly"
"#;

const NAMES: [&str; 4] = ["broken", "daily", "dropped", "ok"];

/// A daemon of [`JOBS`] with its admin API on a free loopback port, once its three
/// one-shots have run: the directory, the daemon and the address.
fn serving(test: &str, env: &[(&str, &str)], auth: &[(&str, &str)]) -> (std::path::PathBuf, Daemon, String) {
    serving_on(test, "127.0.0.1:0", env, auth)
}

/// As [`serving`], listening on `listen` (port 0: a free one the system picks): the
/// address returned is the loopback one that reaches it.
fn serving_on(
    test: &str,
    listen: &str,
    env: &[(&str, &str)],
    auth: &[(&str, &str)],
) -> (std::path::PathBuf, Daemon, String) {
    let dir = scratch(test);
    write(&dir, "jobs.toml", JOBS);
    let mut command = slotcron();
    command.args(["run", "jobs.toml", "--instance", "it-1", "--admin", listen]);
    command.envs(env.iter().copied());
    let mut daemon = Daemon::spawn(command, &dir);
    let addr = daemon.admin_address();
    // Ended: a run's record says `running` until its handler returns.
    wait_until("three runs recorded and ended", || {
        ["ok", "broken", "dropped"].iter().all(|job| {
            let runs = http::get(&addr, &format!("/api/v1/jobs/{job}/runs"), auth).json();
            runs["runs"].as_array().is_some_and(|runs| runs.len() == 1 && runs[0]["outcome"] != "running")
        })
    });
    (dir, daemon, addr)
}

fn stop(mut daemon: Daemon) {
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
}

/// `slotcron_runs_total` by (job, outcome), from a Prometheus text exposition.
fn runs_total(exposition: &str) -> BTreeMap<(String, String), f64> {
    let scrape = prometheus_parse::Scrape::parse(exposition.lines().map(|l| Ok(l.to_owned())))
        .unwrap_or_else(|e| panic!("not Prometheus text: {e}\n{exposition}"));
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == "slotcron_runs_total")
        .map(|s| {
            let prometheus_parse::Value::Counter(value) = s.value else { panic!("not a counter: {s:?}") };
            ((s.labels["job"].to_owned(), s.labels["outcome"].to_owned()), value)
        })
        .collect()
}

#[test]
fn metrics_count_what_the_history_holds_and_the_api_lists_jobs_and_output() {
    let (dir, daemon, addr) = serving("admin-api", &[], &[]);

    let metrics = http::get(&addr, "/metrics", &[]);
    assert_eq!(metrics.status, 200);
    assert!(metrics.content_type.starts_with("text/plain; version=0.0.4"), "{}", metrics.content_type);
    let mut recorded = BTreeMap::new();
    for run in history(&dir, &[]).into_iter().filter(|r| r.instance == "it-1") {
        *recorded.entry((run.job, run.outcome)).or_insert(0.0) += 1.0;
    }
    assert_eq!(runs_total(&metrics.body), recorded);
    assert_eq!(
        recorded.keys().map(|(job, outcome)| format!("{job}={outcome}")).collect::<Vec<_>>(),
        ["broken=failed", "dropped=missed", "ok=succeeded"]
    );
    for family in [
        "slotcron_run_duration_seconds",
        "slotcron_trigger_lateness_seconds",
        "slotcron_running_runs",
        "slotcron_job_last_success_timestamp_seconds",
        "slotcron_job_last_failure_timestamp_seconds",
        "slotcron_job_paused",
        "slotcron_build_info",
        "slotcron_backend_errors_total",
    ] {
        assert!(metrics.body.contains(&format!("# TYPE {family} ")), "{family} missing:\n{}", metrics.body);
    }

    let jobs = http::get(&addr, "/api/v1/jobs", &[]).json();
    let jobs = jobs["jobs"].as_array().unwrap();
    let names: Vec<&str> = jobs.iter().map(|j| j["name"].as_str().unwrap()).collect();
    assert_eq!(names, NAMES);
    let daily = &jobs[1];
    assert_eq!(daily["schedule"], "0 3 * * *");
    assert_eq!(daily["schedule_english"], "At 03:00");
    assert_eq!(daily["time_zone"], "Europe/Paris");
    assert_eq!(daily["paused"], false);
    assert_eq!(daily["policies"]["misfire"], "skip");
    let next: Vec<Timestamp> = daily["next_triggers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().parse().unwrap())
        .collect();
    let first = next[0].checked_sub(slotcron::jiff::SignedDuration::from_secs(1)).unwrap().to_string();
    let expected = run_in(&dir, &["next", "0 3 * * *", "--tz", "Europe/Paris", "--from", &first, "-n", "5"]);
    let expected: Vec<Timestamp> = stdout(&expected).lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(next, expected, "the next five fire times");
    let ok = &jobs[3];
    assert_eq!(ok["last_run"]["outcome"], "succeeded");
    assert_eq!(ok["last_run"]["instance"], "it-1");
    assert_eq!(ok["last_run"]["trigger"], "2020-01-01T00:00:00Z");
    assert_eq!(ok["next_triggers"], serde_json::json!([]), "a one-shot that ran has no next fire");

    let one = http::get(&addr, "/api/v1/jobs/broken", &[]).json();
    assert_eq!(one["last_run"]["outcome"], "failed");
    let runs = http::get(&addr, "/api/v1/jobs/broken/runs?limit=5", &[]).json();
    assert_eq!(runs["runs"][0]["error"], "command failed: exit status: 3; last stderr line: last words");
    assert_eq!(runs["next_before"], serde_json::Value::Null);

    let output = http::get(&addr, "/api/v1/jobs/ok/runs/2020-01-01T00:00:00Z/output", &[]).json();
    // The two streams are read apart: their lines arrive in either order.
    assert_eq!(sorted_lines(output["outputs"][0]["output"].as_str().unwrap()), ["also on stderr", "fine"]);
    assert_eq!(output["outputs"][0]["instance"], "it-1");
    assert_eq!(output["outputs"][0]["truncated"], false);

    assert_eq!(http::get(&addr, "/healthz", &[]).status, 200);
    assert_eq!(http::get(&addr, "/readyz", &[]).status, 200);

    let status = run_in(&dir, &["status", "--admin-url", &format!("http://{addr}")]);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    let table = stdout(&status);
    assert!(table.starts_with("JOB "), "{table}");
    for name in NAMES {
        assert!(table.lines().any(|l| l.starts_with(&format!("{name} "))), "{name} missing:\n{table}");
    }
    assert!(table.contains(&next[0].to_string()), "{table}");
    stop(daemon);
}

/// The lines of `text`, sorted.
fn sorted_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    lines
}

/// The lines of `slotcron logs ARGS` in `dir`, which must succeed, with each attempt's
/// duration and start (which vary) cut from its header, and the output lines under each
/// header sorted (the two streams are read apart: their lines arrive in either order).
fn logs(dir: &Path, args: &[&str]) -> Vec<String> {
    let mut command = vec!["logs"];
    command.extend_from_slice(args);
    let logs = run_in(dir, &command);
    assert!(logs.status.success(), "slotcron logs {args:?}: {}", stderr(&logs));
    let mut lines: Vec<String> =
        stdout(&logs).lines().map(|line| line.split(", took ").next().unwrap_or(line).to_owned()).collect();
    for block in lines.chunk_by_mut(|_, next| next.starts_with("  ")) {
        block[1..].sort_unstable();
    }
    lines
}

#[test]
fn logs_prints_each_attempt_with_its_exit_status_and_both_streams_through_the_api_and_from_the_state() {
    let (dir, daemon, addr) = serving("admin-logs", &[], &[]);
    let url = format!("http://{addr}");
    let mut expected = vec!["broken at 2021-01-01T00:00:00Z on it-1".to_owned()];
    for n in 1..=3 {
        expected.extend([
            format!("attempt {n}: exit 3"),
            "  stderr: last words".into(),
            format!("  stdout: out{n}"),
        ]);
    }
    // The newest run with output, through the admin API, from the state the daemon
    // writes (the default one, opened for reading), and from the state it names.
    assert_eq!(logs(&dir, &["broken", "--admin-url", &url]), expected);
    assert_eq!(logs(&dir, &["broken"]), expected);
    let state = ["broken", "--state", "sqlite:slotcron.db", "--trigger", "2021-01-01T00:00:00Z"];
    assert_eq!(logs(&dir, &state), expected);
    let second = logs(&dir, &["broken", "--attempt", "2", "--admin-url", &url]);
    assert_eq!(second, [&expected[..1], &expected[4..7]].concat());
    let ok = logs(&dir, &["ok", "--admin-url", &url]);
    assert_eq!(ok[1..], ["attempt 1: exit 0", "  stderr: also on stderr", "  stdout: fine"]);

    let answer = http::get(&addr, "/api/v1/jobs/broken/runs/2021-01-01T00:00:00Z/output", &[]).json();
    let json = run_in(&dir, &["logs", "broken", "--json"]);
    let read: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(read, answer, "--json from the state is the API's answer");
    let attempts = answer["outputs"][0]["attempts"].as_array().unwrap();
    let ends: Vec<_> = attempts.iter().map(|a| (a["attempt"].as_u64(), a["exit_code"].as_i64())).collect();
    assert_eq!(ends, [(Some(1), Some(3)), (Some(2), Some(3)), (Some(3), Some(3))]);
    let mut chunks = attempts[2]["chunks"].as_array().unwrap().clone();
    chunks.sort_by_key(|c| c["stream"].as_str().unwrap().to_owned());
    let stderr_first = [
        serde_json::json!({"stream": "stderr", "text": "last words\n"}),
        serde_json::json!({"stream": "stdout", "text": "out3\n"}),
    ];
    assert_eq!(chunks, stderr_first);

    for (args, message) in [
        (
            &["dropped", "--admin-url", &url][..],
            "no output kept for job \"dropped\" in any of its last 100 runs",
        ),
        (
            &["broken", "--attempt", "4"],
            "no attempt 4 kept of job \"broken\"'s run at 2021-01-01T00:00:00Z (attempts kept: 1, 2, 3)",
        ),
        (
            &["ok", "--trigger", "2020-01-02T00:00:00Z"],
            "no output kept for job \"ok\" in its run at 2020-01-02T00:00:00Z",
        ),
    ] {
        let none = run_in(&dir, &[&["logs"][..], args].concat());
        assert_eq!(
            (none.status.code(), stderr(&none).trim()),
            (Some(1), format!("slotcron logs: {message}").as_str())
        );
    }
    let unknown = run_in(&dir, &["logs", "nope", "--admin-url", &url]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("404 Not Found: no job named \"nope\""), "{}", stderr(&unknown));
    stop(daemon);
}

#[test]
fn status_shows_a_first_run_still_going_as_running() {
    let dir = scratch("admin-status-running");
    write(
        &dir,
        "jobs.toml",
        "[[job]]\nname = \"long\"\nat = \"2020-01-01T00:00:00Z\"\ncommand = \"sleep 600\"\n",
    );
    let addr = format!("127.0.0.1:{}", free_port());
    let mut daemon = Daemon::run(&dir, &["jobs.toml", "--admin", &addr]);
    daemon.wait_for("for the command to start", |line| line.contains("command started"));
    let status = run_in(&dir, &["status", "--admin-url", &format!("http://{addr}")]);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    let table = stdout(&status);
    let line = table.lines().find(|l| l.starts_with("long ")).unwrap_or_default();
    let row: Vec<&str> = line.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    // OUTCOME, then AGO (years ago, in days) beside LAST.
    let [outcome, ago, last] = row.iter().rev().take(3).collect::<Vec<_>>()[..] else { panic!("{table}") };
    assert_eq!((outcome, last), (&"running", &"2020-01-01T00:00:00Z"), "{table}");
    assert!(ago.ends_with("d ago"), "{table}");
    daemon.signal(Signal::SIGTERM);
    daemon.wait_for("for the shutdown to start", |line| line.contains("stopping: no new runs"));
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
}

#[test]
fn readyz_is_503_while_the_coordinator_is_down_and_the_skips_are_counted() {
    let dir = scratch("admin-readyz");
    write(&dir, "jobs.toml", "[[job]]\nname = \"tick\"\nevery = \"1s\"\ncommand = \"true\"\n");
    let redis = support::redis_server::RedisServer::start(&dir);
    let addr = format!("127.0.0.1:{}", free_port());
    let mut daemon = Daemon::run(&dir, &["jobs.toml", "--redis", &redis.url(), "--admin", &addr]);
    daemon.wait_for("for a run", |line| line.contains("run finished") && line.contains("succeeded"));
    assert_eq!(http::get(&addr, "/readyz", &[]).status, 200);
    drop(redis);
    daemon.wait_for("for a skip", |line| line.contains(r#"outcome="skipped-backend-unavailable""#));
    let ready = http::get(&addr, "/readyz", &[]);
    assert_eq!(ready.status, 503, "{}", ready.body);
    let error = ready.error();
    // Why: the connection refused, or a claim whose reply was lost and could not be read back.
    assert!(error.starts_with("the coordinator failed the last claim: "), "{error}");
    assert!(error.contains("refused"), "{error}");
    assert_eq!(http::get(&addr, "/healthz", &[]).status, 200, "the engine still runs");
    let metrics = http::get(&addr, "/metrics", &[]).body;
    let skipped = runs_total(&metrics)[&("tick".to_owned(), "skipped-backend-unavailable".to_owned())];
    assert!(skipped >= 1.0, "{metrics}");
    let errors = metrics.lines().find(|l| l.starts_with(r#"slotcron_claims_total{result="error"}"#));
    assert!(errors.is_some_and(|l| !l.ends_with(" 0")), "{metrics}");
    stop(daemon);
}

/// The value of the series `name{labels}` (labels as the exposition writes them).
fn sample(exposition: &str, series: &str) -> Option<f64> {
    exposition.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn after_a_restart_the_last_success_and_failure_are_the_stored_ones() {
    let (dir, daemon, _) = serving("admin-restored", &[], &[]);
    stop(daemon);
    let addr = format!("127.0.0.1:{}", free_port());
    let mut daemon = Daemon::run(&dir, &["jobs.toml", "--instance", "it-1", "--admin", &addr]);
    daemon.wait_for("for the admin API", |line| line.contains("admin API listening"));
    let metrics = http::get(&addr, "/metrics", &[]).body;
    // The one-shots ran before the restart, and do not run again.
    let ok = sample(&metrics, r#"slotcron_job_last_success_timestamp_seconds{job="ok"}"#);
    assert_eq!(ok, Some(1_577_836_800.0), "2020-01-01T00:00:00Z\n{metrics}");
    let broken = sample(&metrics, r#"slotcron_job_last_failure_timestamp_seconds{job="broken"}"#);
    assert_eq!(broken, Some(1_609_459_200.0), "2021-01-01T00:00:00Z\n{metrics}");
    assert_eq!(sample(&metrics, r#"slotcron_job_last_success_timestamp_seconds{job="broken"}"#), None);
    assert_eq!(sample(&metrics, r#"slotcron_job_paused{job="ok"}"#), Some(0.0));
    let version = format!(r#"slotcron_build_info{{version="{}"}}"#, env!("CARGO_PKG_VERSION"));
    assert_eq!(sample(&metrics, &version), Some(1.0), "{metrics}");
    stop(daemon);
}

#[test]
fn credentials_that_stop_working_are_logged_counted_and_named_by_readyz() {
    let dir = scratch("admin-rotated");
    write(&dir, "jobs.toml", "[[job]]\nname = \"tick\"\nevery = \"1s\"\ncommand = \"true\"\n");
    let redis = support::redis_server::RedisServer::start_with(&dir, &["--requirepass", "hunter2"]);
    let url = redis.url().replace("redis://", "redis://:hunter2@");
    let addr = format!("127.0.0.1:{}", free_port());
    let mut daemon = Daemon::run(&dir, &["jobs.toml", "--redis", &url, "--admin", &addr]);
    daemon.wait_for("for a run", |line| line.contains("run finished") && line.contains("succeeded"));
    // The password is rotated and the daemon's connections are dropped: it reconnects
    // with the old one.
    let mut admin = redis::Client::open(url.as_str()).unwrap().get_connection().unwrap();
    redis::cmd("CONFIG").arg(&["SET", "requirepass", "rotated"]).exec(&mut admin).unwrap();
    let _ = redis::cmd("CLIENT").arg(&["KILL", "TYPE", "normal"]).exec(&mut admin);
    let refused = |line: &str| line.contains("the coordinator fails:") && line.contains("kind=unauthorized");
    let line = daemon.wait_for("for the error line", refused);
    assert!(line.contains("ERROR") && line.contains("authentication failed"), "{line}");
    let ready = http::get(&addr, "/readyz", &[]);
    assert_eq!(ready.status, 503, "{}", ready.body);
    assert!(ready.error().contains("unauthorized"), "{}", ready.body);
    let metrics = http::get(&addr, "/metrics", &[]).body;
    let refused = r#"slotcron_backend_errors_total{backend="coordinator",kind="unauthorized"}"#;
    assert!(sample(&metrics, refused).is_some_and(|n| n >= 1.0), "{metrics}");
    daemon.wait_for("for a skip", |line| line.contains(r#"outcome="skipped-backend-unavailable""#));
    let logged = daemon.lines_with(&["the coordinator fails:", "kind=unauthorized"]).len();
    assert_eq!(logged, 1, "once a minute: {}", daemon.log());
    // The password is given back: the daemon connects anew by itself and runs again.
    redis::cmd("CONFIG").arg(&["SET", "requirepass", "hunter2"]).exec(&mut admin).unwrap();
    daemon.wait_for("for the new connection", |line| line.contains("Redis takes the credentials again"));
    daemon.wait_for("for a run", |line| line.contains("run finished") && line.contains("succeeded"));
    assert_eq!(http::get(&addr, "/readyz", &[]).status, 200, "ready again");
    let heartbeats = daemon.lines_with(&["WARN", "membership heartbeat failed ("]).len();
    assert!(heartbeats <= 1, "one warning per spell of failed heartbeats: {}", daemon.log());
    stop(daemon);
}

#[test]
fn the_reload_gauges_say_whether_the_last_reload_succeeded() {
    let (dir, mut daemon, addr) = serving("admin-reload", &[], &[]);
    let gauge = |name: &str| -> f64 {
        let metrics = http::get(&addr, "/metrics", &[]).body;
        let line = metrics
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{metrics}"));
        line.rsplit_once(' ').unwrap().1.parse().unwrap()
    };
    assert_eq!(gauge("slotcron_config_last_reload_successful"), 1.0, "the start's load");
    let loaded_at = gauge("slotcron_config_last_reload_success_timestamp_seconds");
    assert!(loaded_at > 1.7e9, "{loaded_at}");
    write(&dir, "jobs.toml", "[[job]]\nname = \"broken\"\n");
    daemon.signal(Signal::SIGHUP);
    daemon.wait_for("for the reload to fail", |line| line.contains("reload failed"));
    // The gauge is set just after that line is logged.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while gauge("slotcron_config_last_reload_successful") != 0.0 {
        assert!(std::time::Instant::now() < deadline, "the failed reload never reached the gauge");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(gauge("slotcron_config_last_reload_success_timestamp_seconds"), loaded_at);
    let last = http::get(&addr, "/api/v1/status", &[]).json()["last_reload"].clone();
    assert_eq!((&last["cause"], &last["successful"]), (&"SIGHUP".into(), &false.into()), "{last}");
    let error = last["error"].as_str().unwrap_or_default();
    assert!(error.contains("jobs.toml: the jobs file does not load"), "{error}");
    stop(daemon);
}

#[test]
fn bad_requests_get_a_4xx_with_a_message() {
    let (_dir, daemon, addr) = serving("admin-bad-input", &[], &[]);
    let cases: [(&str, u16, &str); 6] = [
        ("/api/v1/jobs/nope", 404, "no job named \"nope\""),
        ("/api/v1/jobs/nope/runs", 404, "no job named \"nope\""),
        ("/api/v1/jobs/ok/runs?before=yesterday", 400, "before \"yesterday\" is not an RFC 3339 timestamp"),
        ("/api/v1/jobs/ok/runs?limit=1001", 400, "limit \"1001\" must be a whole number from 1 to 1000"),
        ("/api/v1/jobs/ok/runs/soon/output", 400, "trigger \"soon\" is not an RFC 3339 timestamp"),
        ("/api/v1/jobs/daily/runs/2020-01-01T00:00:00Z/output", 404, "no output kept for job \"daily\""),
    ];
    for (path, status, message) in cases {
        let answer: Answer = http::get(&addr, path, &[]);
        assert_eq!(answer.status, status, "{path}: {}", answer.body);
        assert!(answer.error().starts_with(message), "{path}: {}", answer.body);
    }
    let foreign = http::get_with(&addr, "/api/v1/jobs", &[("host", "attacker.example")]);
    assert_eq!(foreign.status, 403, "{}", foreign.body);
    assert!(foreign.error().contains("attacker.example"), "{}", foreign.body);
    let port = addr.rsplit_once(':').unwrap().1;
    let localhost = http::get_with(&addr, "/api/v1/jobs", &[("host", &format!("localhost:{port}"))]);
    assert_eq!(localhost.status, 200, "localhost is the loopback address's name too");
    stop(daemon);
}

#[test]
fn with_a_token_every_api_request_needs_it_but_not_the_probes_metrics_and_page() {
    let token = [("SLOTCRON_ADMIN_TOKEN", "s3cret")];
    let bearer = [("authorization", "Bearer s3cret")];
    let (dir, daemon, addr) = serving("admin-token", &token, &bearer);
    for path in ["/api/v1/jobs", "/api/v1/jobs/ok"] {
        assert_eq!(http::get(&addr, path, &[]).status, 401, "{path}");
        assert_eq!(http::get(&addr, path, &[("authorization", "Bearer s3cre")]).status, 401, "{path}");
        assert_eq!(http::get(&addr, path, &[("authorization", "s3cret")]).status, 401, "{path}");
        assert_eq!(http::get(&addr, path, &bearer).status, 200, "{path}");
    }
    for path in ["/healthz", "/readyz", "/metrics", "/"] {
        assert_eq!(http::get(&addr, path, &[]).status, 200, "{path}");
    }
    for path in ["/healthz", "/readyz", "/metrics"] {
        let answer = http::get_with(&addr, path, &[("host", "10.1.2.3:9090")]);
        assert_eq!(answer.status, 200, "{path} at a foreign Host: {}", answer.body);
    }
    let foreign = http::get_with(&addr, "/api/v1/jobs", &[("host", "10.1.2.3:9090")]);
    assert_eq!(foreign.status, 401, "no Host check, the token is needed: {}", foreign.body);
    let url = format!("http://{addr}");
    let refused = slotcron().args(["status", "--admin-url", &url]).current_dir(&dir).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("401"), "{}", stderr(&refused));
    let allowed =
        slotcron().args(["status", "--admin-url", &url]).envs(token).current_dir(&dir).output().unwrap();
    assert_eq!(allowed.status.code(), Some(0), "{}", stderr(&allowed));
    stop(daemon);
}

/// A foreign `Host`: a pod IP nobody listed.
const POD_IP: (&str, &str) = ("host", "10.1.2.3:9090");

#[test]
fn tokens_from_a_file_and_a_variable_on_all_addresses_probes_answer_any_host_only_the_full_token_steers() {
    // A mounted Secret: the token and a newline.
    let secrets = scratch("admin-tokens-secrets");
    let full_file = write(&secrets, "full.token", "full-s3cret\n");
    let full_file = full_file.to_str().unwrap();
    let env = [("SLOTCRON_ADMIN_TOKEN_FILE", full_file), ("SLOTCRON_ADMIN_READ_TOKEN", "read-s3cret")];
    let read = ("authorization", "Bearer read-s3cret");
    let (dir, daemon, addr) = serving_on("admin-tokens", "0.0.0.0:0", &env, &[read]);
    for path in ["/healthz", "/readyz", "/metrics"] {
        let answer = http::get_with(&addr, path, &[POD_IP]);
        assert_eq!(answer.status, 200, "{path} without a token at a foreign Host: {}", answer.body);
    }
    let refused = http::get_with(&addr, "/api/v1/jobs", &[POD_IP]);
    assert_eq!(refused.status, 401, "{}", refused.body);
    for path in ["/api/v1/jobs", "/api/v1/jobs/ok/runs", "/api/v1/jobs/ok/runs/2020-01-01T00:00:00Z/output"] {
        let answer = http::get_with(&addr, path, &[POD_IP, read]);
        assert_eq!(answer.status, 200, "{path} with the read token: {}", answer.body);
    }
    let json = ("content-type", "application/json");
    let pause = http::post(&addr, "/api/v1/jobs/daily/pause", &[json, read], "{}");
    assert_eq!(pause.status, 403, "{}", pause.body);
    assert_eq!(
        pause.error(),
        "the read-only token (SLOTCRON_ADMIN_READ_TOKEN) cannot pause; use SLOTCRON_ADMIN_TOKEN"
    );
    let full = ("authorization", "Bearer full-s3cret");
    assert_eq!(http::get_with(&addr, "/api/v1/jobs/daily", &[POD_IP, full]).json()["paused"], false);

    // The client sends SLOTCRON_ADMIN_TOKEN[_FILE], whichever kind it is.
    let url = format!("http://{addr}");
    let as_reader = |args: &[&str]| {
        slotcron().args(args).env("SLOTCRON_ADMIN_TOKEN", "read-s3cret").current_dir(&dir).output().unwrap()
    };
    let status = as_reader(&["status", "--admin-url", &url]);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    let steer = as_reader(&["pause", "daily", "--admin-url", &url]);
    assert_eq!(steer.status.code(), Some(2));
    assert_eq!(
        stderr(&steer),
        format!(
            "slotcron pause: {url}: 403 Forbidden: the read-only token (SLOTCRON_ADMIN_READ_TOKEN) cannot \
             pause; use SLOTCRON_ADMIN_TOKEN\n"
        )
    );
    let as_operator = |args: &[&str]| {
        let out = slotcron()
            .args(args)
            .env("SLOTCRON_ADMIN_TOKEN_FILE", full_file)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    };
    as_operator(&["pause", "daily", "--admin-url", &url]);
    assert_eq!(http::get_with(&addr, "/api/v1/jobs/daily", &[POD_IP, read]).json()["paused"], true);
    as_operator(&["resume", "daily", "--admin-url", &url]);
    assert_eq!(http::get_with(&addr, "/api/v1/jobs/daily", &[POD_IP, read]).json()["paused"], false);
    stop(daemon);
}

#[test]
fn bad_token_settings_stop_the_start_with_one_line_naming_the_variable_or_the_file() {
    let dir = scratch("admin-token-settings");
    write(&dir, "jobs.toml", JOBS);
    let token = write(&dir, "token", "s3cret\n").display().to_string();
    let empty = write(&dir, "empty", "\n").display().to_string();
    let missing = dir.join("missing").display().to_string();
    let cases: [(&[(&str, &str)], String); 7] = [
        (
            &[("SLOTCRON_ADMIN_TOKEN", "s3cret"), ("SLOTCRON_ADMIN_TOKEN_FILE", &token)],
            "SLOTCRON_ADMIN_TOKEN and SLOTCRON_ADMIN_TOKEN_FILE are both set; set only one of them".into(),
        ),
        (
            &[
                ("SLOTCRON_ADMIN_TOKEN", "s3cret"),
                ("SLOTCRON_ADMIN_READ_TOKEN", "r"),
                ("SLOTCRON_ADMIN_READ_TOKEN_FILE", &token),
            ],
            "SLOTCRON_ADMIN_READ_TOKEN and SLOTCRON_ADMIN_READ_TOKEN_FILE are both set; set only one of them"
                .into(),
        ),
        (
            &[("SLOTCRON_ADMIN_TOKEN_FILE", &empty)],
            format!("SLOTCRON_ADMIN_TOKEN_FILE {empty}: the file is empty; write the token in it"),
        ),
        (
            &[("SLOTCRON_ADMIN_TOKEN_FILE", &missing)],
            format!(
                "SLOTCRON_ADMIN_TOKEN_FILE {missing}: cannot read the file: No such file or directory (os \
                 error 2)"
            ),
        ),
        (
            &[("SLOTCRON_ADMIN_TOKEN", "s3cret"), ("SLOTCRON_ADMIN_READ_TOKEN_FILE", &missing)],
            format!(
                "SLOTCRON_ADMIN_READ_TOKEN_FILE {missing}: cannot read the file: No such file or directory \
                 (os error 2)"
            ),
        ),
        (
            &[("SLOTCRON_ADMIN_READ_TOKEN", "r")],
            "SLOTCRON_ADMIN_READ_TOKEN needs SLOTCRON_ADMIN_TOKEN: set the full token too (pause, resume, \
             trigger and backfill need it), or give the read-only token as SLOTCRON_ADMIN_TOKEN"
                .into(),
        ),
        (
            &[("SLOTCRON_ADMIN_TOKEN_FILE", &token), ("SLOTCRON_ADMIN_READ_TOKEN", "s3cret")],
            "SLOTCRON_ADMIN_READ_TOKEN is the same as SLOTCRON_ADMIN_TOKEN: the read-only token would open \
             everything; give it a value of its own"
                .into(),
        ),
    ];
    for (env, message) in cases {
        let out = slotcron()
            .args(["run", "jobs.toml", "--admin", "0.0.0.0:0"])
            .envs(env.iter().copied())
            .current_dir(&dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{env:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), format!("slotcron run: {message}\n"), "{env:?}");
        assert!(!dir.join("slotcron.db").exists(), "nothing was started: {env:?}");
    }
}

#[test]
fn the_client_refuses_a_token_file_it_cannot_use_with_one_line_naming_it() {
    let dir = scratch("admin-client-token-file");
    let empty = write(&dir, "empty", "").display().to_string();
    let missing = dir.join("missing").display().to_string();
    for (env, message) in [
        (
            [("SLOTCRON_ADMIN_TOKEN_FILE", empty.as_str()), ("SLOTCRON_ADMIN_READ_TOKEN", "unread")],
            format!("SLOTCRON_ADMIN_TOKEN_FILE {empty}: the file is empty; write the token in it"),
        ),
        (
            [("SLOTCRON_ADMIN_TOKEN_FILE", missing.as_str()), ("SLOTCRON_ADMIN_TOKEN", "s3cret")],
            "SLOTCRON_ADMIN_TOKEN and SLOTCRON_ADMIN_TOKEN_FILE are both set; set only one of them".into(),
        ),
    ] {
        let out = slotcron()
            .args(["status", "--admin-url", "http://127.0.0.1:9"])
            .envs(env)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{env:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), format!("slotcron status: {message}\n"), "{env:?}");
    }
}

#[test]
fn an_address_other_machines_reach_needs_a_token_to_start() {
    let dir = scratch("admin-open");
    write(&dir, "jobs.toml", JOBS);
    let out = run_in(&dir, &["run", "jobs.toml", "--admin", "0.0.0.0:9"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).lines().last().unwrap(),
        "slotcron run: --admin 0.0.0.0:9: other machines can reach this address; set SLOTCRON_ADMIN_TOKEN \
         so that requests need a bearer token, or listen on a loopback address or unix:PATH"
    );
    assert!(!dir.join("slotcron.db").exists(), "nothing was started");
    let bad = run_in(&dir, &["run", "jobs.toml", "--admin", "nowhere"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("--admin: \"nowhere\" is not an address to listen on"), "{}", stderr(&bad));
}

#[test]
fn a_unix_socket_serves_the_api_without_credentials() {
    let dir = scratch("admin-unix");
    write(
        &dir,
        "jobs.toml",
        &JOBS.replace(
            "[[job]]\nname = \"ok\"",
            "[admin]\nlisten = \"unix:admin.sock\"\n\n[[job]]\nname = \"ok\"",
        ),
    );
    let mut daemon = Daemon::start(&dir, "jobs.toml");
    daemon.wait_for("for the admin API", |line| line.contains("admin API listening"));
    let socket = dir.join("admin.sock");
    let jobs = http::get_unix(&socket, "/api/v1/jobs");
    assert_eq!(jobs.status, 200, "{}", jobs.body);
    assert_eq!(jobs.json()["jobs"].as_array().unwrap().len(), 4);
    let status = run_in(&dir, &["status", "--admin-url", "unix:admin.sock"]);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    assert!(stdout(&status).contains("daily"), "{}", stdout(&status));
    stop(daemon);
    assert!(!Path::new(&socket).exists(), "the socket is removed at exit");
}

/// A chromedriver on a free port, stopped with the test.
struct ChromeDriver {
    _child: support::KillOnDrop,
    url: String,
    _profile: tempfile::TempDir,
}

impl ChromeDriver {
    fn start() -> Self {
        use std::io::BufRead;
        let port = free_port();
        let mut child = std::process::Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("chromedriver runs (apt-get install chromium chromium-driver; .ci/run installs them)");
        let stdout = child.stdout.take().unwrap();
        let mut lines = std::io::BufReader::new(stdout).lines();
        let started = lines.by_ref().map_while(Result::ok).any(|l| l.contains("started successfully"));
        assert!(started, "chromedriver did not start");
        // Keep reading its output so that it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Self {
            _child: support::KillOnDrop(child),
            url: format!("http://127.0.0.1:{port}"),
            _profile: tempfile::tempdir().unwrap(),
        }
    }

    /// A headless Chromium session, with the flags that work in containers and a fresh
    /// profile.
    async fn session(&self) -> fantoccini::Client {
        let profile = format!("--user-data-dir={}", self._profile.path().display());
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=390,844",
            &profile,
        ];
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("goog:chromeOptions".into(), serde_json::json!({ "args": args }));
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        fantoccini::ClientBuilder::new(connector)
            .capabilities(capabilities)
            .connect(&self.url)
            .await
            .expect("a Chromium session")
    }
}

#[test]
fn the_status_page_shows_each_job_and_its_next_fire_and_opens_a_run_output_in_a_browser() {
    use fantoccini::Locator;
    let (_dir, daemon, addr) = serving("admin-browser", &[], &[]);
    let jobs = http::get(&addr, "/api/v1/jobs", &[]).json();
    let driver = ChromeDriver::start();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let browser = driver.session().await;
        browser.goto(&format!("http://{addr}/")).await.unwrap();
        let wait = || browser.wait().at_most(support::PATIENCE);
        for job in jobs["jobs"].as_array().unwrap() {
            let name = job["name"].as_str().unwrap();
            let row = wait().for_element(Locator::Css(&format!("tr[data-job='{name}']"))).await.unwrap();
            let text = row.text().await.unwrap();
            assert!(text.contains(name), "{text}");
            if let Some(next) = job["next_triggers"][0].as_str() {
                assert!(text.contains(next), "the row of {name} shows its next fire {next}: {text}");
            }
        }
        open_output(&browser, "ok", "2020-01-01T00:00:00Z").await;
        let output = wait()
            .for_element(Locator::XPath("//div[@id='output']//pre[contains(., 'also on stderr')]"))
            .await
            .unwrap_or_else(|e| panic!("the run's output did not open: {e}"));
        // The two streams are read apart: their lines arrive in either order.
        assert_eq!(sorted_lines(&output.text().await.unwrap()), ["also on stderr", "fine"]);
        let stderr = browser.find(Locator::Css("#output pre span.stderr")).await.unwrap();
        assert_eq!(stderr.text().await.unwrap(), "also on stderr");

        // A run of three failed attempts: each with its exit status and both streams.
        open_output(&browser, "broken", "2021-01-01T00:00:00Z").await;
        wait()
            .for_element(Locator::Css("#output section.attempt[data-attempt='3']"))
            .await
            .unwrap_or_else(|e| panic!("the attempts did not open: {e}"));
        let attempts = browser.find_all(Locator::Css("#output section.attempt")).await.unwrap();
        assert_eq!(attempts.len(), 3);
        for (n, attempt) in (1..).zip(attempts) {
            let head = attempt.find(Locator::Css("h3")).await.unwrap().text().await.unwrap();
            assert!(head.starts_with(&format!("Attempt {n} · exit 3 · ")), "{head}");
            let out = attempt.find(Locator::Css("span.stdout")).await.unwrap().text().await.unwrap();
            let err = attempt.find(Locator::Css("span.stderr")).await.unwrap().text().await.unwrap();
            assert_eq!((out, err), (format!("out{n}"), "last words".to_owned()));
        }
        browser.close().await.unwrap();
    });
    stop(daemon);
}

#[test]
fn the_status_page_pauses_and_resumes_a_job_asking_for_the_token() {
    use fantoccini::Locator;
    let token = [("SLOTCRON_ADMIN_TOKEN", "s3cret")];
    let bearer = [("authorization", "Bearer s3cret")];
    let (_dir, daemon, addr) = serving("admin-browser-steer", &token, &bearer);
    // Asked from a thread of its own: the browser's runtime runs on this one.
    let paused = || {
        let addr = addr.clone();
        std::thread::spawn(move || http::get(&addr, "/api/v1/jobs/daily", &bearer).json()["paused"].clone())
            .join()
            .unwrap()
    };
    assert_eq!(paused(), false);
    let driver = ChromeDriver::start();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let browser = driver.session().await;
        browser.goto(&format!("http://{addr}/")).await.unwrap();
        let wait = || browser.wait().at_most(support::PATIENCE);
        // The API refuses the page without the token: it asks for it.
        let input = wait().for_element(Locator::Css("#token-input")).await.unwrap();
        wait()
            .for_element(Locator::XPath("//form[@id='token'][contains(@style, 'flex')]"))
            .await
            .unwrap_or_else(|e| panic!("the page did not ask for the token: {e}"));
        input.send_keys("s3cret").await.unwrap();
        browser.find(Locator::Css("#token button")).await.unwrap().click().await.unwrap();
        let pause = wait().for_element(Locator::Css("button.pause[data-job='daily']")).await.unwrap();
        pause.click().await.unwrap();
        wait()
            .for_element(Locator::XPath("//tr[@data-job='daily']//div[@class='paused']"))
            .await
            .unwrap_or_else(|e| panic!("the page does not show the job paused: {e}"));
        assert_eq!(paused(), true, "the API reports the job paused");
        let resume = wait().for_element(Locator::Css("button.resume[data-job='daily']")).await.unwrap();
        resume.click().await.unwrap();
        wait().for_element(Locator::Css("button.pause[data-job='daily']")).await.unwrap();
        assert_eq!(paused(), false, "the API reports the job resumed");
        browser.close().await.unwrap();
    });
    stop(daemon);
}

#[test]
fn the_status_page_cancels_a_running_run_after_asking() {
    use fantoccini::Locator;
    let dir = scratch("admin-browser-cancel");
    write(
        &dir,
        "jobs.toml",
        "[[job]]\nname = \"sleepy\"\nat = \"2020-01-01T00:00:00Z\"\ncommand = \"sleep 60\"\n",
    );
    let mut command = slotcron();
    command.args(["run", "jobs.toml", "--instance", "it-1", "--admin", "127.0.0.1:0"]);
    let mut daemon = Daemon::spawn(command, &dir);
    let addr = daemon.admin_address();
    // Asked from a thread of its own: the browser's runtime runs on this one.
    let outcome = || get_aside(&addr, "/api/v1/jobs/sleepy/runs", &[]).json()["runs"][0]["outcome"].clone();
    wait_until("the run going on", || outcome() == "running");
    let driver = ChromeDriver::start();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let browser = driver.session().await;
        browser.goto(&format!("http://{addr}/")).await.unwrap();
        let wait = || browser.wait().at_most(support::PATIENCE);
        wait().for_element(Locator::Css("tr[data-job='sleepy']")).await.unwrap().click().await.unwrap();
        let cancel = wait().for_element(Locator::Css("button.cancel-run")).await.unwrap();
        // Dismissed, nothing is stopped; accepted, the run is.
        cancel.click().await.unwrap();
        let question = browser.get_alert_text().await.unwrap();
        assert!(question.contains("Stop the run of sleepy"), "{question}");
        browser.dismiss_alert().await.unwrap();
        assert_eq!(outcome(), "running", "dismissed: still running");
        cancel.click().await.unwrap();
        browser.accept_alert().await.unwrap();
        wait()
            .for_element(Locator::XPath("//p[@id='notice'][contains(., 'is being stopped')]"))
            .await
            .unwrap_or_else(|e| panic!("the page does not say the run is being stopped: {e}"));
        let deadline = std::time::Instant::now() + support::PATIENCE;
        while outcome() == "running" {
            assert!(std::time::Instant::now() < deadline, "the run was not stopped");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(outcome(), "cancelled");
        browser.close().await.unwrap();
    });
    stop(daemon);
}

/// How many jobs the big status page test has (besides `broken`).
const MANY: usize = 20_000;

/// Opens, on the status page in `browser`, the output of `job`'s run at `trigger`: the
/// job's row, then the run's Output button.
async fn open_output(browser: &fantoccini::Client, job: &str, trigger: &str) {
    let wait = || browser.wait().at_most(support::PATIENCE);
    wait()
        .for_element(fantoccini::Locator::Css(&format!("tr[data-job='{job}']")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let button = format!("button.open-output[data-trigger='{trigger}']");
    wait().for_element(fantoccini::Locator::Css(&button)).await.unwrap().click().await.unwrap();
}

/// [`MANY`] jobs `fleet-job-00000`... that run `true` every 1 to 48 hours (so their next
/// fire times differ and few fire during a test), and `broken`, a one-shot already past
/// that fails at start-up.
fn many_jobs() -> String {
    let mut file = String::from(
        "[[job]]\nname = \"broken\"\nat = \"2021-01-01T00:00:00Z\"\ncommand = \"echo last words >&2; exit 3\"\n\n",
    );
    for i in 0..MANY {
        let hours = 1 + i % 48;
        file.push_str(&format!(
            "[[job]]\nname = \"fleet-job-{i:05}\"\nevery = \"{hours}h\"\ncommand = \"true\"\n\n"
        ));
    }
    file
}

/// The `data-job` of each row of the page's jobs table, in order.
async fn rows(browser: &fantoccini::Client) -> Vec<String> {
    let rows = browser
        .execute("return [...document.querySelectorAll('tr.job')].map((row) => row.dataset.job)", vec![])
        .await
        .unwrap();
    serde_json::from_value(rows).unwrap()
}

/// Waits (at most [`support::PATIENCE`]) until the page's rows are `wanted`.
async fn wait_for_rows(
    browser: &fantoccini::Client,
    what: &str,
    wanted: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let deadline = std::time::Instant::now() + support::PATIENCE;
    loop {
        let rows = rows(browser).await;
        if wanted(&rows) {
            return rows;
        }
        assert!(std::time::Instant::now() < deadline, "not {what} within {:?}: {rows:?}", support::PATIENCE);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// `GET path` from a thread of its own (the browser's runtime runs on this one).
fn get_aside(addr: &str, path: &str, headers: &[(&'static str, String)]) -> Answer {
    let (addr, path, headers) = (addr.to_owned(), path.to_owned(), headers.to_vec());
    std::thread::spawn(move || {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        http::get(&addr, &path, &headers)
    })
    .join()
    .unwrap()
}

#[test]
fn the_status_page_of_20000_jobs_pages_searches_sorts_shows_errors_and_a_failed_reload_and_asks_before_running()
 {
    use fantoccini::Locator;
    let dir = scratch("admin-browser-many");
    write(&dir, "jobs.toml", &many_jobs());
    let addr = format!("127.0.0.1:{}", free_port());
    let mut daemon = Daemon::run(&dir, &["jobs.toml", "--instance", "it-1", "--admin", &addr]);
    daemon.wait_for("for the admin API", |line| line.contains("admin API listening"));
    wait_until("broken has failed", || {
        http::get(&addr, "/api/v1/jobs?q=broken", &[]).json()["jobs"][0]["last_run"]["outcome"] == "failed"
    });

    // What a refresh of the first screen costs: one page of 100 jobs, then a 304.
    let page = http::get(&addr, "/api/v1/jobs?limit=100", &[]);
    assert_eq!(page.json()["total"], MANY + 1);
    assert!(page.body.len() < 100_000, "a page of 100 jobs is {} bytes", page.body.len());
    let etag = page.etag.clone().expect("an ETag");
    let again = http::get(&addr, "/api/v1/jobs?limit=100", &[("if-none-match", &etag)]);
    assert_eq!((again.status, again.body.as_str()), (304, ""), "unchanged: no body");
    // `slotcron status` follows the pages' cursors to the last job.
    let status = run_in(&dir, &["status", "--admin-url", &format!("http://{addr}")]);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    let table = stdout(&status);
    assert_eq!(table.lines().count(), 1 + MANY + 1, "the header and every job");
    assert!(table.lines().last().unwrap().starts_with("fleet-job-19999 "), "by name: the last one last");

    let driver = ChromeDriver::start();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let browser = driver.session().await;
        browser.goto(&format!("http://{addr}/")).await.unwrap();
        let wait = || browser.wait().at_most(support::PATIENCE);
        // The first screen: the first page of rows, by name.
        let first = wait_for_rows(&browser, "the first page", |rows| rows.len() == 100).await;
        assert_eq!(first[..2], ["broken", "fleet-job-00000"]);
        let summary = browser.find(Locator::Id("summary")).await.unwrap().text().await.unwrap();
        assert!(summary.starts_with(&format!("{} jobs", MANY + 1)), "{summary}");

        // A failed run's error text.
        let broken = browser.find(Locator::Css("tr[data-job='broken'] .run-error")).await.unwrap();
        assert_eq!(
            broken.text().await.unwrap(),
            "command failed: exit status: 3; last stderr line: last words"
        );

        // The next page, and back.
        browser.find(Locator::Id("next")).await.unwrap().click().await.unwrap();
        wait_for_rows(&browser, "the second page", |rows| {
            rows.first().is_some_and(|r| r == "fleet-job-00099")
        })
        .await;
        browser.find(Locator::Id("previous")).await.unwrap().click().await.unwrap();
        wait_for_rows(&browser, "the first page again", |rows| rows == first).await;

        // A search by part of a name.
        let search = browser.find(Locator::Id("search")).await.unwrap();
        search.send_keys("JOB-1234").await.unwrap();
        let found = wait_for_rows(&browser, "the jobs found", |rows| rows.len() == 10).await;
        assert_eq!(found[0], "fleet-job-12340");
        assert!(found.iter().all(|name| name.contains("job-1234")), "{found:?}");
        // Sorted by the next fire, the search cleared (a blank search is none).
        browser.find(Locator::Id("sort")).await.unwrap().select_by_value("next").await.unwrap();
        search.clear().await.unwrap();
        search.send_keys(" ").await.unwrap();
        let sorted =
            wait_for_rows(&browser, "the rows by next fire", |rows| rows.len() == 100 && rows[0] != "broken")
                .await;
        let by_next = get_aside(&addr, "/api/v1/jobs?limit=100&sort=next", &[]).json();
        let by_next: Vec<&str> =
            by_next["jobs"].as_array().unwrap().iter().map(|j| j["name"].as_str().unwrap()).collect();
        assert_eq!(sorted, by_next, "the API's first page by next fire");
        let times = browser.find_all(Locator::Css("tr.job td.next time")).await.unwrap();
        let mut next = Vec::new();
        for time in times {
            next.push(time.attr("datetime").await.unwrap().unwrap().parse::<Timestamp>().unwrap());
        }
        assert_eq!(next.len(), sorted.len());
        assert!(next.is_sorted(), "earliest next fire first: {next:?}");

        // Run now asks first: dismissed, nothing runs; accepted, a run is queued.
        let job = sorted[5].clone();
        let run_now = format!("button.run-now[data-job='{job}']");
        browser.find(Locator::Css(&run_now)).await.unwrap().click().await.unwrap();
        let question = browser.get_alert_text().await.unwrap();
        assert!(question.contains(&format!("Run {job} now")), "{question}");
        browser.dismiss_alert().await.unwrap();
        browser.find(Locator::Css(&run_now)).await.unwrap().click().await.unwrap();
        browser.accept_alert().await.unwrap();
        wait()
            .for_element(Locator::XPath(&format!(
                "//p[@id='notice'][contains(., 'a run of {job} was queued')]"
            )))
            .await
            .unwrap_or_else(|e| panic!("the run was not queued: {e}"));
        let manual_runs = || {
            let runs = get_aside(&addr, &format!("/api/v1/jobs/{job}/runs"), &[]).json();
            runs["runs"].as_array().unwrap().iter().filter(|r| r["cause"] == "manual").count()
        };
        let deadline = std::time::Instant::now() + support::PATIENCE;
        while manual_runs() == 0 {
            assert!(std::time::Instant::now() < deadline, "the queued run is not in the history");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(manual_runs(), 1, "one run, for the accepted question only");

        // A reload that fails shows a banner.
        write(&dir, "jobs.toml", "[[job]]\nname = \"half\"\n");
        daemon.signal(Signal::SIGHUP);
        let banner = wait()
            .for_element(Locator::XPath("//div[@id='reload-banner'][not(@hidden)][contains(., 'failed')]"))
            .await
            .unwrap_or_else(|e| panic!("no banner for the failed reload: {e}"));
        let text = banner.text().await.unwrap();
        assert!(text.contains("SIGHUP") && text.contains("jobs.toml: the jobs file does not load"), "{text}");
        browser.close().await.unwrap();
    });
    stop(daemon);
}

#[test]
fn a_state_filter_the_pauses_cannot_answer_is_a_503_not_a_wrong_list() {
    let dir = scratch("admin-pauses-unknown");
    write(&dir, "jobs.toml", "[[job]]\nname = \"tick\"\nevery = \"1h\"\ncommand = \"true\"\n");
    let redis = support::redis_server::RedisServer::start(&dir);
    let addr = format!("127.0.0.1:{}", free_port());
    let mut daemon = Daemon::run(&dir, &["jobs.toml", "--redis", &redis.url(), "--admin", &addr]);
    daemon.wait_for("for the scheduler", |line| line.contains("scheduler started"));
    let paused = http::get(&addr, "/api/v1/jobs?state=active", &[]);
    assert_eq!(paused.status, 200, "{}", paused.body);
    assert_eq!(paused.json()["total"], 1);
    drop(redis);
    for state in ["active", "paused"] {
        let answer = http::get(&addr, &format!("/api/v1/jobs?state={state}"), &[]);
        assert_eq!(answer.status, 503, "state={state}: {}", answer.body);
        assert!(answer.body.contains("pauses cannot be read"), "{}", answer.body);
    }
    let any = http::get(&addr, "/api/v1/jobs", &[]);
    assert_eq!(any.status, 200, "{}", any.body);
    assert_eq!(any.json()["jobs"][0]["paused"], serde_json::Value::Null, "unknown, said so");
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
}
