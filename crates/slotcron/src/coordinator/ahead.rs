//! Claims ahead: an owner claims the triggers it owns at one instant shortly *before*
//! that instant, so that a burst's claims are made while nothing is due, and its runs
//! start on time however long the backend takes over the burst.
//!
//! A claim made ahead holds its trigger only once its owner has *started* the instant
//! ([`Coordinator::start_ahead`](crate::Coordinator::start_ahead)), which it does when the instant comes. Until then a
//! non-owner may *void* the owner's start ([`Coordinator::void_ahead`](crate::Coordinator::void_ahead)): it does so when
//! the takeover delay after the instant has passed and the owner has neither started nor
//! accounted for its triggers (it died, stalled or lost its link after claiming ahead).
//! Start and void are one latch per owner and instant, set once, atomically, by whichever
//! comes first: so either the owner runs its claims ahead, or none of them runs there and
//! the voiding replica takes them over (a void drops them, and a claim ahead made after
//! the void is refused). A claim ahead therefore costs, at worst, a late run (the
//! takeover delay), never a lost or a double one — as Quartz's acquired triggers are
//! recovered from a dead node.
//!
//! Both act only until an instant the engine gives (`until`, on the coordinator's
//! clock), and the latch is kept for at least as long again after it, so a start or a
//! void that comes too late finds the latch rather than a fresh key: a start that comes
//! too late is refused, a void that comes too late changes nothing (the claims ahead
//! stand).

/// What [`Coordinator::start_ahead`](crate::Coordinator::start_ahead) found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AheadStart {
    /// The owner started the instant: its claims ahead hold, and it runs them but those of
    /// the jobs in `paused`, the jobs paused fleet-wide when it started (a pause that came
    /// after a claim ahead was made still refuses its run, as it would have refused the
    /// claim): those are recorded `skipped-paused`. The start is the [start
    /// mark](crate::Coordinator#start-marks-and-takeover) of the claims it was given.
    Started {
        /// The names of the jobs paused when the owner started (empty from a coordinator
        /// without [`Controls`](crate::Controls)).
        paused: Vec<String>,
        /// Per claim given to the start, in order: whether its start is now marked
        /// (`false`: another replica took it over first, and its run must not start), as
        /// [`Coordinator::mark_starts`](crate::Coordinator::mark_starts) answers.
        marked: Vec<bool>,
    },
    /// A non-owner voided the owner's start first (or the start came after `until`):
    /// none of the owner's claims ahead of the instant holds; other replicas claim those
    /// triggers.
    Voided,
}

/// What [`Coordinator::void_ahead`](crate::Coordinator::void_ahead) found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AheadVoid {
    /// The owner had started the instant (or the void came after `until`): nothing
    /// changed, its claims ahead hold.
    Started,
    /// The owner's start is void: none of its claims ahead of the instant holds (those
    /// among the triggers given were dropped), and a claim ahead it makes now is refused.
    Voided {
        /// Whether the owner had made claims ahead of the instant.
        ahead: bool,
    },
}
