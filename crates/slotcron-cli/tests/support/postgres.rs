//! A PostgreSQL schema of the test's own on the server at `DATABASE_URL` (default the
//! local `test` database), dropped when the test ends, also on failure.

use std::sync::atomic::{AtomicU32, Ordering};

/// The server the tests use.
pub fn database_url() -> String {
    std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// A schema name unique to this test; the schema is dropped (with everything in it)
/// when this is dropped.
pub struct Schema {
    name: String,
}

impl Schema {
    /// A new schema name, `slotcron_cli_{tag}_{pid}_{n}`; nothing is created yet (the
    /// daemon creates the schema).
    pub fn new(tag: &str) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name =
            format!("slotcron_cli_{tag}_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        Self { name }
    }

    /// The schema's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The `--state` URL of this schema.
    pub fn state_url(&self) -> String {
        let url = database_url();
        let separator = if url.contains('?') { '&' } else { '?' };
        format!("{url}{separator}schema={}", self.name)
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let sql = format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let dropped = runtime.block_on(async {
            let (client, connection) =
                tokio_postgres::connect(&database_url(), tokio_postgres::NoTls).await?;
            tokio::spawn(connection);
            client.batch_execute(&sql).await
        });
        if let Err(e) = dropped {
            eprintln!("cannot drop schema {}: {e}", self.name);
        }
    }
}
