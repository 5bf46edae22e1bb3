//! Opening a PostgreSQL database: migrations, and clear errors that name the URL without
//! its password and change nothing.

mod common;

use std::time::Duration;

use common::{Schemas, database_url, isolated};
use slotcron::jiff::Timestamp;
use slotcron::{
    AttemptEnd, AttemptOutput, Cause, Claim, ClaimOutcome, Coordinator, Hold, JobState, Ledger, LedgerQuery,
    Outcome, OutputStore, RunOutput, Store,
};
use slotcron_postgres::{
    OpenError, PostgresCoordinator, PostgresDatabase, PostgresLedger, PostgresOutputs, PostgresStore,
};

/// A local port nobody listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn an_unreachable_server_is_named_without_the_password() {
    let port = closed_port();
    let err = PostgresDatabase::open(&format!("postgres://app:s3cret@127.0.0.1:{port}/test"), "slotcron")
        .await
        .unwrap_err();
    assert!(matches!(err, OpenError::Server { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "postgres://app@127.0.0.1:{port}/test: cannot connect: \
             error connecting to server: Connection refused (os error 111)"
        )
    );
}

#[tokio::test]
async fn a_refused_login_gives_the_servers_reason() {
    let url = database_url();
    let (_, rest) = url.split_once('@').expect("DATABASE_URL has a user");
    let err = PostgresDatabase::open(&format!("postgres://nobody_here:pw@{rest}"), "slotcron")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.starts_with(&format!("postgres://nobody_here@{rest}: cannot connect: ")), "{err}");
    assert!(err.ends_with("role \"nobody_here\" does not exist"), "{err}");
    assert!(!err.contains("pw"), "{err}");
}

#[tokio::test]
async fn a_bad_url_or_schema_name_is_refused() {
    let err =
        PostgresDatabase::open("postgres://app:pw@127.0.0.1:notaport/test", "slotcron").await.unwrap_err();
    assert!(matches!(err, OpenError::InvalidUrl { .. }), "{err}");
    assert!(err.to_string().starts_with("postgres://app@127.0.0.1:notaport/test: invalid PostgreSQL URL: "));
    let err = PostgresDatabase::open(&database_url(), "Robert'); DROP TABLE x;--").await.unwrap_err();
    assert!(matches!(err, OpenError::InvalidSchema { .. }), "{err}");
}

#[tokio::test]
async fn state_survives_reopening_and_replicas_may_migrate_together() {
    isolated(async |schemas: &mut Schemas| {
        let schema = schemas.name();
        let opens: Vec<_> = (0..4)
            .map(|_| {
                let schema = schema.clone();
                tokio::spawn(async move { PostgresDatabase::open(&database_url(), &schema).await })
            })
            .collect();
        let mut databases = Vec::new();
        for open in opens {
            databases.push(open.await.unwrap().unwrap());
        }
        let state = JobState::of("2024-05-17T00:00:05Z".parse().unwrap(), Some(Outcome::Succeeded), true);
        PostgresStore::new(databases.pop().unwrap()).save_state("migrate", &state).await.unwrap();
        drop(databases);
        let reopened = PostgresDatabase::open(&database_url(), &schema).await.unwrap();
        assert_eq!(PostgresStore::new(reopened).load_states().await.unwrap()["migrate"], state);
    })
    .await;
}

#[tokio::test]
async fn a_schema_of_a_newer_release_is_refused_untouched() {
    isolated(async |schemas: &mut Schemas| {
        let database = schemas.open().await;
        let schema = schemas.names()[0].clone();
        let store = PostgresStore::new(database);
        let state = JobState::of("2024-05-17T00:00:05Z".parse().unwrap(), None, false);
        store.save_state("tick", &state).await.unwrap();
        schemas.execute(&schema, "UPDATE {schema}.schema_version SET version = 99").await;
        let err = PostgresDatabase::open(&database_url(), &schema).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: schema \"{schema}\" is at version 99, newer than this release knows (17); \
                 upgrade slotcron to use it",
                database_url()
            )
        );
        let version = "SELECT version::bigint FROM {schema}.schema_version";
        assert_eq!(schemas.scalar(&schema, version).await, 99, "the version is untouched");
        assert_eq!(store.load_states().await.unwrap()["tick"], state, "the state is untouched");
    })
    .await;
}

#[tokio::test]
async fn a_schema_of_the_previous_version_migrates_forward_with_its_data_and_claims() {
    isolated(async |schemas: &mut Schemas| {
        let schema = schemas.name();
        // Version 1 as the previous release wrote it (see the file's header).
        let fixture = include_str!("data/schema_v1.sql").replace("slotcron_v1_fixture", &schema);
        schemas.execute(&schema, &fixture).await;
        let version = "SELECT version::bigint FROM {schema}.schema_version";
        assert_eq!(schemas.scalar(&schema, version).await, 1);
        // Read as it is, before any migration: the ledger columns it lacks read as an
        // older release meant them.
        let reader = PostgresDatabase::open_read_only(&database_url(), &schema).await.unwrap();
        let tick = LedgerQuery { job: Some("tick".into()), ..Default::default() };
        let old = PostgresLedger::new(reader, Default::default()).query(&tick).await.unwrap();
        assert_eq!(old.len(), 1);
        assert_eq!((old[0].cause, old[0].attempts), (Cause::Scheduled, u32::from(old[0].outcome.ran())));

        let database = PostgresDatabase::open(&database_url(), &schema).await.unwrap();
        assert_eq!(schemas.scalar(&schema, version).await, 17);
        let tick_state =
            JobState::of("2024-05-17T00:01:00Z".parse().unwrap(), Some(Outcome::Succeeded), false);
        assert_eq!(PostgresStore::new(database.clone()).load_states().await.unwrap()["tick"], tick_state);
        let ledger = PostgresLedger::new(database.clone(), Default::default());
        let runs =
            ledger.query(&LedgerQuery { job: Some("tick".into()), ..Default::default() }).await.unwrap();
        assert_eq!(runs, old, "the same record after the migration");
        assert_eq!((&*runs[0].instance, runs[0].fencing_token), ("old-replica", Some(2)));

        // The old release's claims still hold, and fencing tokens go on from its counter.
        let coordinator = PostgresCoordinator::new(database);
        let claim = async |job: &str, key: &str, trigger: &str, hold: Option<Hold>| {
            let trigger = trigger.parse().unwrap();
            coordinator.claim(&Claim { job, trigger, key, instance: "new-replica", hold }).await.unwrap()
        };
        let minute = Some(Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::ZERO });
        let (at, next) = ("2024-05-17T00:01:00Z", "2024-05-17T00:02:00Z");
        assert_eq!(claim("tick", "tick:2024-05-17T00:01:00Z", at, minute).await, ClaimOutcome::Lost);
        assert_eq!(claim("migrate", "migrate", at, None).await, ClaimOutcome::Lost);
        let won = claim("tick", "tick:2024-05-17T00:02:00Z", next, minute).await;
        assert_eq!(won, ClaimOutcome::Won { fencing_token: 3 });
        let recorded = "SELECT count(*) FROM {schema}.claim WHERE instance = 'new-replica'
                        AND claimant_token IS NOT NULL AND fencing_token = 3";
        assert_eq!(schemas.scalar(&schema, recorded).await, 1, "the new claim keeps its tokens");
    })
    .await;
}

#[tokio::test]
async fn duplicate_records_of_a_run_migrate_to_the_newest_one_and_its_run_keeps_its_output() {
    isolated(async |schemas: &mut Schemas| {
        let schema = schemas.name();
        drop(PostgresDatabase::open(&database_url(), &schema).await.unwrap());
        // Back to version 11, with three records of one run (as racing writers of a
        // release before could leave), one of another, and the first run's output.
        schemas
            .execute(
                &schema,
                "DROP FUNCTION {schema}.mark_counted_starts(text, text[], text[], bigint[]);
                 DROP TABLE {schema}.counted_run, {schema}.run_count, {schema}.failure_streak;
                 ALTER TABLE {schema}.job_pause DROP COLUMN reason;
                 DROP INDEX {schema}.run_record_run;
                 ALTER TABLE {schema}.job_state DROP COLUMN last_success, DROP COLUMN last_failure;
                 DROP TABLE {schema}.member_detail;
                 DROP TABLE {schema}.job_definition_change;
                 DROP TRIGGER run_attempt_output_pruned ON {schema}.run_record;
                 DROP FUNCTION {schema}.run_attempt_output_pruned();
                 DROP TABLE {schema}.run_attempt_output;
                 UPDATE {schema}.schema_version SET version = 11;
                 INSERT INTO {schema}.run_record (job, trigger_at, instance, outcome, started_at, duration_us, error)
                 VALUES ('tick', '2024-05-17T00:01:00Z', 'r1', 'running', '2024-05-17T00:01:00Z', 0, NULL),
                        ('tick', '2024-05-17T00:01:00Z', 'r1', 'interrupted', '2024-05-17T00:01:00Z', 0, 'lost'),
                        ('tick', '2024-05-17T00:01:00Z', 'r1', 'succeeded', '2024-05-17T00:01:00Z', 7, NULL),
                        ('tick', '2024-05-17T00:01:00Z', 'r2', 'succeeded', '2024-05-17T00:01:00Z', 5, NULL);
                 INSERT INTO {schema}.run_output (job, trigger_at, instance, output, truncated)
                 VALUES ('tick', '2024-05-17T00:01:00Z', 'r1', 'hello', false);",
            )
            .await;

        let database = PostgresDatabase::open(&database_url(), &schema).await.unwrap();
        let version = "SELECT version::bigint FROM {schema}.schema_version";
        assert_eq!(schemas.scalar(&schema, version).await, 17);
        let records = "SELECT count(*) FROM {schema}.run_record";
        assert_eq!(schemas.scalar(&schema, records).await, 2, "one record per run");
        let ledger = PostgresLedger::new(database, Default::default());
        let r1 = LedgerQuery { instance: Some("r1".into()), ..Default::default() };
        let kept = ledger.query(&r1).await.unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!((kept[0].outcome, kept[0].duration), (Outcome::Succeeded, Duration::from_micros(7)));
        let output = "SELECT count(*) FROM {schema}.run_output WHERE instance = 'r1'";
        assert_eq!(schemas.scalar(&schema, output).await, 1, "the run keeps its output");
        let unique = "SELECT count(*) FROM pg_index
                      WHERE indexrelid = to_regclass('{schema}.run_record_run') AND indisunique";
        assert_eq!(schemas.scalar(&schema, unique).await, 1, "the run's unique index exists");
    })
    .await;
}

#[tokio::test]
async fn output_an_older_release_kept_reads_as_one_attempt_of_unknown_end_before_and_after_the_migration() {
    isolated(async |schemas: &mut Schemas| {
        let schema = schemas.name();
        drop(PostgresDatabase::open(&database_url(), &schema).await.unwrap());
        // Back to version 15, with the output of two instances' runs.
        schemas
            .execute(
                &schema,
                "DROP FUNCTION {schema}.mark_counted_starts(text, text[], text[], bigint[]);
                 DROP TABLE {schema}.counted_run, {schema}.run_count, {schema}.failure_streak;
                 ALTER TABLE {schema}.job_pause DROP COLUMN reason;
                 DROP TRIGGER run_attempt_output_pruned ON {schema}.run_record;
                 DROP FUNCTION {schema}.run_attempt_output_pruned();
                 DROP TABLE {schema}.run_attempt_output;
                 UPDATE {schema}.schema_version SET version = 15;
                 INSERT INTO {schema}.run_output (job, trigger_at, instance, output, truncated)
                 VALUES ('job', '1970-01-01T00:00:01Z', 'a', 'out\n', true),
                        ('job', '1970-01-01T00:00:01Z', 'b', 'old\n', false);",
            )
            .await;
        let trigger = Timestamp::from_second(1).unwrap();
        let older = |instance: &str, output: &[u8], truncated| RunOutput {
            job: "job".into(),
            trigger,
            instance: instance.into(),
            attempts: vec![AttemptOutput::of_older_release(output.to_vec(), truncated)],
        };
        let expected = [older("a", b"out\n", true), older("b", b"old\n", false)];
        let reader =
            PostgresOutputs::new(PostgresDatabase::open_read_only(&database_url(), &schema).await.unwrap());
        assert_eq!(reader.output("job", trigger).await.unwrap(), expected);

        // Migrated: the same, until an instance keeps attempts of that run.
        let outputs = PostgresOutputs::new(PostgresDatabase::open(&database_url(), &schema).await.unwrap());
        assert_eq!(outputs.output("job", trigger).await.unwrap(), expected);
        let mut rerun = AttemptOutput::new(2, Some(trigger));
        rerun.end = AttemptEnd::Exited(0);
        let kept = RunOutput { attempts: vec![rerun], ..older("b", b"", false) };
        outputs.save_output(&kept).await.unwrap();
        assert_eq!(outputs.output("job", trigger).await.unwrap(), [expected[0].clone(), kept]);
    })
    .await;
}
