//! Parent runs a live member presumed `interrupted` (their daemon left the membership):
//! their real end may still come — a daemon cut off by a partition writes it when it is
//! back, and fires its children then — so their children's triggers wait until the run
//! can no longer end (docs/design.md, "Job chains"):
//!
//! - its daemon's instance starts again as a new incarnation (the old one is gone the
//!   moment the new one joins): the new one decides them at its start;
//! - its daemon never comes back: a live member decides them once the instance has been
//!   out of the membership, as that member saw it, for [`PRESUMED_PARENT_WAIT`]. Nothing
//!   bounds how long a cut-off daemon's `record` run may go on, so this fails closed: a
//!   real end written later fires nothing, since the child's claim, settled, refuses it.
//!
//! Each trigger is claimed before it is recorded ([`decide`](super::skip::decide)), so
//! that one member or incarnation decides it, once.

use std::time::Duration;

use super::{Parent, skip};
use crate::Scheduler;
use crate::coordinator::job_owner;
use crate::ledger::{LedgerError, LedgerQuery, Outcome, RunRecord};

/// How long a live member waits, from the first sweep in which it finds a daemon out of
/// the membership, before it records the children of that daemon's runs presumed
/// interrupted `skipped-parent` (an hour): a daemon cut off for longer than that and then
/// back finds its runs' children decided.
pub const PRESUMED_PARENT_WAIT: Duration = Duration::from_secs(3600);

/// When [`Scheduler::skip_after_presumed`] looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PresumedSweep {
    /// At the scheduler's start, before it runs: the runs of its own instance id were its
    /// previous incarnations', which are gone for good.
    AtStart,
    /// While it runs: the runs of other instances, once they have been out of the
    /// membership for [`PRESUMED_PARENT_WAIT`].
    Periodic,
}

impl Scheduler {
    /// Records the triggers of the jobs chained after runs recorded
    /// [`Interrupted`](Outcome::Interrupted) that this scheduler has, whose daemon is gone
    /// for good (`when` says which: [`PresumedSweep`]), `skipped-parent` — each trigger
    /// with no record yet, claimed first so that one replica of the fleet records it, and
    /// their own children in turn; not for a job that reruns an interrupted trigger (its
    /// rerun's end decides). The reason says how the parent's daemon was seen gone for
    /// good. [`PresumedSweep::Periodic`] decides nothing while this scheduler cannot vouch
    /// for its view of the membership ([`Scheduler::vouched_members`]), leaves each run to
    /// its job's owner among the live members (one member decides), and starts an
    /// instance's wait at the first call that finds it out of the membership. Returns how
    /// many triggers were recorded.
    ///
    /// # Errors
    /// The ledger could not be read; nothing was decided.
    pub async fn skip_after_presumed(&self, when: PresumedSweep) -> Result<usize, LedgerError> {
        let members = match when {
            PresumedSweep::AtStart => None,
            PresumedSweep::Periodic => match self.vouched_members() {
                Some(members) => {
                    self.forget_returned(&members);
                    Some(members)
                }
                None => return Ok(0),
            },
        };
        // The periodic sweep runs with the ledger's writer: its records are waited for.
        let durable = when == PresumedSweep::Periodic;
        let mut recorded = 0;
        // Taken before the loop: the table is locked only as long as its own statement.
        let parents = self.shared.table().parents();
        for parent in parents {
            let query = LedgerQuery {
                job: Some(parent.to_string()),
                outcome: Some(Outcome::Interrupted),
                limit: usize::MAX,
                ..LedgerQuery::default()
            };
            for record in self.ledger().query(&query).await? {
                if self.reruns(&record) {
                    continue;
                }
                let gone = match &members {
                    None => self.restarted(&record),
                    Some(members) => self.absent_for_good(&record, members),
                };
                if let Some(note) = gone {
                    recorded += skip::decide(&self.shared, &Parent::of(&record), Some(&note), durable).await;
                }
            }
        }
        Ok(recorded)
    }

    /// Why `record`'s daemon is gone for good, at this scheduler's start: it was this
    /// instance, now a new incarnation.
    fn restarted(&self, record: &RunRecord) -> Option<String> {
        let own = &self.shared.instance;
        (record.instance == *own).then(|| {
            format!(
                "its daemon, instance {own}, started again as a new incarnation: the run can no longer end"
            )
        })
    }

    /// Why `record`'s daemon is gone for good while this scheduler runs: another
    /// instance, out of the membership (`members`, vouched for) for
    /// [`PRESUMED_PARENT_WAIT`] or more since this scheduler first found it out.
    fn absent_for_good(&self, record: &RunRecord, members: &[String]) -> Option<String> {
        let instance = &record.instance;
        if *instance == self.shared.instance || members.iter().any(|m| **m == **instance) {
            return None;
        }
        // One member decides: the parent job's owner among the live ones.
        if job_owner(&record.job, members) != Some(&*self.shared.instance) {
            return None;
        }
        let now = self.shared.clock.now();
        let since = *self.shared.absent_since().entry(instance.clone()).or_insert(now);
        let waited = Duration::try_from(since.duration_until(now)).unwrap_or_default();
        (waited >= PRESUMED_PARENT_WAIT).then(|| {
            format!(
                "its daemon, instance {instance}, presumed gone, has been out of the fleet's membership since \
                 {since} at least ({PRESUMED_PARENT_WAIT:?} or more, as {} saw it): it is not waited for any longer",
                self.shared.instance
            )
        })
    }

    /// Forgets when the instances back in the membership (`members`, vouched for) were
    /// found out of it.
    fn forget_returned(&self, members: &[String]) {
        self.shared.absent_since().retain(|instance, _| !members.iter().any(|m| **m == **instance));
    }
}
