//! Start marks and takeover: the types of the coordinator's
//! ["Start marks and takeover"](super::Coordinator#start-marks-and-takeover).

/// One won claim whose run is about to start: its start mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartMark<'a> {
    /// The job's name.
    pub job: &'a str,
    /// The trigger key the claim was made under (as in [`Claim::key`](super::Claim::key)).
    pub key: &'a str,
}

/// A claim held without a start mark, as [`Coordinator::unstarted`](super::Coordinator::unstarted)
/// lists them: the job's name and the trigger key the claim was made under.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Unstarted {
    /// The job's name.
    pub job: String,
    /// The trigger key (without the backend's namespace).
    pub key: String,
}
