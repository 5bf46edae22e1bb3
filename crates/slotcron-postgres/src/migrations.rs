//! Versioned schema migrations: `{schema}.schema_version` holds the version, changed in
//! the same transaction as the migration, under an advisory lock per schema so replicas
//! starting together migrate once. Also the check of a schema opened for reading only.

use deadpool_postgres::Object;

use crate::PostgresDatabase;
use crate::error::OpenError;
use slotcron::error_chain;

/// Migration `n` (counting from 1) takes the schema from version `n - 1` to `n`.
/// Append only: a released migration never changes.
const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11, V12, V13, V14, V15, V16, V17];

const V1: &str = "
CREATE TABLE {schema}.job_state (
    job           text PRIMARY KEY,
    last_trigger  timestamptz NOT NULL,
    last_outcome  text,
    one_shot_done boolean NOT NULL
);

CREATE TABLE {schema}.job_definition (
    job        text PRIMARY KEY,
    definition jsonb NOT NULL
);

CREATE TABLE {schema}.run_record (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job           text NOT NULL,
    trigger_at    timestamptz NOT NULL,
    instance      text NOT NULL,
    outcome       text NOT NULL,
    fencing_token bigint,
    started_at    timestamptz NOT NULL,
    duration_us   bigint NOT NULL,
    error         text
);
-- The last runs of a job, and pruning a job to its newest records.
CREATE INDEX run_record_by_job ON {schema}.run_record (job, trigger_at DESC, started_at DESC);
-- The last runs of every job, and pruning by age.
CREATE INDEX run_record_by_trigger ON {schema}.run_record (trigger_at DESC, started_at DESC);

-- One row per claimed trigger; expires_at NULL: never expires (one-shots).
CREATE TABLE {schema}.claim (
    job         text NOT NULL,
    trigger_key text NOT NULL,
    trigger_at  timestamptz NOT NULL,
    instance    text NOT NULL,
    claimed_at  timestamptz NOT NULL,
    expires_at  timestamptz,
    PRIMARY KEY (job, trigger_key)
);
CREATE INDEX claim_expiry ON {schema}.claim (expires_at) WHERE expires_at IS NOT NULL;

-- The last fencing token handed out per job.
CREATE TABLE {schema}.fencing (
    job   text PRIMARY KEY,
    token bigint NOT NULL
);
";

/// Claims that a claimant whose reply was lost can recognise: each row keeps the random
/// token of the claim that made it and the fencing token it won, and claims are made by
/// one function call (one round trip), which can write the fencing token into the row it
/// has just claimed — a single statement cannot change a row it inserted.
const V2: &str = "
-- NULL in rows of version 1: such a claim is nobody's that reads it back.
ALTER TABLE {schema}.claim ADD COLUMN claimant_token bigint, ADD COLUMN fencing_token bigint;

-- Claims a trigger: inserts its row if absent, or takes over a row whose expiry has
-- passed, then takes the job's next fencing token and keeps it in the row. Returns the
-- fencing token when won, NULL when another claim holds the trigger. A claim made again
-- with the same token and instance (after a lost reply) that finds its own row returns
-- that row's fencing token: if the first attempt is still running, the second waits for
-- it on the row and then finds it. p_ttl_us NULL: the claim never expires.
CREATE FUNCTION {schema}.claim_trigger(
    p_job text, p_trigger_key text, p_trigger_at timestamptz, p_instance text,
    p_ttl_us bigint, p_claimant_token bigint
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    won bigint;
BEGIN
    INSERT INTO {schema}.claim AS held
        (job, trigger_key, trigger_at, instance, claimed_at, expires_at, claimant_token)
    VALUES (p_job, p_trigger_key, p_trigger_at, p_instance, now(),
            now() + p_ttl_us * interval '1 microsecond', p_claimant_token)
    ON CONFLICT (job, trigger_key) DO UPDATE SET
        trigger_at = EXCLUDED.trigger_at,
        instance = EXCLUDED.instance,
        claimed_at = EXCLUDED.claimed_at,
        expires_at = EXCLUDED.expires_at,
        claimant_token = EXCLUDED.claimant_token,
        fencing_token = NULL
    WHERE held.expires_at <= now();
    IF NOT FOUND THEN
        SELECT fencing_token INTO won FROM {schema}.claim
        WHERE job = p_job AND trigger_key = p_trigger_key
          AND claimant_token = p_claimant_token AND instance = p_instance;
        RETURN won;
    END IF;
    INSERT INTO {schema}.fencing AS counter (job, token) VALUES (p_job, 1)
    ON CONFLICT (job) DO UPDATE SET token = counter.token + 1
    RETURNING token INTO won;
    UPDATE {schema}.claim SET fencing_token = won
    WHERE job = p_job AND trigger_key = p_trigger_key;
    RETURN won;
END
$$;
";

/// Ledger v2: a run's record is written when it starts (`running`) and completed when it
/// ends, and carries its cause, attempts and process. Rows of earlier versions keep NULL
/// in the new columns (read as a scheduled run, one attempt if it ran, no process), and
/// replicas of the release before keep writing rows without them during an upgrade.
const V3: &str = "
ALTER TABLE {schema}.run_record
    ADD COLUMN cause text,
    ADD COLUMN attempts bigint,
    ADD COLUMN process_host text,
    ADD COLUMN process_id bigint,
    ADD COLUMN process_start bigint;
-- Completing a run's record, and the stale sweep at start.
CREATE INDEX run_record_running ON {schema}.run_record (job, trigger_at, instance)
    WHERE outcome = 'running';

-- Each scheduler instance's last heartbeat (server time), for the stale sweep.
CREATE TABLE {schema}.instance_heartbeat (
    instance text PRIMARY KEY,
    beat_at  timestamptz NOT NULL
);
";

/// Run output: the last 64 KiB a run wrote, deleted with the run's record when the
/// ledger prunes it (so output is bounded by the history's retention).
const V4: &str = "
CREATE TABLE {schema}.run_output (
    job        text NOT NULL,
    trigger_at timestamptz NOT NULL,
    instance   text NOT NULL,
    output     bytea NOT NULL,
    truncated  boolean NOT NULL,
    PRIMARY KEY (job, trigger_at, instance)
);

CREATE FUNCTION {schema}.run_output_pruned() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {schema}.run_output
    WHERE job = OLD.job AND trigger_at = OLD.trigger_at AND instance = OLD.instance;
    RETURN NULL;
END
$$;

CREATE TRIGGER run_output_pruned AFTER DELETE ON {schema}.run_record
    FOR EACH ROW EXECUTE FUNCTION {schema}.run_output_pruned();
";

/// Claims that hold as DESIGN.md says: a recurring claim expires at an absolute instant
/// on the server's clock, and each job keeps a high-water mark, the newest recurring
/// trigger granted, set in the same transaction as the claim. The version 2 function
/// stays for replicas of the older release during a rolling upgrade.
const V5: &str = "
CREATE TABLE {schema}.claim_mark (
    job        text PRIMARY KEY,
    trigger_at timestamptz NOT NULL
);

-- Claims a trigger. A trigger whose claim is held loses as in version 2, with no lock
-- taken and nothing written. Recurring (p_after_trigger_us NOT NULL): the job's mark
-- row is locked next, so claims of one job serialize on it; a trigger at or before the
-- mark and at least
-- p_after_trigger_us old (now()), with no claim held, is refused with -1: its claim may
-- have expired; otherwise the claim is made as in version 2, expiring at the later of
-- trigger + p_after_trigger_us and now() + p_after_claim_us, and the mark moves up to
-- the trigger. One-shot (NULL): the claim never expires and the mark is not touched.
-- Returns the fencing token when won, NULL when another claim holds the trigger, -1
-- when the mark refuses it. A claim made again with the same token and instance (after
-- a lost reply) that finds its own row returns that row's fencing token.
CREATE FUNCTION {schema}.claim_trigger(
    p_job text, p_trigger_key text, p_trigger_at timestamptz, p_instance text,
    p_after_trigger_us bigint, p_after_claim_us bigint, p_claimant_token bigint
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    won bigint;
    own boolean;
    mark timestamptz;
    expires timestamptz;
BEGIN
    -- A held claim loses (or is this claimant's own, after a lost reply) without taking
    -- a lock or writing anything.
    SELECT fencing_token, claimant_token = p_claimant_token AND instance = p_instance
    INTO won, own FROM {schema}.claim
    WHERE job = p_job AND trigger_key = p_trigger_key AND (expires_at IS NULL OR expires_at > now());
    IF FOUND THEN
        RETURN CASE WHEN own THEN won END;
    END IF;
    IF p_after_trigger_us IS NOT NULL THEN
        SELECT trigger_at INTO mark FROM {schema}.claim_mark WHERE job = p_job FOR UPDATE;
        IF NOT FOUND THEN
            INSERT INTO {schema}.claim_mark (job, trigger_at) VALUES (p_job, '-infinity')
            ON CONFLICT (job) DO NOTHING;
            SELECT trigger_at INTO mark FROM {schema}.claim_mark WHERE job = p_job FOR UPDATE;
        END IF;
        IF p_trigger_at <= mark
           AND now() >= p_trigger_at + p_after_trigger_us * interval '1 microsecond'
           AND NOT EXISTS (SELECT FROM {schema}.claim
                           WHERE job = p_job AND trigger_key = p_trigger_key
                             AND (expires_at IS NULL OR expires_at > now())) THEN
            RETURN -1;
        END IF;
        expires := greatest(p_trigger_at + p_after_trigger_us * interval '1 microsecond',
                            now() + p_after_claim_us * interval '1 microsecond');
    END IF;
    INSERT INTO {schema}.claim AS held
        (job, trigger_key, trigger_at, instance, claimed_at, expires_at, claimant_token)
    VALUES (p_job, p_trigger_key, p_trigger_at, p_instance, now(), expires, p_claimant_token)
    ON CONFLICT (job, trigger_key) DO UPDATE SET
        trigger_at = EXCLUDED.trigger_at,
        instance = EXCLUDED.instance,
        claimed_at = EXCLUDED.claimed_at,
        expires_at = EXCLUDED.expires_at,
        claimant_token = EXCLUDED.claimant_token,
        fencing_token = NULL
    WHERE held.expires_at <= now();
    IF NOT FOUND THEN
        SELECT fencing_token INTO won FROM {schema}.claim
        WHERE job = p_job AND trigger_key = p_trigger_key
          AND claimant_token = p_claimant_token AND instance = p_instance;
        RETURN won;
    END IF;
    INSERT INTO {schema}.fencing AS counter (job, token) VALUES (p_job, 1)
    ON CONFLICT (job) DO UPDATE SET token = counter.token + 1
    RETURNING token INTO won;
    UPDATE {schema}.claim SET fencing_token = won
    WHERE job = p_job AND trigger_key = p_trigger_key;
    IF p_after_trigger_us IS NOT NULL AND p_trigger_at > mark THEN
        UPDATE {schema}.claim_mark SET trigger_at = p_trigger_at WHERE job = p_job;
    END IF;
    RETURN won;
END
$$;
";

/// The per-job leases of the overlap policies: one row per job whose run holds it, the
/// owner compared by every renewal and release; expiry on the server's clock.
const V6: &str = "
CREATE TABLE {schema}.lease (
    job        text PRIMARY KEY,
    owner      text NOT NULL,
    expires_at timestamptz NOT NULL,
    -- Set by an overlap = replace trigger: the owner's next renewal stops its run.
    cancel     boolean NOT NULL DEFAULT false
);
";

/// Batched claims: one statement claims many triggers, each by the version 5
/// `claim_trigger`, in one transaction, in the order of (job, trigger, position), so that
/// concurrent batches lock the jobs' rows in one order (no deadlock) and a job's triggers
/// get their fencing tokens in trigger order.
const V7: &str = "
-- Claims the triggers given by position in the arrays (all of one length), each as
-- claim_trigger does; returns, by position, what claim_trigger returned for it.
CREATE FUNCTION {schema}.claim_triggers(
    p_jobs text[], p_trigger_keys text[], p_trigger_ats timestamptz[], p_instance text,
    p_after_trigger_us bigint[], p_after_claim_us bigint[], p_claimant_tokens bigint[]
) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    c record;
    answers bigint[] := array_fill(NULL::bigint, ARRAY[cardinality(p_jobs)]);
BEGIN
    FOR c IN
        SELECT * FROM unnest(p_jobs, p_trigger_keys, p_trigger_ats, p_after_trigger_us,
                             p_after_claim_us, p_claimant_tokens)
            WITH ORDINALITY AS t(job, trigger_key, trigger_at, after_trigger, after_claim, token, ord)
        ORDER BY job, trigger_at, ord
    LOOP
        answers[c.ord] := {schema}.claim_trigger(c.job, c.trigger_key, c.trigger_at, p_instance,
                                                  c.after_trigger, c.after_claim, c.token);
    END LOOP;
    RETURN answers;
END
$$;
";

/// Shared work across replicas (`slotcron::Coordinator`, "Membership"): the fleet's live
/// members, each until its last heartbeat plus the membership TTL on the server's clock,
/// and what each owner claimed per trigger instant (its tally), kept for the membership
/// TTL. Heartbeats remove the lapsed rows of both tables, so they stay bounded.
const V8: &str = "
CREATE TABLE {schema}.member (
    instance   text PRIMARY KEY,
    expires_at timestamptz NOT NULL
);

-- An owner's tally of one trigger instant: how many triggers it claimed to an answer
-- and the sum of their keys' 40-bit hashes.
CREATE TABLE {schema}.handled (
    owner       text NOT NULL,
    trigger_at  timestamptz NOT NULL,
    count       bigint NOT NULL,
    fingerprint bigint NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (owner, trigger_at)
);
CREATE INDEX handled_expiry ON {schema}.handled (expires_at);
";

/// Steering the fleet: the paused jobs, which the claim statement and the batch claim
/// read (a claim of a paused job's trigger claims nothing), and the idempotency keys of
/// manual runs, remembered until their expiry (server time). The version 7
/// `claim_triggers` is replaced by one that reads the pause of each claim's job.
const V9: &str = "
CREATE TABLE {schema}.job_pause (
    job       text PRIMARY KEY,
    paused_at timestamptz NOT NULL
);

CREATE TABLE {schema}.manual_request (
    job         text NOT NULL,
    request_key text NOT NULL,
    trigger_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (job, request_key)
);

-- Claims the triggers given by position in the arrays (all of one length), each as
-- claim_trigger does, in the order of version 7; a trigger of a paused job claims
-- nothing and answers -2. Returns, by position, what claim_trigger returned for it (or
-- -2).
CREATE OR REPLACE FUNCTION {schema}.claim_triggers(
    p_jobs text[], p_trigger_keys text[], p_trigger_ats timestamptz[], p_instance text,
    p_after_trigger_us bigint[], p_after_claim_us bigint[], p_claimant_tokens bigint[]
) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    c record;
    answers bigint[] := array_fill(NULL::bigint, ARRAY[cardinality(p_jobs)]);
BEGIN
    FOR c IN
        SELECT t.*, EXISTS (SELECT FROM {schema}.job_pause p WHERE p.job = t.job) AS paused
        FROM unnest(p_jobs, p_trigger_keys, p_trigger_ats, p_after_trigger_us,
                    p_after_claim_us, p_claimant_tokens)
            WITH ORDINALITY AS t(job, trigger_key, trigger_at, after_trigger, after_claim, token, ord)
        ORDER BY t.job, t.trigger_at, t.ord
    LOOP
        IF c.paused THEN
            answers[c.ord] := -2;
        ELSE
            answers[c.ord] := {schema}.claim_trigger(c.job, c.trigger_key, c.trigger_at, p_instance,
                                                      c.after_trigger, c.after_claim, c.token);
        END IF;
    END LOOP;
    RETURN answers;
END
$$;
";

/// Batched claims made set-based: the version 9 `claim_triggers` is replaced by one that
/// claims a batch in two statements instead of one `claim_trigger` call per claim (six
/// statements for a won one), with the same answers and the same rows: the pauses and
/// the held claims read, and the jobs' marks locked in job order, at once; then, under
/// the locks, the held claims and the marks read again, each claim decided, the claims
/// inserted (or taken over) with their fencing tokens, each job's fencing counter bumped
/// once and its mark moved once. A statement more decides, one by one, the claims of a
/// job that has a trigger key or an instant twice in the batch; another corrects or
/// reads back the rows of a job that a claim holding no mark lock (a one-shot, a
/// requested run) claimed meanwhile. A batch of one claim is one `claim_trigger` call,
/// whose statements cost less than these. `claim_trigger` stays as it is, for single
/// claims and requested runs.
const V10: &str = "
-- Claims the triggers given by position in the arrays (all of one length); answers, by
-- position, what version 9 answers: what claim_trigger answers for each claim made in
-- the order of job, trigger and position, and -2 for a paused job's. A batch of one is
-- claim_trigger's claim (a volatile function in a CASE branch not taken is not called).
-- A larger one, set-based:
-- 1. One statement reads the pauses and the claims held: a paused job's claim answers
--    -2, a held one loses or is its own, as at claim_trigger's first read (no lock, no
--    write). It locks, in job order, the marks of the jobs with a recurring claim left
--    (creating the missing ones): ON CONFLICT ... DO UPDATE ... WHERE false locks the
--    row and writes nothing. A recurring claim after a one-shot claim of its key in the
--    batch will find it held: it takes no lock, as with claim_trigger.
-- 2. Only if two claims left share a job and a key or an instant: a claim may then
--    depend on how an earlier one ended. A statement reads again, under the locks, the
--    claims held (by claims that committed meanwhile) and the marks, and decides each
--    claim: held (lost, or its own), behind the mark (-1), or to be claimed; those that
--    depend on an earlier claim (of their key; or, when old enough for the mark, of
--    their instant) are then decided one by one in claim order, in memory: held by the
--    earlier one's win (unless its claim expired at once), or behind the mark it moved.
-- 3. One statement reads again, under the locks, the claims held and the marks, and
--    decides each claim left as above; it inserts the claims to make (in the order of
--    job and key; a key's last claim if an earlier one won a claim that expired at
--    once) or takes over their expired rows, each with the fencing token it is to get:
--    its job's counter as read plus its rank among the job's claims made, in the order
--    of trigger and position. It bumps each job's counter once, by its number of claims
--    won, in job order, and moves each job's mark up to its newest recurring trigger
--    won. The answers are the tokens from the counters as bumped; a row written with
--    another (its counter bumped meanwhile by a claim that holds no mark lock, or a
--    claim of its job lost to one) is corrected by one more statement. A claim whose row
--    another transaction took meanwhile (a one-shot or a requested run: claims that hold
--    no mark lock) finds its own row, or loses, as claim_trigger does.
CREATE OR REPLACE FUNCTION {schema}.claim_triggers(
    p_jobs text[], p_trigger_keys text[], p_trigger_ats timestamptz[], p_instance text,
    p_after_trigger_us bigint[], p_after_claim_us bigint[], p_claimant_tokens bigint[]
) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    -- By position: the answer, as far as decided.
    answers bigint[];
    -- By position: neither paused nor held at the first read: decided under the locks.
    undecided boolean[];
    -- Whether two undecided claims share a job and a key or an instant.
    twice boolean;
    -- By position: to be claimed, unless found held or behind the mark (then: claimed);
    -- claimed (its key's row inserted or taken over).
    claiming boolean[];
    granted boolean[];
    -- The positions decided one by one, in claim order, and by position what that needs:
    -- the earlier claim of the batch with the same job and key, and the earlier recurring
    -- one with the same job and instant; whether the trigger is old enough for the mark
    -- to refuse it; whether it is at or before the mark; whether its claim, once won, is
    -- held.
    tangled bigint[] := '{}';
    key_before bigint[];
    at_before bigint[];
    past_hold boolean[];
    behind_mark boolean[];
    keeps_held boolean[];
    -- Claims that found their key held by an earlier claim of the batch with their
    -- token, and that claim: they answer what it answers.
    echoes bigint[] := '{}';
    echoed bigint[] := '{}';
    -- Positions whose row was written with a token other than the one it won.
    to_correct bigint[];
    i bigint;
    j bigint;
    refusing boolean;
BEGIN
    IF cardinality(p_jobs) = 1 THEN
        -- A batch of one: claim_trigger's few statements, cheaper than those below.
        RETURN ARRAY[CASE WHEN EXISTS (SELECT FROM {schema}.job_pause p WHERE p.job = p_jobs[1]) THEN -2
                          ELSE {schema}.claim_trigger(p_jobs[1], p_trigger_keys[1], p_trigger_ats[1], p_instance,
                                                       p_after_trigger_us[1], p_after_claim_us[1],
                                                       p_claimant_tokens[1]) END];
    END IF;
    WITH batch AS (
        SELECT t.ord, t.job, t.after_trigger,
               EXISTS (SELECT FROM {schema}.job_pause p WHERE p.job = t.job) AS paused,
               c.job IS NOT NULL AS held,
               CASE WHEN c.claimant_token = t.token AND c.instance = p_instance
                    THEN c.fencing_token END AS held_answer,
               coalesce(bool_or(t.after_trigger IS NULL)
                            OVER (by_key ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
                        false) AS after_one_shot,
               row_number() OVER by_key > 1 OR row_number() OVER by_at > 1 AS again
        FROM unnest(p_jobs, p_trigger_keys, p_trigger_ats, p_after_trigger_us, p_claimant_tokens)
            WITH ORDINALITY AS t(job, trigger_key, trigger_at, after_trigger, token, ord)
        LEFT JOIN {schema}.claim c
            ON c.job = t.job AND c.trigger_key = t.trigger_key
           AND (c.expires_at IS NULL OR c.expires_at > now())
        WINDOW by_key AS (PARTITION BY t.job, t.trigger_key ORDER BY t.trigger_at, t.ord),
               by_at AS (PARTITION BY t.job, t.trigger_at ORDER BY t.ord)
    ), locked AS (
        INSERT INTO {schema}.claim_mark AS mark (job, trigger_at)
        SELECT DISTINCT job, '-infinity'::timestamptz FROM batch
        WHERE after_trigger IS NOT NULL AND NOT paused AND NOT held AND NOT after_one_shot
        ORDER BY job
        ON CONFLICT (job) DO UPDATE SET trigger_at = mark.trigger_at WHERE false
    )
    SELECT coalesce(array_agg(CASE WHEN paused THEN -2 WHEN held THEN held_answer END ORDER BY ord), '{}'),
           coalesce(array_agg(NOT paused AND NOT held ORDER BY ord), '{}'),
           coalesce(bool_or(again AND NOT paused AND NOT held), false)
    INTO answers, undecided, twice
    FROM batch;
    IF NOT true = ANY (undecided) THEN
        RETURN answers;
    END IF;
    claiming := undecided;

    IF twice THEN
        SELECT array_agg(CASE WHEN NOT d.undecided THEN answers[d.ord]
                              WHEN d.held THEN d.held_answer
                              WHEN d.late AND d.behind THEN -1 END ORDER BY d.ord),
               array_agg(d.undecided AND NOT d.held AND NOT (d.late AND d.behind) ORDER BY d.ord),
               coalesce(array_agg(d.ord ORDER BY d.job, d.trigger_at, d.ord)
                            FILTER (WHERE d.undecided AND NOT d.held
                                    AND (d.key_before IS NOT NULL OR d.late AND d.at_before IS NOT NULL)),
                        '{}'),
               array_agg(d.key_before ORDER BY d.ord), array_agg(d.at_before ORDER BY d.ord),
               array_agg(d.late ORDER BY d.ord), array_agg(d.behind ORDER BY d.ord),
               array_agg(d.keeps ORDER BY d.ord)
        INTO answers, claiming, tangled, key_before, at_before, past_hold, behind_mark, keeps_held
        FROM (
            SELECT t.ord, t.job, t.trigger_at, undecided[t.ord] AS undecided,
                   c.job IS NOT NULL AS held,
                   CASE WHEN c.claimant_token = t.token AND c.instance = p_instance
                        THEN c.fencing_token END AS held_answer,
                   coalesce(now() >= t.trigger_at + t.after_trigger * interval '1 microsecond', false)
                       AS late,
                   coalesce(t.trigger_at <= m.trigger_at, false) AS behind,
                   t.after_trigger IS NULL
                       OR greatest(t.trigger_at + t.after_trigger * interval '1 microsecond',
                                   now() + t.after_claim * interval '1 microsecond') > now() AS keeps,
                   lag(t.ord) OVER (PARTITION BY undecided[t.ord], t.job, t.trigger_key
                                    ORDER BY t.trigger_at, t.ord) AS key_before,
                   lag(t.ord) OVER (PARTITION BY undecided[t.ord], t.job, t.trigger_at, t.after_trigger IS NULL
                                    ORDER BY t.ord) AS at_before
            FROM unnest(p_jobs, p_trigger_keys, p_trigger_ats, p_after_trigger_us, p_after_claim_us,
                        p_claimant_tokens)
                WITH ORDINALITY AS t(job, trigger_key, trigger_at, after_trigger, after_claim, token, ord)
            LEFT JOIN {schema}.claim c
                ON undecided[t.ord] AND c.job = t.job AND c.trigger_key = t.trigger_key
               AND (c.expires_at IS NULL OR c.expires_at > now())
            LEFT JOIN {schema}.claim_mark m
                ON undecided[t.ord] AND m.job = t.job AND t.after_trigger IS NOT NULL
        ) d;
        FOREACH i IN ARRAY tangled LOOP
            -- The batch's latest earlier win of this key, if any: the key's holder, unless
            -- its claim expired at once.
            j := key_before[i];
            WHILE j IS NOT NULL AND NOT claiming[j] LOOP
                j := key_before[j];
            END LOOP;
            IF j IS NOT NULL AND keeps_held[j] THEN
                claiming[i] := false;
                answers[i] := NULL;
                IF p_claimant_tokens[i] = p_claimant_tokens[j] THEN
                    echoes := echoes || i;
                    echoed := echoed || j;
                END IF;
            ELSE
                -- Behind the mark, as the batch's earlier wins at this instant moved it.
                refusing := behind_mark[i];
                j := at_before[i];
                WHILE NOT refusing AND j IS NOT NULL LOOP
                    refusing := claiming[j];
                    j := at_before[j];
                END LOOP;
                refusing := refusing AND past_hold[i];
                claiming[i] := NOT refusing;
                answers[i] := CASE WHEN refusing THEN -1 END;
            END IF;
        END LOOP;
        IF NOT true = ANY (claiming) THEN
            RETURN answers;
        END IF;
    END IF;

    WITH wanted AS (
        SELECT t.*, claiming[t.ord] AS claim,
               c.job IS NOT NULL AS held,
               CASE WHEN c.claimant_token = t.token AND c.instance = p_instance
                    THEN c.fencing_token END AS held_answer,
               claiming[t.ord] AND c.job IS NULL
                   AND coalesce(now() >= t.trigger_at + t.after_trigger * interval '1 microsecond', false)
                   AND coalesce(t.trigger_at <= m.trigger_at, false) AS refused
        FROM unnest(p_jobs, p_trigger_keys, p_trigger_ats, p_after_trigger_us, p_after_claim_us,
                    p_claimant_tokens)
            WITH ORDINALITY AS t(job, trigger_key, trigger_at, after_trigger, after_claim, token, ord)
        LEFT JOIN {schema}.claim c
            ON claiming[t.ord] AND c.job = t.job AND c.trigger_key = t.trigger_key
           AND (c.expires_at IS NULL OR c.expires_at > now())
        LEFT JOIN {schema}.claim_mark m
            ON claiming[t.ord] AND m.job = t.job AND t.after_trigger IS NOT NULL
    ), tried AS (
        SELECT w.job, w.trigger_key, w.trigger_at, w.after_trigger, w.after_claim, w.token, w.ord,
               coalesce(f.token, 0)
                   + row_number() OVER (PARTITION BY w.job ORDER BY w.trigger_at, w.ord) AS predicted,
               row_number() OVER (PARTITION BY w.job, w.trigger_key ORDER BY w.trigger_at DESC, w.ord DESC) = 1
                   AS last_of_key
        FROM wanted w
        LEFT JOIN {schema}.fencing f ON f.job = w.job
        WHERE w.claim AND NOT w.held AND NOT w.refused
    ), written AS (
        INSERT INTO {schema}.claim AS held
            (job, trigger_key, trigger_at, instance, claimed_at, expires_at, claimant_token, fencing_token)
        SELECT job, trigger_key, trigger_at, p_instance, now(),
               CASE WHEN after_trigger IS NOT NULL THEN
                   greatest(trigger_at + after_trigger * interval '1 microsecond',
                            now() + after_claim * interval '1 microsecond') END,
               token, predicted
        FROM tried
        WHERE last_of_key
        ORDER BY job, trigger_key
        ON CONFLICT (job, trigger_key) DO UPDATE SET
            trigger_at = EXCLUDED.trigger_at,
            instance = EXCLUDED.instance,
            claimed_at = EXCLUDED.claimed_at,
            expires_at = EXCLUDED.expires_at,
            claimant_token = EXCLUDED.claimant_token,
            fencing_token = EXCLUDED.fencing_token
        WHERE held.expires_at <= now()
        RETURNING job, trigger_key
    ), won AS (
        -- The claims whose key's row was written (windows over a union, not joins: the
        -- planner cannot tell how many rows a CTE holds, and a nested loop over two would
        -- be quadratic).
        SELECT k.job, k.ord, k.trigger_at, k.after_trigger, k.predicted, k.last_of_key,
               count(*) OVER (PARTITION BY k.job) AS wins,
               row_number() OVER (PARTITION BY k.job ORDER BY k.trigger_at, k.ord) AS nth
        FROM (SELECT u.*, bool_or(u.is_written) OVER (PARTITION BY u.job, u.trigger_key) AS key_written
              FROM (SELECT job, trigger_key, ord, trigger_at, after_trigger, predicted, last_of_key,
                           false AS is_written
                    FROM tried
                    UNION ALL
                    SELECT job, trigger_key, NULL, NULL, NULL, NULL, NULL, true FROM written) u) k
        WHERE k.key_written AND NOT k.is_written
    ), counted AS (
        INSERT INTO {schema}.fencing AS counter (job, token)
        SELECT job, count(*) FROM won GROUP BY job ORDER BY job
        ON CONFLICT (job) DO UPDATE SET token = counter.token + EXCLUDED.token
        RETURNING job, token
    ), moved AS (
        UPDATE {schema}.claim_mark m SET trigger_at = top.trigger_at
        FROM (SELECT job, max(trigger_at) AS trigger_at FROM won
              WHERE after_trigger IS NOT NULL GROUP BY job) top
        WHERE m.job = top.job AND top.trigger_at > m.trigger_at
    ), tokens AS (
        SELECT v.ord, v.token, v.last_of_key AND v.token <> v.predicted AS stale
        FROM (SELECT u.ord, u.predicted, u.last_of_key,
                     max(u.bumped) OVER (PARTITION BY u.job) - u.wins + u.nth AS token
              FROM (SELECT job, ord, wins, nth, predicted, last_of_key, NULL::bigint AS bumped FROM won
                    UNION ALL
                    SELECT job, NULL, NULL, NULL, NULL, NULL, token FROM counted) u) v
        WHERE v.ord IS NOT NULL
    )
    SELECT array_agg(CASE WHEN p.token IS NOT NULL THEN p.token
                          WHEN p.held THEN p.held_answer
                          WHEN p.refused THEN -1
                          ELSE answers[p.ord] END ORDER BY p.ord),
           array_agg(p.claim AND NOT p.held AND NOT p.refused ORDER BY p.ord),
           array_agg(p.token IS NOT NULL ORDER BY p.ord),
           coalesce(array_agg(p.ord) FILTER (WHERE p.stale), '{}')
    INTO answers, claiming, granted, to_correct
    FROM (SELECT DISTINCT ON (u.ord) u.*
          FROM (SELECT ord, NULL::bigint AS token, false AS stale, claim, held, held_answer, refused
                FROM wanted
                UNION ALL
                SELECT ord, token, stale, true, false, NULL, false FROM tokens) u
          ORDER BY u.ord, u.token NULLS LAST) p;

    IF to_correct <> '{}' THEN
        UPDATE {schema}.claim c SET fencing_token = answers[x.ord]
        FROM unnest(to_correct) AS x(ord)
        WHERE c.job = p_jobs[x.ord] AND c.trigger_key = p_trigger_keys[x.ord];
    END IF;
    IF claiming <> granted THEN
        -- Rows taken meanwhile: each claim finds its own row, or loses.
        SELECT array_agg(CASE WHEN claiming[s.ord] AND NOT granted[s.ord] THEN c.fencing_token
                              ELSE answers[s.ord] END ORDER BY s.ord)
        INTO answers
        FROM generate_series(1, cardinality(p_jobs)) AS s(ord)
        LEFT JOIN {schema}.claim c
            ON claiming[s.ord] AND NOT granted[s.ord]
           AND c.job = p_jobs[s.ord] AND c.trigger_key = p_trigger_keys[s.ord]
           AND c.claimant_token = p_claimant_tokens[s.ord] AND c.instance = p_instance;
    END IF;
    FOR k IN 1 .. cardinality(echoes) LOOP
        answers[echoes[k]] := answers[echoed[k]];
    END LOOP;
    RETURN answers;
END
$$;
";

/// Start marks (`slotcron::Coordinator`, "Start marks and takeover"): each claim keeps
/// when its holder marked the start of its run, NULL until then; a claim without a mark
/// is listed by holder (a partial index) and may be taken over. Claims made before this
/// version count as started (never taken over), and so do the claims that replicas of an
/// older release, which mark nothing, go on making during a rolling upgrade: a claim
/// starts unmarked only when made under `slotcron.marks_starts = on`, which this release's
/// claim functions (`*_unstarted`, wrappers of the claim functions) set. A claim that
/// takes over an expired row (its new claimant token) starts afresh, as a row inserted
/// does. The claim functions themselves are unchanged.
///
/// Changed after its release, once: the wrappers first set the parameter with a `SET`
/// clause, which PostgreSQL 15 refuses to a role that is not a superuser, so a schema
/// owned by such a role could not be migrated. They now call `set_config(…, true)` (for
/// the call's transaction): the same claims. A schema migrated before keeps the first
/// wrappers, which work for the roles that could create them.
const V11: &str = "
-- When the holder marked its run's start (about to start it); NULL: not marked, the claim
-- is provisional.
ALTER TABLE {schema}.claim ADD COLUMN started_at timestamptz;
-- The claims made so far count as started: they are never taken over.
UPDATE {schema}.claim SET started_at = claimed_at;
-- A claim inserted by this release (slotcron.marks_starts on) starts unmarked; one an
-- older release inserts counts as started when made (claimed_at is now() there too).
ALTER TABLE {schema}.claim ALTER COLUMN started_at
    SET DEFAULT CASE WHEN current_setting('slotcron.marks_starts', true) = 'on' THEN NULL ELSE now() END;
-- The claims a holder has not marked (Coordinator::unstarted).
CREATE INDEX claim_unstarted ON {schema}.claim (instance) WHERE started_at IS NULL;

-- A row taken over by a new claim (an expired row overwritten by the claim functions'
-- ON CONFLICT ... DO UPDATE, which writes the new claim's token) starts as an inserted
-- row does: unmarked if made by this release, else started. Marks and takeovers keep the
-- token and are left alone.
CREATE FUNCTION {schema}.claim_made_again() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.started_at := CASE WHEN current_setting('slotcron.marks_starts', true) = 'on'
                           THEN NULL ELSE NEW.claimed_at END;
    RETURN NEW;
END
$$;
CREATE TRIGGER claim_made_again BEFORE UPDATE ON {schema}.claim FOR EACH ROW
    WHEN (NEW.claimant_token IS DISTINCT FROM OLD.claimant_token)
    EXECUTE FUNCTION {schema}.claim_made_again();

-- This release's claims: claim_trigger (both) and claim_triggers, their claims made
-- unmarked. The setting is set for the transaction (each claim call is one); not with a
-- function's SET clause, which PostgreSQL 15 refuses to a role that is not a superuser
-- for a parameter it does not know (a placeholder such as slotcron.marks_starts).
CREATE FUNCTION {schema}.claim_trigger_unstarted(
    p_job text, p_trigger_key text, p_trigger_at timestamptz, p_instance text,
    p_after_trigger_us bigint, p_after_claim_us bigint, p_claimant_token bigint
) RETURNS bigint LANGUAGE sql AS $$
    SELECT set_config('slotcron.marks_starts', 'on', true);
    SELECT {schema}.claim_trigger(p_job, p_trigger_key, p_trigger_at, p_instance,
                                  p_after_trigger_us, p_after_claim_us, p_claimant_token)
$$;

CREATE FUNCTION {schema}.claim_trigger_unstarted(
    p_job text, p_trigger_key text, p_trigger_at timestamptz, p_instance text,
    p_ttl_us bigint, p_claimant_token bigint
) RETURNS bigint LANGUAGE sql AS $$
    SELECT set_config('slotcron.marks_starts', 'on', true);
    SELECT {schema}.claim_trigger(p_job, p_trigger_key, p_trigger_at, p_instance, p_ttl_us, p_claimant_token)
$$;

CREATE FUNCTION {schema}.claim_triggers_unstarted(
    p_jobs text[], p_trigger_keys text[], p_trigger_ats timestamptz[], p_instance text,
    p_after_trigger_us bigint[], p_after_claim_us bigint[], p_claimant_tokens bigint[]
) RETURNS bigint[] LANGUAGE sql AS $$
    SELECT set_config('slotcron.marks_starts', 'on', true);
    SELECT {schema}.claim_triggers(p_jobs, p_trigger_keys, p_trigger_ats, p_instance,
                                   p_after_trigger_us, p_after_claim_us, p_claimant_tokens)
$$;
";

/// One record per run: a unique index on the run's key (job, trigger, instance, start),
/// on which the ledger writes its batches as upserts (`INSERT ... ON CONFLICT`), each
/// conflict check an index probe whatever the table's statistics. Duplicate records of a
/// run (left by a race of two writers before this version) are removed first, keeping the
/// newest (the highest id), which the ledger read and updated as the run's record.
///
/// Replicas of the release before write with `INSERT ... WHERE NOT EXISTS` and
/// UPDATE-or-INSERT: a race of two of them on one run, which used to leave two records,
/// now raises a unique violation for one, whose outbox retries the batch (it finds the
/// record then): accepted during a rolling upgrade.
const V12: &str = "
-- The duplicates' deletion must not delete the run's output, which the record kept
-- still owns (run_output_pruned deletes the output of a deleted record's run).
ALTER TABLE {schema}.run_record DISABLE TRIGGER run_output_pruned;
DELETE FROM {schema}.run_record a USING {schema}.run_record b
WHERE a.job = b.job AND a.trigger_at = b.trigger_at AND a.instance = b.instance
  AND a.started_at = b.started_at AND a.id < b.id;
ALTER TABLE {schema}.run_record ENABLE TRIGGER run_output_pruned;
CREATE UNIQUE INDEX run_record_run ON {schema}.run_record (job, trigger_at, instance, started_at);
";

/// Each job's last success and last failure (the triggers), kept with its state so that
/// pruning the ledger never loses them; filled from the ledger and the state.
const V13: &str = "
ALTER TABLE {schema}.job_state ADD COLUMN last_success timestamptz, ADD COLUMN last_failure timestamptz;
UPDATE {schema}.job_state s SET
    last_success = GREATEST(
        (SELECT max(trigger_at) FROM {schema}.run_record r WHERE r.job = s.job AND r.outcome = 'succeeded'),
        CASE WHEN s.last_outcome = 'succeeded' THEN s.last_trigger END
    ),
    last_failure = GREATEST(
        (SELECT max(trigger_at) FROM {schema}.run_record r
         WHERE r.job = s.job AND r.outcome IN ('failed', 'timed-out', 'panicked', 'interrupted')),
        CASE WHEN s.last_outcome IN ('failed', 'timed-out', 'panicked', 'interrupted') THEN s.last_trigger END
    );
";

/// What each member published of itself (`slotcron::MemberDetails`, as JSON text), kept
/// until it leaves; read only for live members (a row of `member`).
const V14: &str = "
CREATE TABLE {schema}.member_detail (
    instance text PRIMARY KEY,
    details  text NOT NULL
);
";

/// The changes made to job definitions through the admin API, each a
/// `slotcron::DefinitionChange` as JSON text, in the order they were made (`id`).
const V15: &str = "
CREATE TABLE {schema}.job_definition_change (
    id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job    text NOT NULL,
    change text NOT NULL
);
CREATE INDEX job_definition_change_by_job ON {schema}.job_definition_change (job, id DESC);
";

/// Each attempt's output (the last 64 KiB of each, `chunks` as `slotcron::encode_chunks`
/// writes them) and how it ended (at most one of `exit_code`, `signal`, `error`), deleted
/// with the run's record like `run_output`, which keeps what older releases wrote (and
/// replicas of the release before write during a rolling upgrade): their run's last
/// attempt.
const V16: &str = "
CREATE TABLE {schema}.run_attempt_output (
    job         text NOT NULL,
    trigger_at  timestamptz NOT NULL,
    instance    text NOT NULL,
    attempt     bigint NOT NULL,
    started_at  timestamptz,
    duration_us bigint,
    exit_code   integer,
    signal      text,
    error       text,
    chunks      bytea NOT NULL,
    truncated   boolean NOT NULL,
    PRIMARY KEY (job, trigger_at, instance, attempt)
);

CREATE FUNCTION {schema}.run_attempt_output_pruned() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM {schema}.run_attempt_output
    WHERE job = OLD.job AND trigger_at = OLD.trigger_at AND instance = OLD.instance;
    RETURN NULL;
END
$$;

CREATE TRIGGER run_attempt_output_pruned AFTER DELETE ON {schema}.run_record
    FOR EACH ROW EXECUTE FUNCTION {schema}.run_attempt_output_pruned();
";

/// Run policies kept for the fleet. `max_runs` (`slotcron::Coordinator`, "Counted
/// runs"): each job's count of runs and the trigger keys whose start mark counted one,
/// kept by job name, counted by `mark_counted_starts` atomically with the marks.
/// `pause_after_failures` (`slotcron::Controls::count_failure`): each job's streak of
/// failed triggers in a row, and the reason kept beside a pause its failures made (NULL
/// for a pause made by hand).
const V17: &str = "
CREATE TABLE {schema}.run_count (
    job  text PRIMARY KEY,
    runs bigint NOT NULL
);
CREATE TABLE {schema}.counted_run (
    job         text NOT NULL,
    trigger_key text NOT NULL,
    PRIMARY KEY (job, trigger_key)
);

-- Marks, for p_instance, the start of its claims (p_jobs[i], p_keys[i]) as the mark
-- statement does, each counting a run of its job against p_max_runs[i], decided one
-- after the other; by position: 1 marked and counted (or counted before: a mark sent
-- again counts nothing more), 0 lost (another instance holds the claim), -3 refused: the
-- job had p_max_runs[i] runs counted already (the claim is marked all the same: settled,
-- never taken over; nothing counted). Locks the claims' rows in key order, as the mark
-- statement and the takeover do, then the jobs' counts in job order.
CREATE FUNCTION {schema}.mark_counted_starts(
    p_instance text, p_jobs text[], p_keys text[], p_max_runs bigint[]
) RETURNS integer[] LANGUAGE plpgsql AS $$
DECLARE
    answers integer[] := '{}';
    counted bigint;
BEGIN
    PERFORM 1 FROM {schema}.claim c
        JOIN (SELECT DISTINCT job, trigger_key FROM unnest(p_jobs, p_keys) AS t(job, trigger_key)) w
            USING (job, trigger_key)
        WHERE c.instance = p_instance
        ORDER BY c.job, c.trigger_key
        FOR UPDATE OF c;
    INSERT INTO {schema}.run_count (job, runs)
        SELECT DISTINCT job, 0 FROM unnest(p_jobs) AS t(job) ORDER BY job
        ON CONFLICT (job) DO NOTHING;
    PERFORM 1 FROM {schema}.run_count WHERE job = ANY (p_jobs) ORDER BY job FOR UPDATE;
    FOR i IN 1 .. coalesce(array_length(p_jobs, 1), 0) LOOP
        UPDATE {schema}.claim SET started_at = coalesce(started_at, now())
            WHERE job = p_jobs[i] AND trigger_key = p_keys[i] AND instance = p_instance;
        IF NOT FOUND THEN
            answers := answers || 0;
        ELSIF EXISTS (SELECT FROM {schema}.counted_run WHERE job = p_jobs[i] AND trigger_key = p_keys[i]) THEN
            answers := answers || 1;
        ELSE
            SELECT r.runs INTO counted FROM {schema}.run_count r WHERE r.job = p_jobs[i];
            IF counted >= p_max_runs[i] THEN
                answers := answers || -3;
            ELSE
                INSERT INTO {schema}.counted_run (job, trigger_key) VALUES (p_jobs[i], p_keys[i]);
                UPDATE {schema}.run_count SET runs = runs + 1 WHERE job = p_jobs[i];
                answers := answers || 1;
            END IF;
        END IF;
    END LOOP;
    RETURN answers;
END
$$;

CREATE TABLE {schema}.failure_streak (
    job      text PRIMARY KEY,
    failures bigint NOT NULL
);
ALTER TABLE {schema}.job_pause ADD COLUMN reason text;
";

/// The newest schema version this release knows.
pub(crate) const VERSION: i32 = MIGRATIONS.len() as i32;

/// The oldest schema version whose store and ledger this release reads (versions 2, 5, 6,
/// 7, 8, 9, 10, 11 and 17 changed the claims, leases, membership and pauses only, 12 added an
/// index; the ledger columns of version 3 read as NULL before it; before version 16 only
/// `run_output` is read).
const OLDEST_READABLE: i32 = 1;

/// Refuses, changing nothing, a schema that does not exist, holds no slotcron state, or
/// is at a version whose store and ledger this release does not read.
pub(crate) async fn check_readable(
    client: &Object,
    database: &PostgresDatabase,
    schema: &str,
) -> Result<i32, OpenError> {
    let failed = |e: tokio_postgres::Error| OpenError::Server {
        url: database.url().to_owned(),
        action: format!("read schema {schema:?}"),
        cause: error_chain(&e),
    };
    let no_state =
        |reason| OpenError::NoState { url: database.url().to_owned(), schema: schema.to_owned(), reason };
    let found = client
        .query_one(
            "SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1),
                    to_regclass(quote_ident($1) || '.schema_version') IS NOT NULL",
            &[&schema],
        )
        .await
        .map_err(failed)?;
    if !found.get::<_, bool>(0) {
        return Err(no_state("the schema does not exist (a daemon started with this state creates it)"));
    }
    if !found.get::<_, bool>(1) {
        return Err(no_state("it has no schema_version table"));
    }
    let version: i32 = client
        .query_opt(&database.sql("SELECT version FROM {schema}.schema_version"), &[])
        .await
        .map_err(failed)?
        .ok_or_else(|| no_state("its schema_version table is empty"))?
        .get(0);
    let url = || database.url().to_owned();
    if version > VERSION {
        return Err(OpenError::NewerSchema {
            url: url(),
            schema: schema.to_owned(),
            found: version,
            known: VERSION,
        });
    }
    if version < OLDEST_READABLE {
        return Err(OpenError::OlderSchema {
            url: url(),
            schema: schema.to_owned(),
            found: version,
            oldest: OLDEST_READABLE,
        });
    }
    Ok(version)
}

/// Creates the schema if absent and applies the migrations it lacks, or refuses (changing
/// nothing) a schema of a newer release.
pub(crate) async fn migrate(
    client: &mut Object,
    database: &PostgresDatabase,
    schema: &str,
) -> Result<(), OpenError> {
    let failed = |e: tokio_postgres::Error| OpenError::Server {
        url: database.url().to_owned(),
        action: format!("migrate schema {schema:?}"),
        cause: error_chain(&e),
    };
    let transaction = client.transaction().await.map_err(failed)?;
    transaction
        .execute("SELECT pg_advisory_xact_lock(hashtextextended('slotcron schema ' || $1, 0))", &[&schema])
        .await
        .map_err(failed)?;
    let exists: bool = transaction
        .query_one("SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)", &[&schema])
        .await
        .map_err(failed)?
        .get(0);
    if !exists {
        transaction.batch_execute(&database.sql("CREATE SCHEMA {schema}")).await.map_err(failed)?;
    }
    transaction
        .batch_execute(
            &database.sql("CREATE TABLE IF NOT EXISTS {schema}.schema_version (version integer NOT NULL)"),
        )
        .await
        .map_err(failed)?;
    let found: Option<i32> = transaction
        .query_opt(&database.sql("SELECT version FROM {schema}.schema_version"), &[])
        .await
        .map_err(failed)?
        .map(|row| row.get(0));
    let found_version = found.unwrap_or(0);
    if found_version > VERSION {
        // Dropping the transaction rolls it back: nothing changed.
        return Err(OpenError::NewerSchema {
            url: database.url().to_owned(),
            schema: schema.to_owned(),
            found: found_version,
            known: VERSION,
        });
    }
    if found_version == VERSION {
        return Ok(());
    }
    tracing::info!(
        url = database.url(),
        schema,
        from = found_version,
        to = VERSION,
        "migrating the PostgreSQL schema"
    );
    for migration in MIGRATIONS.iter().skip(found_version.max(0) as usize) {
        transaction.batch_execute(&database.sql(migration)).await.map_err(failed)?;
    }
    let record = match found {
        Some(_) => "UPDATE {schema}.schema_version SET version = $1",
        None => "INSERT INTO {schema}.schema_version (version) VALUES ($1)",
    };
    transaction.execute(&database.sql(record), &[&VERSION]).await.map_err(failed)?;
    transaction.commit().await.map_err(failed)
}
