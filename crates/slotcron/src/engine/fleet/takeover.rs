//! Non-owners taking over what owners left unclaimed.
//!
//! A non-owner queues the triggers it does not own in the table's lane of others'
//! triggers ([`Lane::Others`](crate::engine::queue::Lane::Others)), due the takeover delay after their instant: at a burst's
//! instant each replica takes only its own share of the burst from its table.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use std::sync::{Arc, Mutex};

use jiff::Timestamp;

use super::{FleetRun, ahead, batch};
use crate::clock::later;
use crate::coordinator::{AheadVoid, Coordinator, Handled, MAX_CLAIMS_PER_ROUND_TRIP, TriggerRef};
use crate::engine::claim::{self, SkewSkip, within_claim_timeout};
use crate::engine::run;
use crate::engine::shared::Shared;
use crate::engine::table::Due;
use crate::key::trigger_key;
use crate::ledger::{Cause, Outcome};
use crate::schedule::ScheduleKind;

/// The triggers other replicas own, waiting out the takeover delay, by trigger instant:
/// the items of one instant are read together, whichever batch from the table they came
/// in.
#[derive(Default)]
pub(crate) struct Takeovers {
    waiting: Mutex<BTreeMap<Timestamp, Vec<Awaiting>>>,
    /// The instants whose first item came since the last [release](Takeovers::release),
    /// with the deadline their task waits for.
    fresh: Mutex<Vec<(Timestamp, Timestamp)>>,
    /// The instants whose task sleeps until its next look, with when that is (for the
    /// testkit's fleet, which waits for a look it knows of).
    looks: Mutex<BTreeMap<Timestamp, Timestamp>>,
}

/// A trigger waiting out the takeover delay, and its owner.
type Awaiting = (Due, Arc<str>);

impl Takeovers {
    /// Queues `due`, owned by `owner`. The first item of its instant sets the deadline
    /// of the task that reads them all, the takeover delay after the instant (or now, if
    /// that has passed), and the next [release](Takeovers::release) starts that task.
    pub fn push(&self, shared: &Shared, due: Due, owner: Arc<str>) {
        let at = due.trigger;
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        let items = waiting.entry(at).or_default();
        items.push((due, owner));
        if items.len() == 1 {
            let deadline = later(at, shared.settings.takeover_delay).max(shared.clock.now());
            self.fresh.lock().unwrap_or_else(|p| p.into_inner()).push((at, deadline));
        }
    }

    /// Starts the task of each instant whose first item came since the last release. The
    /// engine's loop releases once it has taken everything due, so that the task of an
    /// instant whose deadline has passed already sees all its items at its first look.
    pub fn release(&self, fleet: &FleetRun) {
        let fresh = std::mem::take(&mut *self.fresh.lock().unwrap_or_else(|p| p.into_inner()));
        for (at, deadline) in fresh {
            fleet.tracker.spawn(take_over(fleet.clone(), at, deadline));
        }
    }

    /// Whether `job`'s `trigger`, taken from the table, waits out the takeover delay here.
    pub fn waits(&self, job: &str, trigger: Timestamp) -> bool {
        let waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        waiting.get(&trigger).is_some_and(|items| items.iter().any(|(due, _)| &*due.job.name == job))
    }

    /// When the task of `job`'s `trigger`, waiting here, looks next, while it sleeps
    /// until then: the takeover delay after the instant, or later for an owner found still
    /// claiming.
    pub fn next_look(&self, job: &str, trigger: Timestamp) -> Option<Timestamp> {
        let look = *self.looks.lock().unwrap_or_else(|p| p.into_inner()).get(&trigger)?;
        self.waits(job, trigger).then_some(look)
    }

    /// Notes that the task of instant `at` sleeps until `look` (`None`: it is awake).
    fn sleeps(&self, at: Timestamp, look: Option<Timestamp>) {
        let mut looks = self.looks.lock().unwrap_or_else(|p| p.into_inner());
        match look {
            Some(look) => looks.insert(at, look),
            None => looks.remove(&at),
        };
    }

    fn take(&self, at: Timestamp) -> Vec<Awaiting> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner()).remove(&at).unwrap_or_default()
    }

    /// Takes the items waiting at `at` whose owner is one of `owners`; `expected` no
    /// longer counts them among those it has seen.
    fn take_of(&self, at: Timestamp, owners: &[Arc<str>], expected: &mut Expected) -> Vec<Awaiting> {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        let Some(items) = waiting.get_mut(&at) else { return Vec::new() };
        let (mut taken, mut kept, mut seen) = (Vec::new(), Vec::new(), expected.seen);
        for (index, item) in std::mem::take(items).into_iter().enumerate() {
            if owners.contains(&item.1) {
                seen -= usize::from(index < expected.seen);
                taken.push(item);
            } else {
                kept.push(item);
            }
        }
        *items = kept;
        expected.seen = seen;
        taken
    }

    /// The job names and trigger keys of the items waiting at `at` that `owner` owns.
    fn keys_of(&self, at: Timestamp, owner: &str) -> Vec<(Arc<str>, String)> {
        let waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        let items = waiting.get(&at).map(Vec::as_slice).unwrap_or_default();
        items
            .iter()
            .filter(|(_, o)| **o == *owner)
            .map(|(due, _)| (due.job.name.clone(), trigger_key(&due.job.name, due.job.kind, due.trigger)))
            .collect()
    }
}

/// After `deadline`, reads which of the triggers of instant `at` that others own are
/// still unclaimed and runs those (a claim each, recorded); the others are counted, not
/// recorded, and move their job's state on (as a lost claim's record would). An owner
/// whose tally is short of what it owns here but grew within the claim timeout before
/// the look (a big burst: it is still claiming), or that is found to have started the
/// instant's claims ahead (once per instant), or whose tally is marked but still empty
/// (until the claim timeout after the look that first found it so: its claims are on
/// their way), is given another takeover delay, up to the membership TTL after the first
/// deadline ([`Looks`]); an owner whose tally stalled is taken over. An owner whose
/// tally is short, neither growing nor marked within those times, has its start of the
/// instant's [claims ahead](super::ahead) voided, unless it
/// started them: if it had claimed ahead (it died or stalled before the instant), its
/// claims ahead are dropped and its triggers taken over at once. Stopping first: nothing
/// was claimed, nothing is recorded.
///
/// The first look comes when the coordinator's clock reads the takeover delay after the
/// instant: a replica whose clock is ahead of the coordinator's waits its offset longer
/// (docs/design.md, "Clock skew"), so it never finds an owner short whose instant has not
/// come on its own clock. A replica beyond the clock-skew slack voids no start: its
/// claims of what its owners left unclaimed are recorded `skipped-clock-skew`.
async fn take_over(fleet: FleetRun, at: Timestamp, deadline: Timestamp) {
    let (shared, scope, takeovers) = (fleet.shared().clone(), &fleet.scope, &fleet.state.takeovers);
    let Some(coordinator) = shared.coordinator.clone() else { return };
    let delay = shared.settings.takeover_delay;
    // The delay is the coordinator's time after the instant: a replica whose clock runs
    // ahead would otherwise look while the owner's clock is still before the instant.
    let ahead = claim::ahead_of_coordinator(&shared, coordinator.as_ref()).await;
    let deadline = deadline.max(later(at, delay.saturating_add(ahead)));
    let limit = later(deadline, shared.settings.membership_ttl);
    let (mut deadline, mut expected, mut looks) = (deadline, Expected::default(), Looks::default());
    let mut starts: HashMap<Arc<str>, AheadVoid> = HashMap::new();
    let complete = loop {
        takeovers.sleeps(at, Some(deadline));
        tokio::select! {
            biased;
            () = scope.stopping.cancelled() => {}
            () = shared.clock.sleep_until(deadline) => {}
        }
        takeovers.sleeps(at, None);
        if scope.stopping.is_cancelled() {
            takeovers.take(at);
            return;
        }
        takeovers.account(at, &mut expected);
        let accounts = read_tallies(&shared, coordinator.as_ref(), at, &expected).await;
        let claiming = looks.claiming(&accounts, deadline, shared.settings.claim_timeout);
        let growing = looks.growing(&accounts, deadline, shared.settings.claim_timeout);
        // Beyond the clock-skew slack this replica could not claim what it voided: it
        // leaves the voids to the members that can (its claims record the skew).
        let skewed =
            matches!(claim::skew_gate(&shared, coordinator.as_ref()).await, Err(SkewSkip::Beyond(_)));
        let voided = match skewed {
            true => Vec::new(),
            false => {
                // An owner still claiming is alive: its start comes once its claims do.
                let alive = [claiming.as_slice(), growing.as_slice()].concat();
                void_starts(&shared, takeovers, coordinator.as_ref(), at, &accounts, &alive, &mut starts)
                    .await
            }
        };
        if !voided.is_empty() {
            // Claimed ahead by an owner that did not start them: taken over, and recorded
            // so (docs/design.md, "Claims, start marks and takeover").
            let items = takeovers.take_of(at, &voided, &mut expected).into_iter().map(|(mut due, owner)| {
                if due.cause == Cause::Scheduled {
                    due.cause = Cause::TakenOver;
                }
                (due, owner)
            });
            claim_unclaimed(&fleet, coordinator.as_ref(), at, items.collect(), &[]).await;
        }
        let progressing = looks.progressing(&accounts, [&claiming, &growing], &starts);
        let next = later(deadline, delay);
        if !progressing || next > limit {
            break accounts
                .into_iter()
                .filter_map(|(owner, account)| matches!(account, Account::Complete).then_some(owner))
                .collect::<Vec<_>>();
        }
        deadline = next;
    };
    let items = takeovers.take(at);
    claim_unclaimed(&fleet, coordinator.as_ref(), at, items, &complete).await;
}

/// Voids the start of the claims ahead of `at` of each owner whose tally is short, that
/// is not among those still claiming (`claiming`: marked, or its tally growing — its
/// claims go out at the instant, and its start comes once they are answered), and whose
/// start is not known yet (`starts` keeps what each void found); drops
/// the claims ahead of those that had made some, and returns them: their triggers are to
/// be taken over now.
async fn void_starts(
    shared: &Shared,
    takeovers: &Takeovers,
    coordinator: &dyn Coordinator,
    at: Timestamp,
    accounts: &[(Arc<str>, Account)],
    claiming: &[Arc<str>],
    starts: &mut HashMap<Arc<str>, AheadVoid>,
) -> Vec<Arc<str>> {
    if !coordinator.claims_ahead() {
        return Vec::new();
    }
    let until = ahead::until(shared, at);
    let mut voided = Vec::new();
    for (owner, account) in accounts {
        if matches!(account, Account::Complete) || claiming.contains(owner) || starts.contains_key(owner) {
            continue;
        }
        // First the latch alone; then, if the owner had claimed ahead (or another void
        // came first), once more with the triggers this replica waits for, whose claims
        // ahead are dropped (another non-owner's void dropped only its own).
        let found = match within_claim_timeout(shared, coordinator.void_ahead(owner, at, &[], until)).await {
            Ok(AheadVoid::Voided { ahead: true }) => {
                let keys = takeovers.keys_of(at, owner);
                let triggers: Vec<TriggerRef<'_>> =
                    keys.iter().map(|(job, key)| TriggerRef { job, key }).collect();
                within_claim_timeout(shared, coordinator.void_ahead(owner, at, &triggers, until)).await
            }
            found => found,
        };
        let found = match found {
            Ok(found) => found,
            Err(e) => {
                tracing::debug!(%at, %owner, "the owner's start was not voided ({e}): asked again at the next look");
                continue;
            }
        };
        starts.insert(owner.clone(), found);
        if found == (AheadVoid::Voided { ahead: true }) {
            tracing::info!(%at, %owner, "the owner had not started this instant (its start is void): its triggers are taken over");
            voided.push(owner.clone());
        }
    }
    voided
}

/// Reads which of `items` (waiting at `at`) are still unclaimed, where their owner is not
/// in `complete`, and runs those (a claim each, recorded); the others are counted, not
/// recorded, and move their job's state on (as a lost claim's record would).
async fn claim_unclaimed(
    fleet: &FleetRun,
    coordinator: &dyn Coordinator,
    at: Timestamp,
    items: Vec<Awaiting>,
    complete: &[Arc<str>],
) {
    let (shared, scope, tracker) = (fleet.shared(), &fleet.scope, &fleet.tracker);
    let unclaimed = read_unclaimed(shared, coordinator, at, &items, complete).await;
    let (mut taken, mut claimed, mut batched) = (0, 0, Vec::new());
    for ((due, _), unclaimed) in items.into_iter().zip(unclaimed) {
        if !unclaimed {
            claimed += 1;
            // Not recorded here, but handled by the fleet: the job's state moves on, so
            // a restart does not take the triggers another replica ran for missed ones.
            shared.queue_state(&due.job, due.trigger, Some(Outcome::SkippedLost));
        } else if batch::batchable(shared, &due) {
            taken += 1;
            batched.push((due, None));
        } else {
            taken += 1;
            scope.spawning();
            tracker.spawn(run::execute(scope.clone(), due));
        }
    }
    shared.metrics.takeover(taken, claimed);
    if !batched.is_empty() {
        tracker.spawn(batch::execute(fleet.clone(), batched));
    }
    if taken > 0 {
        tracing::info!(%at, taken, claimed, "triggers left unclaimed by their owners: taken over");
    }
}

/// What the looks at one instant have found of each owner's progress.
#[derive(Default)]
struct Looks {
    /// Each owner's count at the last look, and the look at which it last grew.
    counts: HashMap<Arc<str>, (u64, Timestamp)>,
    /// The look that first found each owner's tally marked and empty.
    marked: HashMap<Arc<str>, Timestamp>,
    /// The owners given a delay more for having started.
    credited: HashSet<Arc<str>>,
}

impl Looks {
    /// The owners whose mark says their claims are on their way: their claims went out
    /// before the look at `now`, and are answered, or failed closed, within `patience`
    /// (the claim timeout) after the look that first found the mark. Until then they are
    /// neither voided nor taken over.
    fn claiming(
        &mut self,
        accounts: &[(Arc<str>, Account)],
        now: Timestamp,
        patience: Duration,
    ) -> Vec<Arc<str>> {
        accounts
            .iter()
            .filter(|(_, account)| matches!(account, Account::Claiming))
            .filter(|(owner, _)| now < later(*self.marked.entry(owner.clone()).or_insert(now), patience))
            .map(|(owner, _)| owner.clone())
            .collect()
    }

    /// The owners whose count grew within `patience` (the claim timeout) before the look
    /// at `now`, noting each one's count: each of an owner's batches is answered, or fails
    /// closed, within that time, so an owner with claims out adds to its tally at least
    /// that often, however slow the backend (a 300 ms gap between two batches of a big
    /// burst on a busy PostgreSQL is not a stall). An owner never seen above 0 is not
    /// among them.
    fn growing(
        &mut self,
        accounts: &[(Arc<str>, Account)],
        now: Timestamp,
        patience: Duration,
    ) -> Vec<Arc<str>> {
        let mut growing = Vec::new();
        for (owner, account) in accounts {
            let Account::Short(count) = account else { continue };
            let (seen, grew_at) = self.counts.entry(owner.clone()).or_insert((0, now));
            if *count > *seen {
                (*seen, *grew_at) = (*count, now);
            }
            if *seen > 0 && now < later(*grew_at, patience) {
                growing.push(owner.clone());
            }
        }
        growing
    }

    /// Whether any owner is still claiming: one among `claiming` (marked) or `growing`
    /// ([`Looks::growing`]). An owner found to have started the instant's claims ahead is
    /// alive and its claims are decided: its tally is on its way (a big burst's is
    /// written as its runs start), and it is given one more delay for it.
    fn progressing(
        &mut self,
        accounts: &[(Arc<str>, Account)],
        [claiming, growing]: [&[Arc<str>]; 2],
        starts: &HashMap<Arc<str>, AheadVoid>,
    ) -> bool {
        accounts.iter().fold(false, |progressing, (owner, account)| match account {
            Account::Short(_) => {
                let grows = growing.contains(owner);
                let started = !grows
                    && starts.get(owner) == Some(&AheadVoid::Started)
                    && self.credited.insert(owner.clone());
                grows || started || progressing
            }
            Account::Claiming => claiming.contains(owner) || progressing,
            Account::Complete | Account::Unknown => progressing,
        })
    }
}

/// The tally each owner would have once it has claimed all of its items waiting at one
/// instant, built as the items come (`seen` of them so far), without building their
/// trigger keys: every key of the instant is the job's name and one suffix.
#[derive(Default)]
struct Expected {
    seen: usize,
    suffix: Option<String>,
    tallies: BTreeMap<Arc<str>, Handled>,
}

impl Expected {
    /// Adds the items from `self.seen` on.
    fn add(&mut self, items: &[Awaiting]) {
        for (due, owner) in items.iter().skip(self.seen) {
            // `:{trigger}`, as trigger_key writes it after the name.
            let suffix =
                self.suffix.get_or_insert_with(|| trigger_key("", ScheduleKind::Recurring, due.trigger));
            let name = due.job.name.as_bytes();
            let handled = match due.job.kind {
                ScheduleKind::After(_) => Handled::of_key_parts([name]),
                _ => Handled::of_key_parts([name, suffix.as_bytes()]),
            };
            // The owner's name cloned once per owner, not per trigger.
            match self.tallies.get_mut(owner) {
                Some(tally) => *tally = tally.plus(handled),
                None => {
                    self.tallies.insert(owner.clone(), handled);
                }
            }
        }
        self.seen = self.seen.max(items.len());
    }
}

impl Takeovers {
    /// Accounts for the items waiting at `at` that `expected` has not seen yet.
    fn account(&self, at: Timestamp, expected: &mut Expected) {
        let waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(items) = waiting.get(&at) {
            expected.add(items);
        }
    }
}

/// What an owner's tally at an instant says of the triggers a non-owner waits on.
enum Account {
    /// It accounts for exactly those this replica expected of it.
    Complete,
    /// Not yet: this many triggers so far.
    Short(u64),
    /// Marked but empty: the owner's claims of the instant went out, none is answered yet.
    Claiming,
    /// It could not be read.
    Unknown,
}

/// The tally of each owner in `expected` at `at`, against what it was expected to
/// claim: one read for all of them.
async fn read_tallies(
    shared: &Shared,
    coordinator: &dyn Coordinator,
    at: Timestamp,
    expected: &Expected,
) -> Vec<(Arc<str>, Account)> {
    let owners: Vec<(&str, Timestamp)> = expected.tallies.keys().map(|owner| (&**owner, at)).collect();
    let tallies = match within_claim_timeout(shared, coordinator.handled(&owners)).await {
        Ok(tallies) if tallies.len() == owners.len() => tallies,
        Ok(_) | Err(_) => {
            tracing::debug!(%at, "owners' tallies not read: reading each trigger");
            return expected.tallies.keys().map(|owner| (owner.clone(), Account::Unknown)).collect();
        }
    };
    expected
        .tallies
        .iter()
        .zip(tallies)
        .map(|((owner, wanted), tally)| {
            let account = match tally {
                Some(tally) if tally == *wanted => Account::Complete,
                // Only a mark writes an empty tally.
                Some(tally) if tally.count == 0 => Account::Claiming,
                Some(tally) => Account::Short(tally.count),
                None => Account::Short(0),
            };
            (owner.clone(), account)
        })
        .collect()
}

/// Whether each item is still unclaimed: `false` for those of an owner in `complete`
/// (its tally accounts for exactly the triggers expected of it), else from batched
/// reads of at most [`MAX_CLAIMS_PER_ROUND_TRIP`] triggers. A failed read answers `true`
/// for its triggers: the claims decide (and are recorded).
async fn read_unclaimed(
    shared: &Shared,
    coordinator: &dyn Coordinator,
    at: Timestamp,
    items: &[Awaiting],
    complete: &[Arc<str>],
) -> Vec<bool> {
    let open: Vec<usize> = (0..items.len()).filter(|i| !complete.contains(&items[*i].1)).collect();
    let mut unclaimed = vec![false; items.len()];
    if open.is_empty() {
        return unclaimed;
    }
    let keys: Vec<String> = open
        .iter()
        .map(|i| &items[*i].0)
        .map(|due| trigger_key(&due.job.name, due.job.kind, due.trigger))
        .collect();
    let triggers: Vec<TriggerRef<'_>> =
        open.iter().zip(&keys).map(|(i, key)| TriggerRef { job: &items[*i].0.job.name, key }).collect();
    let mut answers = Vec::with_capacity(triggers.len());
    // A round trip per chunk, each within the claim timeout: a big burst's read is not
    // one statement the timeout cuts off whole.
    for chunk in triggers.chunks(MAX_CLAIMS_PER_ROUND_TRIP) {
        match within_claim_timeout(shared, coordinator.unclaimed(chunk)).await {
            Ok(read) if read.len() == chunk.len() => answers.extend(read),
            Ok(_) | Err(_) => {
                // The claims decide, and a claim that fails is recorded (and logged) itself.
                tracing::debug!(%at, triggers = chunk.len(), "could not read which triggers are unclaimed: claiming them");
                answers.extend(std::iter::repeat_n(true, chunk.len()));
            }
        }
    }
    for (i, answer) in open.into_iter().zip(answers) {
        unclaimed[i] = answer;
    }
    unclaimed
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATIENCE: Duration = Duration::from_secs(1);
    const DELAY: Duration = Duration::from_millis(300);

    fn look(n: u32) -> Timestamp {
        later(Timestamp::UNIX_EPOCH, DELAY * n)
    }

    fn short(count: u64) -> Vec<(Arc<str>, Account)> {
        vec![(Arc::from("owner"), Account::Short(count))]
    }

    /// Whether the owner is still claiming at look `n`, finding its tally at `count`.
    fn progressing(looks: &mut Looks, starts: &HashMap<Arc<str>, AheadVoid>, count: u64, n: u32) -> bool {
        let accounts = short(count);
        let growing = looks.growing(&accounts, look(n), PATIENCE);
        looks.progressing(&accounts, [&[], &growing], starts)
    }

    #[test]
    fn an_owner_whose_tally_grew_within_the_claim_timeout_is_still_claiming() {
        let (mut looks, starts) = (Looks::default(), HashMap::new());
        assert!(progressing(&mut looks, &starts, 1_000, 1), "counted at the first look");
        // Its next batch is slower than a takeover delay, not than the claim timeout.
        assert!(progressing(&mut looks, &starts, 1_000, 2));
        assert!(progressing(&mut looks, &starts, 1_000, 4));
        assert!(progressing(&mut looks, &starts, 2_000, 5), "it grew again");
        assert!(progressing(&mut looks, &starts, 2_000, 8));
        // No growth for a whole claim timeout: every batch it had out was answered or
        // failed closed by then, so it stalled.
        assert!(!progressing(&mut looks, &starts, 2_000, 9));
    }

    #[test]
    fn an_owner_never_seen_counting_is_stalled_at_the_first_look() {
        let (mut looks, starts) = (Looks::default(), HashMap::new());
        assert!(looks.growing(&short(0), look(1), PATIENCE).is_empty());
        assert!(!progressing(&mut looks, &starts, 0, 1));
    }

    #[test]
    fn an_owner_that_started_its_claims_ahead_gets_one_delay_more() {
        let mut looks = Looks::default();
        let starts = HashMap::from([(Arc::from("owner"), AheadVoid::Started)]);
        assert!(progressing(&mut looks, &starts, 0, 1));
        assert!(!progressing(&mut looks, &starts, 0, 2));
    }

    #[test]
    fn a_marked_owner_is_claiming_until_the_claim_timeout_after_the_first_look_that_found_it() {
        let mut looks = Looks::default();
        let marked = vec![(Arc::from("owner"), Account::Claiming)];
        assert_eq!(looks.claiming(&marked, look(1), PATIENCE).len(), 1);
        assert_eq!(looks.claiming(&marked, look(4), PATIENCE).len(), 1);
        assert_eq!(looks.claiming(&marked, look(5), PATIENCE), Vec::<Arc<str>>::new());
    }
}
