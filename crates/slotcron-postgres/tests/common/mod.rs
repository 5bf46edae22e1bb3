//! Tests on the real PostgreSQL server at `DATABASE_URL` (default the local `test`
//! database), each in schemas of its own that are dropped at the end, also on failure.

#![allow(dead_code)]

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt;
use slotcron::Coordinator;
use slotcron_postgres::{PostgresCoordinator, PostgresDatabase};
use slotcron_testkit::FaultProxy;

pub fn database_url() -> String {
    std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// A [`FaultProxy`] in front of the server of [`database_url`], and that URL with the
/// server's address replaced by the proxy's.
pub async fn proxy() -> (FaultProxy, String) {
    let url = database_url();
    let server = server_address(&url);
    let upstream = tokio::net::lookup_host(&server)
        .await
        .expect("resolve the server of DATABASE_URL")
        .next()
        .expect("an address for the server of DATABASE_URL");
    let proxy = FaultProxy::start(upstream).await;
    let proxied = url.replacen(&server, &proxy.addr().to_string(), 1);
    (proxy, proxied)
}

/// `host:port` of a `postgres://user@host[:port]/…` URL (port 5432 if none).
fn server_address(url: &str) -> String {
    let (_, rest) = url.split_once('@').expect("DATABASE_URL has a user");
    let authority = &rest[..rest.find(['/', '?']).unwrap_or(rest.len())];
    if authority.contains(':') { authority.to_owned() } else { format!("{authority}:5432") }
}

/// The schemas one test made.
#[derive(Default)]
pub struct Schemas {
    names: Vec<String>,
    /// Schemas named by others (the coordinator suite's namespaces).
    adopted: Arc<Mutex<Vec<String>>>,
}

impl Schemas {
    /// A new schema, unique across tests and test processes.
    pub fn name(&mut self) -> String {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!("slotcron_test_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        self.names.push(name.clone());
        name
    }

    /// The database in a new schema.
    pub async fn open(&mut self) -> PostgresDatabase {
        let schema = self.name();
        PostgresDatabase::open(&database_url(), &schema).await.unwrap()
    }

    /// Runs `sql` with `{schema}` replaced by `schema`, on a connection of its own.
    pub async fn execute(&self, schema: &str, sql: &str) {
        let client = connect().await;
        client.batch_execute(&sql.replace("{schema}", &format!("\"{schema}\""))).await.unwrap();
    }

    /// The `bigint` that `sql` (with `{schema}` replaced) selects.
    pub async fn scalar(&self, schema: &str, sql: &str) -> i64 {
        let client = connect().await;
        client.query_one(&sql.replace("{schema}", &format!("\"{schema}\"")), &[]).await.unwrap().get(0)
    }

    /// A list to which others add the names of schemas they create, dropped with these.
    pub fn adopter(&self) -> Arc<Mutex<Vec<String>>> {
        self.adopted.clone()
    }

    /// The names of the schemas made so far.
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

/// A connection of its own to [`database_url`].
pub async fn connect() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&database_url(), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

/// A login role that is no superuser and owns `schema` (as on a managed database), made
/// for a test; [`SchemaOwner::drop_all`] removes both.
pub struct SchemaOwner {
    /// The role's name.
    pub role: String,
    /// [`database_url`] with the role in place of `postgres`.
    pub url: String,
    schema: String,
    admin: tokio_postgres::Client,
}

impl SchemaOwner {
    /// Makes the role and its schema `schema`.
    pub async fn new(schema: &str) -> Self {
        let role = format!("{schema}_owner");
        let admin = connect().await;
        let setup = format!(
            "DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN NOSUPERUSER; \
             CREATE SCHEMA {schema} AUTHORIZATION {role}"
        );
        admin.batch_execute(&setup).await.unwrap();
        let url = database_url().replacen("://postgres@", &format!("://{role}@"), 1);
        assert_ne!(url, database_url(), "the test URL names the postgres role");
        Self { role, url, schema: schema.to_owned(), admin }
    }

    /// Runs `sql` as the `postgres` role.
    pub async fn admin(&self, sql: &str) {
        self.admin.batch_execute(sql).await.unwrap();
    }

    /// Drops the schema and the role.
    pub async fn drop_all(self) {
        let (schema, role) = (&self.schema, &self.role);
        self.admin(&format!("DROP SCHEMA {schema} CASCADE; DROP OWNED BY {role}; DROP ROLE {role}")).await;
    }
}

/// Runs `test` with a [`Schemas`], then drops every schema it made, whether it passed or
/// panicked.
pub async fn isolated(test: impl AsyncFnOnce(&mut Schemas)) {
    let mut schemas = Schemas::default();
    let result = AssertUnwindSafe(test(&mut schemas)).catch_unwind().await;
    let client = connect().await;
    let adopted = schemas.adopted.lock().unwrap().clone();
    for name in schemas.names.iter().chain(&adopted) {
        client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{name}\" CASCADE")).await.unwrap();
    }
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

/// For the coordinator suite: coordinators on `url` in the schema named by the suite's
/// namespace, each with its own pool (a replica of its own); the schemas are recorded in
/// `made` to be dropped. A loaded CI machine can take longer than the 500 ms default
/// response timeout, and the suite checks exactly-once semantics, not latency: replies
/// get 10 s here.
pub fn suite_factory(
    url: String,
    made: Arc<Mutex<Vec<String>>>,
) -> impl Fn(String) -> std::pin::Pin<Box<dyn Future<Output = Arc<dyn Coordinator>>>> {
    move |namespace| {
        made.lock().unwrap().push(namespace.clone());
        let url = url.clone();
        Box::pin(async move {
            let database = PostgresDatabase::open(&url, &namespace).await.unwrap();
            let coordinator = PostgresCoordinator::new(database).response_timeout(Duration::from_secs(10));
            Arc::new(coordinator) as Arc<dyn Coordinator>
        })
    }
}
