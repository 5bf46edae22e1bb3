//! `slotcron history`: the runs a daemon recorded in its state, as columns or JSON,
//! filtered by job, time and count.

mod support;

use std::path::{Path, PathBuf};

use nix::sys::signal::Signal;
use support::postgres::{Schema, database_url};
use support::{Daemon, Run, history, run, run_as_reader, run_in, scratch, stderr, stdout, write};

/// A state in a new directory holding one run of `ok` (trigger 2020-01-01) and one of
/// `broken` (trigger 2021-01-01), written by a daemon that has stopped.
fn recorded(test: &str) -> PathBuf {
    let (dir, mut daemon) = recording(test);
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    dir
}

/// The daemon that writes [`recorded`]'s state, still running once both runs are in it.
fn recording(test: &str) -> (PathBuf, Daemon) {
    let dir = scratch(test);
    write(
        &dir,
        "jobs.toml",
        r#"[[job]]
name = "ok"
at = "2020-01-01T00:00:00Z"
command = "echo fine"

[[job]]
name = "broken"
at = "2021-01-01T00:00:00Z"
command = "echo last words >&2; exit 3"
"#,
    );
    let mut daemon = Daemon::run(&dir, &["jobs.toml", "--instance", "box-1"]);
    for _ in 0..2 {
        daemon.wait_for("for both runs to finish", |line| line.contains("run finished"));
    }
    // The log line comes just before the record is completed: wait for both records.
    support::wait_until("both runs recorded", || {
        history(&dir, &[]).iter().filter(|r| r.finished()).count() == 2
    });
    (dir, daemon)
}

#[test]
fn prints_one_run_per_line_newest_trigger_first() {
    let dir = recorded("history_columns");
    let out = run_in(&dir, &["history"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listing = stdout(&out);
    let mut rows: Vec<Vec<&str>> = listing
        .lines()
        .map(|line| line.split("  ").map(str::trim).filter(|cell| !cell.is_empty()).collect())
        .collect();
    assert_eq!(rows.len(), 2, "{listing}");
    // Beside each trigger, years past: how long ago, in days.
    for row in &mut rows {
        let ago = row.remove(2);
        assert!(ago.ends_with("d ago"), "{listing}");
    }
    // Both `at` instants were past at start: caught up by the misfire policy, once.
    assert_eq!(rows[0][..6], ["broken", "2021-01-01T00:00:00Z", "box-1", "failed", "catch-up", "1"]);
    assert_eq!(rows[0][7], "command failed: exit status: 3; last stderr line: last words");
    assert_eq!(rows[1][..6], ["ok", "2020-01-01T00:00:00Z", "box-1", "succeeded", "catch-up", "1"]);
    assert_eq!(rows[1].len(), 7, "no error: {listing}");
    for row in &rows {
        assert!(row[6].ends_with('s'), "a duration such as 3ms: {}", row[6]);
    }
}

#[test]
fn json_has_every_field_and_filters_apply() {
    let dir = recorded("history_json");
    let runs = history(&dir, &[]);
    assert_eq!(runs.len(), 2);
    let ok = &runs[0];
    assert_eq!((ok.job.as_str(), ok.instance.as_str(), ok.outcome.as_str()), ("ok", "box-1", "succeeded"));
    assert_eq!(ok.trigger, "2020-01-01T00:00:00Z".parse().unwrap());
    assert_eq!((ok.cause.as_str(), ok.attempts), ("catch-up", 1));
    assert!(ok.fencing_token.is_some() && ok.error.is_none() && ok.started > ok.trigger);
    assert_eq!(
        runs[1].error.as_deref(),
        Some("command failed: exit status: 3; last stderr line: last words")
    );

    let jobs = |args: &[&str]| history(&dir, args).into_iter().map(|r| r.job).collect::<Vec<_>>();
    assert_eq!(jobs(&["ok"]), ["ok"]);
    assert_eq!(jobs(&["--limit", "1"]), ["broken"]);
    assert_eq!(jobs(&["--since", "2020-06-01T00:00:00Z"]), ["broken"]);
    // At or after; any offset.
    assert_eq!(jobs(&["--since", "2020-01-01T01:00:00+01:00"]), ["ok", "broken"]);
}

#[test]
fn no_matching_runs_prints_nothing_and_says_so() {
    let dir = recorded("history_none");
    let out = run_in(&dir, &["history", "nosuchjob"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "");
    let said = stderr(&out);
    assert!(
        said.starts_with(
            "slotcron history: no runs recorded for job \"nosuchjob\": no run of a job by that name"
        ),
        "{said}"
    );
    // A job that has runs, none of them matching the filters, is told apart.
    let out = run_in(&dir, &["history", "ok", "--since", "2020-06-01T00:00:00Z"]);
    assert_eq!((out.status.code(), stdout(&out)), (Some(0), String::new()));
    let said = stderr(&out);
    assert_eq!(said, "slotcron history: no runs of job \"ok\" match --since (it has runs outside them)\n");
    // Without a job, filters that match nothing are said as such, not as an empty history.
    let out = run_in(&dir, &["history", "--since", "2030-01-01T00:00:00Z"]);
    assert_eq!(stderr(&out), "slotcron history: no runs match --since\n");
}

#[test]
fn a_missing_state_file_is_an_error_and_is_not_created() {
    let dir = scratch("history_missing");
    let out = run_in(&dir, &["history"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("sqlite:slotcron.db: no such file: slotcron.db"), "{}", stderr(&out));
    assert!(!dir.join("slotcron.db").exists());

    let out = run_in(&dir, &["history", "--state", "memory"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("there is no history to read"), "{}", stderr(&out));

    let out = run_in(&dir, &["history", "--since", "yesterday"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not an RFC 3339 instant"), "{}", stderr(&out));
}

/// `(job, outcome)` of each run `slotcron history --json` prints as [`run_as_reader`].
fn runs_as_reader(dir: &Path) -> Vec<(String, String)> {
    let out = run_as_reader(dir, &["history", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|line| serde_json::from_str::<Run>(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .map(|run| (run.job, run.outcome))
        .collect()
}

/// The two runs of [`recorded`], as [`runs_as_reader`] lists them.
fn both_runs() -> Vec<(String, String)> {
    [("broken", "failed"), ("ok", "succeeded")].map(|(job, outcome)| (job.into(), outcome.into())).to_vec()
}

/// The bytes of `dir/name`, `None` if there is no such file.
fn bytes(dir: &Path, name: &str) -> Option<Vec<u8>> {
    std::fs::read(dir.join(name)).ok()
}

#[test]
fn a_user_who_cannot_write_the_state_reads_it_while_the_daemon_runs_and_after_it_stopped() {
    let (dir, mut daemon) = recording("history_reader_running");
    assert_eq!(runs_as_reader(&dir), both_runs(), "{}", daemon.log());

    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    // The daemon keeps the WAL files, without which such a user could not read.
    assert_eq!(bytes(&dir, "slotcron.db-wal"), Some(Vec::new()), "an empty WAL, kept");
    assert!(dir.join("slotcron.db-shm").exists());
    let database = bytes(&dir, "slotcron.db");
    assert_eq!(runs_as_reader(&dir), both_runs());
    assert!(bytes(&dir, "slotcron.db") == database, "the database is unchanged");
}

#[test]
fn a_user_who_cannot_write_the_state_reads_what_a_killed_daemon_left_in_its_wal() {
    let (dir, mut daemon) = recording("history_reader_killed");
    daemon.signal(Signal::SIGKILL);
    daemon.wait_exit();
    assert!(!bytes(&dir, "slotcron.db-wal").unwrap().is_empty(), "commits not checkpointed");
    let (database, wal) = (bytes(&dir, "slotcron.db"), bytes(&dir, "slotcron.db-wal"));
    assert_eq!(runs_as_reader(&dir), both_runs());
    assert!(bytes(&dir, "slotcron.db") == database && bytes(&dir, "slotcron.db-wal") == wal, "unchanged");
}

#[test]
fn a_wal_state_whose_wal_files_such_a_user_cannot_create_is_explained() {
    let dir = recorded("history_reader_no_wal");
    // As an earlier release left the state after a clean stop.
    std::fs::remove_file(dir.join("slotcron.db-wal")).unwrap();
    std::fs::remove_file(dir.join("slotcron.db-shm")).unwrap();
    let out = run_as_reader(&dir, &["history"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "slotcron history: cannot open the state: sqlite:slotcron.db: cannot read it: it is a WAL \
             database whose -wal and -shm files are absent, and this user cannot create them in {dir} \
             (a daemon of this release keeps them once it has opened the database; or read it as a user \
             who may write to {dir})\n",
            dir = dir.display()
        )
    );
    assert!(!dir.join("slotcron.db-wal").exists());
}

#[test]
fn a_file_that_holds_no_slotcron_state_is_refused() {
    let dir = scratch("history_not_state");
    write(&dir, "empty.db", "");
    write(&dir, "notes.db", &"somebody's notes\n".repeat(300));
    let out = run_in(&dir, &["history", "--state", "sqlite:empty.db"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "slotcron history: cannot open the state: sqlite:empty.db: no slotcron state in it: the database is empty\n"
    );
    let out = run_in(&dir, &["history", "--state", "sqlite:notes.db"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).ends_with("sqlite:notes.db: cannot read the database: file is not a database\n"));
    assert_eq!(bytes(&dir, "empty.db"), Some(Vec::new()));
}

/// Whether `schema` exists on the tests' PostgreSQL server.
fn schema_exists(schema: &str) -> bool {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let (client, connection) =
            tokio_postgres::connect(&database_url(), tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        let row = client
            .query_one("SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)", &[&schema])
            .await
            .unwrap();
        row.get(0)
    })
}

#[test]
fn a_postgres_schema_without_slotcron_state_is_an_error_and_is_not_created() {
    // Dropped at the end, were it created.
    let missing = Schema::new("history_missing");
    let state = missing.state_url();
    let name = state.rsplit_once("schema=").unwrap().1;
    let out = run(&["history", "--state", &state]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "slotcron history: cannot open the state: {}: no slotcron state in schema \"{name}\": \
             the schema does not exist (a daemon started with this state creates it)\n",
            database_url()
        )
    );
    assert!(!schema_exists(name), "the schema was not created");

    let url = database_url();
    let public = format!("{url}{}schema=public", if url.contains('?') { '&' } else { '?' });
    let out = run(&["history", "--state", &public]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).ends_with("no slotcron state in schema \"public\": it has no schema_version table\n")
    );
}

#[test]
fn outcome_and_until_filter_the_runs() {
    let dir = recorded("history_outcome_until");
    let jobs = |args: &[&str]| history(&dir, args).into_iter().map(|run| run.job).collect::<Vec<_>>();
    assert_eq!(jobs(&["--outcome", "failed"]), ["broken"]);
    assert_eq!(jobs(&["--outcome", "succeeded"]), ["ok"]);
    assert!(jobs(&["--outcome", "missed"]).is_empty());
    // Strictly before: the 2021 trigger is left out at its own instant.
    assert_eq!(jobs(&["--until", "2021-01-01T00:00:00Z"]), ["ok"]);
    assert_eq!(jobs(&["--since", "2020-06-01T00:00:00Z", "--until", "2022-01-01T00:00:00Z"]), ["broken"]);
    let out = run_in(&dir, &["history", "--outcome", "fail"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("not an outcome: write one of succeeded, failed, timed-out"),
        "{}",
        stderr(&out)
    );
}
