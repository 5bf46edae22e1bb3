//! Coordinators arbitrate claims: for each trigger, exactly one replica wins.

mod ahead;
mod error;
mod hold;
mod in_process;
pub(crate) mod lease;
pub(crate) mod membership;
mod read_back;
pub(crate) mod rendezvous;
mod runs;
mod start;

pub use ahead::{AheadStart, AheadVoid};
pub use error::{CoordinatorError, CoordinatorErrorKind};
pub use hold::Hold;
pub use in_process::InProcessCoordinator;
pub use lease::{DEFAULT_LEASE_TTL, Lease, LeaseGrant, LeaseRenewal};
pub use membership::{
    DEFAULT_MEMBERSHIP_TTL, Handled, LiveMember, MEMBERSHIP_JOIN_LOOK, MemberDetails, TriggerRef,
};
pub use read_back::{
    ClaimAttemptError, ClaimBatchAttempt, ClaimHolder, claim_batch_with_read_back, claim_with_read_back,
};
pub use rendezvous::owner as job_owner;
pub use runs::{CountedAnswer, CountedMark};
pub use start::{StartMark, Unstarted};

use std::time::Duration;

use crate::control::Controls;

use async_trait::async_trait;
use jiff::Timestamp;

/// One claim on one trigger.
#[derive(Debug, Clone, Copy)]
pub struct Claim<'a> {
    /// The job's name.
    pub job: &'a str,
    /// The scheduled instant (UTC).
    pub trigger: Timestamp,
    /// The trigger key, `{job}:{trigger}` (the job name alone for `after` jobs); a
    /// backend prefixes it with its own namespace.
    pub key: &'a str,
    /// The claimant's instance id.
    pub instance: &'a str,
    /// How long the claim holds and when the job's high-water mark refuses it (see
    /// [`Hold`]), or `None` for one-shots, whose claims never expire (unless the backend
    /// is configured with a retention) and which the mark does not concern.
    pub hold: Option<Hold>,
}

/// The result of a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// This replica holds the trigger and must run it.
    Won {
        /// Grows with every won claim of the job across the fleet.
        fencing_token: u64,
    },
    /// Another replica holds the trigger.
    Lost,
    /// The trigger is at or before the job's high-water mark and old enough that its
    /// claim may have expired: the fleet handled it (or a later trigger), so it is never
    /// claimed again (see [`Hold`]).
    BehindMark,
    /// The job is paused fleet-wide ([`Controls`]): nothing was claimed, and the trigger
    /// is recorded `skipped-paused`.
    Paused,
}

/// A claim of a run an operator asked for — a manual run, a backfilled trigger, a
/// trigger caught up at a resume — under a key of its own: no pause and no high-water
/// mark apply, and it holds for `ttl` from when it is made (on the coordinator's clock).
#[derive(Debug, Clone, Copy)]
pub struct RequestClaim<'a> {
    /// The job's name.
    pub job: &'a str,
    /// The instant the run stands for (UTC).
    pub trigger: Timestamp,
    /// The run's key (see [`request_key`](crate::request_key)); a backend prefixes it
    /// with its own namespace.
    pub key: &'a str,
    /// The claimant's instance id.
    pub instance: &'a str,
    /// How long the claim holds once made.
    pub ttl: std::time::Duration,
}

/// The most claims a networked coordinator sends in one round trip: a larger batch given
/// to [`Coordinator::claim_batch`] goes in chunks of this many, one after the other, so
/// that one round trip (and the server's time on it) stays bounded.
pub const MAX_CLAIMS_PER_ROUND_TRIP: usize = 1_000;

/// How often at most a scheduler reads its coordinator's clock ([`Coordinator::time`])
/// to measure its own clock's offset from it.
pub const SKEW_SAMPLE_EVERY: Duration = Duration::from_secs(5);

/// Arbitrates claims between replicas.
///
/// Implementations: [`InProcessCoordinator`] (single replica), and the Redis and
/// PostgreSQL coordinators in their own crates. Each claim must be one round trip to the
/// backend, must never be released when the run ends (it marks the slot as taken), and
/// must report an error rather than guess when the outcome is unknown: the engine then
/// skips the trigger (fail closed). A recurring claim expires and is refused by the job's
/// high-water mark as [`Hold`] describes, on the coordinator's own clock. A networked
/// backend whose reply can be lost reads the claim back with [`claim_with_read_back`]
/// (a batch: [`claim_batch_with_read_back`]), as "Lost replies" below describes.
///
/// # Leases
///
/// The per-job lease is the overlap guard beside the claim (docs/design.md, "Run policies").
/// A claim marks one trigger as taken and is never released; a lease marks a *job* as
/// running somewhere in the fleet, for as long as its owner renews it. The overlap
/// policies `forbid`, `buffer_one` and `replace` take the lease after winning the claim,
/// renew it by heartbeat every third of its TTL while the run goes on (retries and
/// backoffs included), and release it when the run ends.
///
/// What every coordinator that keeps leases promises:
/// - **One owner.** While a lease is held and unexpired, every other owner's
///   [`acquire_lease`](Coordinator::acquire_lease) gets [`LeaseGrant::Held`].
/// - **Renewed only by its owner**, compared atomically with the stored owner (never a
///   blind expire): a lease that expired, or was deleted and taken by another owner, is
///   [`LeaseRenewal::Lost`] to the first owner, who must stop its run.
/// - **Expires** [`Lease::ttl`] after its last acquisition or renewal, measured on the
///   backend's clock, so a dead owner blocks the job for at most the TTL.
/// - **Released** only by its owner; releasing a lease one does not hold changes nothing.
/// - **Cancellation** ([`cancel_lease`](Coordinator::cancel_lease), for `replace`) marks
///   the held lease so that its owner's next renewal answers
///   [`LeaseRenewal::CancelRequested`]; the lease stays held until its owner releases it
///   or it expires.
///
/// # Membership
///
/// The membership of a fleet is the replicas that heartbeat into the coordinator, so
/// that each trigger has one *owner* among the live ones (rendezvous hashing of the
/// job's name over the members' instance ids) that claims it at once, while the others
/// only take over what it left unclaimed.
///
/// A replica registers itself with [`Coordinator::heartbeat`] every third of the
/// membership TTL (default [`DEFAULT_MEMBERSHIP_TTL`]) — [`MEMBERSHIP_JOIN_LOOK`] after
/// its first one (replicas started together see each other before their first
/// instants), a takeover delay apart while its view changes, and at once, after
/// one takeover delay, when another replica won the claim of a trigger it owned (its view
/// is out of date) —; the coordinator keeps each member
/// until its last heartbeat plus the TTL has passed on the coordinator's clock, so a
/// replica that dies leaves the membership within the TTL, and one that stops gracefully
/// leaves at once ([`Coordinator::leave`]). The membership only decides who claims
/// first: the claim alone decides who runs, so a stale view costs at most a late run
/// (the takeover delay), never a double one.
///
/// A job placed on labels ([`JobBuilder::on`](crate::JobBuilder::on)) is owned among the
/// members whose published [`MemberDetails::labels`] carry them: a replica reads the
/// members' details ([`Coordinator::members`]) when the membership changes, and at least
/// once a membership TTL while one of its jobs is placed. A backend keeps the details as
/// they were published ([`Coordinator::publish_details`]); it needs nothing more for
/// placement.
///
/// To spare non-owners one read per trigger, an owner adds what it has claimed at one
/// trigger instant to a [`Handled`] tally (one write per batch); a non-owner reads the
/// tallies of the owners of the triggers it waits for (one read per owner and instant)
/// and reads trigger by trigger ([`Coordinator::unclaimed`]) only for an owner whose
/// tally does not account for every trigger the non-owner expected it to claim. An owner
/// whose claims may be answered after the takeover delay first writes its tally empty
/// (a *mark* that it is claiming the instant), so a backend keeps an empty tally: it
/// reads as `Some` with a count of 0, and non-owners wait for the marked owner's answers.
///
/// # Claims ahead
///
/// A coordinator may take claims *ahead* ([`Coordinator::claims_ahead`]): an owner then
/// claims the triggers it owns at an instant up to the scheduler's claim-ahead window
/// before it ([`Coordinator::claim_batch_ahead`]), so the burst's claims are made while
/// nothing is due, and starts them when the instant comes
/// ([`Coordinator::start_ahead`]). Until it starts, a non-owner whose takeover delay is
/// over may void its start ([`Coordinator::void_ahead`]): one latch per owner and
/// instant, set once by whichever comes first, so either the owner runs its claims ahead
/// or they are dropped and taken over; a claim ahead is never lost with a dead owner, and
/// never runs twice. The start also marks the [start
/// mark](Coordinator#start-marks-and-takeover) of the claims ahead whose runs start then
/// (the engine makes their records durable first): a burst claimed ahead starts on one
/// round trip. The owner adds its claims ahead to its [`Handled`] tally only once it has
/// started.
///
/// # Start marks and takeover
///
/// A won claim is *provisional* until its **start mark** (docs/design.md, "Claims, start
/// marks and takeover"): the engine marks the claims of the runs about to start, a batch
/// in one round trip ([`Coordinator::mark_starts`]), and starts a run only once its mark
/// is made. A claim whose holder has gone (left the membership, or was restarted as a new
/// incarnation under the same instance id) before its mark is **taken over** by a live
/// replica ([`Coordinator::take_over`]), which runs the trigger late with a new, higher
/// fencing token. The two are atomic against each other, claim by claim: either the
/// holder marks its start and runs, or another replica takes the claim over and the
/// holder's mark is refused — never both, whatever the replicas' views of the
/// membership. The claims a holder has not marked are listed by holder
/// ([`Coordinator::unstarted`]), so that nothing won is lost with a dead holder. A
/// coordinator that keeps start marks says so ([`Coordinator::keeps_start_marks`]); one
/// that does not marks nothing and takes nothing over.
///
/// What every coordinator that keeps start marks promises:
/// - every claim won (by [`Coordinator::claim`], a batch, ahead, or a request) is
///   listed by [`Coordinator::unstarted`] under its holder's instance id until it is
///   marked (by [`Coordinator::mark_starts`], or for a claim ahead by its owner's
///   [`Coordinator::start_ahead`]) or taken over;
/// - [`Coordinator::mark_starts`] marks a claim still held by the caller and unmarked
///   (`true`, also when marked already: a mark whose reply was lost is sent again), and
///   refuses one another holds (`false`);
/// - [`Coordinator::take_over`] moves an unmarked claim of `from` to `to` with the job's
///   next fencing token (`Won`; also when `to` took it over already, with the token it
///   got), and is `Lost` for a marked claim or one another holds; a claim listed unstarted
///   whose hold has ended meanwhile is won afresh (it was won and never started).
///
/// # Counted runs
///
/// A job with [`max_runs`](crate::JobBuilder::max_runs) ends after that many of its
/// scheduled triggers have started across the fleet. A coordinator that counts runs
/// ([`Coordinator::counts_runs`]) keeps, per job name, the trigger keys whose start mark
/// counted a run, and counts a run with its mark, atomically
/// ([`Coordinator::mark_counted_starts`]): a mark that finds `max_runs` runs counted is
/// refused ([`CountedAnswer::MaxRunsReached`]) and its claim settled, so that no replica
/// runs the trigger, nor takes it over. A mark sent again (lost reply) counts nothing
/// more. The count is kept by job name whatever the job's definition: neither a restart
/// nor a change to the job resets it ([`Coordinator::run_counts`] reads it). Only the
/// scheduled triggers' keys ([`trigger_key`](crate::trigger_key)) are counted: runs an
/// operator asked for, and reruns, have keys of their own and are marked by
/// [`Coordinator::mark_starts`]; retries are attempts of one run, one mark. The engine
/// claims a counted job's triggers at their instant, never ahead.
///
/// # Lost replies
///
/// A claim whose reply was lost is read back, never guessed: the decision every
/// networked coordinator makes the same way, whatever its backend.
///
/// A claim is one round trip to the backend. When the request may have reached the
/// backend but no whole reply came back (a dropped connection, a garbled reply, a
/// response timeout), the claim may or may not have been made. The coordinator then
/// reads the trigger back and compares the claimant stored there with the random token
/// it drew for this claim:
///
/// - its own token: won, with the fencing token stored with the claim;
/// - another's (or a value slotcron did not write): lost;
/// - nobody's: the claim was not made, and it is made once more — with the same token,
///   so that a first attempt still in flight on the backend is found rather than lost
///   to; nobody's again after a second lost reply is an error;
/// - the read-back fails too: an error, and the scheduler skips the trigger (fail
///   closed, docs/design.md's "Exactly once across replicas").
///
/// A backend supplies the two round trips, the claim and the read-back, to
/// [`claim_with_read_back`]. A batch of claims in one round trip
/// ([`Coordinator::claim_batch`]) whose reply was lost is read back the same way, claim
/// by claim, in one round trip for the batch, by [`claim_batch_with_read_back`]: the
/// claims nobody holds are made once more, as one batch.
#[async_trait]
pub trait Coordinator: Send + Sync + 'static {
    /// Tries to claim a trigger.
    ///
    /// # Errors
    /// The backend is unreachable or the outcome is unknown.
    async fn claim(&self, claim: &Claim<'_>) -> Result<ClaimOutcome, CoordinatorError>;

    /// Claims a run an operator asked for ([`RequestClaim`]): won if nobody holds its
    /// key, with the job's next fencing token. One round trip. The default claims
    /// nothing: an error, so that such runs fail closed on a coordinator without them.
    ///
    /// # Errors
    /// The backend is unreachable, the outcome is unknown, or request claims are not
    /// supported.
    async fn claim_request(&self, claim: &RequestClaim<'_>) -> Result<ClaimOutcome, CoordinatorError> {
        Err(CoordinatorError::unavailable(format!(
            "the {} coordinator claims no manual or backfilled runs (job {:?})",
            self.name(),
            claim.job
        )))
    }

    /// Where the fleet keeps its pauses and idempotency keys: the coordinator's claims
    /// then refuse a paused job's triggers ([`ClaimOutcome::Paused`]). `None` (the
    /// default): the coordinator keeps none, and pausing fails.
    fn controls(&self) -> Option<&dyn Controls> {
        None
    }

    /// Claims many triggers in one round trip (or as few as the backend allows); one
    /// result per claim, same order.
    ///
    /// Each claim's semantics are those of [`Coordinator::claim`], as if the claims were
    /// made one after the other in the order given: one winner per trigger across the
    /// fleet; a fencing token per won claim, growing per job in the order of the claims
    /// (so a job's triggers given in trigger order get tokens in trigger order); the hold,
    /// the expiry and the job's high-water mark of [`Hold`]; an error rather than a guess
    /// when a claim's outcome is unknown (the engine then skips that trigger: fail
    /// closed); and a lost reply read back, claim by claim, never guessed. A backend
    /// splits a batch longer than [`MAX_CLAIMS_PER_ROUND_TRIP`] into chunks of that many.
    /// The engine bounds the whole call by its claim timeout.
    ///
    /// The default makes the claims one at a time with [`Coordinator::claim`]: correct
    /// for every backend, one round trip per claim.
    async fn claim_batch(&self, claims: &[Claim<'_>]) -> Vec<Result<ClaimOutcome, CoordinatorError>> {
        let mut outcomes = Vec::with_capacity(claims.len());
        for claim in claims {
            outcomes.push(self.claim(claim).await);
        }
        outcomes
    }

    /// Whether this coordinator takes claims ahead ([`Coordinator::claim_batch_ahead`],
    /// [`Coordinator::start_ahead`], [`Coordinator::void_ahead`]); `false` (the default):
    /// the engine claims every trigger when it comes due.
    fn claims_ahead(&self) -> bool {
        false
    }

    /// Claims, for `owner`, triggers it owns at instant `at` before `at` has come; see
    /// ["Claims ahead"](Coordinator#claims-ahead). Each claim is decided as by
    /// [`Coordinator::claim_batch`] (every claim's `trigger` is `at` and its `instance`
    /// `owner`), but a claim won here holds only once `owner` starts the instant
    /// ([`Coordinator::start_ahead`]), and every claim is [`ClaimOutcome::Lost`] once
    /// `owner`'s start of `at` has been voided. `until` is as for
    /// [`Coordinator::start_ahead`].
    ///
    /// The default, for a coordinator that takes no claims ahead, fails every claim
    /// (the engine does not call it when [`Coordinator::claims_ahead`] is `false`).
    async fn claim_batch_ahead(
        &self,
        owner: &str,
        at: Timestamp,
        claims: &[Claim<'_>],
        until: Timestamp,
    ) -> Vec<Result<ClaimOutcome, CoordinatorError>> {
        let _ = (owner, at, until);
        let error = || {
            CoordinatorError::unavailable(format!("the {} coordinator takes no claims ahead", self.name()))
        };
        claims.iter().map(|_| Err(error())).collect()
    }

    /// Starts `owner`'s claims ahead of instant `at`, unless a non-owner voided them
    /// first: [`AheadStart::Started`] with the jobs paused now (also when it was started
    /// already: a start whose reply was lost is sent again), or [`AheadStart::Voided`]
    /// (voided, or asked after `until` on the coordinator's clock, which it also keeps
    /// the start for at least as long again after: nothing is started then). Started, it
    /// also marks the start of each of `claims` (the claims ahead whose runs start now),
    /// as [`Coordinator::mark_starts`] would, in the same round trip: a burst claimed
    /// ahead starts on one call.
    ///
    /// # Errors
    /// The backend is unreachable or the outcome is unknown: the owner then runs none of
    /// its claims ahead of `at` (fail closed), and non-owners take them over.
    async fn start_ahead(
        &self,
        owner: &str,
        at: Timestamp,
        claims: &[TriggerRef<'_>],
        until: Timestamp,
    ) -> Result<AheadStart, CoordinatorError> {
        let _ = (owner, at, claims, until);
        Err(CoordinatorError::unavailable(format!("the {} coordinator takes no claims ahead", self.name())))
    }

    /// Voids `owner`'s start of instant `at` unless it has started, and then drops
    /// `owner`'s claims ahead among `triggers` (those a non-owner expected `owner` to
    /// claim), so that they can be claimed: [`AheadVoid::Started`] if `owner` started
    /// first (nothing changes), else [`AheadVoid::Voided`] (saying whether `owner` had
    /// claimed any trigger ahead, or may have: a void already made answers `true`, so
    /// that the caller drops its own triggers' claims ahead too). Asked after `until` on the coordinator's clock it
    /// changes nothing and answers [`AheadVoid::Started`]: the claims ahead stand. One
    /// round trip. The default (no claims ahead) answers `Voided { ahead: false }`.
    ///
    /// # Errors
    /// The backend is unreachable; the non-owner then leaves the owner's triggers alone
    /// for this look.
    async fn void_ahead(
        &self,
        owner: &str,
        at: Timestamp,
        triggers: &[TriggerRef<'_>],
        until: Timestamp,
    ) -> Result<AheadVoid, CoordinatorError> {
        let _ = (owner, at, triggers, until);
        Ok(AheadVoid::Voided { ahead: false })
    }

    /// Takes the job's lease for `lease.owner`, or finds it held; see ["Leases"](Coordinator#leases)
    /// for what a lease promises. The default keeps no leases: an error, so that the overlap
    /// policies fail closed on a coordinator without them.
    ///
    /// # Errors
    /// The backend is unreachable, the outcome is unknown, or leases are not supported.
    async fn acquire_lease(&self, lease: &Lease<'_>) -> Result<LeaseGrant, CoordinatorError> {
        Err(no_leases(self.name(), lease.job))
    }

    /// Extends the caller's lease by its TTL, if it is still the caller's.
    ///
    /// # Errors
    /// As [`Coordinator::acquire_lease`]; the caller keeps renewing until its lease's TTL
    /// since the last renewal has passed, then treats it as lost.
    async fn renew_lease(&self, lease: &Lease<'_>) -> Result<LeaseRenewal, CoordinatorError> {
        Err(no_leases(self.name(), lease.job))
    }

    /// Releases the caller's lease; nothing if another owner holds it.
    ///
    /// # Errors
    /// As [`Coordinator::acquire_lease`]; the lease then expires within its TTL.
    async fn release_lease(&self, lease: &Lease<'_>) -> Result<(), CoordinatorError> {
        Err(no_leases(self.name(), lease.job))
    }

    /// Asks the holder of `job`'s lease to stop its run: its next renewal answers
    /// [`LeaseRenewal::CancelRequested`]. `false` if nobody holds the lease.
    ///
    /// # Errors
    /// As [`Coordinator::acquire_lease`].
    async fn cancel_lease(&self, job: &str) -> Result<bool, CoordinatorError> {
        Err(no_leases(self.name(), job))
    }

    /// Each job's high-water mark (see [`Hold`]): the newest recurring trigger the
    /// coordinator granted a claim of, one answer per job in order, `None` for a job with
    /// none. One round trip for all. `None` for every job (the default) from a coordinator
    /// that keeps no marks.
    ///
    /// A replica that was not running asks it for the triggers it finds it missed: those
    /// at or before the mark were handled by the fleet meanwhile, not missed.
    ///
    /// # Errors
    /// The backend is unreachable.
    async fn high_water_marks(&self, jobs: &[&str]) -> Result<Vec<Option<Timestamp>>, CoordinatorError> {
        Ok(vec![None; jobs.len()])
    }

    /// The coordinator's clock now (Redis `TIME`, PostgreSQL `now()`), one round trip,
    /// for the scheduler's clock-skew guard, which asks at most once every
    /// [`SKEW_SAMPLE_EVERY`] while triggers come due. `None` (the default) for a
    /// coordinator without a clock of its own: no skew check.
    ///
    /// # Errors
    /// The backend is unreachable.
    async fn time(&self) -> Result<Option<Timestamp>, CoordinatorError> {
        Ok(None)
    }

    /// Registers (or renews) `instance` as a member of the fleet until `ttl` from now on
    /// the coordinator's clock, and returns the live members, this one included, sorted;
    /// see ["Membership"](Coordinator#membership). `None` (the default) for a coordinator without a membership:
    /// every replica then owns every trigger and claims it at once.
    ///
    /// # Errors
    /// The backend is unreachable; the scheduler keeps its last view and retries.
    async fn heartbeat(
        &self,
        instance: &str,
        ttl: Duration,
    ) -> Result<Option<Vec<String>>, CoordinatorError> {
        let _ = (instance, ttl);
        Ok(None)
    }

    /// Removes `instance` from the membership (graceful shutdown), so its triggers move to
    /// the other members at once rather than after the membership TTL. Nothing by default.
    ///
    /// # Errors
    /// The backend is unreachable; the member then lapses within its TTL.
    async fn leave(&self, instance: &str) -> Result<(), CoordinatorError> {
        let _ = instance;
        Ok(())
    }

    /// Publishes `instance`'s [`MemberDetails`], replacing what it published before; kept
    /// until it [leaves](Coordinator::leave), and read only while it is a live member
    /// ([`Coordinator::members`]). Nothing by default.
    ///
    /// # Errors
    /// The backend is unreachable.
    async fn publish_details(&self, instance: &str, details: &MemberDetails) -> Result<(), CoordinatorError> {
        let _ = (instance, details);
        Ok(())
    }

    /// The live members, sorted by instance id, each with when it lapses and the details
    /// it published ([`Coordinator::publish_details`], empty if none), without renewing
    /// any. None by default (no membership).
    ///
    /// # Errors
    /// The backend is unreachable, or what it keeps is not details.
    async fn members(&self) -> Result<Vec<LiveMember>, CoordinatorError> {
        Ok(Vec::new())
    }

    /// Whether each trigger is unclaimed (no claim holds its key, and its job is not
    /// paused: the coordinator refuses a paused job's claims, so there is nothing to take
    /// over), in one round trip: a non-owner asks it once per batch after the takeover
    /// delay, and claims only those. A stale answer costs a lost claim, never a double run: the claim decides.
    /// The default answers `true` for all (the non-owner then claims every one).
    ///
    /// # Errors
    /// The backend is unreachable; the engine then claims them all (the claims decide).
    async fn unclaimed(&self, triggers: &[TriggerRef<'_>]) -> Result<Vec<bool>, CoordinatorError> {
        Ok(vec![true; triggers.len()])
    }

    /// Adds `handled` to `owner`'s [`Handled`] tally of trigger instant `at`, kept for
    /// `ttl` on the coordinator's clock; see ["Membership"](Coordinator#membership). An
    /// empty `handled` (an owner's mark) creates the tally if there is none, and renews
    /// it. Nothing by default.
    ///
    /// # Errors
    /// The backend is unreachable; non-owners then read trigger by trigger.
    async fn add_handled(
        &self,
        owner: &str,
        at: Timestamp,
        handled: Handled,
        ttl: Duration,
    ) -> Result<(), CoordinatorError> {
        let _ = (owner, at, handled, ttl);
        Ok(())
    }

    /// The [`Handled`] tally of each `(owner, trigger instant)`, `None` where there is
    /// none, in one round trip. The default has none.
    ///
    /// # Errors
    /// The backend is unreachable.
    async fn handled(&self, tallies: &[(&str, Timestamp)]) -> Result<Vec<Option<Handled>>, CoordinatorError> {
        Ok(vec![None; tallies.len()])
    }

    /// Whether this coordinator keeps start marks and takes claims over; see ["Start
    /// marks and takeover"](Coordinator#start-marks-and-takeover). `false` (the default):
    /// the engine marks nothing, and a claim whose holder died before starting its run is
    /// lost with it.
    fn keeps_start_marks(&self) -> bool {
        false
    }

    /// Marks the start of `instance`'s won claims `marks`, in one round trip (or as few as
    /// the backend allows): per claim, `true` if the claim is `instance`'s and now marked
    /// (or was already), `false` if another replica holds it (it was taken over): that
    /// run must not start. The default, for a coordinator without start marks, answers
    /// `true` for all.
    ///
    /// # Errors
    /// The backend is unreachable or the outcome is unknown: the runs then do not start
    /// (fail closed), and their claims stay unmarked.
    async fn mark_starts(
        &self,
        instance: &str,
        marks: &[StartMark<'_>],
    ) -> Result<Vec<bool>, CoordinatorError> {
        let _ = instance;
        Ok(vec![true; marks.len()])
    }

    /// Whether this coordinator counts runs ([`Coordinator::mark_counted_starts`],
    /// [`Coordinator::run_counts`]); see ["Counted runs"](Coordinator#counted-runs).
    /// `false` (the default): a scheduler refuses jobs with `max_runs`.
    fn counts_runs(&self) -> bool {
        false
    }

    /// Marks the start of `instance`'s won claims `marks` as
    /// [`Coordinator::mark_starts`] does, each counting a run of its job: per claim,
    /// [`CountedAnswer`] (marked and counted, lost, or refused at the job's `max_runs`),
    /// decided one after the other in the order given, atomically with the count. One
    /// round trip (or as few as the backend allows). The default counts nothing: an
    /// error, so that such runs fail closed on a coordinator without counts.
    ///
    /// # Errors
    /// The backend is unreachable or the outcome is unknown: the runs then do not start
    /// (fail closed), and their claims stay unmarked.
    async fn mark_counted_starts(
        &self,
        instance: &str,
        marks: &[CountedMark<'_>],
    ) -> Result<Vec<CountedAnswer>, CoordinatorError> {
        let _ = (instance, marks);
        Err(CoordinatorError::unavailable(format!("the {} coordinator counts no runs", self.name())))
    }

    /// How many runs are counted for each of `jobs` (0: none), in order, in one round
    /// trip; see ["Counted runs"](Coordinator#counted-runs). The default counts nothing:
    /// an error.
    ///
    /// # Errors
    /// The backend is unreachable, or it counts no runs.
    async fn run_counts(&self, jobs: &[&str]) -> Result<Vec<u64>, CoordinatorError> {
        let _ = jobs;
        Err(CoordinatorError::unavailable(format!("the {} coordinator counts no runs", self.name())))
    }

    /// The claims `instance` holds without a start mark (every backend lists them by
    /// holder; one that keeps them per job reads `jobs`', the jobs the caller knows), in
    /// any order. The default: none.
    ///
    /// # Errors
    /// The backend is unreachable.
    async fn unstarted(&self, instance: &str, jobs: &[&str]) -> Result<Vec<Unstarted>, CoordinatorError> {
        let _ = (instance, jobs);
        Ok(Vec::new())
    }

    /// Takes over, for `to`, the unmarked claims of `from` among `claims`: one answer per
    /// claim, same order, as ["Start marks and takeover"](Coordinator#start-marks-and-takeover)
    /// says. One round trip (or as few as the backend allows). The default takes nothing
    /// over: every claim [`ClaimOutcome::Lost`].
    async fn take_over(
        &self,
        from: &str,
        to: &str,
        claims: &[TriggerRef<'_>],
    ) -> Vec<Result<ClaimOutcome, CoordinatorError>> {
        let _ = (from, to);
        claims.iter().map(|_| Ok(ClaimOutcome::Lost)).collect()
    }

    /// A short name for logs: `in-process`, `redis`, `postgres`.
    fn name(&self) -> &'static str;
}

fn no_leases(coordinator: &str, job: &str) -> CoordinatorError {
    CoordinatorError::unavailable(format!(
        "the {coordinator} coordinator keeps no leases, which job {job:?}'s overlap policy needs"
    ))
}
