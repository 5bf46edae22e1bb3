//! The floor under every job's grace window: the takeover delay, while the daemons of a
//! fleet share the work.

use std::time::Duration;

use super::JobsFile;
use crate::duration;

/// While the daemons share the work, the takeover delay (and where it was given) that
/// every job's grace window must exceed, at start and at each reload; `None` otherwise.
#[derive(Debug, Clone, Copy)]
pub struct GraceFloor(Option<(Duration, &'static str)>);

impl GraceFloor {
    /// The floor of a takeover delay and where it was given; `None`: no floor, the
    /// daemons do not share the work.
    pub fn new(takeover_delay: Option<(Duration, &'static str)>) -> Self {
        Self(takeover_delay)
    }

    /// Refuses a job of `file` whose grace window is not longer than the takeover delay:
    /// a trigger its owner cannot claim would run on another daemon later than the job's
    /// grace allows.
    ///
    /// # Errors
    /// Names the file, the line of the job's `grace` (else the job's line), the job, the
    /// `grace` field and the takeover delay's source.
    pub fn check(self, file: &JobsFile) -> Result<(), String> {
        let Some((delay, source)) = self.0 else { return Ok(()) };
        match file.jobs.iter().find(|entry| entry.job.grace() <= delay) {
            Some(entry) => Err(format!(
                "{}:{}: job {:?}: grace: {} must be longer than the takeover delay ({}, {source}), \
                 or a trigger its owner cannot claim runs later than its grace on another daemon",
                file.path.display(),
                entry.line_of("grace"),
                entry.job.name(),
                duration::display(entry.job.grace()),
                duration::display(delay)
            )),
            None => Ok(()),
        }
    }
}
