use jiff::{SignedDuration, Timestamp};

use super::{Schedule, ScheduleError, ScheduleKind};

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
}

/// One fire time a delay after the scheduler starts (or after the job is added to a
/// running scheduler).
///
/// Each replica computes its own instant, so the trigger key is the job name alone: the
/// job runs at most once across the fleet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct After(SignedDuration);

impl After {
    /// Fires once, `delay` after start.
    ///
    /// # Errors
    /// `delay` is negative.
    pub fn new(delay: SignedDuration) -> Result<Self, ScheduleError> {
        if delay.is_negative() {
            return Err(ScheduleError::invalid(
                "after",
                format!("the delay must not be negative, got {delay:#}"),
            ));
        }
        Ok(Self(delay))
    }

    /// The delay after start.
    pub fn delay(&self) -> SignedDuration {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_fires_once_strictly_after() {
        let t: Timestamp = "2024-01-01T00:00:00Z".parse().unwrap();
        let at = At::new(t);
        assert_eq!(at.next_after(t - SignedDuration::from_secs(1)), Some(t));
        assert_eq!(at.next_after(t), None);
    }

    #[test]
    fn after_rejects_negative_delay() {
        assert!(After::new(SignedDuration::from_secs(-1)).is_err());
        assert_eq!(
            After::new(SignedDuration::ZERO).unwrap().delay(),
            SignedDuration::ZERO
        );
    }
}
