//! One pass of the engine's loop with a coordinator: once everything due is taken, the
//! instants claimed ahead start and their runs go first, then the rest of what is due
//! is split by owner — this
//! replica's own triggers are claimed (in batches where nothing holds them up), the
//! others' wait out the takeover delay — and once everything due is taken, the next
//! instants this replica owns are claimed ahead.

use jiff::Timestamp;

use super::{FleetRun, Role, Split, ahead, batch, placement};
use crate::engine::run;
use crate::engine::scope::Next;
use crate::engine::shared::Shared;
use crate::engine::table::Due;

/// The loop's working lists, kept from pass to pass so a burst allocates them once.
pub(crate) struct Dispatch {
    fleet: FleetRun,
    due: Vec<Due>,
    /// The items of a burst left for after its runs claimed ahead have started.
    deferred: Vec<Due>,
    /// The triggers of a burst claimed ahead, taken so far.
    claimed_ahead: Vec<ahead::Taken>,
}

impl Dispatch {
    pub fn new(fleet: FleetRun) -> Self {
        Self {
            fleet,
            due: Vec::with_capacity(batch::MAX_BATCH),
            deferred: Vec::new(),
            claimed_ahead: Vec::new(),
        }
    }

    /// One pass at `now`.
    pub async fn pass(&mut self, now: Timestamp) -> Next {
        let fleet = self.fleet.clone();
        let (shared, scope) = (fleet.shared(), &fleet.scope);
        let mut split = Split::new(shared, &fleet.state);
        let ahead = &fleet.state.ahead;
        let (more, deadline) = {
            let mut table = shared.table();
            let lane = |job: &_| split.lane(shared, job);
            let more =
                table.take_due(now, &mut self.due, batch::MAX_BATCH, lane, |job, at| ahead.holds(job, at));
            (more, table.next_deadline())
        };
        self.claimed_ahead.extend(ahead.take(&mut self.due));
        if !self.claimed_ahead.is_empty() || ahead.start_due(now) {
            // An instant's claims ahead start together (its start is their start mark),
            // once all of its triggers are taken; their runs go before the rest of the
            // burst is looked at: their claims are answered, while the rest is claimed
            // or waits out the takeover delay anyway.
            self.deferred.append(&mut self.due);
            if more {
                tokio::task::yield_now().await;
                return Next::Take;
            }
            ahead::start_due(&fleet, now, std::mem::take(&mut self.claimed_ahead)).await;
        }
        self.deferred.append(&mut self.due);
        std::mem::swap(&mut self.due, &mut self.deferred);
        let (spawned, batched) = spread(&fleet, &mut split, self.due.drain(..));
        drop(split);
        // Only batches were spawned: they pace their own runs, so the loop goes on
        // taking due triggers (after a yield), which then wait for their batch's turn,
        // not in the table.
        let only_batches = !batched.is_empty() && spawned == 0;
        if !batched.is_empty() {
            fleet.tracker.spawn(batch::execute(fleet.clone(), batched));
        }
        run::spawn_requests(scope, &fleet.tracker);
        if more {
            if only_batches {
                // Let the batch just spawned send its claims while the loop takes the
                // rest of the burst: the first claims go out before the last are taken.
                tokio::task::yield_now().await;
            } else {
                scope.pace().await;
            }
            return Next::Take;
        }
        Next::Sleep(settle(&fleet, shared, deadline))
    }
}

/// Hands each due item to its path by its role (one whose job's labels this replica lacks
/// to [`placement::keep`]): a job's catch-up in trigger order, an
/// owned or everyone's trigger into the batch (or spawned, where a batch cannot take it),
/// another's to the takeovers. Returns how many runs were spawned and the batch.
fn spread(
    fleet: &FleetRun,
    split: &mut Split,
    items: impl Iterator<Item = Due>,
) -> (usize, Vec<batch::Item>) {
    let (shared, scope, tracker) = (fleet.shared(), &fleet.scope, &fleet.tracker);
    let mut batched = Vec::new();
    let items = items.filter_map(|item| placement::keep(fleet, item));
    let spawned = run::spawn_due(scope, tracker, items, |item| match split.role(shared, &item) {
        Role::Other(owner) => {
            fleet.state.takeovers.push(shared, item, owner);
            false
        }
        // Counted as spawning once claimed, when its run is spawned.
        Role::Owner(tally) if batch::batchable(shared, &item) => {
            batched.push((item, Some(tally)));
            false
        }
        Role::Everyone if batch::batchable(shared, &item) => {
            batched.push((item, None));
            false
        }
        Role::Owner(tally) => {
            scope.spawning();
            tracker.spawn(run::execute_owned(scope.clone(), item, Some(tally as _)));
            true
        }
        Role::Everyone => {
            scope.spawning();
            tracker.spawn(run::execute(scope.clone(), item));
            true
        }
    });
    (spawned, batched)
}

/// Everything due is taken: the triggers others own may be looked at, and the triggers
/// this replica owns within the claim-ahead window are claimed now. Returns when the loop
/// must wake next: the table's `deadline`, the next instant entering the claim-ahead
/// window, or the next start of claims ahead.
fn settle(fleet: &FleetRun, shared: &Shared, deadline: Option<Timestamp>) -> Option<Timestamp> {
    fleet.state.takeovers.release(fleet);
    ahead::claim_upcoming(fleet);
    let ahead = &fleet.state.ahead;
    let wake = ahead.next_wake(shared, &fleet.state, |after| shared.table().first_after(after));
    [deadline, wake, ahead.next_start()].into_iter().flatten().min()
}
