//! A job chain's schedule: fire times of its own, none; a trigger each time a run of
//! its parent ends ([`RunAfter`]).

use std::sync::Arc;

use jiff::Timestamp;

use super::{Schedule, ScheduleDescription, ScheduleKind};

/// The schedule of a job that runs after each successful run of its *parent* job
/// ([`JobBuilder::run_after`](crate::JobBuilder::run_after)): it has no fire times of
/// its own. Each trigger of the parent whose run ends is a trigger of this job, at the
/// parent's trigger instant (UTC): run when the parent succeeded, recorded
/// [`SkippedParent`](crate::Outcome::SkippedParent) otherwise (docs/design.md, "Job
/// chains").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAfter {
    parent: Arc<str>,
}

impl RunAfter {
    /// Runs after each successful run of the job named `parent`.
    pub(crate) fn new(parent: Arc<str>) -> Self {
        Self { parent }
    }

    /// The parent job's name.
    pub fn parent(&self) -> &str {
        &self.parent
    }
}

impl Schedule for RunAfter {
    /// None: the parent's runs fire this job's triggers.
    fn next_after(&self, _after: Timestamp) -> Option<Timestamp> {
        None
    }

    fn prev_before(&self, _before: Timestamp) -> Option<Timestamp> {
        None
    }

    fn kind(&self) -> ScheduleKind {
        ScheduleKind::Chained
    }

    fn describe(&self) -> ScheduleDescription {
        ScheduleDescription::new(
            format!("after success of {}", self.parent),
            format!("After each successful run of {}", self.parent),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chained_schedule_has_no_fire_times_and_names_its_parent() {
        let schedule = RunAfter::new("extract".into());
        let t: Timestamp = "2024-05-17T10:00:00Z".parse().unwrap();
        assert_eq!((schedule.next_after(t), schedule.prev_before(t)), (None, None));
        assert_eq!(schedule.kind(), ScheduleKind::Chained);
        assert_eq!(schedule.describe().text, "after success of extract");
    }
}
