//! `slotcron run` at start-up: the state and the coordinator it chooses, and the clear
//! errors (exit status 2, the URL without its password, the cause) when it cannot use
//! them — leaving what is stored untouched.

mod support;

use std::path::Path;
use std::process::Output;

use nix::sys::signal::Signal;
use support::postgres::Schema;
use support::redis_server::{RedisServer, free_port};
use support::{
    Daemon, history, run_as_reader, run_as_reader_writing, run_in, scratch, slotcron, stderr, write,
};

const JOBS: &str = "[[job]]\nname = \"hello\"\nafter = \"0s\"\ncommand = \"echo hello\"\n";

/// `slotcron run jobs.toml ARGS` in `dir` when it is expected to fail at start.
fn run_failing(dir: &Path, args: &[&str]) -> Output {
    let mut all = vec!["run", "jobs.toml"];
    all.extend_from_slice(args);
    run_in(dir, &all)
}

/// Checks a start-up failure: exit status 2, a message on standard error containing
/// every one of `parts`, and not `hunter2` (the tests' password).
fn assert_start_error(output: &Output, parts: &[&str]) -> String {
    let err = stderr(output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    let message =
        err.lines().find(|line| line.starts_with("slotcron run: ")).unwrap_or_else(|| panic!("{err}"));
    for part in parts {
        assert!(message.contains(part), "{part:?} not in {message:?}");
    }
    assert!(!err.contains("hunter2"), "the password is shown: {err}");
    assert_eq!(err.lines().last(), Some(message), "the message is one line, the last: {err}");
    message.to_owned()
}

#[test]
fn without_a_coordinator_the_daemon_says_once_that_it_runs_alone() {
    let dir = scratch("single_replica");
    write(&dir, "jobs.toml", JOBS);
    let mut daemon = Daemon::start(&dir, "jobs.toml");
    daemon.wait_for("for the run to finish", |line| line.contains("run finished"));
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    assert_eq!(daemon.lines_with(&["single-replica mode"]).len(), 1, "{}", daemon.log());
    // The default state: slotcron.db in the working directory.
    assert!(dir.join("slotcron.db").is_file());
    assert_eq!(history(&dir, &[]).len(), 1);
}

#[test]
fn a_corrupted_state_file_is_refused_untouched() {
    let dir = scratch("corrupted_state");
    write(&dir, "jobs.toml", JOBS);
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(dir.join("state.db"), &garbage).unwrap();
    let out = run_failing(&dir, &["--state", "sqlite:state.db"]);
    assert_start_error(&out, &["cannot open the state", "sqlite:state.db", "file is not a database"]);
    assert_eq!(std::fs::read(dir.join("state.db")).unwrap(), garbage, "the file's bytes are unchanged");
}

#[test]
fn an_unwritable_state_path_is_refused_with_the_cause() {
    let dir = scratch("unwritable_state");
    write(&dir, "jobs.toml", JOBS);
    // Under a regular file: no process can create it, whoever runs the test.
    let out = run_failing(&dir, &["--state", "sqlite:jobs.toml/state.db"]);
    assert_start_error(&out, &["sqlite:jobs.toml/state.db", "cannot open", "Not a directory"]);
    assert_eq!(std::fs::read_to_string(dir.join("jobs.toml")).unwrap(), JOBS);
    // A directory.
    std::fs::create_dir(dir.join("state.db")).unwrap();
    let out = run_failing(&dir, &["--state", "sqlite:state.db"]);
    assert_start_error(&out, &["sqlite:state.db", "cannot open", "it is a directory"]);
}

#[test]
fn a_state_this_user_may_not_write_is_refused_with_the_cause() {
    let dir = scratch("read_only_state");
    write(&dir, "jobs.toml", JOBS);
    // A directory this user may not create the file in.
    let out = run_as_reader(&dir, &["run", "jobs.toml", "--state", "sqlite:state.db"]);
    let cause = format!("cannot create files in {}: Permission denied", dir.display());
    assert_start_error(&out, &["cannot open the state", "sqlite:state.db", &cause]);
    assert!(!dir.join("state.db").exists());

    // A state another user wrote, with the -wal and -shm files its daemon left: SQLite
    // would open it read-only, and writes would fail.
    let before = state_written_by_a_daemon(&dir);
    let out = run_as_reader(&dir, &["run", "jobs.toml"]);
    assert_start_error(
        &out,
        &["cannot open the state", "sqlite:slotcron.db: cannot write it: Permission denied"],
    );
    assert_eq!(state_files(&dir), before, "nothing changed");
}

#[test]
fn a_state_whose_wal_files_this_user_may_not_write_is_refused_with_the_cause() {
    let dir = scratch("read_only_wal");
    write(&dir, "jobs.toml", JOBS);
    let before = state_written_by_a_daemon(&dir);
    // SQLite reads the database then, and would refuse every write.
    let out = run_as_reader_writing(&dir, &["slotcron.db"], &["run", "jobs.toml"]);
    assert_start_error(&out, &["sqlite:slotcron.db: cannot write it: slotcron.db-wal: Permission denied"]);
    assert_eq!(state_files(&dir), before, "nothing changed");

    // Without them, in a directory this user may not create them in.
    std::fs::remove_file(dir.join("slotcron.db-wal")).unwrap();
    std::fs::remove_file(dir.join("slotcron.db-shm")).unwrap();
    let before = state_files(&dir);
    let out = run_as_reader_writing(&dir, &["slotcron.db"], &["run", "jobs.toml"]);
    let cause = format!("cannot write it: cannot create files in {}: Permission denied", dir.display());
    assert_start_error(&out, &["sqlite:slotcron.db", &cause]);
    assert_eq!(state_files(&dir), before, "nothing changed");
}

/// Runs a daemon on `jobs.toml` in `dir` until its run is recorded in the default
/// state, and stops it; returns [`state_files`], the -wal and -shm files, the lock file
/// and the spawn journal among them.
fn state_written_by_a_daemon(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut daemon = Daemon::start(dir, "jobs.toml");
    daemon.wait_for("for the run to finish", |line| line.contains("run finished"));
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    assert_eq!(history(dir, &[]).len(), 1);
    let files = state_files(dir);
    let names: Vec<&str> = files.iter().map(|(name, _)| name.as_str()).collect();
    let expected =
        ["slotcron.db", "slotcron.db-shm", "slotcron.db-wal", "slotcron.db.lock", "slotcron.db.spawned"];
    assert_eq!(names, expected);
    files
}

/// The name and bytes of each file of the default state in `dir`, by name.
fn state_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap())
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("slotcron.db"))
        .map(|entry| (entry.file_name().to_string_lossy().into_owned(), std::fs::read(entry.path()).unwrap()))
        .collect();
    files.sort();
    files
}

#[test]
fn an_unreachable_postgres_is_named_without_its_password() {
    let dir = scratch("unreachable_postgres");
    write(&dir, "jobs.toml", JOBS);
    let port = free_port();
    let url = format!("postgres://postgres:hunter2@127.0.0.1:{port}/test?schema=nowhere");
    let out = run_failing(&dir, &["--state", &url]);
    let shown = format!("postgres://postgres@127.0.0.1:{port}/test");
    assert_start_error(&out, &["cannot open the state", &shown, "cannot connect", "Connection refused"]);
}

#[test]
fn a_postgres_login_or_database_the_server_refuses_is_a_start_up_error() {
    let dir = scratch("refused_postgres");
    write(&dir, "jobs.toml", JOBS);
    let out = run_failing(&dir, &["--state", "postgres://no_such_role:hunter2@127.0.0.1:5432/test"]);
    let shown = "postgres://no_such_role@127.0.0.1:5432/test";
    assert_start_error(&out, &["cannot open the state", shown, "role \"no_such_role\" does not exist"]);
    let out = run_failing(&dir, &["--state", "postgres://postgres@127.0.0.1:5432/no_such_database"]);
    assert_start_error(
        &out,
        &[
            "postgres://postgres@127.0.0.1:5432/no_such_database",
            "database \"no_such_database\" does not exist",
        ],
    );
}

#[test]
fn a_redis_that_refuses_the_credentials_is_a_start_up_error_that_creates_no_state() {
    let dir = scratch("refused_redis");
    write(&dir, "jobs.toml", JOBS);
    let redis = RedisServer::start_with(&dir, &["--requirepass", "hunter2"]);
    let url = redis.url();
    // No password: the connection opens, and the server refuses every command.
    let out = run_failing(&dir, &["--redis", &url]);
    assert_start_error(
        &out,
        &[&format!("Redis at {url} (from --redis)"), "NOAUTH", "Authentication required"],
    );
    // A wrong password, an unknown user.
    let port = url.rsplit(':').next().unwrap();
    for given in
        [format!("redis://:wrong-hunter2@127.0.0.1:{port}"), format!("redis://bob:hunter2@127.0.0.1:{port}")]
    {
        let out = run_failing(&dir, &["--redis", &given]);
        let message =
            assert_start_error(&out, &["Redis at redis://", "(from --redis)", "authentication failed"]);
        assert!(!message.contains("wrong-"), "the password is shown: {message}");
    }
    assert_eq!(state_files(&dir), [], "Redis is checked before the state is created");
}

#[test]
fn an_unreachable_redis_is_a_start_up_error_that_creates_no_state() {
    let dir = scratch("unreachable_redis");
    write(&dir, "jobs.toml", JOBS);
    let port = free_port();
    let out = run_failing(&dir, &["--redis", &format!("redis://:hunter2@127.0.0.1:{port}/0")]);
    let shown = format!("Redis at redis://127.0.0.1:{port}/0 (from --redis)");
    assert_start_error(&out, &[&shown, "cannot connect", "Connection refused"]);
    assert_eq!(state_files(&dir), [], "Redis is connected before the state is created");
}

#[test]
fn a_malformed_redis_url_is_a_start_up_error() {
    let dir = scratch("malformed_redis");
    write(&dir, "jobs.toml", JOBS);
    let out = run_failing(&dir, &["--redis", "http://:hunter2@cache:6379", "--state", "sqlite:state.db"]);
    assert_start_error(&out, &["--redis", "\"http://cache:6379\" is not a Redis URL"]);
    assert!(!dir.join("state.db").exists(), "the URL is checked before anything is opened");
}

#[test]
fn a_cluster_url_with_a_braced_prefix_is_a_start_up_error_naming_the_prefix() {
    let dir = scratch("cluster_prefix");
    write(&dir, "jobs.toml", JOBS);
    let url = "redis+cluster://:hunter2@127.0.0.1:7000,127.0.0.1:7001";
    let out = run_failing(&dir, &["--redis", url, "--redis-prefix", "{app}:", "--state", "sqlite:state.db"]);
    assert_start_error(&out, &["--redis-prefix: \"{app}:\" holds a brace"]);
    let out = run_failing(&dir, &["--redis", "redis+cluster://:hunter2@127.0.0.1:7000,cache"]);
    assert_start_error(&out, &["--redis: ", "node 2 of the cluster URL, \"cache\", needs HOST:PORT"]);
    assert!(!dir.join("state.db").exists(), "the settings are checked before anything is opened");
}

/// A PostgreSQL state over TLS: the server of `SLOTCRON_TEST_POSTGRES_TLS_URL` (default
/// `postgres://postgres@localhost:5432/test?hostaddr=127.0.0.1`), which `.ci/run` gives
/// the certificate of crates/slotcron-postgres/tests/data/tls; the test is skipped (said
/// on stderr) where it does not have it, except under CI.
#[test]
fn a_postgres_state_over_verify_full_starts_and_a_wrong_root_certificate_stops_it() {
    let dir = scratch("postgres_tls");
    write(&dir, "jobs.toml", JOBS);
    let schema = Schema::new("tls");
    let certificates = Path::new(env!("CARGO_MANIFEST_DIR")).join("../slotcron-postgres/tests/data/tls");
    let base = std::env::var("SLOTCRON_TEST_POSTGRES_TLS_URL")
        .unwrap_or_else(|_| "postgres://postgres@localhost:5432/test?hostaddr=127.0.0.1".to_owned());
    let separator = if base.contains('?') { '&' } else { '?' };
    let url = |ca: &str| {
        let ca = certificates.join(ca);
        format!("{base}{separator}sslmode=verify-full&sslrootcert={}&schema={}", ca.display(), schema.name())
    };
    let mut daemon = Daemon::run(&dir, &["jobs.toml", "--state", &url("ca.crt")]);
    let started = daemon.wait_for("the start or its failure", |line| {
        line.contains("scheduler started") || line.starts_with("slotcron run: ")
    });
    if !started.contains("scheduler started") {
        assert!(
            std::env::var_os("CI").is_none(),
            "under CI the local PostgreSQL must present the test certificate: {started}"
        );
        eprintln!("SKIPPED: no PostgreSQL with the test certificate at {base}: {started}");
        return;
    }
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    let wrong = url("other-ca.crt").replacen("postgres@", "postgres:hunter2@", 1);
    let out = run_failing(&dir, &["--state", &wrong]);
    assert_start_error(
        &out,
        &["cannot open the state", "sslmode=verify-full", "cannot connect", "UnknownIssuer"],
    );
}

#[test]
fn the_redis_flag_wins_over_the_variable_which_wins_over_the_file() {
    let dir = scratch("redis_precedence");
    let [file, env, flag] = [free_port(), free_port(), free_port()].map(|p| format!("redis://127.0.0.1:{p}"));
    write(&dir, "jobs.toml", &format!("[coordination]\nredis = \"{file}\"\n\n{JOBS}"));
    let start = |env_url: Option<&str>, flag_url: Option<&str>| {
        let mut command = slotcron();
        command.args(["run", "jobs.toml", "--state", "memory"]).current_dir(&dir);
        if let Some(url) = env_url {
            command.env("SLOTCRON_REDIS_URL", url);
        }
        if let Some(url) = flag_url {
            command.args(["--redis", url]);
        }
        command.output().unwrap()
    };
    assert_start_error(&start(None, None), &[&format!("Redis at {file} (from [coordination] redis)")]);
    assert_start_error(&start(Some(&env), None), &[&format!("Redis at {env} (from SLOTCRON_REDIS_URL)")]);
    assert_start_error(&start(Some(&env), Some(&flag)), &[&format!("Redis at {flag} (from --redis)")]);
}

#[test]
fn a_failed_start_keeps_the_stored_history() {
    let dir = scratch("failed_start_keeps");
    write(&dir, "jobs.toml", JOBS);
    let mut daemon = Daemon::start(&dir, "jobs.toml");
    daemon.wait_for("for the run to finish", |line| line.contains("run finished"));
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    let before = history(&dir, &[]);
    assert_eq!(before.len(), 1);

    let out = run_failing(&dir, &["--redis", &format!("redis://127.0.0.1:{}", free_port())]);
    assert_start_error(&out, &["cannot connect"]);
    assert_eq!(history(&dir, &[]), before);
}

#[test]
fn an_empty_redis_setting_is_a_start_up_error_naming_where_it_was_given() {
    let dir = scratch("empty_redis");
    let file = format!("redis://127.0.0.1:{}", free_port());
    write(&dir, "jobs.toml", &format!("[coordination]\nredis = \"{file}\"\n\n{JOBS}"));
    let start = |env: &[(&str, &str)], args: &[&str]| {
        let mut command = slotcron();
        command.args(["run", "jobs.toml", "--state", "sqlite:state.db"]).args(args).current_dir(&dir);
        command.envs(env.iter().copied()).output().unwrap()
    };
    assert_start_error(&start(&[], &["--redis", ""]), &["--redis is set but empty"]);
    let empty_var = [("SLOTCRON_REDIS_URL", "")];
    assert_start_error(&start(&empty_var, &[]), &["SLOTCRON_REDIS_URL is set but empty"]);
    let empty_prefix = [("SLOTCRON_REDIS_PREFIX", "")];
    assert_start_error(&start(&empty_prefix, &[]), &["SLOTCRON_REDIS_PREFIX is set but empty"]);
    assert_start_error(&start(&[], &["--redis-prefix", ""]), &["--redis-prefix is set but empty"]);
    assert!(!dir.join("state.db").exists(), "the settings are checked before anything is opened");

    write(&dir, "jobs.toml", JOBS);
    let no_redis = "--redis-prefix sets a Redis key prefix, but no Redis is given";
    assert_start_error(&start(&[], &["--redis-prefix", "app:"]), &[no_redis]);

    write(&dir, "jobs.toml", &format!("[coordination]\nredis = \"\"\n\n{JOBS}"));
    let out = start(&[], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.starts_with("jobs.toml:2: coordination.redis: must not be empty"), "{err}");
}

/// Starts `slotcron run jobs.toml --state memory --redis URL` in `dir` with `args` and
/// `env`, waits for its one run (of [`JOBS`]) to finish, stops it and returns its log.
fn run_once(dir: &Path, redis: &RedisServer, args: &[&str], env: &[(&str, &str)]) -> String {
    let mut command = slotcron();
    command.args(["run", "jobs.toml", "--state", "memory", "--redis", &redis.url()]).args(args);
    command.envs(env.iter().copied());
    let mut daemon = Daemon::spawn(command, dir);
    daemon.wait_for("for the run to finish", |line| line.contains("run finished"));
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    daemon.log()
}

/// Every key in `redis`, sorted.
fn redis_keys(redis: &RedisServer) -> Vec<String> {
    let mut connection = redis::Client::open(redis.url()).unwrap().get_connection().unwrap();
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut connection).unwrap();
    keys.sort();
    keys
}

#[test]
fn the_redis_key_prefix_comes_from_the_flag_the_variable_or_the_file() {
    let dir = scratch("redis_prefix");
    let redis = RedisServer::start(&dir);
    write(&dir, "jobs.toml", &format!("[coordination]\nprefix = \"file:\"\n\n{JOBS}"));
    // The `after` job is claimed once across the fleet, for ever: each daemon runs it only
    // because its claim goes under a prefix of its own.
    let env = [("SLOTCRON_REDIS_PREFIX", "env:")];
    for (args, env, prefix) in
        [(&[][..], &[][..], "file:"), (&[], &env[..], "env:"), (&["--redis-prefix", "flag:"], &env, "flag:")]
    {
        let log = run_once(&dir, &redis, args, env);
        let line = log.lines().find(|line| line.contains("coordination through Redis")).unwrap_or_default();
        assert!(line.contains(&format!("key_prefix=\"{prefix}\"")), "{log}");
    }
    let keys = redis_keys(&redis);
    for prefix in ["file:", "env:", "flag:"] {
        assert!(keys.contains(&format!("{prefix}hello")), "{keys:?}");
    }
    let prefixed = |key: &String| ["file:", "env:", "flag:"].iter().any(|p| key.starts_with(p));
    assert!(keys.iter().all(prefixed), "{keys:?}");
}

#[test]
fn a_job_on_every_replica_runs_on_each_without_a_claim() {
    let [first, second] = ["every_replica_1", "every_replica_2"].map(scratch);
    let redis = RedisServer::start(&first);
    let jobs = JOBS.replace("[[job]]\n", "[[job]]\non_every_replica = true\n");
    for dir in [&first, &second] {
        write(dir, "jobs.toml", &jobs);
        let log = run_once(dir, &redis, &[], &[]);
        assert!(log.lines().any(|line| line.contains("run finished") && line.contains("succeeded")), "{log}");
    }
    assert_eq!(redis_keys(&redis), Vec::<String>::new(), "no claim is written");
}

#[test]
fn an_invalid_instance_id_is_refused() {
    let dir = scratch("invalid_instance");
    write(&dir, "jobs.toml", JOBS);
    let long = "x".repeat(201);
    for (id, reason) in [
        ("", "must not be empty or only whitespace"),
        ("  ", "must not be empty or only whitespace"),
        (" web-1", "must not start or end with whitespace, got \" web-1\""),
        ("web\n1", "must not contain control characters, found '\\n'"),
        (long.as_str(), "must be at most 200 bytes, got 201"),
    ] {
        let out = run_in(&dir, &["run", "jobs.toml", "--state", "memory", "--instance", id]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("invalid value") && err.contains("--instance") && err.contains(reason), "{err}");
    }
}

#[test]
fn a_stop_signal_while_the_state_is_connecting_stops_the_daemon_at_once() {
    let dir = scratch("stop_while_connecting");
    write(&dir, "jobs.toml", JOBS);
    // A server that accepts connections and never answers: connecting waits for it.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("postgres://postgres@{}/test", silent.local_addr().unwrap());
    let mut daemon = Daemon::run(&dir, &["jobs.toml", "--state", &url]);
    daemon.wait_for("the daemon to start opening the state", |line| line.contains("opening the state"));
    daemon.signal(Signal::SIGTERM);
    assert!(daemon.wait_exit().success(), "{}", daemon.log());
    let log = daemon.log();
    assert!(log.contains("stopping before the start-up finished"), "{log}");
    assert!(!log.contains("cannot open the state"), "{log}");
}

#[test]
fn beyond_100_jobs_start_up_logs_a_summary_and_each_job_at_debug_level() {
    let dir = scratch("startup_summary");
    let jobs: String = (0..101)
        .map(|i| format!("[[job]]\nname = \"job-{i}\"\nevery = \"1h\"\ncommand = \"true\"\n"))
        .collect();
    write(&dir, "many.toml", &jobs);
    write(&dir, "few.toml", &jobs[..jobs.find("[[job]]\nname = \"job-100\"").unwrap()]);
    let started = |file: &str, debug: bool| {
        let mut command = support::slotcron();
        command.args(["run", file, "--state", "memory"]);
        if debug {
            command.env("RUST_LOG", "debug");
        }
        let mut daemon = Daemon::spawn(command, &dir);
        daemon.wait_for("the start", |line| line.contains("slotcron running"));
        daemon.signal(Signal::SIGTERM);
        assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
        daemon
    };
    let many = started("many.toml", false);
    assert!(many.lines_with(&["job loaded"]).is_empty(), "{}", many.log());
    assert_eq!(
        many.lines_with(&["INFO", "101 jobs loaded (each is logged at debug level"]).len(),
        1,
        "{}",
        many.log()
    );
    let debug = started("many.toml", true);
    assert_eq!(debug.lines_with(&["DEBUG", "job loaded"]).len(), 101);
    let few = started("few.toml", false);
    assert_eq!(few.lines_with(&["INFO", "job loaded"]).len(), 100);
    assert!(few.lines_with(&["jobs loaded"]).is_empty());
}

#[test]
fn a_second_daemon_on_the_same_sqlite_file_is_refused_and_readers_are_not() {
    let dir = scratch("startup_second_daemon");
    write(&dir, "jobs.toml", "[[job]]\nname = \"tick\"\nevery = \"1s\"\ncommand = \"true\"\n");
    let mut first = Daemon::start(&dir, "jobs.toml");
    first.wait_for("the first daemon running", |line| line.contains("slotcron running"));
    let second = run_failing(&dir, &[]);
    let message = assert_start_error(
        &second,
        &["sqlite:slotcron.db is in use by another slotcron run", "slotcron.db.lock", "PostgreSQL state"],
    );
    assert!(message.contains("one daemon per SQLite file"), "{message}");
    // Another name of the same file (a symbolic link) is the same file, with one lock.
    std::os::unix::fs::symlink(dir.join("slotcron.db"), dir.join("link.db")).unwrap();
    let linked = run_failing(&dir, &["--state", "sqlite:link.db"]);
    assert_start_error(&linked, &["sqlite:link.db is in use by another slotcron run"]);
    let readers = run_in(&dir, &["history", "--limit", "1"]);
    assert_eq!(readers.status.code(), Some(0), "history reads while the daemon runs: {}", stderr(&readers));
    first.signal(Signal::SIGTERM);
    assert_eq!(first.wait_exit().code(), Some(0), "{}", first.log());
    // Once the first has stopped, the file is free.
    let mut third = Daemon::start(&dir, "jobs.toml");
    third.wait_for("a later daemon running", |line| line.contains("slotcron running"));
    third.signal(Signal::SIGTERM);
    assert_eq!(third.wait_exit().code(), Some(0), "{}", third.log());
}

#[test]
fn a_takeover_delay_not_below_the_membership_ttl_is_refused_naming_both_sources() {
    let dir = scratch("takeover-ttl");
    write(&dir, "jobs.toml", JOBS);
    let out = run_failing(&dir, &["--takeover-delay", "2s", "--membership-ttl", "2s"]);
    assert_start_error(
        &out,
        &["--takeover-delay: 2s must be shorter than the membership TTL (2s, --membership-ttl)"],
    );
    write(&dir, "jobs.toml", &format!("[coordination]\nmembership_ttl = \"1s\"\n\n{JOBS}"));
    let out = run_failing(&dir, &["--takeover-delay", "1500ms"]);
    assert_start_error(
        &out,
        &[
            "--takeover-delay: 1s 500ms must be shorter than the membership TTL (1s, [coordination] membership_ttl)",
        ],
    );
    let out = run_failing(&dir, &["--membership-ttl", "0s"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("must be longer than zero (the default is 10s)"), "{}", stderr(&out));
    assert!(!dir.join("slotcron.db").exists(), "nothing was started");
}

#[test]
fn with_shared_work_a_job_whose_grace_is_not_above_the_takeover_delay_is_refused() {
    let dir = scratch("takeover-grace");
    let jobs = "[[job]]\nname = \"quick\"\nevery = \"10s\"\ngrace = \"200ms\"\ncommand = \"true\"\n";
    write(&dir, "jobs.toml", jobs);
    // Port 1: the check comes before any connection.
    let redis = ["--redis", "redis://127.0.0.1:1"];
    let out = run_failing(&dir, &redis);
    assert_start_error(
        &out,
        &[
            "jobs.toml:4: job \"quick\": grace: 200ms must be longer than the takeover delay (300ms, the default)",
        ],
    );
    let shorter = [&redis[..], &["--takeover-delay", "100ms"]].concat();
    let out = run_failing(&dir, &shorter);
    assert!(!stderr(&out).contains("grace"), "a shorter delay is accepted: {}", stderr(&out));
    write(&dir, "jobs.toml", &format!("[coordination]\nshared_work = false\n\n{jobs}"));
    let out = run_failing(&dir, &redis);
    assert!(!stderr(&out).contains("grace"), "without shared work there is no takeover: {}", stderr(&out));
    assert!(!dir.join("slotcron.db").exists(), "nothing was started");
}

#[test]
fn a_new_state_is_migrated_with_one_line() {
    let dir = scratch("migrated_once");
    write(&dir, "jobs.toml", JOBS);
    let mut daemon = Daemon::start(&dir, "jobs.toml");
    daemon.wait_for("for the scheduler", |line| line.contains("scheduler started"));
    let lines = daemon.lines_with(&["migrating the SQLite schema"]);
    assert_eq!(lines.len(), 1, "{}", daemon.log());
    assert!(lines[0].contains("from=0") && lines[0].contains("to="), "{}", lines[0]);
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
}

#[test]
fn a_spawn_journal_given_that_cannot_be_written_is_a_start_up_error() {
    let dir = scratch("spawn_journal_given");
    write(&dir, "jobs.toml", JOBS);
    std::fs::create_dir_all(dir.join("jdir")).unwrap();
    let out = run_failing(&dir, &["--state", "memory", "--spawn-journal", "jdir"]);
    assert_start_error(&out, &["--spawn-journal jdir: cannot write it: jdir is not a regular file"]);
    let out = run_failing(&dir, &["--state", "memory", "--spawn-journal", "no/such/dir/journal"]);
    assert_start_error(
        &out,
        &["--spawn-journal no/such/dir/journal: cannot write it: No such file or directory"],
    );
}
