//! Versioned schema migrations. `PRAGMA user_version` holds the schema version and
//! `PRAGMA application_id` marks the file as slotcron's; both change in the same
//! transaction as the migration, so a file is at one version or the next, never between.

use rusqlite::{Connection, TransactionBehavior};

use crate::error::OpenError;

/// `PRAGMA application_id` of a slotcron database: "SLOT" in ASCII.
const APPLICATION_ID: i32 = 0x534c_4f54;

/// Migration `n` (counting from 1) takes the schema from version `n - 1` to `n`.
/// Append only: a released migration never changes.
const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7, V8];

/// Instants are microseconds since the Unix epoch (UTC), durations microseconds, fencing
/// tokens the 64 bits of the unsigned token.
const V1: &str = "
CREATE TABLE job_state (
    job             TEXT PRIMARY KEY NOT NULL,
    last_trigger_us INTEGER NOT NULL,
    last_outcome    TEXT,
    one_shot_done   INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE job_definition (
    job        TEXT PRIMARY KEY NOT NULL,
    definition TEXT NOT NULL -- JSON
) STRICT, WITHOUT ROWID;

CREATE TABLE run_record (
    id            INTEGER PRIMARY KEY,
    job           TEXT NOT NULL,
    trigger_us    INTEGER NOT NULL,
    instance      TEXT NOT NULL,
    outcome       TEXT NOT NULL,
    fencing_token INTEGER,
    started_us    INTEGER NOT NULL,
    duration_us   INTEGER NOT NULL,
    error         TEXT
) STRICT;

-- The last runs of a job, and pruning a job to its newest records.
CREATE INDEX run_record_by_job ON run_record (job, trigger_us DESC, started_us DESC);
-- The last runs of every job, and pruning by age.
CREATE INDEX run_record_by_trigger ON run_record (trigger_us DESC, started_us DESC);
";

/// Ledger v2: a run's record is written when it starts (`running`) and completed when it
/// ends, and carries its cause, attempts and process. Rows of version 1 keep NULL in the
/// new columns (read as a scheduled run, one attempt if it ran, no process).
const V2: &str = "
ALTER TABLE run_record ADD COLUMN cause TEXT;
ALTER TABLE run_record ADD COLUMN attempts INTEGER;
ALTER TABLE run_record ADD COLUMN process_host TEXT;
ALTER TABLE run_record ADD COLUMN process_id INTEGER;
ALTER TABLE run_record ADD COLUMN process_start INTEGER;

-- Completing a run's record, and the stale sweep at start.
CREATE INDEX run_record_running ON run_record (job, trigger_us, instance) WHERE outcome = 'running';
";

/// Run output: the last 64 KiB a run wrote, dropped with the run's record when the
/// ledger prunes it (so output is bounded by the history's retention).
const V3: &str = "
CREATE TABLE run_output (
    job        TEXT NOT NULL,
    trigger_us INTEGER NOT NULL,
    instance   TEXT NOT NULL,
    output     BLOB NOT NULL,
    truncated  INTEGER NOT NULL,
    PRIMARY KEY (job, trigger_us, instance)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER run_output_pruned AFTER DELETE ON run_record BEGIN
    DELETE FROM run_output
    WHERE job = OLD.job AND trigger_us = OLD.trigger_us AND instance = OLD.instance;
END;
";

/// Fencing tokens that survive the process: the last token taken per job, for
/// single-replica mode (no coordinator hands them out).
const V4: &str = "
CREATE TABLE fencing (
    job   TEXT PRIMARY KEY NOT NULL,
    token INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
";

/// Steering a single replica: its paused jobs (and since when), kept so that a pause
/// survives a restart, and the idempotency keys of its manual runs, until their expiry.
const V5: &str = "
CREATE TABLE job_pause (
    job       TEXT PRIMARY KEY NOT NULL,
    paused_us INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE manual_request (
    job         TEXT NOT NULL,
    request_key TEXT NOT NULL,
    trigger_us  INTEGER NOT NULL,
    expires_us  INTEGER NOT NULL,
    PRIMARY KEY (job, request_key)
) STRICT, WITHOUT ROWID;
";

/// Each job's last success and last failure (the triggers), kept with its state so that
/// pruning the ledger never loses them; filled from the ledger and the state.
const V6: &str = "
ALTER TABLE job_state ADD COLUMN last_success_us INTEGER;
ALTER TABLE job_state ADD COLUMN last_failure_us INTEGER;
UPDATE job_state SET
    last_success_us = (
        SELECT max(t) FROM (
            SELECT trigger_us AS t FROM run_record
            WHERE run_record.job = job_state.job AND outcome = 'succeeded'
            UNION ALL SELECT job_state.last_trigger_us WHERE job_state.last_outcome = 'succeeded'
        )
    ),
    last_failure_us = (
        SELECT max(t) FROM (
            SELECT trigger_us AS t FROM run_record
            WHERE run_record.job = job_state.job
                AND outcome IN ('failed', 'timed-out', 'panicked', 'interrupted')
            UNION ALL SELECT job_state.last_trigger_us
            WHERE job_state.last_outcome IN ('failed', 'timed-out', 'panicked', 'interrupted')
        )
    );
";

/// The changes made to job definitions through the admin API, each a
/// `slotcron::DefinitionChange` as JSON, in the order they were made (`id`).
const V7: &str = "
CREATE TABLE job_definition_change (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    job    TEXT NOT NULL,
    change TEXT NOT NULL -- JSON
) STRICT;
CREATE INDEX job_definition_change_by_job ON job_definition_change (job, id);
";

/// Each attempt's output (the last 64 KiB of each, `chunks` as `slotcron::encode_chunks`
/// writes them) and how it ended (at most one of `exit_code`, `signal`, `error`), dropped
/// with the run's record like `run_output`, which keeps what older releases wrote (and
/// replicas of the release before write during an upgrade): their run's last attempt.
const V8: &str = "
CREATE TABLE run_attempt_output (
    job         TEXT NOT NULL,
    trigger_us  INTEGER NOT NULL,
    instance    TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    started_us  INTEGER,
    duration_us INTEGER,
    exit_code   INTEGER,
    signal      TEXT,
    error       TEXT,
    chunks      BLOB NOT NULL,
    truncated   INTEGER NOT NULL,
    PRIMARY KEY (job, trigger_us, instance, attempt)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER run_attempt_output_pruned AFTER DELETE ON run_record BEGIN
    DELETE FROM run_attempt_output
    WHERE job = OLD.job AND trigger_us = OLD.trigger_us AND instance = OLD.instance;
END;
";

/// The newest schema version this release knows.
pub(crate) const VERSION: i64 = MIGRATIONS.len() as i64;

/// The oldest schema version whose store and ledger this release reads.
const OLDEST_READABLE: i64 = 1;

/// What an open file says about itself.
pub(crate) struct Header {
    application_id: i32,
    version: i64,
    /// Tables, indexes, views and triggers in the file.
    objects: i64,
}

impl Header {
    pub(crate) fn version(&self) -> i64 {
        self.version
    }
}

pub(crate) fn read_header(connection: &Connection) -> rusqlite::Result<Header> {
    Ok(Header {
        application_id: connection.pragma_query_value(None, "application_id", |row| row.get(0))?,
        version: connection.pragma_query_value(None, "user_version", |row| row.get(0))?,
        objects: connection.query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))?,
    })
}

/// Refuses a file of another application or of a newer release.
pub(crate) fn check(url: &str, header: &Header) -> Result<(), OpenError> {
    if header.objects > 0 && header.application_id != APPLICATION_ID {
        return Err(OpenError::ForeignDatabase { url: url.to_owned(), found: header.application_id });
    }
    if header.version > VERSION {
        return Err(OpenError::NewerSchema { url: url.to_owned(), found: header.version, known: VERSION });
    }
    Ok(())
}

/// Refuses, for reading, a file that holds no slotcron state or a schema this release
/// does not read.
pub(crate) fn check_readable(url: &str, header: &Header) -> Result<(), OpenError> {
    if header.objects == 0 {
        return Err(OpenError::Empty { url: url.to_owned() });
    }
    check(url, header)?;
    if header.version < OLDEST_READABLE {
        return Err(OpenError::OlderSchema {
            url: url.to_owned(),
            found: header.version,
            oldest: OLDEST_READABLE,
        });
    }
    Ok(())
}

pub(crate) enum MigrateError {
    Sqlite(rusqlite::Error),
    Refused(OpenError),
}

impl From<rusqlite::Error> for MigrateError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Sqlite(e)
    }
}

/// Applies the migrations the file lacks, in one transaction that holds the write lock
/// (another process may be migrating the same file).
pub(crate) fn migrate(url: &str, connection: &mut Connection) -> Result<(), MigrateError> {
    if read_header(connection)?.version == VERSION {
        return Ok(());
    }
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let header = read_header(&transaction)?;
    check(url, &header).map_err(MigrateError::Refused)?;
    tracing::info!(url, from = header.version, to = VERSION, "migrating the SQLite schema");
    for migration in MIGRATIONS.iter().skip(header.version.max(0) as usize) {
        transaction.execute_batch(migration)?;
    }
    transaction.pragma_update(None, "application_id", APPLICATION_ID)?;
    transaction.pragma_update(None, "user_version", VERSION)?;
    transaction.commit()?;
    Ok(())
}
