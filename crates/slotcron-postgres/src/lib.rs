//! PostgreSQL backends for slotcron: a [`PostgresCoordinator`] on a claims table, a
//! shared [`PostgresStore`] and a [`PostgresLedger`], so a fleet with only PostgreSQL
//! needs no Redis.
//!
//! All three live in one schema (default [`PostgresDatabase::DEFAULT_SCHEMA`]); open it
//! once and share the [`PostgresDatabase`]:
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use slotcron::{Retention, Scheduler};
//! use slotcron_postgres::{PostgresCoordinator, PostgresDatabase, PostgresLedger, PostgresStore};
//!
//! let url = "postgres://slotcron@db.internal/app";
//! let database = PostgresDatabase::open(url, PostgresDatabase::DEFAULT_SCHEMA).await?;
//! let scheduler = Scheduler::builder()
//!     .coordinator(Arc::new(PostgresCoordinator::new(database.clone())))
//!     .store(Arc::new(PostgresStore::new(database.clone())))
//!     .ledger(Arc::new(PostgresLedger::new(database, Retention::default())))
//!     .build();
//! # Ok(()) }
//! ```
//!
//! The schema is versioned (`schema_version` table) and migrated forward on open; a
//! schema written by a newer release is refused, never changed. To read the store and
//! ledger of an existing schema without creating or changing anything, open it with
//! [`PostgresDatabase::open_read_only`].

mod claimant;
mod codec;
mod controls;
mod coordinator;
mod database;
mod error;
mod ledger;
mod migrations;
mod output;
mod store;
mod tls;

pub use coordinator::PostgresCoordinator;
pub use database::PostgresDatabase;
pub use error::{DbError, OpenError};
pub use ledger::PostgresLedger;
pub use output::PostgresOutputs;
pub use store::PostgresStore;
