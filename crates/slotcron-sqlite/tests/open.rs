//! Opening a database file: what survives, and clear errors that leave the file alone.

use std::path::Path;

use slotcron::jiff::Timestamp;
use slotcron::{
    AttemptEnd, AttemptOutput, JobState, Ledger, LedgerQuery, Outcome, OutputStore, Retention, RunOutput,
    ScheduleSpec, Store,
};
use slotcron_sqlite::{OpenError, SqliteDatabase, SqliteLedger, SqliteOutputs, SqliteStore};
use slotcron_testkit::fixtures::succeeded_run as record;

fn url(path: &Path) -> String {
    format!("sqlite:{}", path.display())
}

fn all(job: &str) -> LedgerQuery {
    LedgerQuery { job: Some(job.into()), limit: usize::MAX, ..LedgerQuery::default() }
}

/// Opens `path`, expecting an error; checks the file's bytes did not change.
async fn refused(path: &Path) -> String {
    let before = std::fs::read(path).ok();
    let err = SqliteDatabase::open(&url(path)).await.unwrap_err();
    assert_eq!(std::fs::read(path).ok(), before, "the file's bytes are untouched");
    err.to_string()
}

#[tokio::test]
async fn state_and_history_survive_reopening_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let state = JobState::of("2024-05-17T00:00:05Z".parse().unwrap(), Some(Outcome::Succeeded), true);
    {
        let database = SqliteDatabase::open(&url(&path)).await.unwrap();
        SqliteStore::new(database.clone()).save_state("migrate", &state).await.unwrap();
        let ledger = SqliteLedger::new(database, Retention::default());
        ledger.append(&record("migrate", "2024-05-17T00:00:05Z")).await.unwrap();
    }
    let database = SqliteDatabase::open(&url(&path)).await.unwrap();
    assert_eq!(SqliteStore::new(database.clone()).load_states().await.unwrap()["migrate"], state);
    let ledger = SqliteLedger::new(database, Retention::default());
    assert_eq!(ledger.query(&all("migrate")).await.unwrap(), [record("migrate", "2024-05-17T00:00:05Z")]);
}

#[tokio::test]
async fn a_new_file_is_a_versioned_slotcron_database_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    drop(SqliteDatabase::open(&url(&path)).await.unwrap());
    let raw = rusqlite::Connection::open(&path).unwrap();
    let pragma =
        |name: &str| raw.pragma_query_value(None, name, |row| row.get::<_, rusqlite::types::Value>(0));
    assert_eq!(pragma("journal_mode").unwrap(), rusqlite::types::Value::Text("wal".into()));
    assert_eq!(pragma("user_version").unwrap(), rusqlite::types::Value::Integer(8));
    assert_eq!(pragma("application_id").unwrap(), rusqlite::types::Value::Integer(0x534c_4f54));
}

#[tokio::test]
async fn an_empty_existing_file_becomes_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    std::fs::write(&path, b"").unwrap();
    let database = SqliteDatabase::open(&url(&path)).await.unwrap();
    assert!(SqliteStore::new(database).load_states().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_corrupted_file_is_refused_with_its_path_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    std::fs::write(&path, "this is not a database, but somebody's notes\n".repeat(200)).unwrap();
    let message = refused(&path).await;
    assert_eq!(message, format!("{}: cannot read the database: file is not a database", url(&path)));
}

#[tokio::test]
async fn a_path_under_a_regular_file_is_refused_with_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "notes").unwrap();
    let path = file.join("state.db");
    let message = refused(&path).await;
    assert_eq!(
        message,
        format!(
            "{}: cannot open: unable to open database file: {} (Not a directory (os error 20))",
            url(&path),
            path.display()
        )
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"notes");
}

#[tokio::test]
async fn a_missing_directory_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let message = refused(&missing.join("state.db")).await;
    assert!(
        message.ends_with(&format!("({}: No such file or directory (os error 2))", missing.display())),
        "{message}"
    );
    assert!(!missing.exists(), "nothing created");
}

#[tokio::test]
async fn a_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let message = refused(dir.path()).await;
    assert!(message.starts_with(&format!("{}: cannot ", url(dir.path()))), "{message}");
    assert!(message.ends_with("(it is a directory)"), "{message}");
}

#[tokio::test]
async fn a_file_of_a_newer_release_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    drop(SqliteDatabase::open(&url(&path)).await.unwrap());
    rusqlite::Connection::open(&path).unwrap().pragma_update(None, "user_version", 9).unwrap();
    let message = refused(&path).await;
    assert_eq!(
        message,
        format!(
            "{}: schema version 9 is newer than this release knows (8); upgrade slotcron to use this database",
            url(&path)
        )
    );
}

#[tokio::test]
async fn another_applications_database_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    rusqlite::Connection::open(&path).unwrap().execute_batch("CREATE TABLE notes (body TEXT)").unwrap();
    let message = refused(&path).await;
    assert_eq!(
        message,
        format!("{}: not a slotcron database (application_id 0x0), left untouched", url(&path))
    );
}

#[tokio::test]
async fn a_url_without_the_scheme_is_refused() {
    let err = SqliteDatabase::open("slotcron.db").await.unwrap_err();
    assert!(matches!(err, OpenError::InvalidUrl { .. }));
    assert_eq!(err.to_string(), "\"slotcron.db\": not a SQLite URL: expected sqlite:PATH");
}

#[tokio::test]
async fn the_ledger_prunes_every_n_appends() {
    let dir = tempfile::tempdir().unwrap();
    let database = SqliteDatabase::open(&url(&dir.path().join("state.db"))).await.unwrap();
    let retention = Retention { max_age: None, max_records_per_job: Some(1) };
    let ledger = SqliteLedger::new(database, retention).prune_every(3);
    let count = async || ledger.query(&all("tick")).await.unwrap().len();
    ledger.append(&record("tick", "2024-05-17T00:00:01Z")).await.unwrap();
    ledger.append(&record("tick", "2024-05-17T00:00:02Z")).await.unwrap();
    assert_eq!(count().await, 2, "no pruning before the third append");
    ledger.append(&record("tick", "2024-05-17T00:00:03Z")).await.unwrap();
    assert_eq!(ledger.query(&all("tick")).await.unwrap(), [record("tick", "2024-05-17T00:00:03Z")]);
}

#[tokio::test]
async fn two_handles_on_one_file_see_each_others_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let (a, b) =
        (SqliteDatabase::open(&url(&path)).await.unwrap(), SqliteDatabase::open(&url(&path)).await.unwrap());
    let definition = slotcron::JobDefinition::new("mail", ScheduleSpec::After { delay_ms: 10 }, "send");
    SqliteStore::new(a).save_definition(&definition).await.unwrap();
    assert_eq!(SqliteStore::new(b).load_definitions().await.unwrap(), [definition]);
}

#[tokio::test]
async fn a_database_with_a_damaged_schema_page_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    drop(SqliteDatabase::open(&url(&path)).await.unwrap());
    let mut bytes = std::fs::read(&path).unwrap();
    // Keep the 100-byte file header, scribble over the rest of the first page (the schema).
    bytes[100..4096].fill(0xA5);
    std::fs::write(&path, bytes).unwrap();
    let message = refused(&path).await;
    assert_eq!(
        message,
        format!("{}: cannot read the database: database disk image is malformed", url(&path))
    );
}

/// Schema version 1 as the first release wrote it, with one run recorded.
fn version_1_file(path: &Path) {
    let raw = rusqlite::Connection::open(path).unwrap();
    raw.execute_batch(include_str!("data/schema_v1.sql")).unwrap();
    raw.execute(
        "INSERT INTO run_record (job, trigger_us, instance, outcome, fencing_token, started_us, duration_us, error)
         VALUES ('migrate', 1715904005000000, 'test', 'succeeded', 1, 1715904005000000, 5000, NULL)",
        [],
    )
    .unwrap();
}

#[tokio::test]
async fn a_record_of_schema_version_1_reads_after_the_migration_and_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    version_1_file(&path);
    // Read as it is (a reader does not migrate): the new fields read as an older release
    // meant them.
    let reader = SqliteDatabase::open_read_only(&url(&path)).await.unwrap();
    let old = SqliteLedger::new(reader, Retention::default()).query(&all("migrate")).await.unwrap();
    assert_eq!(old, [record("migrate", "2024-05-17T00:00:05Z")]);
    // Migrated by a writer: the same record.
    let ledger = SqliteLedger::new(SqliteDatabase::open(&url(&path)).await.unwrap(), Retention::default());
    assert_eq!(ledger.query(&all("migrate")).await.unwrap(), old);
}

#[tokio::test]
async fn a_file_of_version_5_takes_each_jobs_last_success_and_failure_from_its_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    drop(SqliteDatabase::open(&url(&path)).await.unwrap());
    {
        // Back to version 5, with a job running its trigger at 3 s, and a ledger.
        let file = rusqlite::Connection::open(&path).unwrap();
        file.execute_batch(
            "ALTER TABLE job_state DROP COLUMN last_success_us;
             ALTER TABLE job_state DROP COLUMN last_failure_us;
             DROP TABLE job_definition_change;
             DROP TRIGGER run_attempt_output_pruned;
             DROP TABLE run_attempt_output;
             INSERT INTO job_state VALUES ('tick', 3000000, NULL, 0), ('idle', 1000000, 'missed', 0);
             INSERT INTO run_record (job, trigger_us, instance, outcome, started_us, duration_us)
             VALUES ('tick', 500000, 'a', 'failed', 500000, 5),
                    ('tick', 1000000, 'a', 'succeeded', 1000000, 5),
                    ('tick', 2000000, 'a', 'timed-out', 2000000, 5),
                    ('tick', 2500000, 'a', 'skipped-lost', 2500000, 0);",
        )
        .unwrap();
        file.pragma_update(None, "user_version", 5).unwrap();
    }
    let database = SqliteDatabase::open(&url(&path)).await.unwrap();
    let mut states = SqliteStore::new(database).load_states().await.unwrap();
    let at = |us: i64| Some(slotcron::jiff::Timestamp::from_microsecond(us).unwrap());
    let tick = states.remove("tick").unwrap();
    assert_eq!((tick.last_success, tick.last_failure), (at(1_000_000), at(2_000_000)));
    let idle = states.remove("idle").unwrap();
    assert_eq!((idle.last_success, idle.last_failure), (None, None), "a miss is neither");
}

#[tokio::test]
async fn output_an_older_release_kept_reads_as_one_attempt_of_unknown_end_before_and_after_the_migration() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    drop(SqliteDatabase::open(&url(&path)).await.unwrap());
    {
        // Back to version 7, with the output of two instances' runs.
        let file = rusqlite::Connection::open(&path).unwrap();
        file.execute_batch(
            "DROP TRIGGER run_attempt_output_pruned;
             DROP TABLE run_attempt_output;
             INSERT INTO run_output VALUES ('job', 1000000, 'a', CAST('out\n' AS BLOB), 1),
                                           ('job', 1000000, 'b', CAST('old\n' AS BLOB), 0);",
        )
        .unwrap();
        file.pragma_update(None, "user_version", 7).unwrap();
    }
    let trigger = Timestamp::from_second(1).unwrap();
    let older = |instance: &str, output: &[u8], truncated| RunOutput {
        job: "job".into(),
        trigger,
        instance: instance.into(),
        attempts: vec![AttemptOutput::of_older_release(output.to_vec(), truncated)],
    };
    let reader = SqliteOutputs::new(SqliteDatabase::open_read_only(&url(&path)).await.unwrap());
    let expected = [older("a", b"out\n", true), older("b", b"old\n", false)];
    assert_eq!(reader.output("job", trigger).await.unwrap(), expected);
    drop(reader);

    // Migrated: the same, until an instance keeps attempts of that run.
    let outputs = SqliteOutputs::new(SqliteDatabase::open(&url(&path)).await.unwrap());
    assert_eq!(outputs.output("job", trigger).await.unwrap(), expected);
    let mut rerun = AttemptOutput::new(2, Some(trigger));
    rerun.end = AttemptEnd::Exited(0);
    let kept = RunOutput { attempts: vec![rerun], ..older("b", b"", false) };
    outputs.save_output(&kept).await.unwrap();
    assert_eq!(outputs.output("job", trigger).await.unwrap(), [expected[0].clone(), kept]);
}
