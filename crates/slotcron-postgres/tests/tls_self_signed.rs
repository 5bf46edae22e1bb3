//! `sslmode=verify-full` with a self-signed server certificate given as `sslrootcert`:
//! the setup of the PostgreSQL manual's "Creating Certificates" (a self-signed
//! `server.crt`, copied to the client as its root certificate), which libpq accepts.
//!
//! Each test makes its certificates (rcgen: self-signed, marked as a CA's as `openssl req
//! -x509` marks them, for `localhost` and `127.0.0.1`) and starts a PostgreSQL server of its
//! own presenting one ([`PostgresServer`]: `initdb` and `postgres` must be installed —
//! the test fails, saying so, where they are not), then opens it through
//! [`PostgresDatabase::open`].

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, date_time_ymd};
use slotcron_postgres::{OpenError, PostgresDatabase};
use slotcron_testkit::PostgresServer;

/// A self-signed certificate, PEM, and its key's.
struct Certificate {
    pem: String,
    key: String,
}

impl Certificate {
    /// For `localhost` and `127.0.0.1`, valid from `from` to `until` (years, 1 January),
    /// a CA's (basic constraints `CA:TRUE`) as the manual's recipe makes it.
    fn self_signed(from: i32, until: i32) -> Self {
        let names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
        let mut params = CertificateParams::new(names).expect("valid names");
        params.distinguished_name.push(DnType::CommonName, "localhost");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.not_before = date_time_ymd(from, 1, 1);
        params.not_after = date_time_ymd(until, 1, 1);
        let key = KeyPair::generate().expect("a key");
        let certificate = params.self_signed(&key).expect("a certificate");
        Self { pem: certificate.pem(), key: key.serialize_pem() }
    }

    /// Valid from 2020 to 2100.
    fn current() -> Self {
        Self::self_signed(2020, 2100)
    }

    /// Written to `dir/name`; its path.
    fn write(&self, dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, &self.pem).expect("write a certificate");
        path
    }
}

/// A server presenting `certificate` (`ssl = on`).
fn serve(certificate: &Certificate) -> PostgresServer {
    PostgresServer::start(
        &[("server.crt", certificate.pem.as_bytes()), ("server.key", certificate.key.as_bytes())],
        &["ssl = on", "ssl_cert_file = 'server.crt'", "ssl_key_file = 'server.key'"],
    )
}

/// The URL of `server` under the host name `host` (reached at 127.0.0.1 whatever it is),
/// with a password (which the server does not ask for) and `params`.
fn url(server: &PostgresServer, host: &str, params: &str) -> String {
    format!("postgres://postgres:s3cret@{host}:{}/postgres?hostaddr=127.0.0.1&{params}", server.port())
}

/// Opens `url`, or panics saying why (the URL without its password) and what the server
/// logged.
async fn open(server: &PostgresServer, url: &str) -> PostgresDatabase {
    match PostgresDatabase::open(url, PostgresDatabase::DEFAULT_SCHEMA).await {
        Ok(database) => database,
        Err(e) => panic!("{e}\nthe server's log:\n{}", server.log()),
    }
}

/// The refusal of `url`, checked to be a connection failure that names the URL without
/// its password.
async fn refused(url: &str) -> String {
    let error = PostgresDatabase::open(url, PostgresDatabase::DEFAULT_SCHEMA).await.expect_err("refused");
    assert!(matches!(error, OpenError::Server { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.starts_with(&format!("{}: cannot connect: ", slotcron::redact(url))), "{message}");
    assert!(!message.contains("s3cret"), "{message}");
    message
}

#[tokio::test]
async fn verify_full_accepts_a_self_signed_server_certificate_given_as_sslrootcert() {
    let dir = tempfile::tempdir().unwrap();
    let certificate = Certificate::current();
    let root = certificate.write(dir.path(), "root.crt").display().to_string();
    let server = serve(&certificate);
    for host in ["localhost", "127.0.0.1"] {
        for mode in ["verify-full", "verify-ca", "require"] {
            let database =
                open(&server, &url(&server, host, &format!("sslmode={mode}&sslrootcert={root}"))).await;
            assert!(database.url().contains(&format!("sslmode={mode}")), "{}", database.url());
        }
    }
}

#[tokio::test]
async fn a_wrong_root_certificate_is_refused_naming_the_url_sslrootcert_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&Certificate::current());
    let other = Certificate::current().write(dir.path(), "other.crt").display().to_string();
    for mode in ["verify-full", "verify-ca", "require"] {
        let message =
            refused(&url(&server, "localhost", &format!("sslmode={mode}&sslrootcert={other}"))).await;
        let why = format!(
            "cannot connect: the server's certificate is not signed by (and not one of) the certificates \
             in sslrootcert={other}"
        );
        assert!(message.contains(&why), "{mode}: {message}");
    }
}

#[tokio::test]
async fn a_host_name_not_in_the_certificate_is_refused_by_verify_full_naming_it_and_accepted_by_verify_ca() {
    let dir = tempfile::tempdir().unwrap();
    let certificate = Certificate::current();
    let root = certificate.write(dir.path(), "root.crt").display().to_string();
    let server = serve(&certificate);
    let message =
        refused(&url(&server, "db.invalid", &format!("sslmode=verify-full&sslrootcert={root}"))).await;
    assert!(message.contains("the server's certificate does not name the host \"db.invalid\""), "{message}");
    open(&server, &url(&server, "db.invalid", &format!("sslmode=verify-ca&sslrootcert={root}"))).await;
}

#[tokio::test]
async fn an_expired_self_signed_certificate_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let certificate = Certificate::self_signed(2000, 2001);
    let root = certificate.write(dir.path(), "root.crt").display().to_string();
    let server = serve(&certificate);
    for mode in ["verify-full", "verify-ca"] {
        let message =
            refused(&url(&server, "localhost", &format!("sslmode={mode}&sslrootcert={root}"))).await;
        assert!(message.contains("the server's certificate has expired"), "{mode}: {message}");
    }
}
