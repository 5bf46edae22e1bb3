//! The state URL (`--state`): where the daemon keeps job state (the store: each job's
//! last trigger, one-shots done) and run history (the ledger), and where `slotcron
//! history` reads it.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use slotcron::{Ledger, MemoryLedger, Retention, Store, redact};
use slotcron::{MemoryOutputs, OutputStore};
use slotcron_postgres::{PostgresDatabase, PostgresLedger, PostgresOutputs, PostgresStore};
use slotcron_sqlite::{SqliteDatabase, SqliteLedger, SqliteOutputs, SqliteStore};

/// Where state lives, as `--state` names it. `Display` and `Debug` leave the password
/// out.
#[derive(Clone, PartialEq, Eq)]
pub enum StateUrl {
    /// `sqlite:PATH` (also `sqlite://PATH`; `sqlite:///abs/path`): one file on this
    /// machine, for one daemon.
    Sqlite {
        /// The URL as given.
        url: String,
        /// The file it names.
        path: PathBuf,
    },
    /// `postgres://…` or `postgresql://…`, with an optional `schema=NAME` query
    /// parameter (default [`PostgresDatabase::DEFAULT_SCHEMA`]): shared by a fleet.
    Postgres {
        /// The connection URL without the `schema` parameter.
        url: String,
        /// The schema holding slotcron's tables.
        schema: String,
    },
    /// `memory`: nothing survives the process.
    Memory,
}

impl StateUrl {
    /// The default: a SQLite file in the working directory.
    pub const DEFAULT: &str = "sqlite:slotcron.db";

    /// Whether the state's database also coordinates the daemons on it (PostgreSQL's
    /// claims), when no Redis is given.
    pub fn coordinates(&self) -> bool {
        matches!(self, Self::Postgres { .. })
    }

    /// Reads a state URL.
    ///
    /// # Errors
    /// The reason, naming the URL without its password: an unknown scheme, an empty
    /// SQLite path, or an empty `schema` parameter.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text == "memory" {
            return Ok(Self::Memory);
        }
        if let Some(rest) = text.strip_prefix("sqlite:") {
            // As `SqliteDatabase::open` reads it.
            let path = rest.strip_prefix("//").unwrap_or(rest);
            if path.is_empty() {
                return Err(format!("{text:?}: no file after sqlite: (write e.g. sqlite:slotcron.db)"));
            }
            return Ok(Self::Sqlite { url: text.to_owned(), path: PathBuf::from(path) });
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            return Self::postgres(text);
        }
        let hint = if text.starts_with("redis") {
            " (Redis coordinates a fleet but keeps no history: give it with --redis, or as redis \
             in [coordination])"
        } else {
            ""
        };
        Err(format!(
            "{:?} is not a state URL: write sqlite:PATH, postgres://USER@HOST/DATABASE[?schema=NAME] or memory{hint}",
            redact(text)
        ))
    }

    /// Splits the `schema` parameter off a PostgreSQL URL.
    fn postgres(text: &str) -> Result<Self, String> {
        let (base, query) = text.split_once('?').unwrap_or((text, ""));
        let mut schema = None;
        let mut kept = Vec::new();
        for param in query.split('&').filter(|p| !p.is_empty()) {
            match param.strip_prefix("schema=") {
                Some(_) if schema.is_some() => {
                    return Err(format!("{:?}: schema= is given twice", redact(text)));
                }
                Some(name) => schema = Some(name.to_owned()),
                None => kept.push(param),
            }
        }
        let schema = match schema {
            Some(name) if name.is_empty() => {
                return Err(format!("{:?}: schema= is empty", redact(text)));
            }
            Some(name) => name,
            None => PostgresDatabase::DEFAULT_SCHEMA.to_owned(),
        };
        let url = if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) };
        Ok(Self::Postgres { url, schema })
    }
}

impl fmt::Display for StateUrl {
    /// The URL without its password (PostgreSQL: with the schema).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sqlite { url, .. } => f.write_str(url),
            Self::Postgres { url, schema } => {
                // After redaction: the query may have lost its only parameters.
                let url = redact(url);
                let separator = if url.contains('?') { '&' } else { '?' };
                write!(f, "{url}{separator}schema={schema}")
            }
            Self::Memory => f.write_str("memory"),
        }
    }
}

impl fmt::Debug for StateUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StateUrl({self})")
    }
}

/// An opened state: the store and the ledger, and the PostgreSQL database (for its
/// coordinator) when the state is there.
pub struct State {
    /// Job state; `None` for `memory` (the scheduler keeps nothing then).
    pub store: Option<Arc<dyn Store>>,
    /// Run history.
    pub ledger: Arc<dyn Ledger>,
    /// The database of a `postgres://` state.
    pub postgres: Option<PostgresDatabase>,
    /// Where run output is kept (the last [`MAX_OUTPUT_BYTES`](slotcron::MAX_OUTPUT_BYTES) of each run), pruned with
    /// the run history.
    pub outputs: Arc<dyn OutputStore>,
}

impl State {
    /// Opens (creating it if absent) the state at `url`, migrating its schema. A SQLite
    /// or PostgreSQL ledger keeps what `retention` says (the jobs file's `[history]`); a
    /// memory one keeps its newest [`MemoryLedger::DEFAULT_CAPACITY`] records.
    ///
    /// # Errors
    /// The reason, naming the URL (without its password) and the cause: a file that is
    /// not a slotcron database, is corrupted or cannot be written, an unreachable
    /// PostgreSQL. Nothing stored is changed then.
    pub async fn open(url: &StateUrl, retention: Retention) -> Result<Self, String> {
        match url {
            StateUrl::Sqlite { url, .. } => {
                let database = SqliteDatabase::open(url).await.map_err(|e| e.to_string())?;
                Ok(Self {
                    store: Some(Arc::new(SqliteStore::new(database.clone()))),
                    ledger: Arc::new(SqliteLedger::new(database.clone(), retention)),
                    postgres: None,
                    outputs: Arc::new(SqliteOutputs::new(database)),
                })
            }
            StateUrl::Postgres { url, schema } => {
                let database = PostgresDatabase::open(url, schema).await.map_err(|e| e.to_string())?;
                Ok(Self {
                    store: Some(Arc::new(PostgresStore::new(database.clone()))),
                    ledger: Arc::new(PostgresLedger::new(database.clone(), retention)),
                    outputs: Arc::new(PostgresOutputs::new(database.clone())),
                    postgres: Some(database),
                })
            }
            StateUrl::Memory => Ok(Self {
                store: None,
                ledger: Arc::new(MemoryLedger::default()),
                postgres: None,
                outputs: Arc::new(MemoryOutputs::default()),
            }),
        }
    }

    /// Opens the ledger of an existing state for reading only (see
    /// [`State::open_read_only`]).
    ///
    /// # Errors
    /// As [`State::open_read_only`].
    pub async fn open_ledger(url: &StateUrl) -> Result<Arc<dyn Ledger>, String> {
        Ok(Self::open_read_only(url, "history").await?.ledger)
    }

    /// Opens the store and the ledger of an existing state for reading only: nothing is
    /// created, migrated or written (a SQLite file is opened read-only, a PostgreSQL
    /// schema in read-only sessions), so a user who may read the state but not write it
    /// can. `what` names what is read, in the error for `memory`.
    ///
    /// # Errors
    /// The reason, naming the URL (without its password): a missing SQLite file or
    /// PostgreSQL schema, one that holds no slotcron state or a schema version this
    /// release does not read, an unreachable PostgreSQL; and `memory`, which keeps
    /// nothing to read.
    pub async fn open_read_only(url: &StateUrl, what: &str) -> Result<ReadOnlyState, String> {
        // Retention applies when appending: reading keeps everything.
        let retention = Retention::default();
        match url {
            StateUrl::Sqlite { url, path } if !path.exists() => Err(format!(
                "{url}: no such file: {} (a daemon run with --state {url} writes it)",
                path.display()
            )),
            StateUrl::Sqlite { url, .. } => {
                let database = SqliteDatabase::open_read_only(url).await.map_err(|e| e.to_string())?;
                Ok(ReadOnlyState {
                    store: Arc::new(SqliteStore::new(database.clone())),
                    ledger: Arc::new(SqliteLedger::new(database.clone(), retention)),
                    outputs: Arc::new(SqliteOutputs::new(database)),
                })
            }
            StateUrl::Postgres { url, schema } => {
                let database =
                    PostgresDatabase::open_read_only(url, schema).await.map_err(|e| e.to_string())?;
                Ok(ReadOnlyState {
                    store: Arc::new(PostgresStore::new(database.clone())),
                    ledger: Arc::new(PostgresLedger::new(database.clone(), retention)),
                    outputs: Arc::new(PostgresOutputs::new(database)),
                })
            }
            StateUrl::Memory => {
                Err(format!("memory: a memory state is gone with its daemon; there is no {what} to read"))
            }
        }
    }
}

/// An existing state opened for reading only ([`State::open_read_only`]).
pub struct ReadOnlyState {
    /// Job definitions and state.
    pub store: Arc<dyn Store>,
    /// The run history.
    pub ledger: Arc<dyn Ledger>,
    /// The run output.
    pub outputs: Arc<dyn OutputStore>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_three_kinds() {
        assert_eq!(StateUrl::parse("memory"), Ok(StateUrl::Memory));
        assert_eq!(
            StateUrl::parse("sqlite:slotcron.db"),
            Ok(StateUrl::Sqlite { url: "sqlite:slotcron.db".into(), path: "slotcron.db".into() })
        );
        assert_eq!(
            StateUrl::parse("sqlite:///var/lib/slotcron/state.db"),
            Ok(StateUrl::Sqlite {
                url: "sqlite:///var/lib/slotcron/state.db".into(),
                path: "/var/lib/slotcron/state.db".into()
            })
        );
        assert_eq!(
            StateUrl::parse("postgres://app@db/prod"),
            Ok(StateUrl::Postgres { url: "postgres://app@db/prod".into(), schema: "slotcron".into() })
        );
    }

    #[test]
    fn the_schema_parameter_leaves_the_connection_url() {
        let state = StateUrl::parse("postgresql://app:pw@db/prod?connect_timeout=3&schema=jobs").unwrap();
        assert_eq!(
            state,
            StateUrl::Postgres {
                url: "postgresql://app:pw@db/prod?connect_timeout=3".into(),
                schema: "jobs".into()
            }
        );
        assert_eq!(state.to_string(), "postgresql://app@db/prod?connect_timeout=3&schema=jobs");
        assert!(StateUrl::parse("postgres://db/prod?schema=").unwrap_err().contains("schema= is empty"));
        for mode in ["require", "verify-ca", "verify-full&sslrootcert=/etc/ca.pem"] {
            let url = format!("postgres://u@db/prod?sslmode={mode}");
            assert_eq!(
                StateUrl::parse(&url),
                Ok(StateUrl::Postgres { url: url.clone(), schema: "slotcron".into() })
            );
        }
        assert!(StateUrl::parse("postgres://db/prod?sslmode=disable").is_ok());
        let twice = StateUrl::parse("postgres://db/prod?schema=a&schema=b").unwrap_err();
        assert!(twice.contains("schema= is given twice"), "{twice}");
    }

    #[test]
    fn a_postgres_state_is_shown_with_its_other_parameters_and_without_its_password() {
        let shown = |url: &str| StateUrl::parse(url).unwrap().to_string();
        assert_eq!(
            shown("postgres://u:secret@h/db?sslmode=disable&schema=x"),
            "postgres://u@h/db?sslmode=disable&schema=x"
        );
        assert_eq!(
            shown("postgres://u@h/db?schema=x&sslmode=disable"),
            "postgres://u@h/db?sslmode=disable&schema=x"
        );
        assert_eq!(shown("postgres://h/db?password=secret&schema=x"), "postgres://h/db?schema=x");
        assert_eq!(shown("postgres://u:secret@h/db"), "postgres://u@h/db?schema=slotcron");
    }

    #[test]
    fn other_urls_are_refused_without_their_password() {
        let error = StateUrl::parse("mysql://root:hunter2@db/x").unwrap_err();
        assert!(error.contains("\"mysql://root@db/x\" is not a state URL"), "{error}");
        let error = StateUrl::parse("redis://127.0.0.1:6379").unwrap_err();
        assert!(error.ends_with("(Redis coordinates a fleet but keeps no history: give it with --redis, or as redis in [coordination])"), "{error}");
        assert!(!error.contains("hunter2"));
        assert!(StateUrl::parse("sqlite:").unwrap_err().contains("no file after sqlite:"));
        assert!(StateUrl::parse("slotcron.db").is_err());
    }
}
