//! The fleet: what a scheduler with a coordinator does beside its claims, and a
//! single replica with no coordinator never touches. Shared work across replicas: each trigger has one *owner* among the fleet's live
//! members (rendezvous hashing of the job's name over the membership, see
//! [`coordinator::membership`](crate::coordinator::membership)). The owner claims at
//! once; every other replica waits the takeover delay, then asks in one batched read
//! which of those triggers are still unclaimed and claims only those. A non-owner that
//! finds a trigger claimed records nothing for it (it counts it); a replica records every
//! trigger it tried to claim.
//!
//! So an owner that is alive but does not claim (at its concurrency cap, skipping for
//! clock skew, its link down) costs a late run, never a lost one; and since the claim
//! alone decides who runs, a stale membership view costs at most a late run, never a
//! double one. A replica that dies stops heartbeating, and its jobs move within the
//! membership TTL.
//!
//! Ownership applies to the triggers the engine claims one by one on schedule: a job's
//! catch-up (claimed in trigger order), a job with jitter (its start is its own) and an
//! `on_every_replica` job are claimed at once by every replica, as without a membership.
//!
//! The rooms: [`membership`] (this replica's heartbeat and its view of the members),
//! [`placement`] (the jobs placed on labels: owned among the members that carry them),
//! [`details`] (what it publishes of itself, and the check of its settings at join),
//! [`tally`] (what an owner tells non-owners it claimed), [`takeover`] (non-owners
//! claiming what owners left), [`orphans`] (claims a gone replica won and never started), [`partition`] (a replica
//! cut off from the coordinator knows it has left),
//! [`ahead`] (claims made before their instant), [`batch`] (triggers due together
//! claimed in one round trip) and [`cancels`] (runs an operator asked another member
//! to stop).

pub(crate) mod ahead;
pub(crate) mod batch;
pub(crate) mod cancels;
pub(crate) mod cut_off;
pub(crate) mod details;
pub(crate) mod dispatch;
pub(crate) mod membership;
pub(crate) mod orphans;
pub(crate) mod partition;
pub(crate) mod placement;
pub(crate) mod takeover;
pub(crate) mod tally;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use jiff::Timestamp;
use tokio::sync::{Notify, Semaphore};
use tokio_util::task::TaskTracker;

use super::queue::Lane;
use super::scope::{BATCHES_IN_FLIGHT, RunScope};
use super::table::{Action, Due};
use crate::engine::shared::Shared;
use crate::job::Job;
use tally::Tally;

/// The fleet's state in one scheduler: its view of the membership, the triggers it
/// waits to take over, its claims ahead, and the turns of its claim batches.
pub(crate) struct Fleet {
    /// This replica's last view of the fleet's membership.
    pub membership: membership::View,
    /// The labels of the members, as last read.
    pub labels: placement::MemberLabels,
    pub recorder_looks: placement::RecorderLooks,
    /// The triggers other replicas own, waiting out the takeover delay.
    pub takeovers: takeover::Takeovers,
    /// This replica's claims ahead, waiting for their triggers.
    pub ahead: ahead::Ahead,
    /// The claim batches in flight ([`BATCHES_IN_FLIGHT`]).
    pub batches: Arc<Semaphore>,
}

impl Default for Fleet {
    fn default() -> Self {
        Self {
            membership: membership::View::default(),
            labels: placement::MemberLabels::default(),
            recorder_looks: placement::RecorderLooks::default(),
            takeovers: takeover::Takeovers::default(),
            ahead: ahead::Ahead::default(),
            batches: Arc::new(Semaphore::new(BATCHES_IN_FLIGHT)),
        }
    }
}

/// What the fleet's tasks of one [`Scheduler::run`](crate::Scheduler::run) share: the
/// runs' scope, the fleet's state and the tracker the runs are spawned on.
#[derive(Clone)]
pub(crate) struct FleetRun {
    pub scope: Arc<RunScope>,
    pub state: Arc<Fleet>,
    pub tracker: TaskTracker,
}

impl FleetRun {
    /// The scheduler's shared state.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.scope.shared
    }
}

/// Who claims a due item first.
pub(crate) enum Role {
    /// This replica: it claims at once, adding what it claimed to this tally.
    Owner(Arc<Tally>),
    /// Another replica: this one waits the takeover delay.
    Other(Arc<str>),
    /// Everyone claims at once: no membership, or a trigger ownership does not apply to.
    Everyone,
}

/// Decides the role of each item of one batch taken from the table, sharing one tally
/// per trigger instant among the items this replica owns.
pub(crate) struct Split {
    members: Option<Arc<[Arc<str>]>>,
    /// The generation of the membership view `members` is in.
    generation: u32,
    labels: placement::LabelsOf,
    tallies: HashMap<Timestamp, Arc<Tally>>,
    stale: Arc<Notify>,
}

impl Split {
    pub fn new(shared: &Shared, fleet: &Fleet) -> Self {
        let (members, generation) = match (&shared.coordinator, shared.settings.shared_work) {
            (Some(_), true) => fleet.membership.get_with_generation(),
            _ => (None, 0),
        };
        let stale = fleet.membership.stale();
        Self { members, generation, labels: fleet.labels.get(), tallies: HashMap::new(), stale }
    }

    /// The owner of `job`'s triggers among `members` ([`placement::owner`]), noted in the
    /// job for this view's generation: the rendezvous hash is reckoned once per job and
    /// view, not at every trigger. Jobs placed on labels (which change apart from the
    /// view) are reckoned each time.
    fn owner<'m>(&self, shared: &Shared, job: &Job, members: &'m [Arc<str>]) -> Option<&'m Arc<str>> {
        if !job.placement.is_anywhere() || members.len() >= usize::from(u8::MAX) {
            return placement::owner(shared, &self.labels, job, members);
        }
        let noted = job.owner_noted.load(Ordering::Relaxed);
        if noted >> 8 == self.generation & 0x00ff_ffff && noted & 0xff != 0 {
            return members.get((noted & 0xff) as usize - 1);
        }
        let owner = placement::owner(shared, &self.labels, job, members)?;
        if let Some(index) = members.iter().position(|member| Arc::ptr_eq(member, owner)) {
            let index = u32::try_from(index + 1).unwrap_or(0);
            job.owner_noted.store((self.generation << 8) | index, Ordering::Relaxed);
        }
        Some(owner)
    }

    /// Whether this replica owns `job`'s triggers (every job's it carries the labels of,
    /// without a membership).
    pub fn owns(&self, shared: &Shared, job: &Job) -> bool {
        if !placement::runs_here(shared, job) {
            return false;
        }
        let Some(members) = &self.members else { return true };
        self.owner(shared, job, members).is_none_or(|owner| **owner == *shared.instance)
    }

    /// The lane `job`'s next trigger waits in: [`Lane::Others`] if another replica owns
    /// it (this one looks at it only after the takeover delay), else [`Lane::Own`].
    pub fn lane(&self, shared: &Shared, job: &Job) -> Lane {
        match self.members.is_some() && owned(job) && !self.owns(shared, job) {
            true => Lane::Others,
            false => Lane::Own,
        }
    }

    /// The role of `due`, claimed on its own (not in a catch-up).
    pub fn role(&mut self, shared: &Arc<Shared>, due: &Due) -> Role {
        let Some(members) = &self.members else { return Role::Everyone };
        let job = &due.job;
        if !owned(job) || due.action != Action::Run {
            return Role::Everyone;
        }
        // The member's own id (shared, not copied per trigger).
        match self.owner(shared, job, members) {
            Some(owner) if **owner != *shared.instance => Role::Other(owner.clone()),
            _ => Role::Owner(
                self.tallies
                    .entry(due.trigger)
                    .or_insert_with(|| Arc::new(Tally::new(shared.clone(), due.trigger, self.stale.clone())))
                    .clone(),
            ),
        }
    }
}

/// Whether ownership applies to `job`'s scheduled triggers: not to a job with jitter (its
/// start is its own) nor to an `on_every_replica` job.
pub(crate) fn owned(job: &Job) -> bool {
    !job.every_replica && job.jitter().is_none()
}
