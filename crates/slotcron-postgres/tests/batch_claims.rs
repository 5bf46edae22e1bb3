//! The batch claim (`claim_triggers`, set-based since schema version 10) against the
//! per-claim loop it replaced (version 9's, kept here as `claim_triggers_loop`): the same
//! answers and the same rows for random batches on random states, duplicates and
//! instants shared within a batch included; a trigger twice in a batch, and jobs given
//! out of order, through the coordinator; and concurrent batches and single claims of
//! the same triggers: one winner each, no error (a deadlock would be one).

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use common::{Schemas, connect, isolated};
use slotcron::jiff::{SignedDuration, Timestamp};
use slotcron::{Claim, ClaimOutcome, Coordinator, Hold};
use slotcron_postgres::{PostgresCoordinator, PostgresDatabase};
use tokio_postgres::types::ToSql;

/// Version 9's `claim_triggers`: each claim by `claim_trigger`, in the order of job,
/// trigger and position; -2 for a paused job's.
const LOOP: &str = "
CREATE FUNCTION {schema}.claim_triggers_loop(
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

/// xorshift64*: reproducible cases without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

const JOBS: [&str; 3] = ["a", "b", "c"];
/// Seconds from the transaction's `now()`: triggers, held claims, marks.
const OFFSETS: [i64; 8] = [-7_200, -100, -10, -5, 0, 5, 10, 3_600];
/// Microseconds after the trigger (recurring claims).
const AFTER_TRIGGER: [i64; 5] = [0, 5_000_000, 10_000_000, 60_000_000, 3_600_000_000];
/// Microseconds after the claim.
const AFTER_CLAIM: [i64; 3] = [0, 1_000_000, 60_000_000];

fn at(now: SystemTime, seconds: i64) -> SystemTime {
    if seconds >= 0 {
        now + Duration::from_secs(seconds as u64)
    } else {
        now - Duration::from_secs(seconds.unsigned_abs())
    }
}

/// One batch's arrays, as the coordinator sends them.
#[derive(Debug, Default)]
struct Batch {
    jobs: Vec<String>,
    keys: Vec<String>,
    ats: Vec<SystemTime>,
    after_trigger: Vec<Option<i64>>,
    after_claim: Vec<Option<i64>>,
    tokens: Vec<Option<i64>>,
}

impl Batch {
    fn random(rng: &mut Rng, now: SystemTime) -> Self {
        // Each key has an instant of its own, mostly kept by its claims.
        let key_at: Vec<i64> = (0..3).map(|_| rng.pick(&OFFSETS)).collect();
        let mut batch = Batch::default();
        for _ in 0..1 + rng.below(10) {
            let job = rng.pick(&JOBS);
            let key = rng.below(3) as usize;
            let offset = if rng.chance(75) { key_at[key] } else { rng.pick(&OFFSETS) };
            let after_trigger = (!rng.chance(25)).then(|| rng.pick(&AFTER_TRIGGER));
            // The coordinator sends both holds or neither; now and then not.
            let after_claim = match after_trigger {
                Some(_) => (!rng.chance(5)).then(|| rng.pick(&AFTER_CLAIM)),
                None => rng.chance(5).then(|| rng.pick(&AFTER_CLAIM)),
            };
            batch.jobs.push(job.to_owned());
            batch.keys.push(format!("{job}:{key}"));
            batch.ats.push(at(now, offset));
            batch.after_trigger.push(after_trigger);
            batch.after_claim.push(after_claim);
            // Few tokens, so that some match a held row's or another claim's.
            batch.tokens.push(Some(1 + rng.below(5) as i64));
        }
        batch
    }

    /// Whether two claims of one job share a key, or an instant.
    fn tangled(&self) -> bool {
        let mut keys = std::collections::HashSet::new();
        let mut ats = std::collections::HashSet::new();
        (0..self.jobs.len())
            .any(|i| !keys.insert((&self.jobs[i], &self.keys[i])) | !ats.insert((&self.jobs[i], self.ats[i])))
    }
}

/// The statements of a case, prepared once.
struct Statements {
    state: tokio_postgres::Statement,
    by_loop: tokio_postgres::Statement,
    set_based: tokio_postgres::Statement,
    dump: tokio_postgres::Statement,
}

impl Statements {
    async fn prepare(client: &tokio_postgres::Client, schema: &str) -> Self {
        let prepare =
            async |s: &str| client.prepare(&s.replace("{schema}", &format!("\"{schema}\""))).await.unwrap();
        let call = |function: &str| format!("SELECT {{schema}}.{function}($1, $2, $3, 'me', $4, $5, $6)");
        Self {
            state: prepare(
                "WITH claims AS (
                     INSERT INTO {schema}.claim (job, trigger_key, trigger_at, instance, claimed_at, expires_at,
                                                 claimant_token, fencing_token)
                     SELECT job, key, at, instance, now() - interval '1 hour', expires, claimant, fencing
                     FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::timestamptz[],
                                 $6::bigint[], $7::bigint[]) AS t(job, key, at, instance, expires, claimant, fencing)
                 ), marks AS (
                     INSERT INTO {schema}.claim_mark
                     SELECT job, coalesce(at, '-infinity') FROM unnest($8::text[], $9::timestamptz[]) AS t(job, at)
                 ), counters AS (
                     INSERT INTO {schema}.fencing SELECT * FROM unnest($10::text[], $11::bigint[])
                 )
                 INSERT INTO {schema}.job_pause SELECT job, now() FROM unnest($12::text[]) AS t(job)",
            )
            .await,
            by_loop: prepare(&call("claim_triggers_loop")).await,
            set_based: prepare(&call("claim_triggers")).await,
            dump: prepare(
                "SELECT concat_ws(E'\\n--\\n',
                     (SELECT string_agg(c::text, E'\\n' ORDER BY job, trigger_key) FROM {schema}.claim c),
                     (SELECT string_agg(m::text, E'\\n' ORDER BY job) FROM {schema}.claim_mark m),
                     (SELECT string_agg(f::text, E'\\n' ORDER BY job) FROM {schema}.fencing f))",
            )
            .await,
        }
    }
}

/// Random claims (held, expired, expiring at `now()`, one-shot; this instance's or
/// another's), marks, counters and pauses, written in the open transaction.
async fn random_state(
    client: &tokio_postgres::Transaction<'_>,
    statements: &Statements,
    rng: &mut Rng,
    now: SystemTime,
) {
    #[derive(Default)]
    struct Claims {
        jobs: Vec<&'static str>,
        keys: Vec<String>,
        ats: Vec<SystemTime>,
        instances: Vec<&'static str>,
        expires: Vec<Option<SystemTime>>,
        claimants: Vec<Option<i64>>,
        fencing: Vec<Option<i64>>,
    }
    let mut claims = Claims::default();
    let (mut marked, mut marks, mut counted, mut counters, mut paused) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for job in JOBS {
        for key in 0..3 {
            if rng.chance(35) {
                claims.jobs.push(job);
                claims.keys.push(format!("{job}:{key}"));
                claims.ats.push(at(now, rng.pick(&OFFSETS)));
                claims.instances.push(rng.pick(&["me", "other"]));
                claims
                    .expires
                    .push(rng.pick(&[None, Some(-1), Some(0), Some(1), Some(3_600)]).map(|s| at(now, s)));
                claims.claimants.push(rng.pick(&[None, Some(1), Some(2), Some(3), Some(4), Some(5)]));
                claims.fencing.push(rng.chance(80).then(|| 1 + rng.below(20) as i64));
            }
        }
        if rng.chance(60) {
            marked.push(job);
            marks.push(rng.chance(80).then(|| at(now, rng.pick(&OFFSETS))));
        }
        if rng.chance(60) {
            counted.push(job);
            counters.push(rng.below(20) as i64);
        }
        if rng.chance(15) {
            paused.push(job);
        }
    }
    let params: [&(dyn ToSql + Sync); 12] = [
        &claims.jobs,
        &claims.keys,
        &claims.ats,
        &claims.instances,
        &claims.expires,
        &claims.claimants,
        &claims.fencing,
        &marked,
        &marks,
        &counted,
        &counters,
        &paused,
    ];
    client.execute(&statements.state, &params).await.unwrap();
}

/// The answers of `function` for `batch`, and the claims, marks and counters after it.
async fn run(
    client: &tokio_postgres::Transaction<'_>,
    function: &tokio_postgres::Statement,
    dump: &tokio_postgres::Statement,
    batch: &Batch,
) -> (Vec<Option<i64>>, String) {
    let params: [&(dyn ToSql + Sync); 6] =
        [&batch.jobs, &batch.keys, &batch.ats, &batch.after_trigger, &batch.after_claim, &batch.tokens];
    let answers: Vec<Option<i64>> = client.query_one(function, &params).await.unwrap().get(0);
    let state: String = client.query_one(dump, &[]).await.unwrap().get(0);
    (answers, state)
}

/// Thousands of random batches on random states, each run by both functions in one
/// transaction (so at one `now()`): the same answers, the same rows.
#[tokio::test]
async fn the_set_based_batch_answers_and_writes_as_the_loop_did() {
    isolated(async |schemas: &mut Schemas| {
        drop(schemas.open().await);
        let schema = schemas.names()[0].clone();
        schemas.execute(&schema, LOOP).await;
        let mut client = connect().await;
        let statements = Statements::prepare(&client, &schema).await;
        let mut rng = Rng(0x5107_c7a0_0000_0001);
        let mut seen = BTreeMap::<&str, u32>::new();
        for case in 0..2_000 {
            let transaction = client.transaction().await.unwrap();
            let now: SystemTime = transaction.query_one("SELECT now()", &[]).await.unwrap().get(0);
            random_state(&transaction, &statements, &mut rng, now).await;
            let batch = Batch::random(&mut rng, now);
            transaction.batch_execute("SAVEPOINT before").await.unwrap();
            let (expected, expected_state) =
                run(&transaction, &statements.by_loop, &statements.dump, &batch).await;
            transaction.batch_execute("ROLLBACK TO SAVEPOINT before").await.unwrap();
            let (answers, state) = run(&transaction, &statements.set_based, &statements.dump, &batch).await;
            assert_eq!(answers, expected, "case {case}: answers to {batch:#?}");
            assert_eq!(state, expected_state, "case {case}: rows after {batch:#?}");
            transaction.rollback().await.unwrap();
            for answer in &answers {
                let kind = match answer {
                    None => "lost",
                    Some(-1) => "behind the mark",
                    Some(-2) => "paused",
                    Some(_) => "won or own",
                };
                *seen.entry(kind).or_default() += 1;
            }
            if batch.tangled() {
                *seen.entry("a key or an instant twice").or_default() += 1;
            }
            // Two answers with a token for one key: won twice (the first claim expired at
            // once), or the second claim found the first's row with its own token.
            for i in 0..answers.len() {
                for k in i + 1..answers.len() {
                    let same_key = (&batch.jobs[i], &batch.keys[i]) == (&batch.jobs[k], &batch.keys[k]);
                    if let (true, Some(first), Some(second)) = (same_key, answers[i], answers[k])
                        && first > 0
                        && second > 0
                    {
                        *seen.entry(if first == second { "echoed" } else { "won twice" }).or_default() += 1;
                    }
                }
            }
        }
        assert_eq!(seen.len(), 7, "every case came up: {seen:?}");
    })
    .await;
}

const MINUTE: Option<Hold> =
    Some(Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::ZERO });

fn instant(second: i64) -> Timestamp {
    "2100-01-01T00:00:00Z".parse::<Timestamp>().unwrap() + SignedDuration::from_secs(second)
}

/// A trigger twice in one batch (two claims of one replica, each with a token of its
/// own): the first wins, the second finds it held and loses; the other claims of the
/// batch are made as usual, and the job's token grows by one.
#[tokio::test]
async fn a_trigger_twice_in_one_batch_is_won_once() {
    isolated(async |schemas: &mut Schemas| {
        let coordinator = PostgresCoordinator::new(schemas.open().await);
        let (t0, t1) = (instant(0), instant(1));
        let (k0, k1) = (format!("a:{t0}"), format!("a:{t1}"));
        let claim = |key, trigger, hold| Claim { job: "a", trigger, key, instance: "r1", hold };
        let once = "once";
        let claims = [
            claim(k1.as_str(), t1, MINUTE),
            claim(k0.as_str(), t0, MINUTE),
            claim(k1.as_str(), t1, MINUTE),
            claim(once, t0, None),
            claim(once, t0, None),
        ];
        let outcomes: Vec<ClaimOutcome> =
            coordinator.claim_batch(&claims).await.into_iter().map(Result::unwrap).collect();
        let won = |fencing_token| ClaimOutcome::Won { fencing_token };
        // In the order of job, trigger and position: a at t0 (the one-shot first), then t1.
        assert_eq!(outcomes, [won(3), won(1), ClaimOutcome::Lost, won(2), ClaimOutcome::Lost]);
        let next = claim("a:next", instant(2), MINUTE);
        assert_eq!(coordinator.claim(&next).await.unwrap(), won(4));
    })
    .await;
}

/// Jobs given out of order, their triggers too: each job's tokens follow its triggers,
/// and each job's mark is its newest trigger.
#[tokio::test]
async fn a_batch_of_jobs_given_out_of_order_gets_tokens_in_trigger_order() {
    isolated(async |schemas: &mut Schemas| {
        let database = schemas.open().await;
        let schema = schemas.names()[0].clone();
        let coordinator = PostgresCoordinator::new(database);
        let order = [("c", 2), ("a", 1), ("b", 3), ("c", 0), ("a", 3), ("b", 0), ("a", 0), ("c", 1)];
        let keys: Vec<String> = order.iter().map(|(job, s)| format!("{job}:{}", instant(*s))).collect();
        let claims: Vec<Claim<'_>> = order
            .iter()
            .zip(&keys)
            .map(|((job, s), key)| Claim { job, trigger: instant(*s), key, instance: "r1", hold: MINUTE })
            .collect();
        let mut tokens: HashMap<&str, Vec<(i64, u64)>> = HashMap::new();
        for (((job, s), _), outcome) in order.iter().zip(&claims).zip(coordinator.claim_batch(&claims).await)
        {
            match outcome.unwrap() {
                ClaimOutcome::Won { fencing_token } => {
                    tokens.entry(job).or_default().push((*s, fencing_token))
                }
                other => panic!("{job} at {s}: {other:?}"),
            }
        }
        for (job, mut won) in tokens {
            won.sort();
            let tokens: Vec<u64> = won.iter().map(|(_, token)| *token).collect();
            assert_eq!(tokens, (1..=won.len() as u64).collect::<Vec<_>>(), "{job}: {won:?}");
        }
        let marks = "SELECT count(*) FROM {schema}.claim_mark
                     WHERE (job, trigger_at) IN (('a', '2100-01-01T00:00:03Z'), ('b', '2100-01-01T00:00:03Z'),
                                                 ('c', '2100-01-01T00:00:02Z'))";
        assert_eq!(schemas.scalar(&schema, marks).await, 3);
        let filled = "SELECT count(*) FROM {schema}.claim WHERE fencing_token IS NOT NULL";
        assert_eq!(schemas.scalar(&schema, filled).await, 8, "every row keeps its token");
    })
    .await;
}

/// Six replicas claim the same triggers (recurring ones of twelve jobs, one-shots of six)
/// at once, each in its own shuffled order, in batches of random sizes and as single
/// claims, two batches in flight per replica: every claim answers (no error: a deadlock
/// would be one), each trigger is won once, each job's tokens are 1 to its number of
/// triggers, and each recurring job's mark is its newest trigger.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_batches_and_single_claims_win_each_trigger_once() {
    isolated(async |schemas: &mut Schemas| {
        let schema = schemas.name();
        let mut triggers: Vec<(String, String, Timestamp, Option<Hold>)> = Vec::new();
        for job in 0..12 {
            for s in 0..15 {
                let job = format!("r{job}");
                let key = format!("{job}:{}", instant(s));
                triggers.push((job, key, instant(s), MINUTE));
            }
        }
        for job in 0..6 {
            let job = format!("o{job}");
            let trigger = instant(job.len() as i64);
            triggers.push((job.clone(), job, trigger, None));
        }
        let triggers = Arc::new(triggers);
        let mut replicas = Vec::new();
        for r in 0..6u64 {
            let database = PostgresDatabase::open(&common::database_url(), &schema).await.unwrap();
            let coordinator =
                Arc::new(PostgresCoordinator::new(database).response_timeout(Duration::from_secs(10)));
            let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (r + 1));
            let mut order: Vec<usize> = (0..triggers.len()).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, rng.below(i as u64 + 1) as usize);
            }
            let mut chunks = Vec::new();
            while !order.is_empty() {
                let size = (1 + rng.below(40) as usize).min(order.len());
                chunks.push(order.drain(..size).collect::<Vec<usize>>());
            }
            // Two lanes per replica, each claiming every other chunk.
            for lane in 0..2 {
                let chunks: Vec<Vec<usize>> = chunks.iter().skip(lane).step_by(2).cloned().collect();
                let (coordinator, triggers) = (coordinator.clone(), triggers.clone());
                replicas.push(tokio::spawn(async move {
                    let instance = format!("replica-{r}");
                    let mut won = Vec::new();
                    for chunk in chunks {
                        let claims: Vec<Claim<'_>> = chunk
                            .iter()
                            .map(|&i| {
                                let (job, key, trigger, hold) = &triggers[i];
                                Claim { job, key, trigger: *trigger, instance: &instance, hold: *hold }
                            })
                            .collect();
                        let outcomes = if claims.len() == 1 {
                            vec![coordinator.claim(&claims[0]).await]
                        } else {
                            coordinator.claim_batch(&claims).await
                        };
                        for (&i, outcome) in chunk.iter().zip(outcomes) {
                            match outcome.unwrap_or_else(|e| panic!("{}: {e}", triggers[i].1)) {
                                ClaimOutcome::Won { fencing_token } => won.push((i, fencing_token)),
                                ClaimOutcome::Lost => {}
                                other => panic!("{}: {other:?}", triggers[i].1),
                            }
                        }
                    }
                    won
                }));
            }
        }
        let mut winners: HashMap<usize, u32> = HashMap::new();
        let mut tokens: HashMap<&str, Vec<u64>> = HashMap::new();
        for replica in replicas {
            for (i, token) in replica.await.unwrap() {
                *winners.entry(i).or_default() += 1;
                tokens.entry(triggers[i].0.as_str()).or_default().push(token);
            }
        }
        for (i, trigger) in triggers.iter().enumerate() {
            assert_eq!(winners.get(&i), Some(&1), "{} is won once", trigger.1);
        }
        for (job, mut tokens) in tokens {
            tokens.sort();
            assert_eq!(tokens, (1..=tokens.len() as u64).collect::<Vec<_>>(), "{job}'s tokens");
        }
        let marks = "SELECT count(*) FROM {schema}.claim_mark WHERE trigger_at = '2100-01-01T00:00:14Z'";
        assert_eq!(
            schemas.scalar(&schema, marks).await,
            12,
            "each recurring job's mark is its newest trigger"
        );
        let unfilled = "SELECT count(*) FROM {schema}.claim WHERE fencing_token IS NULL";
        assert_eq!(schemas.scalar(&schema, unfilled).await, 0);
    })
    .await;
}

/// A claim of a batch made directly (job, key, trigger, the hold after the trigger and
/// after the claim in microseconds or a one-shot's `None`, claimant token).
type Direct<'a> = (&'a str, &'a str, SystemTime, Option<i64>, i64);

/// Calls the schema's `claim_triggers` for `claims` as instance `me`, on a connection of
/// its own, in a task.
fn claim_triggers(schema: &str, claims: &[Direct<'_>]) -> tokio::task::JoinHandle<Vec<Option<i64>>> {
    let sql = format!("SELECT \"{schema}\".claim_triggers($1, $2, $3, 'me', $4, $4, $5)");
    let jobs: Vec<String> = claims.iter().map(|c| c.0.to_owned()).collect();
    let keys: Vec<String> = claims.iter().map(|c| c.1.to_owned()).collect();
    let ats: Vec<SystemTime> = claims.iter().map(|c| c.2).collect();
    let holds: Vec<Option<i64>> = claims.iter().map(|c| c.3).collect();
    let tokens: Vec<i64> = claims.iter().map(|c| c.4).collect();
    tokio::spawn(async move {
        let client = connect().await;
        client.query_one(&sql, &[&jobs, &keys, &ats, &holds, &tokens]).await.unwrap().get(0)
    })
}

/// Waits until a call of the schema's `claim_triggers` waits for a lock.
async fn blocked(schema: &str) {
    let client = connect().await;
    let sql = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1";
    let pattern = format!("%\"{schema}\".claim_triggers%");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while client.query_one(sql, &[&pattern]).await.unwrap().get::<_, i64>(0) == 0 {
        assert!(std::time::Instant::now() < deadline, "no batch waits for a lock");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A transaction left open on a connection of its own, after `sql` (`{schema}` replaced).
async fn open_transaction(schema: &str, sql: &str) -> tokio_postgres::Client {
    let client = connect().await;
    client
        .batch_execute(&format!("BEGIN; {}", sql.replace("{schema}", &format!("\"{schema}\""))))
        .await
        .unwrap();
    client
}

fn hours(h: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(4_102_444_800 + h * 3_600)
}

const HOUR_US: Option<i64> = Some(3_600_000_000);

/// A batch that waited for a job's mark while another replica claimed one of its
/// triggers reads, under the lock (READ COMMITTED: the statement after the lock), both
/// that claim and the mark it moved: that trigger is lost, an older one whose claim may
/// have expired is refused by the mark, a newer one is won with the next token.
#[tokio::test]
async fn a_batch_that_waited_for_a_jobs_mark_reads_the_claims_made_meanwhile() {
    isolated(async |schemas: &mut Schemas| {
        drop(schemas.open().await);
        let schema = schemas.names()[0].clone();
        let now = SystemTime::now();
        let (older, taken, newer) = (
            now - Duration::from_secs(7_200),
            now - Duration::from_secs(3_600),
            now + Duration::from_secs(3_600),
        );
        let other = connect().await;
        other.batch_execute("BEGIN").await.unwrap();
        let claim =
            format!("SELECT \"{schema}\".claim_trigger('r', 'r:1', $1, 'other', 3600000000, 3600000000, 9)");
        other.query_one(&claim, &[&taken]).await.unwrap();
        let batch = claim_triggers(
            &schema,
            &[
                ("r", "r:2", newer, HOUR_US, 1),
                ("r", "r:1", taken, HOUR_US, 2),
                ("r", "r:0", older, HOUR_US, 3),
            ],
        );
        blocked(&schema).await;
        other.batch_execute("COMMIT").await.unwrap();
        assert_eq!(batch.await.unwrap(), [Some(2), None, Some(-1)]);
        let rows = "SELECT count(*) FROM {schema}.claim
                    WHERE (trigger_key, instance, fencing_token) IN (('r:1', 'other', 1), ('r:2', 'me', 2))";
        assert_eq!(schemas.scalar(&schema, rows).await, 2);
        assert_eq!(schemas.scalar(&schema, "SELECT count(*) FROM {schema}.claim").await, 2);
        let mark = "SELECT count(*) FROM {schema}.claim_mark m JOIN {schema}.claim c
                    ON c.job = m.job AND c.trigger_key = 'r:2' AND c.trigger_at = m.trigger_at";
        assert_eq!(schemas.scalar(&schema, mark).await, 1, "the mark is the newest trigger won");
    })
    .await;
}

/// A batch whose job's fencing counter was bumped while it waited (a manual run of the
/// job, claimed without the mark): its claims get the tokens after it, in trigger order,
/// and their rows keep the tokens answered.
#[tokio::test]
async fn a_batch_whose_counter_moved_meanwhile_keeps_the_tokens_it_answers() {
    isolated(async |schemas: &mut Schemas| {
        drop(schemas.open().await);
        let schema = schemas.names()[0].clone();
        let manual = open_transaction(
            &schema,
            "SELECT {schema}.claim_trigger('r', 'r:manual', '2100-01-01T00:00:00Z', 'other', 3600000000, 9)",
        )
        .await;
        let batch = claim_triggers(
            &schema,
            &[("r", "r:2", hours(2), HOUR_US, 1), ("r", "r:1", hours(1), HOUR_US, 2)],
        );
        blocked(&schema).await;
        manual.batch_execute("COMMIT").await.unwrap();
        assert_eq!(batch.await.unwrap(), [Some(3), Some(2)]);
        let rows = "SELECT count(*) FROM {schema}.claim
                    WHERE (trigger_key, fencing_token) IN (('r:manual', 1), ('r:1', 2), ('r:2', 3))";
        assert_eq!(schemas.scalar(&schema, rows).await, 3);
        assert_eq!(schemas.scalar(&schema, "SELECT token FROM {schema}.fencing WHERE job = 'r'").await, 3);
    })
    .await;
}

/// A batch retried after a lost reply while its first attempt still runs: the one-shot
/// claim the first attempt made (same claimant token) is found when the first commits
/// and answers its token; the job's other claim gets the token after it, in its row too.
#[tokio::test]
async fn a_batch_retried_while_its_first_attempt_runs_finds_its_own_claims() {
    isolated(async |schemas: &mut Schemas| {
        drop(schemas.open().await);
        let schema = schemas.names()[0].clone();
        let first = open_transaction(
            &schema,
            "SELECT {schema}.claim_trigger('o', 'o:2', '2100-01-01T02:00:00Z', 'me', NULL, NULL, 7)",
        )
        .await;
        let batch =
            claim_triggers(&schema, &[("o", "o:2", hours(2), None, 7), ("o", "o:1", hours(1), None, 8)]);
        blocked(&schema).await;
        first.batch_execute("COMMIT").await.unwrap();
        assert_eq!(batch.await.unwrap(), [Some(1), Some(2)]);
        let rows = "SELECT count(*) FROM {schema}.claim
                    WHERE (trigger_key, claimant_token, fencing_token) IN (('o:2', 7, 1), ('o:1', 8, 2))";
        assert_eq!(schemas.scalar(&schema, rows).await, 2);
        let marks = "SELECT count(*) FROM {schema}.claim_mark";
        assert_eq!(schemas.scalar(&schema, marks).await, 0, "one-shots have no mark");
    })
    .await;
}
