//! What happens to a run found interrupted: its daemon died (or left the fleet's
//! membership) after its start mark and before its end (docs/design.md, "Claims, start marks
//! and takeover").

/// What happens to a trigger whose run was interrupted (default
/// [`OnInterrupt::Record`]). Quartz calls the rerun `requestsRecovery`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OnInterrupt {
    /// The run is recorded [`Interrupted`](crate::Outcome::Interrupted), and nothing more.
    #[default]
    Record,
    /// The run is recorded interrupted and the trigger runs once more on a live
    /// scheduler as soon as the interruption is known, within the job's overlap policy
    /// and retries, with cause [`Recovered`](crate::Cause::Recovered) (the daemon's
    /// command sees `SLOTCRON_RECOVERED=1`). A rerun that is itself interrupted is
    /// recorded, not rerun. Use it for work that is safe to run twice in part: the
    /// interrupted run may have done some of it (its fencing token is lower than the
    /// rerun's).
    Rerun,
}

impl OnInterrupt {
    /// Every choice, in declaration order.
    pub const ALL: [OnInterrupt; 2] = [Self::Record, Self::Rerun];

    /// The choice called `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|o| o.name() == name)
    }

    /// The name used in jobs files: `record`, `rerun`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Record => "record",
            Self::Rerun => "rerun",
        }
    }
}
