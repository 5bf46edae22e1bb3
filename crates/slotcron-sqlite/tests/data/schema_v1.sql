-- Schema version 1 of the SQLite state, as the first release created it.
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

PRAGMA application_id = 1397509972;
PRAGMA user_version = 1;
