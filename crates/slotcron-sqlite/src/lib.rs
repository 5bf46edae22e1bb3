//! SQLite store and ledger for slotcron: the embedded default on one machine, with no
//! server to run.
//!
//! One file holds both; open it once and share the [`SqliteDatabase`]:
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use slotcron::{Retention, Scheduler};
//! use slotcron_sqlite::{SqliteDatabase, SqliteLedger, SqliteStore};
//!
//! let database = SqliteDatabase::open("sqlite:slotcron.db").await?;
//! let scheduler = Scheduler::builder()
//!     .store(Arc::new(SqliteStore::new(database.clone())))
//!     .ledger(Arc::new(SqliteLedger::new(database, Retention::default())))
//!     .build();
//! # Ok(()) }
//! ```
//!
//! The schema is versioned (`PRAGMA user_version`) and migrated forward on open; a file
//! written by a newer release is refused, never changed. To read a file without changing
//! it (e.g. the run history, as a user who cannot write it), open it with
//! [`SqliteDatabase::open_read_only`].

mod codec;
mod controls;
mod database;
mod error;
mod ledger;
mod migrations;
mod output;
mod store;

pub use database::SqliteDatabase;
pub use error::{DbError, Hint, OpenError};
pub use ledger::SqliteLedger;
pub use output::SqliteOutputs;
pub use store::SqliteStore;
