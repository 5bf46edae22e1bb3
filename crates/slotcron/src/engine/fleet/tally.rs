//! What an owner tells the non-owners it claimed at one instant: its tally.
//!
//! To spare non-owners a read per trigger, an owner adds what it claimed at each trigger
//! instant to its [`Handled`] tally (one write per batch); a non-owner first reads the
//! tallies of the owners it waits for, one read for all of them, and reads trigger by
//! trigger only the triggers of an owner whose tally is not exactly the set it expected
//! that owner to claim.
//!
//! An owner whose batch may not be answered before the takeover delay is over (a big
//! burst on a slow backend) first *marks* the instant: it writes its tally empty as the
//! batch's claims go out. A non-owner that finds an owner's tally marked but still empty
//! knows the owner is alive and its claims are on their way, and gives it until the claim
//! timeout after that look (by which its claims are answered or failed closed) before it
//! reads them one by one and claims against it. Without the mark it would claim against
//! an owner whose claims are still being decided: it would lose nearly all of them, and
//! under that contention claims time out and fail closed, so triggers run nowhere.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;
use tokio::sync::Notify;

use super::Fleet;
use crate::coordinator::Handled;
use crate::engine::claim::{ClaimNote, Claimed, within_claim_timeout};
use crate::engine::shared::Shared;
use crate::ledger::Outcome;

/// An owner marks an instant ([`Tally::mark`]) when its batch is expected to take at
/// least this share of the takeover delay (1/4): its answer may then come after a
/// non-owner's first look, late as a busy backend makes it.
const MARK_SHARE: u32 = 4;

/// What this replica, as owner, claimed to an answer at one trigger instant in one
/// batch; added to its tally in the coordinator when the last claim of the batch has
/// been answered (dropped).
pub(crate) struct Tally {
    shared: Arc<Shared>,
    at: Timestamp,
    handled: Mutex<Handled>,
    marked: AtomicBool,
    /// Told when another replica won one of these claims: the membership view that made
    /// this replica their owner is out of date ([`View::stale`](super::membership::View::stale)).
    stale: Arc<Notify>,
}

impl Tally {
    pub(super) fn new(shared: Arc<Shared>, at: Timestamp, stale: Arc<Notify>) -> Self {
        Self { shared, at, handled: Mutex::default(), marked: AtomicBool::new(false), stale }
    }

    /// Marks this tally's instant as being claimed by this owner, once: its tally is
    /// written empty now (in the background, bounded by the claim timeout), so that
    /// non-owners give the owner until its claims are answered (see the module's doc).
    fn mark(&self) {
        if !self.marked.swap(true, Ordering::Relaxed) {
            self.write(Handled::default());
        }
    }

    /// Adds `handled` to this owner's tally of the instant in the coordinator, in the
    /// background; a failed write is logged (non-owners then read trigger by trigger).
    fn write(&self, handled: Handled) {
        let Some(coordinator) = self.shared.coordinator.clone() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (shared, at) = (self.shared.clone(), self.at);
        runtime.spawn(async move {
            let ttl = shared.settings.membership_ttl;
            let added = coordinator.add_handled(&shared.instance, at, handled, ttl);
            if let Err(e) = within_claim_timeout(&shared, added).await {
                tracing::debug!(%at, "the owner's tally was not written ({e}): non-owners read each trigger");
            }
        });
    }
}

impl ClaimNote for Tally {
    /// The claim of `key` was decided as `claimed`: counted if it was answered (won,
    /// lost, refused by the mark, or refused for the job's pause: the coordinator has
    /// decided it, so no non-owner need take it over and be refused in turn), not if it
    /// was skipped before the claim or had no answer. A claim another replica won says
    /// this replica's view of the membership is out of date.
    fn note(&self, key: &str, claimed: &Claimed) {
        let answered = |outcome: &Outcome| matches!(outcome, Outcome::SkippedLost | Outcome::SkippedPaused);
        match claimed {
            Err(skip) if !answered(&skip.outcome) => return,
            Err(skip) if skip.outcome == Outcome::SkippedLost && skip.error.is_none() => {
                self.stale.notify_one()
            }
            _ => {}
        }
        let mut handled = self.handled.lock().unwrap_or_else(|p| p.into_inner());
        *handled = handled.plus(Handled::of_key(key));
    }
}

impl Drop for Tally {
    fn drop(&mut self) {
        let handled = *self.handled.get_mut().unwrap_or_else(|p| p.into_inner());
        if handled.count > 0 {
            self.write(handled);
        }
    }
}

/// Marks the instants of `tallies` (this owner's, in one batch of `claims` claims about to
/// go out) when the batch is expected to take [`MARK_SHARE`]'s share of the takeover
/// delay or more at the claim rate measured so far, or when no batch has been measured
/// yet.
pub(super) fn mark_claiming(shared: &Shared, fleet: &Fleet, tallies: &[Arc<Tally>], claims: usize) {
    let slow = |took: Duration| took.saturating_mul(MARK_SHARE) >= shared.settings.takeover_delay;
    if !tallies.is_empty() && fleet.ahead.batch_time(claims).is_none_or(slow) {
        tallies.iter().for_each(|tally| tally.mark());
    }
}
