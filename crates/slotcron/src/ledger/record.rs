use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;

/// How a trigger ended on one replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The handler returned `Ok`.
    Succeeded,
    /// The handler returned an error.
    Failed,
    /// The handler ran past its timeout.
    TimedOut,
    /// The handler panicked.
    Panicked,
    /// The scheduler shut down and dropped the handler before it finished.
    Aborted,
    /// Another replica won the claim: normal in a fleet.
    SkippedLost,
    /// The coordinator was unreachable or slower than the claim timeout: the trigger was
    /// skipped rather than risk a double run (fail closed).
    SkippedBackendUnavailable,
    /// This replica's clock was off the coordinator's by more than the clock-skew slack:
    /// the trigger was skipped rather than risk a double run (fail closed).
    SkippedClockSkew,
    /// The trigger was noticed after its grace window and the misfire policy dropped it.
    Missed,
}

impl Outcome {
    /// Every outcome, in declaration order.
    pub const ALL: [Outcome; 9] = [
        Self::Succeeded,
        Self::Failed,
        Self::TimedOut,
        Self::Panicked,
        Self::Aborted,
        Self::SkippedLost,
        Self::SkippedBackendUnavailable,
        Self::SkippedClockSkew,
        Self::Missed,
    ];

    /// The stable name used in logs, files and databases, e.g. `skipped-lost`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::TimedOut => "timed-out",
            Self::Panicked => "panicked",
            Self::Aborted => "aborted",
            Self::SkippedLost => "skipped-lost",
            Self::SkippedBackendUnavailable => "skipped-backend-unavailable",
            Self::SkippedClockSkew => "skipped-clock-skew",
            Self::Missed => "missed",
        }
    }

    /// Whether the handler ran (whatever its result).
    pub fn ran(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::TimedOut | Self::Panicked | Self::Aborted)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown outcome name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown outcome {0:?}")]
pub struct UnknownOutcome(pub String);

impl FromStr for Outcome {
    type Err = UnknownOutcome;

    fn from_str(name: &str) -> Result<Self, UnknownOutcome> {
        Self::ALL.into_iter().find(|o| o.as_str() == name).ok_or_else(|| UnknownOutcome(name.to_owned()))
    }
}

/// One trigger as one replica handled it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRecord {
    /// The job's name.
    pub job: Arc<str>,
    /// The scheduled instant (UTC).
    pub trigger: Timestamp,
    /// The scheduler instance that recorded it.
    pub instance: Arc<str>,
    /// How it ended.
    pub outcome: Outcome,
    /// The fencing token of the won claim, when the handler ran.
    pub fencing_token: Option<u64>,
    /// When the handler started, or when the trigger was skipped (UTC).
    pub started: Timestamp,
    /// How long the handler ran (zero when it did not).
    pub duration: Duration,
    /// The error, panic message, or reason for a skip.
    pub error: Option<String>,
}
