use std::time::Duration;

use jiff::Timestamp;

use super::describe::Compact;
use super::{Schedule, ScheduleDescription, ScheduleKind};

/// One fire time at an absolute instant.
///
/// If the instant is already past when the scheduler starts, the engine fires it at
/// once, subject to the job's misfire policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At(Timestamp);

impl At {
    /// Fires once at `instant`.
    pub fn new(instant: Timestamp) -> Self {
        Self(instant)
    }

    /// The instant it fires at.
    pub fn instant(&self) -> Timestamp {
        self.0
    }
}

impl Schedule for At {
    fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        (self.0 > after).then_some(self.0)
    }

    fn kind(&self) -> ScheduleKind {
        ScheduleKind::At(self.0)
    }

    fn describe(&self) -> ScheduleDescription {
        ScheduleDescription::new(format!("at {}", self.0), format!("Once, at {}", self.0))
    }
}

/// One fire time a delay after the scheduler starts (or after the job is added to a
/// running scheduler).
///
/// Each replica computes its own instant, so the trigger key is the job name alone: the
/// job runs at most once across the fleet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct After(Duration);

impl After {
    /// Fires once, `delay` after start.
    pub fn new(delay: Duration) -> Self {
        Self(delay)
    }

    /// The delay after start.
    pub fn delay(&self) -> Duration {
        self.0
    }
}

impl Schedule for After {
    /// The fire time of a scheduler that started at `after`.
    fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        after.checked_add(self.0).ok()
    }

    fn kind(&self) -> ScheduleKind {
        ScheduleKind::After(self.0)
    }

    fn describe(&self) -> ScheduleDescription {
        let delay = Compact(self.0);
        ScheduleDescription::new(
            format!("after {delay}"),
            format!("Once, {delay} after the scheduler starts"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn at_fires_once_strictly_after() {
        let t = ts("2024-01-01T00:00:00Z");
        let at = At::new(t);
        assert_eq!(at.next_after(ts("2023-12-31T23:59:59Z")), Some(t));
        assert_eq!(at.next_after(t), None);
    }

    #[test]
    fn after_fires_its_delay_after_start() {
        let after = After::new(Duration::from_secs(90));
        assert_eq!(after.next_after(ts("2024-01-01T00:00:00Z")), Some(ts("2024-01-01T00:01:30Z")));
    }
}
