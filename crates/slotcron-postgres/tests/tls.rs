//! PostgreSQL over TLS: `sslmode=require`, `verify-ca` and `verify-full` against a server
//! presenting tests/data/tls/server.crt (for the host name `localhost` only), which
//! `.ci/run` gives the local server; a wrong root certificate or a wrong host name is
//! refused at open, naming the URL without its password and the reason. The coordinator
//! suite runs over `verify-full` too.
//!
//! The server: `SLOTCRON_TEST_POSTGRES_TLS_URL`, default
//! `postgres://postgres@localhost:5432/test?hostaddr=127.0.0.1` (a URL whose host is
//! `localhost`). Where it does not present the test certificate, these tests are skipped
//! with a message on stderr — except under CI (`CI` set), where they fail.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

use common::{Schemas, connect, isolated, suite_factory};
use slotcron_postgres::{OpenError, PostgresDatabase};
use slotcron_testkit as testkit;

/// The server's URL, without TLS parameters.
fn base_url() -> String {
    std::env::var("SLOTCRON_TEST_POSTGRES_TLS_URL")
        .unwrap_or_else(|_| "postgres://postgres@localhost:5432/test?hostaddr=127.0.0.1".to_owned())
}

/// A test certificate's path.
fn certificate(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tls").join(name).display().to_string()
}

/// [`base_url`] with these parameters and an application name of its own (returned),
/// by which the server's `pg_stat_ssl` shows its sessions.
fn url(params: &str) -> (String, String) {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = format!("slotcron_tls_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let base = base_url();
    let separator = if base.contains('?') { '&' } else { '?' };
    (format!("{base}{separator}application_name={name}&{params}"), name)
}

/// `verify-full` against the test CA.
fn verify_full() -> String {
    format!("sslmode=verify-full&sslrootcert={}", certificate("ca.crt"))
}

/// Whether the server presents the test certificate: `false` (said on stderr) outside
/// CI when it does not; under CI a panic.
async fn server_ready(schemas: &mut Schemas) -> bool {
    let (url, _) = url(&verify_full());
    match PostgresDatabase::open(&url, &schemas.name()).await {
        Ok(_) => true,
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!(
                "SKIPPED: no PostgreSQL with the test certificate at {} ({e}); .ci/run sets it up",
                base_url()
            );
            false
        }
        Err(e) => panic!("under CI the local PostgreSQL must present the test certificate: {e}"),
    }
}

/// Whether every session of `application` is encrypted, and how many there are.
async fn encrypted(application: &str) -> (bool, i64) {
    let row = connect()
        .await
        .query_one(
            "SELECT coalesce(bool_and(s.ssl), false), count(*) FROM pg_stat_ssl s \
             JOIN pg_stat_activity a USING (pid) WHERE a.application_name = $1",
            &[&application],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

#[tokio::test]
async fn require_and_verify_full_connect_encrypted_and_disable_does_not() {
    isolated(async |schemas: &mut Schemas| {
        if !server_ready(schemas).await {
            return;
        }
        let cases = [
            ("sslmode=require".to_owned(), true),
            (format!("sslmode=require&sslrootcert={}", certificate("ca.crt")), true),
            (format!("sslmode=verify-ca&sslrootcert={}", certificate("ca.crt")), true),
            (verify_full(), true),
            ("sslmode=disable".to_owned(), false),
        ];
        for (params, tls) in cases {
            let (url, application) = url(&params);
            let database = PostgresDatabase::open(&url, &schemas.name()).await.unwrap();
            assert_eq!(encrypted(&application).await, (tls, 1), "{params}");
            drop(database);
        }
    })
    .await;
}

#[tokio::test]
async fn a_wrong_root_certificate_is_refused_naming_the_url_and_the_reason() {
    isolated(async |schemas: &mut Schemas| {
        if !server_ready(schemas).await {
            return;
        }
        for mode in ["verify-full", "verify-ca", "require"] {
            let (url, _) = url(&format!("sslmode={mode}&sslrootcert={}", certificate("other-ca.crt")));
            let url = url.replacen("postgres@", "postgres:s3cret@", 1);
            let error = PostgresDatabase::open(&url, &schemas.name()).await.expect_err("refused");
            assert!(matches!(error, OpenError::Server { .. }), "{error:?}");
            let message = error.to_string();
            assert!(message.starts_with(&slotcron::redact(&url)), "{message}");
            assert!(message.contains("cannot connect: "), "{message}");
            assert!(message.contains("UnknownIssuer"), "{mode}: the reason: {message}");
            assert!(!message.contains("s3cret"), "{message}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_wrong_host_name_is_refused_by_verify_full_only() {
    isolated(async |schemas: &mut Schemas| {
        if !server_ready(schemas).await {
            return;
        }
        // The certificate names `localhost`, not 127.0.0.1.
        let at_address = |params: &str| url(params).0.replacen("@localhost", "@127.0.0.1", 1);
        let error = PostgresDatabase::open(&at_address(&verify_full()), &schemas.name())
            .await
            .expect_err("refused")
            .to_string();
        assert!(
            error.contains("cannot connect: ")
                && error.contains("certificate not valid for name \"127.0.0.1\""),
            "{error}"
        );
        let verify_ca = format!("sslmode=verify-ca&sslrootcert={}", certificate("ca.crt"));
        PostgresDatabase::open(&at_address(&verify_ca), &schemas.name()).await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn an_unreadable_root_certificate_is_an_invalid_url() {
    let (url, _) = url("sslmode=verify-full&sslrootcert=/no/such/ca.pem");
    let error = PostgresDatabase::open(&url, "slotcron").await.expect_err("refused");
    assert!(matches!(error, OpenError::InvalidUrl { .. }), "{error:?}");
    assert!(error.to_string().contains("sslrootcert=/no/such/ca.pem: cannot read it"), "{error}");
}

/// The coordinator suite over `verify-full`.
macro_rules! suite_over_tls {
    ($($case:ident),*) => {$(
        #[tokio::test]
        async fn $case() {
            isolated(async |schemas: &mut Schemas| {
                if server_ready(schemas).await {
                    testkit::$case(&suite_factory(url(&verify_full()).0, schemas.adopter())).await;
                }
            })
            .await;
        }
    )*};
}

suite_over_tls!(
    claim_contract,
    namespaces_are_isolated,
    skewed_clocks,
    staggered_starts,
    racing_replicas,
    one_shots_survive_restarts
);
