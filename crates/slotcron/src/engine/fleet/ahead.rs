//! Claims ahead (the coordinator's ["Claims ahead"](crate::Coordinator#claims-ahead)):
//! with a coordinator that takes them and a membership, this replica claims the
//! triggers it owns up to the [claim-ahead window](crate::SchedulerBuilder::claim_ahead)
//! before their instant, in batches, while nothing is due; when the instant comes and
//! the engine has taken its triggers, it makes their runs' `running` records durable and
//! starts the instant with their claims (one round trip), which marks their starts: a
//! burst's runs start on time however long its claims took the backend, with no round
//! trip per batch of claims at the instant.
//!
//! What is claimed ahead: scheduled triggers of recurring jobs this replica owns, that a
//! batch would claim (no jitter, no concurrency cap, not `on_every_replica`, no
//! `max_runs`: [`may_claim_ahead`]), and whose previous trigger this replica won
//! (so no trigger before one claimed ahead can be taken over later, with a later fencing
//! token: tokens follow trigger order). So a job whose period is shorter than the
//! window, or whose previous trigger is still being claimed when its next enters the
//! window, is claimed as its triggers come due. The claim goes to the trigger the engine
//! takes at the instant, whatever the job's definition is then (a reload in between runs
//! the new one); a job removed in between does not run, nor does a trigger taken as
//! missed.
//! A job paused in between does not run either: the start reads the paused jobs, and
//! their triggers are recorded `skipped-paused`. A start voided by a non-owner (this
//! replica was late to start), or without an answer, runs none of the instant's claims
//! ahead: they are recorded `skipped-lost` or `skipped-backend-unavailable`, and other
//! replicas take them over. A replica that stops before the instant voids its own start
//! and drops its claims ahead, as if it had never made them: it records nothing for
//! those triggers (they had not come due there), and the replicas that own the jobs once
//! it has left claim them.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesOrdered;
use jiff::Timestamp;
use tokio::sync::oneshot;

use super::batch::{self, MAX_BATCH, Mode};
use super::tally::Tally;
use super::{Fleet, FleetRun, Split};
use crate::clock::{earlier, later};
use crate::coordinator::{AheadStart, Coordinator, CoordinatorError, TriggerRef};
use crate::engine::claim::marks::Unmarked;
use crate::engine::claim::{self, ClaimNote, Claimed, within_claim_timeout};
use crate::engine::run;
use crate::engine::scope::BATCHES_IN_FLIGHT;
use crate::engine::shared::Shared;
use crate::engine::table::{Action, Due, NextInstant, Upcoming};
use crate::job::Job;
use crate::ledger::{Cause, Outcome, RunRecord};

/// How long after an instant a start or a void of its claims ahead may still act: the
/// takeover delay and twice the membership TTL (a non-owner gives an owner at most one
/// membership TTL after the takeover delay), on the coordinator's clock.
pub(super) fn until(shared: &Shared, at: Timestamp) -> Timestamp {
    let settings = &shared.settings;
    later(at, settings.takeover_delay + 2 * settings.membership_ttl)
}

/// Whether `job`'s triggers may be claimed ahead: not a job with `max_runs`, whose runs
/// are counted with their start marks, one claim at a time (`engine/limits.rs`): its
/// triggers are claimed at their instant.
fn may_claim_ahead(job: &Job) -> bool {
    job.max_runs().is_none()
}

/// A claim ahead's answer, and the trigger key it was claimed under.
type Answer = (Claimed, Box<str>);

/// The answers to the claims ahead of one instant, by job name (foldhash: each claim
/// ahead is entered, looked up and taken out; the names are the scheduler's own jobs').
type Answers = HashMap<Arc<str>, oneshot::Receiver<Answer>, foldhash::fast::RandomState>;

/// This scheduler's claims ahead, waiting for their triggers.
#[derive(Default)]
pub(crate) struct Ahead {
    /// The answer to each claim ahead, by instant and job name, until the engine takes
    /// the trigger.
    claims: Mutex<BTreeMap<Timestamp, Answers>>,
    /// Every trigger queued at or before this instant has been considered.
    considered: Mutex<Option<Timestamp>>,
    /// Batches of claims ahead sent and not answered yet.
    in_flight: AtomicUsize,
    /// The time a claim ahead took, on average over the last batches, in ns.
    per_claim_ns: AtomicU64,
    /// Whether a batch of claims has been measured yet (`per_claim_ns` is a measure).
    sampled: AtomicBool,
    /// The instants claimed ahead, waiting for their start.
    starts: Mutex<BTreeMap<Timestamp, PendingStart>>,
}

/// A trigger taken from the queue that was claimed ahead, and its claim's answer.
pub(super) type Taken = (Due, oneshot::Receiver<Answer>);

impl Ahead {
    /// Moves the items of `due` that were claimed ahead out of it (in order).
    pub fn take(&self, due: &mut Vec<Due>) -> Vec<Taken> {
        let mut claims = self.claims.lock().unwrap_or_else(|p| p.into_inner());
        if claims.is_empty() {
            return Vec::new();
        }
        let mut taken = Vec::new();
        due.retain_mut(|item| {
            let claim = (item.action == Action::Run)
                .then(|| claims.get_mut(&item.trigger).and_then(|jobs| jobs.remove(&item.job.name)))
                .flatten();
            match claim {
                Some(receiver) => {
                    taken.push((
                        Due {
                            job: item.job.clone(),
                            trigger: item.trigger,
                            next: item.next,
                            action: Action::Run,
                            cause: item.cause,
                        },
                        receiver,
                    ));
                    false
                }
                None => true,
            }
        });
        claims.retain(|_, jobs| !jobs.is_empty());
        taken
    }

    /// Whether `job`'s trigger at `at` was claimed ahead and waits to be taken.
    pub fn holds(&self, job: &Job, at: Timestamp) -> bool {
        let claims = self.claims.lock().unwrap_or_else(|p| p.into_inner());
        claims.get(&at).is_some_and(|jobs| jobs.contains_key(&job.name))
    }

    /// Whether no batch of claims ahead waits for its answer.
    pub fn answered(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst) == 0
    }

    /// When the engine must wake to claim ahead next: the [lead](Ahead::lead) before the
    /// earliest instant queued after those considered; `None` without claims ahead.
    pub fn next_wake(
        &self,
        shared: &Shared,
        fleet: &Fleet,
        first_after: impl FnOnce(Timestamp) -> Option<NextInstant>,
    ) -> Option<Timestamp> {
        let window = window(shared, fleet)?;
        let considered = (*self.considered.lock().unwrap_or_else(|p| p.into_inner()))?;
        let next = first_after(considered)?;
        let lead = self.lead(window, &next);
        Some(next.at.checked_sub(lead).unwrap_or(next.at))
    }

    /// How long before the instant `next` its claims ahead start: the window, or, for a
    /// burst whose claims would take longer (its triggers in this replica's own lane are
    /// those it owns, about its share of the instant's), twice the time they would take at
    /// the claim rate measured so far — up to [`MAX_LEAD`], and up to half the time since
    /// the instant taken before it. Reaching back further would look at jobs whose
    /// previous trigger is still being claimed, which are not claimed ahead (and a
    /// replica whose claims as they come due were slow would never claim ahead again).
    fn lead(&self, window: Duration, next: &NextInstant) -> Duration {
        let per_claim = Duration::from_nanos(self.per_claim_ns.load(Ordering::Relaxed));
        let queued = u32::try_from(next.queued).unwrap_or(u32::MAX);
        let since_previous = next
            .previous
            .and_then(|previous| Duration::try_from(previous.duration_until(next.at)).ok())
            .unwrap_or(MAX_LEAD);
        let most = MAX_LEAD.min(since_previous / 2).max(window);
        window.max(per_claim.saturating_mul(queued).saturating_mul(2)).min(most)
    }

    /// Notes that a batch of `claims` claims (ahead or not) took `took`: the claim rate (the
    /// time per claim, [`BATCHES_IN_FLIGHT`] batches going at once). It rises at
    /// once to a slower sample and comes down slowly (1/64 of the way per batch, so about
    /// two fifths of the way over a burst of 33 batches): a burst claimed while the other
    /// replicas claim theirs takes the backend several times as long as one claimed
    /// alone, and a lead measured alone would be too short.
    pub fn measured(&self, claims: usize, took: Duration) {
        let Ok(claims) = u64::try_from(claims.max(1) * BATCHES_IN_FLIGHT) else { return };
        let sample = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX) / claims;
        let old = self.per_claim_ns.load(Ordering::Relaxed);
        let new = if sample >= old { sample } else { old - (old - sample) / 64 };
        self.per_claim_ns.store(new, Ordering::Relaxed);
        self.sampled.store(true, Ordering::Relaxed);
    }

    /// How long a batch of `claims` claims is expected to take at the claim rate measured
    /// so far ([`Ahead::measured`], with [`BATCHES_IN_FLIGHT`] batches going at
    /// once); `None` until a batch has been measured.
    pub fn batch_time(&self, claims: usize) -> Option<Duration> {
        if !self.sampled.load(Ordering::Relaxed) {
            return None;
        }
        let per_claim = Duration::from_nanos(self.per_claim_ns.load(Ordering::Relaxed));
        let claims = u32::try_from(claims.saturating_mul(BATCHES_IN_FLIGHT)).unwrap_or(u32::MAX);
        Some(per_claim.saturating_mul(claims))
    }
}

/// The longest a burst's claims ahead start before its instant.
const MAX_LEAD: Duration = Duration::from_secs(5);

/// The claim-ahead window, if this scheduler claims ahead: a coordinator that takes
/// claims ahead, shared work, a settled membership view, and a window above zero.
fn window(shared: &Shared, fleet: &Fleet) -> Option<Duration> {
    let coordinator = shared.coordinator.as_ref()?;
    let on = shared.settings.shared_work
        && !shared.settings.claim_ahead.is_zero()
        && coordinator.claims_ahead()
        && fleet.membership.settled();
    on.then_some(shared.settings.claim_ahead)
}

/// The longest after its instant that a live member may still claim a trigger, or take
/// over a gone member's unstarted claim of it: the membership TTL and a heartbeat (the
/// holder is seen gone), the takeover delay, the claim timeout and the clock-skew slack.
fn takeover_bound(shared: &Shared) -> Duration {
    let settings = &shared.settings;
    settings.membership_ttl
        + settings.membership_ttl / 3
        + settings.takeover_delay
        + settings.claim_timeout
        + settings.slack
}

/// Whether `job`'s trigger at `at` may be claimed ahead as far as the trigger before it
/// goes: a trigger before it that another replica claims or takes over later must not
/// get a later fencing token than one claimed ahead of it (fencing tokens follow trigger
/// order). So `previous`, the trigger this replica took before `at`, must have been won
/// here (its claim is decided); or, if this replica took none since it added the job
/// (its first trigger after a start or a reload, no claim of an earlier one in flight
/// here), the schedule's instant before `at` must be at or before `decided_by`: older
/// than [`takeover_bound`], so that no replica claims it any more. That is, nothing fires
/// after `decided_by` and before `at`: one `next_after` (a few hundred nanoseconds), not
/// a `prev_before`, which for most schedules searches back over a hundred of them — a
/// million jobs' first triggers after a start are each asked this.
fn previous_decided(job: &Job, previous: Option<Timestamp>, at: Timestamp, decided_by: Timestamp) -> bool {
    match previous {
        Some(previous) => job.last_won.load(Ordering::Relaxed) == previous.as_millisecond(),
        None => job.schedule.next_after(decided_by).is_none_or(|after| after >= at),
    }
}

/// Claims ahead the triggers this replica owns that are queued after those considered
/// so far, up to the window from now: one task per instant.
pub(super) fn claim_upcoming(fleet: &FleetRun) {
    let (shared, ahead) = (fleet.shared(), &fleet.state.ahead);
    let Some(window) = window(shared, &fleet.state) else { return };
    let now = shared.clock.now();
    let upcoming = {
        let mut considered = ahead.considered.lock().unwrap_or_else(|p| p.into_inner());
        let after = considered.map_or(now, |c| c.max(now));
        // The window from now, or further, to a burst whose lead has begun.
        let mut horizon = later(now, window);
        if let Some(next) = shared.table().first_after(after) {
            let lead = ahead.lead(window, &next);
            if next.at.checked_sub(lead).unwrap_or(next.at) <= now {
                horizon = horizon.max(next.at);
            }
        }
        if after >= horizon {
            return;
        }
        *considered = Some(horizon);
        let split = Split::new(shared, &fleet.state);
        let decided_by = earlier(now, takeover_bound(shared));
        // Ownership first: in a fleet's first minutes, before each job's first trigger is
        // in its lane, most of those looked at are other replicas' (and a first trigger's
        // decision asks the schedule).
        let eligible = |job: &Job, previous: Option<Timestamp>, at: Timestamp| {
            !job.kind.is_one_shot()
                && split.owns(shared, job)
                && may_claim_ahead(job)
                && batch::batchable_job(shared, job)
                && previous_decided(job, previous, at, decided_by)
        };
        shared.table().upcoming(after, horizon, eligible)
    };
    let mut instants: BTreeMap<Timestamp, Vec<Due>> = BTreeMap::new();
    for Upcoming { at, job } in upcoming {
        let next = job.schedule.next_after(at);
        let due = Due { next, job, trigger: at, action: Action::Run, cause: Cause::Scheduled };
        instants.entry(at).or_default().push(due);
    }
    let mut claims = ahead.claims.lock().unwrap_or_else(|p| p.into_inner());
    for (at, due) in instants {
        let jobs = claims.entry(at).or_default();
        let mut items = Vec::with_capacity(due.len());
        for due in due {
            let (sender, receiver) = oneshot::channel();
            jobs.insert(due.job.name.clone(), receiver);
            items.push((due, sender));
        }
        // Pending from now on: the instant's start (or this replica's stop) finds it
        // whatever its claims' task has done by then.
        let keys = items.iter().map(|(due, _)| (due.job.name.clone(), claim::key_of(&due.job, at))).collect();
        let pending = PendingStart { until: until(shared, at), keys };
        ahead.starts.lock().unwrap_or_else(|p| p.into_inner()).insert(at, pending);
        fleet.tracker.spawn(claim_instant(fleet.clone(), at, items));
    }
}

/// A trigger claimed ahead, and where its claim's answer goes.
type Item = (Due, oneshot::Sender<Answer>);

/// Claims `items`, all due at `at`, ahead in batches (each taking its turn among the
/// scheduler's batches in flight), and hands each answer to its trigger.
async fn claim_instant(fleet: FleetRun, at: Timestamp, items: Vec<Item>) {
    let shared = fleet.shared().clone();
    let Some(coordinator) = shared.coordinator.clone() else { return };
    let until = until(&shared, at);
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        let chunk: Vec<Item> = items.by_ref().take(MAX_BATCH).collect();
        // Each batch on the wire as soon as it has its turn: up to BATCHES_IN_FLIGHT at
        // once, as the claim rate measured assumes.
        let Ok(turn) = fleet.state.batches.clone().acquire_owned().await else { return };
        fleet.state.ahead.in_flight.fetch_add(1, Ordering::SeqCst);
        let (fleet, coordinator) = (fleet.clone(), coordinator.clone());
        fleet.tracker.clone().spawn(async move {
            let shared = fleet.shared().clone();
            let (due, senders): (Vec<Due>, Vec<_>) = chunk.into_iter().unzip();
            let claimed =
                batch::claim(&shared, &fleet.state, coordinator.as_ref(), &due, Mode::Ahead { at, until })
                    .await;
            drop(turn);
            fleet.state.ahead.in_flight.fetch_sub(1, Ordering::SeqCst);
            for (sender, answer) in senders.into_iter().zip(claimed) {
                // Not taken (the job was removed, or its trigger was taken as missed, or
                // the instant has started without it): nothing runs.
                let _ = sender.send(answer);
            }
        });
    }
}

/// What the start of one instant's claims ahead needs: until when it may act, and each
/// job's name and trigger key (to drop them if the scheduler stops first).
struct PendingStart {
    until: Timestamp,
    keys: Vec<(Arc<str>, Box<str>)>,
}

impl Ahead {
    /// The earliest instant whose claims ahead wait for their start.
    pub fn next_start(&self) -> Option<Timestamp> {
        self.starts.lock().unwrap_or_else(|p| p.into_inner()).keys().next().copied()
    }

    /// Whether the claims ahead of an instant that has come by `now` wait for their start.
    pub fn start_due(&self, now: Timestamp) -> bool {
        self.next_start().is_some_and(|first| first <= now)
    }

    /// Takes the pending starts up to `upto` (all: `None`); with `upto`, the claims ahead
    /// of those instants not taken by then are let go too (they never run here).
    fn take_starts(&self, upto: Option<Timestamp>) -> Vec<(Timestamp, PendingStart)> {
        let mut starts = self.starts.lock().unwrap_or_else(|p| p.into_inner());
        let Some(upto) = upto else { return std::mem::take(&mut *starts).into_iter().collect() };
        let after = later(upto, Duration::from_nanos(1));
        let kept = starts.split_off(&after);
        let mut claims = self.claims.lock().unwrap_or_else(|p| p.into_inner());
        *claims = claims.split_off(&after);
        std::mem::replace(&mut *starts, kept).into_iter().collect()
    }
}

/// Starts the claims ahead of every instant that has come by `now`, once the engine has
/// taken everything due (`taken`: the triggers among it that were claimed ahead), one
/// instant after the other ([`start`]), awaited by the engine's loop: an instant's runs
/// are all spawned before the loop sleeps, so a stop that comes next finds them in flight.
pub(super) async fn start_due(fleet: &FleetRun, now: Timestamp, taken: Vec<Taken>) {
    let mut by_instant: BTreeMap<Timestamp, Vec<Taken>> = BTreeMap::new();
    for item in taken {
        by_instant.entry(item.0.trigger).or_default().push(item);
    }
    for (at, pending) in fleet.state.ahead.take_starts(Some(now)) {
        let taken = by_instant.remove(&at).unwrap_or_default();
        start(fleet.clone(), at, pending, taken).await;
    }
    // Taken after the scheduler's stop dropped their claims ahead: nothing runs.
    if !by_instant.is_empty() {
        tracing::debug!(instants = by_instant.len(), "claims ahead taken after this replica stopped");
    }
}

/// At shutdown: voids this replica's own start of every instant still to come and drops
/// its claims ahead, as if it had never made them (the replicas that own the jobs once it
/// has left claim them); nothing is recorded for them.
pub(crate) async fn stop(fleet: &FleetRun) {
    let shared = fleet.shared();
    let Some(coordinator) = shared.coordinator.clone() else { return };
    for (at, pending) in fleet.state.ahead.take_starts(None) {
        let triggers: Vec<TriggerRef<'_>> =
            pending.keys.iter().map(|(job, key)| TriggerRef { job, key }).collect();
        let voided = coordinator.void_ahead(&shared.instance, at, &triggers, pending.until);
        if let Err(e) = within_claim_timeout(shared, voided).await {
            tracing::warn!(%at, "stopping: this replica's claims ahead were not dropped ({e}); the others take them over");
        }
    }
}

/// A trigger claimed ahead and taken at its instant, with its claim's answer and, for a
/// won claim marked with the instant's start, its run's `running` record.
type Answered = (Due, Claimed, Box<str>, Option<RunRecord>);

/// Starts the claims ahead of `at` whose triggers the engine took (`taken`), and marks
/// their starts in the same steps, a group of up to [`MAX_BATCH`] at a time, with up to
/// [`BATCHES_IN_FLIGHT`] groups' starts in flight, so that the first runs do not wait for
/// the whole burst's records nor a group for the round trip of the one before. Per
/// group, once its claims' answers are in, the `running` records of the won claims whose
/// runs start on their claim alone ([`run::marks_with_batch`]) are made durable
/// ([`claim::mark_records`], one ledger group), then the instant is started with those
/// claims ([`Coordinator::start_ahead`], one round trip: whichever group comes first sets
/// the start, each marks its own claims); then, group after group in order, each run is
/// spawned with its answer: run, or not started and recorded as the start left it (a
/// paused job, a claim another replica took over, a start voided by another replica, or
/// without an answer: fail closed). A claim ahead whose trigger was not taken (its job
/// was removed, or its trigger recorded missed) is not marked and runs nowhere.
async fn start(fleet: FleetRun, at: Timestamp, pending: PendingStart, taken: Vec<Taken>) {
    let shared = fleet.shared().clone();
    let Some(coordinator) = shared.coordinator.clone() else { return };
    let window = (at, pending.until);
    let mut taken = taken.into_iter().peekable();
    let mut starts = FuturesOrdered::new();
    // At least one start, even with nothing taken: the latch is set either way.
    let mut first = true;
    let mut voided = false;
    loop {
        while starts.len() < BATCHES_IN_FLIGHT && (first || taken.peek().is_some()) {
            first = false;
            let answered = answer_group(&shared, &mut taken).await;
            let (shared, coordinator) = (shared.clone(), coordinator.clone());
            starts.push_back(async move {
                let state = start_group(&shared, coordinator.as_ref(), window, &answered).await;
                (answered, state)
            });
        }
        let Some((answered, state)) = starts.next().await else { break };
        if let Ok(Ok(AheadStart::Voided)) = &state
            && !std::mem::replace(&mut voided, true)
        {
            tracing::warn!(%at, "this replica's claims ahead were taken over before it started them (it was late)");
        }
        spawn_runs(&fleet, coordinator.as_ref(), (at, &state), answered);
    }
}

/// The next group of up to [`MAX_BATCH`] claims ahead of `taken`, with their answers.
async fn answer_group(shared: &Shared, taken: &mut impl Iterator<Item = Taken>) -> Vec<Answered> {
    let mut answered: Vec<Answered> = Vec::with_capacity(MAX_BATCH);
    for (due, answer) in taken.take(MAX_BATCH) {
        // No answer: the scheduler stopped before the claim was made; nothing runs.
        if let Ok((claimed, key)) = answer.await {
            answered.push(self::answered(shared, due, claimed, key));
        }
    }
    answered
}

/// A claim ahead taken at its instant, with its answer and, for a won claim marked with
/// the instant's start, its run's `running` record: unless its first attempt waits for
/// something (an overlap lease), which marks its own start when that begins.
fn answered(shared: &Shared, due: Due, claimed: Claimed, key: Box<str>) -> Answered {
    let record = claimed
        .as_ref()
        .ok()
        .filter(|_| run::marks_with_batch(&due.job))
        .map(|token| shared.start_run(&due.job, due.trigger, due.cause, *token));
    (due, claimed, key, record)
}

/// One group's start: its records made durable, then the instant started with its won
/// claims that have a record.
async fn start_group(
    shared: &Shared,
    coordinator: &dyn Coordinator,
    (at, until): (Timestamp, Timestamp),
    answered: &[Answered],
) -> StartState {
    let records = answered.iter().filter_map(|(.., record)| record.clone()).collect();
    claim::mark_records(shared, records).await?;
    let won: Vec<TriggerRef<'_>> = answered
        .iter()
        .filter(|(.., record)| record.is_some())
        .map(|(due, _, key, _)| TriggerRef { job: &due.job.name, key })
        .collect();
    Ok(within_claim_timeout(shared, coordinator.start_ahead(&shared.instance, at, &won, until)).await)
}

/// How the start of an instant went: its records not made durable (`Err`, the runs'
/// outcome and reason), or the coordinator's answer to the start.
type StartState = Result<Result<AheadStart, CoordinatorError>, Unmarked>;

/// Spawns the runs of one group of the claims ahead of instant `at` as its start
/// (`state`) left them: a won claim with its `running` record and the start mark's answer
/// (or, if its run marks its own start, as it is), a skip with its record. The group's
/// tally learns the claims' answers once the instant has started.
fn spawn_runs(
    fleet: &FleetRun,
    coordinator: &dyn Coordinator,
    (at, state): (Timestamp, &StartState),
    answered: Vec<Answered>,
) {
    let (shared, scope) = (fleet.shared(), &fleet.scope);
    let started = matches!(state, Ok(Ok(AheadStart::Started { .. })));
    // The marks of the won claims with a record, in order.
    let mut marks = match state {
        Ok(Ok(AheadStart::Started { marked, .. })) => marked.as_slice(),
        _ => &[],
    }
    .iter();
    // Written once dropped: non-owners see the owner's progress group by group.
    let tally = started.then(|| Tally::new(shared.clone(), at, fleet.state.membership.stale()));
    for (due, claimed, key, record) in answered {
        if let Some(tally) = &tally {
            tally.note(&key, &claimed);
        }
        let (claimed, marked) = match (claimed, record) {
            (Ok(token), Some(record)) => {
                let mark = marks.next().copied().unwrap_or(false);
                let answer = mark_answer(shared, coordinator, (state, mark), &due);
                (Ok(token), Some(run::Marked { record, answer }))
            }
            // Its run marks its own start; it runs only if the instant started.
            (Ok(token), None) => match mark_answer(shared, coordinator, (state, true), &due) {
                Ok(()) => (Ok(token), None),
                Err((outcome, reason)) => {
                    let (job, trigger, cause) = (&due.job, due.trigger, due.cause);
                    (Err(Box::new(shared.skipped(job, trigger, cause, outcome, Some(reason)))), None)
                }
            },
            (skip, _) => (skip, None),
        };
        if claimed.is_ok() && marked.as_ref().is_none_or(|marked| marked.answer.is_ok()) {
            // Won and started: the job's next trigger may be claimed ahead from now on.
            due.job.last_won.fetch_max(at.as_millisecond(), Ordering::Relaxed);
        }
        scope.spawning();
        fleet.tracker.spawn(run::execute_claimed(scope.clone(), due, claimed, key, marked));
    }
}

/// The start mark's answer for a won claim ahead of `due`'s job, as the instant's start
/// (`state`) left it and whether it marked this claim (`mark`).
fn mark_answer(
    shared: &Shared,
    coordinator: &dyn Coordinator,
    (state, mark): (&StartState, bool),
    due: &Due,
) -> Result<(), Unmarked> {
    match state {
        Err(unmarked) => Err(unmarked.clone()),
        Ok(Ok(AheadStart::Started { .. })) if !mark => Err((
            Outcome::SkippedLost,
            "another replica took the claim over before this one started the instant: not started here"
                .into(),
        )),
        Ok(Ok(AheadStart::Started { paused, .. })) if paused.iter().any(|p| **p == *due.job.name) => {
            Err((Outcome::SkippedPaused, "the job was paused across the fleet when its instant came".into()))
        }
        Ok(Ok(AheadStart::Started { .. })) => Ok(()),
        Ok(Ok(AheadStart::Voided)) => Err((
            Outcome::SkippedLost,
            "claimed ahead, but another replica took it over before this one started it".into(),
        )),
        Ok(Err(e)) => {
            let record = claim::unclaimed(shared, coordinator, &due.job, due.trigger, due.cause, e);
            Err((record.outcome, record.error.unwrap_or_else(|| e.to_string())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lead_covers_a_slow_burst_but_never_half_the_time_since_the_instant_before() {
        let ahead = Ahead::default();
        // 1,000 claims in 2 s, two batches in flight: 1 ms a claim.
        ahead.measured(1000, Duration::from_secs(2));
        let t = |ms: i64| Timestamp::from_millisecond(ms).unwrap();
        let window = Duration::from_millis(200);
        let next = |queued, previous| NextInstant { at: t(60_000), queued, previous };
        // 3,000 claims at 1 ms, twice over: 6 s, capped at MAX_LEAD.
        assert_eq!(ahead.lead(window, &next(3000, Some(t(0)))), MAX_LEAD);
        assert_eq!(ahead.lead(window, &next(1000, Some(t(0)))), Duration::from_secs(2));
        // 1 s after the instant before: half of it.
        assert_eq!(ahead.lead(window, &next(3000, Some(t(59_000)))), Duration::from_millis(500));
        // 100 ms after: never below the window.
        assert_eq!(ahead.lead(window, &next(3000, Some(t(59_900)))), window);
        // A small burst: the window.
        assert_eq!(ahead.lead(window, &next(10, None)), window);
    }

    #[test]
    fn a_first_trigger_s_previous_instant_is_decided_once_nothing_fires_after_the_bound() {
        let t = |s: &str| s.parse::<Timestamp>().unwrap();
        let handler = |_ctx: crate::JobContext| async { Ok::<(), std::io::Error>(()) };
        let job = |cron: &str| crate::Job::builder("j").cron(cron).handler(handler).build().unwrap();
        // Weekdays at 09:00: the instant before Monday's is Friday's.
        let weekdays = job("0 9 * * 1-5");
        let monday = t("2026-12-07T09:00:00Z");
        for (decided_by, decided) in [
            ("2026-12-04T08:59:59Z", false),
            ("2026-12-04T09:00:00Z", true),
            ("2026-12-06T12:00:00Z", true),
            ("2026-12-07T08:59:59Z", true),
        ] {
            let decided_by = t(decided_by);
            assert_eq!(previous_decided(&weekdays, None, monday, decided_by), decided, "by {decided_by}");
            let before = weekdays.schedule.prev_before(monday).unwrap();
            assert_eq!(decided, before <= decided_by, "the same as the instant before's test");
        }
    }

    #[test]
    fn a_batch_time_is_known_once_a_batch_was_measured() {
        let ahead = Ahead::default();
        assert_eq!(ahead.batch_time(1000), None, "nothing measured yet");
        // 1,000 claims in 2 s, two batches in flight: 1 ms a claim, 2 ms a claim of one batch.
        ahead.measured(1000, Duration::from_secs(2));
        assert_eq!(ahead.batch_time(1000), Some(Duration::from_secs(2)));
        assert_eq!(ahead.batch_time(10), Some(Duration::from_millis(20)));
        // Instant answers are a measure too.
        let instant = Ahead::default();
        instant.measured(1000, Duration::ZERO);
        assert_eq!(instant.batch_time(1000), Some(Duration::ZERO));
    }
}
