//! Counted start marks: the runs of a job with [`max_runs`](crate::JobBuilder::max_runs),
//! counted in the coordinator with their start marks, so that the count is exact across
//! the fleet (see the coordinator's ["Counted runs"](super::Coordinator#counted-runs)).

use super::StartMark;

/// One start mark that counts a run of its job, as
/// [`Coordinator::mark_counted_starts`](super::Coordinator::mark_counted_starts) takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountedMark<'a> {
    /// The claim's start mark (its job and trigger key).
    pub mark: StartMark<'a>,
    /// The job's `max_runs`: the mark is refused when the job has this many runs
    /// counted already. At least 1.
    pub max_runs: u64,
}

/// The answer to one [`CountedMark`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountedAnswer {
    /// The claim is the caller's and now marked, its run counted (or it was already: a
    /// mark whose reply was lost is sent again and counts nothing more): it may start.
    Marked,
    /// Another replica holds the claim (it was taken over): the run must not start.
    Lost,
    /// The job had `max_runs` runs counted already: the mark is refused, the claim is
    /// settled (never taken over) and the run must not start; the job has ended.
    MaxRunsReached,
}
