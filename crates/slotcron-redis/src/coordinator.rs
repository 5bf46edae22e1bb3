//! The Redis coordinator: one script call per claim, or per batch of claims.

use std::collections::HashMap;
use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::future::join_all;
use redis::cluster_routing::Slot;
use redis::{ErrorKind, RedisError, Script};
use slotcron::MAX_CLAIMS_PER_ROUND_TRIP;
use slotcron::jiff::Timestamp;
use slotcron::{
    AheadStart, AheadVoid, Claim, ClaimOutcome, Controls, Coordinator, CoordinatorError,
    CoordinatorErrorKind, CountedAnswer, CountedMark, Hold, RequestClaim,
};
use slotcron::{ClaimAttemptError, ClaimBatchAttempt, ClaimHolder, claim_batch_with_read_back};
use slotcron::{Handled, LiveMember, MemberDetails, StartMark, TriggerRef, Unstarted};
use slotcron::{Lease, LeaseGrant, LeaseRenewal};

use crate::claimant::{Token, holder};
use crate::connection::Connection;
use crate::keys::KeyLayout;
use crate::{RedisConfig, RedisCoordinatorError};

static CLAIM: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("claim.lua")));
static LEASE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lease.lua")));
static MEMBERS: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("members.lua")));
static AHEAD: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("ahead.lua")));

/// Arbitrates claims through one Redis server or a Redis Cluster, so that each trigger
/// runs on exactly one replica.
///
/// Claims are made by one Lua script (`EVALSHA`; the first call after the server starts
/// also loads it), one call for one claim or for a batch of up to
/// [`MAX_CLAIMS_PER_ROUND_TRIP`] ([`Coordinator::claim_batch`]), made one after the other
/// inside Redis, atomically: if the trigger key is absent it is set to `{fencing token}
/// {token} {instance}`, where the fencing token is one more than the job's last and the
/// token is 64 random bits per claim. A recurring claim expires at the absolute instant
/// [`Hold`] describes, computed in the script on the server's clock (`TIME`, once per
/// call; `SET ... PXAT`: Redis 6.2 or later), and the script keeps the job's high-water
/// mark in the same step, refusing a trigger behind it whose claim may have expired.
/// One-shots never expire unless [`RedisConfig::one_shot_retention`] is set. Claims are
/// never released. The script also reads the job's pause key (`{prefix}paused:{job}`, in
/// the same `MGET` as the job's state, for each job of a call): while it is set, nothing
/// is claimed ([`ClaimOutcome::Paused`]), at no extra round trip. Manual and backfilled
/// runs are claimed by the same script under their own keys (as a one-shot retained for
/// the claim's TTL, past any pause, with the job's fencing token), so fencing tokens grow
/// per job across both.
///
/// Each job's fencing token and mark live in one key, the job's state,
/// `{prefix}fencing:{job}` (`{prefix}{{job}}:fencing` in a cluster), as `{token} {mark
/// in ms}` (`{token}` alone before its first recurring claim, as `INCR` left the counter
/// of earlier releases, whose separate mark key `{prefix}mark:{job}` is read once, while
/// the state holds no mark, and no longer written). A script call reads every trigger
/// key in one `MGET`, the free triggers' job states and pauses in another, and writes a
/// `SET` per won claim and one `MSET` of the states. A replica of an earlier release
/// sharing the Redis fails its claims of a job once this release has written the job's
/// state with a mark (its `INCR` fails before it writes anything): it skips those
/// triggers, fail closed, until it is upgraded.
///
/// When the reply is lost (connection dropped, response timeout) the claim may have been
/// made; the coordinator reads the trigger key back, as
/// [`Coordinator`]'s "Lost replies" describes: its own token means won
/// (with the stored fencing token), another's means lost, no key means the script did not
/// run and the claim is tried once more; if Redis cannot be read, the claim fails and the
/// scheduler skips the trigger (fail closed).
///
/// On one server it takes [claims ahead](slotcron::Coordinator#claims-ahead): a batch of
/// them is the same script call with one more key, the owner's start latch of the instant
/// (`{prefix}fleet:ahead:{instant in ms}:{owner}`: `p` once claims ahead were made, `1`
/// once started, `0` once voided), which refuses every claim once voided; a claim ahead's
/// claimant starts with `^`. Starting and voiding are one call each of a third script
/// (`ahead.lua`, on the server's clock): a start sets the latch to `1` unless it is `0`,
/// marks the start of the claims ahead given (their entries leave the owner's register,
/// below: one call for a burst) and returns the paused jobs (`SMEMBERS` of the pause
/// index); a void sets it to `0` unless it is `1`, and deletes the owner's claims ahead
/// among the trigger keys given that are still unmarked.
///
/// It keeps [start marks](slotcron::Coordinator#start-marks-and-takeover): every claim the
/// claim script wins (at the instant, in a batch, ahead, or a request) is entered, in the
/// same script call, in its holder's register of unstarted claims, a hash from the
/// engine's trigger key to the holder's instance id: on one server one register per
/// instance, `{prefix}fleet:unstarted:{instance}`, so that a burst's claims cost one
/// `HSET` and their marks one `HDEL` (a claim costs one command of its own, its `SET`);
/// in a cluster one per job, `{prefix}{{job}}:unstarted`, on the job's slot. The entry is
/// the mark: a start mark (a fourth script, `start.lua`, one call per batch, per hash
/// slot in a cluster) removes it, leaving the claim's key as it is; a takeover rewrites
/// an unmarked claim of the gone holder as `{next fencing token}/{token} {new holder}`
/// (TTL kept) and moves the entry to the new holder's register. A claim whose key
/// expired before its mark, still listed, is made again for its holder's mark or its
/// taker, held for a day (or the one-shot retention, if longer). The claims ahead whose
/// runs start at their instant are marked by the owner's start of it, in the same call (an
/// `HMGET` and an `HDEL` of its register). A void of claims ahead drops their entries with
/// them, and never drops a marked claim. Each entry costs its
/// trigger key's and instance id's length plus about 15 bytes (a register up to 128
/// entries) to 60 bytes (above), for as long as its claim is in flight.
///
/// **Upgrading** from a release that marked a claim in place (`!` before its token) and
/// kept a register per job on one server: stop every daemon of the fleet, then start the
/// new release. Its takeovers do not read the older registers, and an older release
/// would take a new release's marked claims for unmarked ones; a claim an older release
/// marked still counts as marked.
///
/// Leases (the overlap policies') are one call of another script each: the job's key
/// `{prefix}lease:{job}` holds its owner with the lease's TTL, and every renewal or
/// release first compares the stored owner, so a lease that expired and was taken by
/// another replica is never extended by the first. A lease call whose reply is lost is
/// an error: the engine treats an unanswered acquisition as a skip and retries an
/// unanswered renewal until the lease's TTL has passed.
///
/// The fleet's [membership](slotcron::Coordinator#membership) is a sorted set of
/// instance ids scored by when each lapses on the server's clock, renewed by one script
/// call per heartbeat (`TIME`, `ZREMRANGEBYSCORE`, `ZADD`, `ZRANGE`); leaving is one
/// `ZREM`. Which triggers are still unclaimed is one `MGET` of their keys and of their
/// jobs' pause keys (in a cluster the client splits it by slot). An owner's [`Handled`] tally of an instant is a hash
/// of two counters, added to with one pipeline (`HINCRBY` twice, `PEXPIRE`); the tallies
/// of several owners are one pipeline of `HMGET`s.
///
/// On one server the connection is a `redis` connection manager: multiplexed, and
/// re-established by itself after Redis restarts. A failover to a replica that had not
/// received a claim can let a trigger run twice.
///
/// On a Redis Cluster (a `redis+cluster://` URL) it is the `redis` crate's cluster
/// client: each claim goes to the node serving its job's hash slot (every key of a job
/// carries the job's name as hash tag, see [`RedisConfig::key_prefix`]), so it stays one
/// atomic script on one node; a batch is one script call per hash slot among its claims,
/// all in flight at once (the client pipelines those of one node). A MOVED reply (the slot changed owner) is followed; a node
/// that is down or failing over fails the claims of its slots (the scheduler skips those
/// triggers: fail closed) until the client, which reconnects and refreshes its slot map by
/// itself, reaches the slot's new or restarted master. The client never sends a claim
/// again on its own after a lost reply: the coordinator reads the claim back, as above.
/// As on one server, a failover to a replica that had not received a claim can let that
/// trigger run twice.
#[derive(Clone)]
pub struct RedisCoordinator {
    pub(crate) connection: Connection,
    pub(crate) keys: KeyLayout,
    pub(crate) one_shot_retention: Option<Duration>,
}

/// One claim as the claim script takes it: a trigger's, or a run's an operator asked for.
struct Scripted<'a> {
    job: &'a str,
    /// The engine's trigger key: the claim's field in its register of unstarted claims
    /// ([`KeyLayout::unstarted`]).
    field: &'a str,
    /// The key in the layout ([`KeyLayout::trigger`]).
    key: String,
    instance: &'a str,
    /// The instant it stands for, in milliseconds since the Unix epoch.
    trigger_ms: i64,
    /// [`RedisCoordinator::hold_args`]: after the trigger (`None`: not recurring, `""`
    /// to the script) and after the claim (or the retention), in ms.
    after_trigger: Option<u64>,
    after_claim: u64,
    /// Whether the job's pause refuses it.
    pausable: bool,
}

/// The start latch of one owner's claims ahead of one instant, as the claim and the
/// ahead scripts take it.
struct Latch {
    key: String,
    /// When it expires (`PXAT`), in milliseconds since the Unix epoch: as long after
    /// `until` as `until` is after the instant.
    expires_ms: i64,
}

impl Latch {
    fn new(keys: &KeyLayout, owner: &str, at: Timestamp, until: Timestamp) -> Self {
        let (at_ms, until_ms) = (at.as_millisecond(), until.as_millisecond());
        Self { key: keys.ahead(owner, at_ms), expires_ms: until_ms.saturating_add((until_ms - at_ms).max(1)) }
    }

    /// Runs `op` ("start" or "void") of the ahead script over this latch, `keys` and
    /// `args` (after the script's first four).
    async fn call<T: redis::FromRedisValue>(
        &self,
        connection: &Connection,
        (op, until, owner): (&str, Timestamp, &str),
        keys: &[String],
        args: &[&str],
    ) -> Result<T, CoordinatorError> {
        let mut script = AHEAD.key(&self.key);
        for key in keys {
            script.key(key);
        }
        script.arg(op).arg(until.as_millisecond()).arg(self.expires_ms).arg(owner);
        for arg in args {
            script.arg(*arg);
        }
        connection.invoke::<T>(&script).await.map_err(|e| {
            let what = format!("{op} of the claims ahead at {}: {e}", self.key);
            if outcome_unknown(&e) { CoordinatorError::outcome_unknown(what) } else { call_failed(what, &e) }
        })
    }
}

impl RedisCoordinator {
    /// Connects to Redis.
    ///
    /// # Errors
    /// [`RedisCoordinatorError::Config`] for an invalid setting (including the URL), and
    /// [`RedisCoordinatorError::Connect`] if the first connection fails (unreachable,
    /// TLS, authentication, database).
    pub async fn connect(config: RedisConfig) -> Result<Self, RedisCoordinatorError> {
        config.check()?;
        let (connection, keys) = Connection::open(&config).await?;
        Ok(Self { connection, keys, one_shot_retention: config.one_shot_retention })
    }

    /// The script's hold arguments, in milliseconds rounded up: after the trigger and
    /// after the claim for a recurring claim; none and the retention (`0`: for ever) for
    /// a one-shot.
    fn hold_args(&self, hold: Option<Hold>) -> (Option<u64>, u64) {
        match hold {
            Some(hold) => (Some(ceil_ms(hold.after_trigger())), ceil_ms(hold.after_claim())),
            None => (None, self.one_shot_retention.map_or(0, ceil_ms)),
        }
    }

    /// A trigger's claim as the script takes it.
    fn scripted<'a>(&self, claim: &Claim<'a>) -> Scripted<'a> {
        let (after_trigger, after_claim) = self.hold_args(claim.hold);
        Scripted {
            job: claim.job,
            field: claim.key,
            key: self.keys.trigger(claim.job, claim.key),
            instance: claim.instance,
            trigger_ms: claim.trigger.as_millisecond(),
            after_trigger,
            after_claim,
            pausable: true,
        }
    }

    /// Claims `claims`, all of whose keys hash to one slot in a cluster (any on one
    /// server), in one script call: one result per claim, in order. A lost reply is read
    /// back for every claim of the call ([`claim_batch_with_read_back`]).
    async fn claim_group(
        &self,
        claims: &[&Scripted<'_>],
        ahead: Option<&Latch>,
    ) -> Vec<Result<ClaimOutcome, CoordinatorError>> {
        let tokens = match Token::several(claims.len()) {
            Ok(tokens) => tokens,
            Err(e) => {
                let e = format!("no random claim token: {e}");
                return claims.iter().map(|_| Err(CoordinatorError::unavailable(e.clone()))).collect();
            }
        };
        let keys: Vec<&str> = claims.iter().map(|c| c.key.as_str()).collect();
        let name = |i: usize| format!("claim of {}", keys[i]);
        claim_batch_with_read_back(
            claims.len(),
            &name,
            |pending: Vec<usize>| self.run_script(claims, &keys, &tokens, ahead, pending),
            |pending: Vec<usize>| self.read_holders(&keys, &tokens, pending),
        )
        .await
    }

    /// Claims `chunk` (at most [`MAX_CLAIMS_PER_ROUND_TRIP`] claims) on one server in one
    /// script call, ahead of their instant if `ahead` is given.
    async fn claim_chunk(
        &self,
        chunk: &[Claim<'_>],
        ahead: Option<&Latch>,
    ) -> Vec<Result<ClaimOutcome, CoordinatorError>> {
        let scripted: Vec<Scripted<'_>> = chunk.iter().map(|claim| self.scripted(claim)).collect();
        self.claim_group(&scripted.iter().collect::<Vec<_>>(), ahead).await
    }

    /// Runs the claim script once for the claims `pending` (indices into `claims`).
    async fn run_script(
        &self,
        claims: &[&Scripted<'_>],
        keys: &[&str],
        tokens: &[Token],
        ahead: Option<&Latch>,
        pending: Vec<usize>,
    ) -> ClaimBatchAttempt<RedisError> {
        let mut script = CLAIM.prepare_invoke();
        for &i in &pending {
            let claim = claims[i];
            script
                .key(keys[i])
                .key(self.keys.fencing(claim.job))
                .key(self.keys.mark(claim.job))
                .key(self.keys.paused(claim.job))
                .key(self.keys.unstarted(claim.job, claim.instance))
                .arg(tokens[i].claimant(claim.instance, ahead.is_some()))
                .arg(claim.trigger_ms)
                .arg(claim.after_trigger.map_or(String::new(), |ms| ms.to_string()))
                .arg(claim.after_claim)
                .arg(if claim.pausable { "1" } else { "0" })
                .arg(claim.field);
        }
        if let Some(latch) = ahead {
            script.key(&latch.key).arg(latch.expires_ms);
        }
        // Per claim: the new fencing token when won, 0 when taken, -1 when behind the
        // mark, -2 when the job's state key holds something else, -3 when paused.
        let answers = match self.connection.invoke::<Vec<i64>>(&script).await {
            Ok(answers) if answers.len() == pending.len() => answers,
            Ok(answers) => {
                let e = format!("{} answers to {} claims", answers.len(), pending.len());
                return Err(ClaimAttemptError::ReplyLost(RedisError::from((
                    ErrorKind::Parse,
                    "claim script",
                    e,
                ))));
            }
            Err(e) if outcome_unknown(&e) => return Err(ClaimAttemptError::ReplyLost(e)),
            Err(e) if refused(&e) => return Err(ClaimAttemptError::Refused(e)),
            Err(e) => return Err(ClaimAttemptError::NotMade(e)),
        };
        Ok(pending
            .iter()
            .zip(answers)
            .map(|(&i, answer)| match answer {
                0 => Ok(ClaimOutcome::Lost),
                -1 => Ok(ClaimOutcome::BehindMark),
                -3 => Ok(ClaimOutcome::Paused),
                -2 => Err(CoordinatorError::unavailable(format!(
                    "claim of {} failed: the job's state {} holds a value slotcron did not write",
                    keys[i],
                    self.keys.fencing(claims[i].job)
                ))),
                fencing_token => Ok(ClaimOutcome::Won { fencing_token: fencing_token as u64 }),
            })
            .collect())
    }

    /// Runs one operation of the lease script.
    async fn lease_call(
        &self,
        op: &str,
        job: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<i64, CoordinatorError> {
        let ttl_ms = u64::try_from(ttl.as_millis().max(1)).unwrap_or(u64::MAX);
        let key = self.keys.lease(job);
        let mut script = LEASE.key(&key);
        script.arg(op).arg(owner).arg(ttl_ms);
        self.connection
            .invoke::<i64>(&script)
            .await
            .map_err(|e| CoordinatorError::unavailable(format!("lease of {key}: {op}: {e}")))
    }

    /// Who holds the trigger keys `pending` (indices into `keys`) now: one `MGET`.
    async fn read_holders(
        &self,
        keys: &[&str],
        tokens: &[Token],
        pending: Vec<usize>,
    ) -> Result<Vec<ClaimHolder>, RedisError> {
        let asked: Vec<&str> = pending.iter().map(|&i| keys[i]).collect();
        let values = self.connection.mget(&asked).await?;
        Ok(pending.iter().zip(values).map(|(&i, value)| holder(value.as_deref(), &tokens[i])).collect())
    }
}

/// A call that failed with `error`, described by `what`: the coordinator's error, of kind
/// `unauthorized` when Redis refused the credentials (`NOAUTH`, `WRONGPASS`, `NOPERM`, or a
/// reconnection's `AUTH` failing), else `unavailable`.
pub(crate) fn call_failed(what: String, error: &RedisError) -> CoordinatorError {
    match refused(error) {
        true => CoordinatorError::new(CoordinatorErrorKind::Unauthorized, what),
        false => CoordinatorError::unavailable(what),
    }
}

/// Whether Redis refused the credentials or a command (`NOAUTH`, `WRONGPASS`, `NOPERM`,
/// or a reconnection's `AUTH` failing): asking again does not help until the
/// configuration is fixed.
fn refused(error: &RedisError) -> bool {
    error.kind() == ErrorKind::AuthenticationFailed
        || matches!(error.code(), Some("NOAUTH" | "WRONGPASS" | "NOPERM"))
}

/// Whether an error leaves the script's outcome unknown: the request may have reached
/// Redis but the reply did not come back whole. A reply from Redis (an error message, a
/// refused command) means the script did not run.
pub(crate) fn outcome_unknown(error: &RedisError) -> bool {
    matches!(error.kind(), ErrorKind::Io | ErrorKind::Parse)
}

/// Splits `keys` into the groups one script call may take: all of them on one server;
/// those of one hash slot in a cluster (a script's keys must share a slot). Indices into
/// `keys`.
pub(crate) fn slot_groups(connection: &Connection, keys: &[String]) -> Vec<Vec<usize>> {
    if !connection.is_cluster() {
        return vec![(0..keys.len()).collect()];
    }
    let mut slots: HashMap<Slot, Vec<usize>> = HashMap::new();
    for (i, key) in keys.iter().enumerate() {
        slots.entry(Slot::for_key(key.as_bytes())).or_default().push(i);
    }
    slots.into_values().collect()
}

/// A duration in whole milliseconds, rounded up (at least 1).
pub(crate) fn ceil_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos().div_ceil(1_000_000).max(1)).unwrap_or(u64::MAX)
}

#[async_trait]
impl Coordinator for RedisCoordinator {
    async fn claim(&self, claim: &Claim<'_>) -> Result<ClaimOutcome, CoordinatorError> {
        let mut outcome = self.claim_group(&[&self.scripted(claim)], None).await;
        outcome.pop().unwrap_or_else(|| Err(CoordinatorError::outcome_unknown("no answer for the claim")))
    }

    /// One script call per chunk of [`MAX_CLAIMS_PER_ROUND_TRIP`] claims on one server,
    /// the chunks one after the other; in a cluster, one script call per hash slot of the
    /// chunk (a script's keys must share a slot), all of the chunk's calls in flight at
    /// once (the client pipelines those of one node).
    async fn claim_batch(&self, claims: &[Claim<'_>]) -> Vec<Result<ClaimOutcome, CoordinatorError>> {
        let mut outcomes = Vec::with_capacity(claims.len());
        for chunk in claims.chunks(MAX_CLAIMS_PER_ROUND_TRIP) {
            if !self.connection.is_cluster() {
                outcomes.extend(self.claim_chunk(chunk, None).await);
                continue;
            }
            let chunk: Vec<Scripted<'_>> = chunk.iter().map(|claim| self.scripted(claim)).collect();
            let keys: Vec<String> = chunk.iter().map(|claim| claim.key.clone()).collect();
            let groups = slot_groups(&self.connection, &keys);
            let answers = join_all(groups.iter().map(|group| {
                let claims: Vec<&Scripted<'_>> = group.iter().map(|&i| &chunk[i]).collect();
                async move { self.claim_group(&claims, None).await }
            }))
            .await;
            let mut chunk_outcomes: Vec<Option<Result<ClaimOutcome, CoordinatorError>>> =
                (0..chunk.len()).map(|_| None).collect();
            for (group, answers) in groups.iter().zip(answers) {
                for (&i, answer) in group.iter().zip(answers) {
                    chunk_outcomes[i] = Some(answer);
                }
            }
            outcomes.extend(chunk_outcomes.into_iter().map(|outcome| {
                outcome.unwrap_or_else(|| Err(CoordinatorError::outcome_unknown("no answer for the claim")))
            }));
        }
        outcomes
    }

    /// The claim script, as for a one-shot retained for the claim's TTL that no pause
    /// refuses: the job's fencing counter, one round trip, a lost reply read back.
    async fn claim_request(&self, claim: &RequestClaim<'_>) -> Result<ClaimOutcome, CoordinatorError> {
        let scripted = Scripted {
            job: claim.job,
            field: claim.key,
            key: self.keys.trigger(claim.job, claim.key),
            instance: claim.instance,
            trigger_ms: claim.trigger.as_millisecond(),
            after_trigger: None,
            after_claim: ceil_ms(claim.ttl),
            pausable: false,
        };
        let mut outcome = self.claim_group(&[&scripted], None).await;
        outcome.pop().unwrap_or_else(|| Err(CoordinatorError::outcome_unknown("no answer for the claim")))
    }

    fn controls(&self) -> Option<&dyn Controls> {
        Some(self)
    }

    /// On one server; a cluster's claims are spread over its nodes instead (a claim
    /// script's keys share one hash slot, which a latch per owner and instant would not).
    fn claims_ahead(&self) -> bool {
        !self.connection.is_cluster()
    }

    /// The claim script, with the owner's start latch of `at` as one more key: chunks of
    /// [`MAX_CLAIMS_PER_ROUND_TRIP`] claims, one after the other.
    async fn claim_batch_ahead(
        &self,
        owner: &str,
        at: Timestamp,
        claims: &[Claim<'_>],
        until: Timestamp,
    ) -> Vec<Result<ClaimOutcome, CoordinatorError>> {
        if !self.claims_ahead() {
            let e = || CoordinatorError::unavailable("claims ahead are not taken in a Redis Cluster");
            return claims.iter().map(|_| Err(e())).collect();
        }
        let latch = Latch::new(&self.keys, owner, at, until);
        let mut outcomes = Vec::with_capacity(claims.len());
        for chunk in claims.chunks(MAX_CLAIMS_PER_ROUND_TRIP) {
            outcomes.extend(self.claim_chunk(chunk, Some(&latch)).await);
        }
        outcomes
    }

    /// One call of the ahead script, which also reads the set of paused jobs and marks the
    /// start of `claims` (their entries leave `owner`'s register of unstarted claims). A
    /// start whose reply was lost, or that finds the latch started already, is sent once
    /// more with the claims' trigger keys: a start is idempotent (a latch already `1`
    /// answers started, and a claim marked before still holds `owner`'s value).
    async fn start_ahead(
        &self,
        owner: &str,
        at: Timestamp,
        claims: &[TriggerRef<'_>],
        until: Timestamp,
    ) -> Result<AheadStart, CoordinatorError> {
        let latch = Latch::new(&self.keys, owner, at, until);
        let mut keys = vec![self.keys.paused_index(), self.keys.unstarted("", owner)];
        let fields: Vec<&str> = claims.iter().map(|c| c.key).collect();
        let start = ("start", until, owner);
        let first: Result<Option<(Vec<String>, Vec<i64>)>, _> =
            latch.call(&self.connection, start, &keys, &fields).await;
        // Sent again (its reply lost, or the latch started already): with the trigger keys,
        // which tell a claim marked before from one taken over.
        let again = match &first {
            Err(e) => e.kind() == CoordinatorErrorKind::OutcomeUnknown,
            Ok(started) => started.as_ref().is_some_and(|(_, marked)| marked.contains(&-1)),
        };
        let started = if again {
            keys.extend(claims.iter().map(|c| self.keys.trigger(c.job, c.key)));
            latch.call(&self.connection, start, &keys, &fields).await?
        } else {
            first?
        };
        Ok(match started {
            Some((paused, marked)) if marked.len() == claims.len() => {
                AheadStart::Started { paused, marked: marked.into_iter().map(|m| m == 1).collect() }
            }
            Some((_, marked)) => {
                let reason = format!("the start marked {} claims of {}", marked.len(), claims.len());
                return Err(CoordinatorError::outcome_unknown(reason));
            }
            None => AheadStart::Voided,
        })
    }

    /// One call of the ahead script over the latch, the trigger keys and their jobs'
    /// owner's registers of unstarted claims (a claim ahead dropped leaves its register too).
    async fn void_ahead(
        &self,
        owner: &str,
        at: Timestamp,
        triggers: &[TriggerRef<'_>],
        until: Timestamp,
    ) -> Result<AheadVoid, CoordinatorError> {
        let latch = Latch::new(&self.keys, owner, at, until);
        let keys: Vec<String> = triggers
            .iter()
            .map(|t| self.keys.trigger(t.job, t.key))
            .chain(triggers.iter().map(|t| self.keys.unstarted(t.job, owner)))
            .collect();
        let fields: Vec<&str> = triggers.iter().map(|t| t.key).collect();
        let answer: i64 = latch.call(&self.connection, ("void", until, owner), &keys, &fields).await?;
        Ok(match answer {
            1 => AheadVoid::Started,
            0 => AheadVoid::Voided { ahead: false },
            _ => AheadVoid::Voided { ahead: true },
        })
    }

    fn keeps_start_marks(&self) -> bool {
        true
    }

    /// Per chunk of [`MAX_CLAIMS_PER_ROUND_TRIP`] marks, on one server one call of the
    /// mark script (one key per claim; a claim whose key is gone then goes through the
    /// start script's `mark`, which makes it again), in a cluster one call of the start
    /// script's `mark` per hash slot, all in flight at once; a claim is marked by leaving
    /// its register of unstarted claims (one `HDEL` per register), its key as it was. A lost reply is sent once more (a mark is
    /// idempotent). In a cluster, a node that fails fails the whole call, though the
    /// marks other nodes made stand (their runs then do not start: fail closed).
    async fn mark_starts(
        &self,
        instance: &str,
        marks: &[StartMark<'_>],
    ) -> Result<Vec<bool>, CoordinatorError> {
        self.mark_starts_of(instance, marks).await
    }

    fn counts_runs(&self) -> bool {
        true
    }

    /// One call of the start script's counted `mark` per chunk (per hash slot in a
    /// cluster), which adds each run's trigger key to its job's set of counted runs
    /// (`{prefix}runs:{job}`, `{prefix}{{job}}:runs`) unless the set holds `max_runs`
    /// keys already.
    async fn mark_counted_starts(
        &self,
        instance: &str,
        marks: &[CountedMark<'_>],
    ) -> Result<Vec<CountedAnswer>, CoordinatorError> {
        self.mark_counted_starts_of(instance, marks).await
    }

    /// One `SCARD` per job (a pipeline on one server).
    async fn run_counts(&self, jobs: &[&str]) -> Result<Vec<u64>, CoordinatorError> {
        self.run_counts_of(jobs).await
    }

    /// On one server, one `HGETALL` of `instance`'s register of unstarted claims (every
    /// job's: `jobs` is not needed); in a cluster, one `HGETALL` of each of `jobs`'
    /// registers, all in flight at once, in chunks of [`MAX_CLAIMS_PER_ROUND_TRIP`] jobs.
    async fn unstarted(&self, instance: &str, jobs: &[&str]) -> Result<Vec<Unstarted>, CoordinatorError> {
        self.unstarted_of(instance, jobs).await
    }

    /// The start script's `take`, grouped as [`Coordinator::mark_starts`] is: a claim of
    /// `from` unmarked gets the job's next fencing token and `to` as holder (TTL kept); one
    /// whose key expired unmarked and that `from`'s register entry still lists is made
    /// afresh for `to`, held for a day (or the one-shot retention, if longer). A lost
    /// reply is sent once more (a takeover is idempotent).
    async fn take_over(
        &self,
        from: &str,
        to: &str,
        claims: &[TriggerRef<'_>],
    ) -> Vec<Result<ClaimOutcome, CoordinatorError>> {
        self.take_over_of(from, to, claims).await
    }

    async fn acquire_lease(&self, lease: &Lease<'_>) -> Result<LeaseGrant, CoordinatorError> {
        let acquired = self.lease_call("acquire", lease.job, lease.owner, lease.ttl).await? == 1;
        Ok(if acquired { LeaseGrant::Acquired } else { LeaseGrant::Held })
    }

    async fn renew_lease(&self, lease: &Lease<'_>) -> Result<LeaseRenewal, CoordinatorError> {
        Ok(match self.lease_call("renew", lease.job, lease.owner, lease.ttl).await? {
            1 => LeaseRenewal::Renewed,
            2 => LeaseRenewal::CancelRequested,
            _ => LeaseRenewal::Lost,
        })
    }

    async fn release_lease(&self, lease: &Lease<'_>) -> Result<(), CoordinatorError> {
        self.lease_call("release", lease.job, lease.owner, lease.ttl).await.map(drop)
    }

    async fn cancel_lease(&self, job: &str) -> Result<bool, CoordinatorError> {
        Ok(self.lease_call("cancel", job, "", Duration::ZERO).await? == 1)
    }

    async fn time(&self) -> Result<Option<Timestamp>, CoordinatorError> {
        let mut connection = self.connection.clone();
        let (seconds, micros): (i64, i64) = redis::cmd("TIME")
            .query_async(&mut connection)
            .await
            .map_err(|e| call_failed(format!("TIME: {e}"), &e))?;
        let time = Timestamp::from_microsecond(seconds.saturating_mul(1_000_000).saturating_add(micros))
            .map_err(|e| CoordinatorError::unavailable(format!("TIME: {e}")))?;
        Ok(Some(time))
    }

    async fn heartbeat(
        &self,
        instance: &str,
        ttl: Duration,
    ) -> Result<Option<Vec<String>>, CoordinatorError> {
        let mut script = MEMBERS.key(self.keys.members());
        script.arg(instance).arg(ceil_ms(ttl));
        let members = self
            .connection
            .invoke::<Vec<String>>(&script)
            .await
            .map_err(|e| call_failed(format!("membership heartbeat: {e}"), &e))?;
        Ok(Some(members))
    }

    /// `ZREM` from the membership, then `HDEL` of the details (two keys, two slots in a
    /// cluster).
    async fn leave(&self, instance: &str) -> Result<(), CoordinatorError> {
        let mut connection = self.connection.clone();
        let leaving = |e: RedisError| CoordinatorError::unavailable(format!("leaving the membership: {e}"));
        redis::cmd("ZREM")
            .arg(self.keys.members())
            .arg(instance)
            .query_async::<i64>(&mut connection)
            .await
            .map_err(leaving)?;
        redis::cmd("HDEL")
            .arg(self.keys.details())
            .arg(instance)
            .query_async::<i64>(&mut connection)
            .await
            .map_err(leaving)?;
        Ok(())
    }

    /// One `HSET` of the details hash.
    async fn publish_details(&self, instance: &str, details: &MemberDetails) -> Result<(), CoordinatorError> {
        let mut connection = self.connection.clone();
        redis::cmd("HSET")
            .arg(self.keys.details())
            .arg(instance)
            .arg(details.to_json())
            .query_async::<i64>(&mut connection)
            .await
            .map(drop)
            .map_err(|e| call_failed(format!("publishing the details of {instance:?}: {e}"), &e))
    }

    /// `TIME`, the members that have not lapsed with their lapse (`ZRANGEBYSCORE …
    /// WITHSCORES`), and the details hash (`HGETALL`): three commands, for a check at
    /// join or a fleet view.
    async fn members(&self) -> Result<Vec<LiveMember>, CoordinatorError> {
        let now = self.time().await?.map_or(0, |now| now.as_millisecond());
        let mut connection = self.connection.clone();
        let failed = |e: RedisError| call_failed(format!("reading the members: {e}"), &e);
        let live: Vec<(String, i64)> = redis::cmd("ZRANGEBYSCORE")
            .arg(self.keys.members())
            .arg(format!("({now}"))
            .arg("+inf")
            .arg("WITHSCORES")
            .query_async(&mut connection)
            .await
            .map_err(failed)?;
        let mut details: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(self.keys.details())
            .query_async(&mut connection)
            .await
            .map_err(failed)?;
        let mut listed = Vec::with_capacity(live.len());
        for (instance, lapses_ms) in live {
            let lapses_at = Timestamp::from_millisecond(lapses_ms).map_err(|e| {
                CoordinatorError::unavailable(format!("the lapse of member {instance:?}: {e}"))
            })?;
            let details = match details.remove(&instance) {
                Some(json) => MemberDetails::from_json(&instance, &json)?,
                None => MemberDetails::default(),
            };
            listed.push(LiveMember { instance, lapses_at, details });
        }
        listed.sort_by(|a, b| a.instance.cmp(&b.instance));
        Ok(listed)
    }

    /// One `MGET` of the jobs' states (`{token} {mark}`) and of the mark keys of earlier
    /// releases (read where a state holds no mark).
    async fn high_water_marks(&self, jobs: &[&str]) -> Result<Vec<Option<Timestamp>>, CoordinatorError> {
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = jobs
            .iter()
            .map(|job| self.keys.fencing(job))
            .chain(jobs.iter().map(|job| self.keys.mark(job)))
            .collect();
        let asked: Vec<&str> = keys.iter().map(String::as_str).collect();
        let values = self.connection.mget(&asked).await.map_err(|e| {
            CoordinatorError::unavailable(format!("reading the high-water marks of {} jobs: {e}", jobs.len()))
        })?;
        if values.len() != keys.len() {
            return Err(CoordinatorError::unavailable(format!(
                "{} values for {} keys",
                values.len(),
                keys.len()
            )));
        }
        let (states, old) = values.split_at(jobs.len());
        let ms = |value: &str| value.parse::<i64>().ok().and_then(|ms| Timestamp::from_millisecond(ms).ok());
        Ok(states
            .iter()
            .zip(old)
            .map(|(state, old)| match state.as_deref().and_then(|s| s.split_once(' ')) {
                Some((_, mark)) => ms(mark),
                None => old.as_deref().and_then(ms),
            })
            .collect())
    }

    async fn unclaimed(&self, triggers: &[TriggerRef<'_>]) -> Result<Vec<bool>, CoordinatorError> {
        if triggers.is_empty() {
            return Ok(Vec::new());
        }
        // The trigger keys, then each trigger's job's pause key.
        let keys: Vec<String> = triggers
            .iter()
            .map(|t| self.keys.trigger(t.job, t.key))
            .chain(triggers.iter().map(|t| self.keys.paused(t.job)))
            .collect();
        let asked: Vec<&str> = keys.iter().map(String::as_str).collect();
        let values = self.connection.mget(&asked).await.map_err(|e| {
            CoordinatorError::unavailable(format!("reading {} trigger keys: {e}", triggers.len()))
        })?;
        let (held, paused) = values.split_at(triggers.len().min(values.len()));
        if paused.len() != triggers.len() {
            return Err(CoordinatorError::unavailable(format!(
                "{} values for {} keys",
                values.len(),
                keys.len()
            )));
        }
        Ok(held.iter().zip(paused).map(|(held, paused)| held.is_none() && paused.is_none()).collect())
    }

    async fn add_handled(
        &self,
        owner: &str,
        at: Timestamp,
        handled: Handled,
        ttl: Duration,
    ) -> Result<(), CoordinatorError> {
        let key = self.keys.handled(owner, at.as_millisecond());
        let signed =
            |n: u64| i64::try_from(n).map_err(|_| CoordinatorError::unavailable("tally out of range"));
        let mut pipe = redis::pipe();
        pipe.cmd("HINCRBY").arg(&key).arg("n").arg(signed(handled.count)?).ignore();
        pipe.cmd("HINCRBY").arg(&key).arg("f").arg(signed(handled.fingerprint)?).ignore();
        pipe.cmd("PEXPIRE").arg(&key).arg(ceil_ms(ttl)).ignore();
        let mut connection = self.connection.clone();
        pipe.query_async::<()>(&mut connection)
            .await
            .map_err(|e| CoordinatorError::unavailable(format!("tally {key}: {e}")))
    }

    async fn handled(&self, tallies: &[(&str, Timestamp)]) -> Result<Vec<Option<Handled>>, CoordinatorError> {
        let keys: Vec<String> =
            tallies.iter().map(|(owner, at)| self.keys.handled(owner, at.as_millisecond())).collect();
        let values = self
            .connection
            .hmget_each(&keys, &["n", "f"])
            .await
            .map_err(|e| CoordinatorError::unavailable(format!("reading {} tallies: {e}", keys.len())))?;
        Ok(values
            .into_iter()
            .map(|fields| match fields.as_slice() {
                [Some(n), Some(f)] => Some(Handled { count: *n as u64, fingerprint: *f as u64 }),
                _ => None,
            })
            .collect())
    }

    fn name(&self) -> &'static str {
        "redis"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_connections_timeouts_and_garbled_replies_leave_the_outcome_unknown() {
        for kind in [
            std::io::ErrorKind::TimedOut,
            std::io::ErrorKind::ConnectionReset,
            std::io::ErrorKind::BrokenPipe,
        ] {
            assert!(outcome_unknown(&RedisError::from(std::io::Error::from(kind))), "{kind:?}");
        }
        assert!(outcome_unknown(&RedisError::from((ErrorKind::Parse, "garbled reply"))));
    }

    #[test]
    fn an_answer_from_redis_means_the_script_did_not_run() {
        let refused = RedisError::from((ErrorKind::Client, "refused before sending"));
        assert!(!outcome_unknown(&refused));
        let wrong_type = RedisError::from((ErrorKind::UnexpectedReturnType, "not an integer"));
        assert!(!outcome_unknown(&wrong_type));
    }
}
