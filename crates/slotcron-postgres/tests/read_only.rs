//! Opening a schema for reading only: it reads what a writer stores, creates and migrates
//! nothing, cannot write, and refuses clearly a schema it cannot read.

mod common;

use common::{Schemas, connect, database_url, isolated};
use slotcron::{JobState, Ledger, LedgerQuery, Retention, RunRecord, Store};
use slotcron_postgres::{OpenError, PostgresDatabase, PostgresLedger, PostgresStore};
use slotcron_testkit::fixtures::{succeeded_run, succeeded_state as state};

/// A succeeded run of `tick` for `trigger`.
fn record(trigger: &str) -> RunRecord {
    succeeded_run("tick", trigger)
}

fn all() -> LedgerQuery {
    LedgerQuery { limit: usize::MAX, ..LedgerQuery::default() }
}

/// Whether `schema` exists on the server.
async fn exists(schema: &str) -> bool {
    let client = connect().await;
    client
        .query_one("SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)", &[&schema])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn a_missing_schema_is_refused_and_not_created() {
    isolated(async |schemas: &mut Schemas| {
        // Named through `schemas`, so that it is dropped at the end if it were created.
        let schema = schemas.name();
        let err = PostgresDatabase::open_read_only(&database_url(), &schema).await.unwrap_err();
        assert!(matches!(err, OpenError::NoState { .. }), "{err}");
        assert_eq!(
            err.to_string(),
            format!(
                "{}: no slotcron state in schema \"{schema}\": the schema does not exist (a daemon started \
                 with this state creates it)",
                database_url()
            )
        );
        assert!(!exists(&schema).await, "the schema was not created");
    })
    .await;
}

#[tokio::test]
async fn a_schema_without_slotcron_state_is_refused_untouched() {
    isolated(async |schemas: &mut Schemas| {
        let schema = schemas.name();
        schemas.execute(&schema, "CREATE SCHEMA {schema}; CREATE TABLE {schema}.notes (body text)").await;
        let err = PostgresDatabase::open_read_only(&database_url(), &schema).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: no slotcron state in schema \"{schema}\": it has no schema_version table",
                database_url()
            )
        );
        let tables = format!("SELECT count(*) FROM pg_tables WHERE schemaname = '{schema}'");
        assert_eq!(schemas.scalar(&schema, &tables).await, 1, "nothing was created in it");
    })
    .await;
}

#[tokio::test]
async fn reads_what_an_open_writer_stores_as_it_stores_it() {
    isolated(async |schemas: &mut Schemas| {
        let writer = schemas.open().await;
        let schema = schemas.names()[0].clone();
        PostgresStore::new(writer.clone()).save_state("tick", &state("2024-05-17T00:00:01Z")).await.unwrap();
        let appender = PostgresLedger::new(writer, Retention::default());
        appender.append(&record("2024-05-17T00:00:01Z")).await.unwrap();

        let reader = PostgresDatabase::open_read_only(&database_url(), &schema).await.unwrap();
        let states = PostgresStore::new(reader.clone()).load_states().await.unwrap();
        assert_eq!(states["tick"], state("2024-05-17T00:00:01Z"));
        let ledger = PostgresLedger::new(reader, Retention::default());
        assert_eq!(ledger.query(&all()).await.unwrap(), [record("2024-05-17T00:00:01Z")]);
        appender.append(&record("2024-05-17T00:00:02Z")).await.unwrap();
        let triggers: Vec<String> =
            ledger.query(&all()).await.unwrap().iter().map(|r| r.trigger.to_string()).collect();
        assert_eq!(triggers, ["2024-05-17T00:00:02Z", "2024-05-17T00:00:01Z"]);
    })
    .await;
}

#[tokio::test]
async fn its_sessions_cannot_write() {
    isolated(async |schemas: &mut Schemas| {
        let writer = schemas.open().await;
        let schema = schemas.names()[0].clone();
        PostgresStore::new(writer).save_state("tick", &state("2024-05-17T00:00:01Z")).await.unwrap();
        // A URL with options of its own still gets read-only sessions.
        let url = database_url();
        let separator = if url.contains('?') { '&' } else { '?' };
        let url = format!("{url}{separator}options=-c%20statement_timeout%3D60000");
        let reader = PostgresDatabase::open_read_only(&url, &schema).await.unwrap();
        let store = PostgresStore::new(reader.clone());
        let err = store.save_state("tick", &state("2030-01-01T00:00:00Z")).await.unwrap_err().to_string();
        assert!(err.ends_with("cannot execute INSERT in a read-only transaction"), "{err}");
        let ledger = PostgresLedger::new(reader, Retention::default());
        assert!(ledger.append(&record("2030-01-01T00:00:00Z")).await.is_err());
        assert_eq!(store.load_states().await.unwrap()["tick"], state("2024-05-17T00:00:01Z"));
        assert!(ledger.query(&all()).await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test]
async fn a_schema_of_the_previous_version_is_read_without_migrating_it() {
    isolated(async |schemas: &mut Schemas| {
        let schema = schemas.name();
        let fixture = include_str!("data/schema_v1.sql").replace("slotcron_v1_fixture", &schema);
        schemas.execute(&schema, &fixture).await;
        let reader = PostgresDatabase::open_read_only(&database_url(), &schema).await.unwrap();
        let runs = PostgresLedger::new(reader.clone(), Retention::default()).query(&all()).await.unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!((&*runs[0].instance, runs[0].fencing_token), ("old-replica", Some(2)));
        let states = PostgresStore::new(reader).load_states().await.unwrap();
        // Version 1 kept no last success: it reads as none until migrated.
        assert_eq!(states["tick"], JobState { last_success: None, ..state("2024-05-17T00:01:00Z") });
        let version = "SELECT version::bigint FROM {schema}.schema_version";
        assert_eq!(schemas.scalar(&schema, version).await, 1, "still at version 1");
    })
    .await;
}

#[tokio::test]
async fn a_version_this_release_does_not_read_is_refused_untouched() {
    isolated(async |schemas: &mut Schemas| {
        drop(schemas.open().await);
        let schema = schemas.names()[0].clone();
        let version = "SELECT version::bigint FROM {schema}.schema_version";
        schemas.execute(&schema, "UPDATE {schema}.schema_version SET version = 99").await;
        let err = PostgresDatabase::open_read_only(&database_url(), &schema).await.unwrap_err();
        assert!(matches!(err, OpenError::NewerSchema { found: 99, known: 17, .. }), "{err}");
        assert_eq!(schemas.scalar(&schema, version).await, 99);

        // No release wrote version 0: made up to reach the rule.
        schemas.execute(&schema, "UPDATE {schema}.schema_version SET version = 0").await;
        let err = PostgresDatabase::open_read_only(&database_url(), &schema).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: schema \"{schema}\" is at version 0, older than this release reads (1); \
                 run the daemon of this release once to migrate it",
                database_url()
            )
        );
        assert_eq!(schemas.scalar(&schema, version).await, 0);

        schemas.execute(&schema, "DELETE FROM {schema}.schema_version").await;
        let err = PostgresDatabase::open_read_only(&database_url(), &schema).await.unwrap_err();
        assert!(err.to_string().ends_with("its schema_version table is empty"), "{err}");
    })
    .await;
}
