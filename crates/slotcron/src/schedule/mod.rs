//! Schedules: what yields the fire times of a job ([`Schedule`]).

mod calendar;
mod chain;
mod cron;
mod describe;
mod duration;
mod error;
mod every_days;
mod interval;
mod one_shot;
mod prev;
mod window;
mod zone;

pub use calendar::{Calendar, Excluding, MAX_EXCLUDED_IN_A_ROW};
pub use chain::RunAfter;
pub use cron::{CronError, CronErrorKind, CronField, CronSchedule};
pub use describe::ScheduleDescription;
pub use duration::{DurationError, parse_duration};
pub use error::ScheduleError;
pub use every_days::EveryDays;
pub use interval::Interval;
pub use one_shot::{After, At};
pub use window::Window;

use std::fmt;

use std::time::Duration;

use jiff::Timestamp;

/// The longest period, delay or timeout a job accepts: 100 years (of 365 days). Longer
/// would never matter in practice, is more likely a typo, and would overflow instants.
pub const MAX_DURATION: Duration = Duration::from_secs(100 * 365 * 86_400);

/// A source of fire times: what yields the fire times of a job.
///
/// Every built-in kind implements it, and so can a user's own type:
///
/// | kind | type | recurrence |
/// |---|---|---|
/// | interval anchored to the Unix epoch | [`Interval`] | recurring |
/// | cron expression in an IANA time zone | [`CronSchedule`] | recurring |
/// | every N days at a wall-clock time | [`EveryDays`] | recurring |
/// | one absolute instant | [`At`] | one-shot |
/// | a delay after the scheduler starts | [`After`] | one-shot |
/// | after each successful run of another job | [`RunAfter`] | chained |
///
/// Implement it for a custom schedule; the engine asks for the next fire time after the
/// trigger it has just fired, so an implementation must be a pure function of its input.
pub trait Schedule: fmt::Debug + Send + Sync + 'static {
    /// The first fire time strictly after `after`, or `None` when the schedule has no
    /// more fire times (an exhausted schedule).
    ///
    /// Must return quickly and never panic, whatever `after` is.
    fn next_after(&self, after: Timestamp) -> Option<Timestamp>;

    /// The last fire time strictly before `before`, or `None` when there is none (a
    /// one-shot still to come, a schedule whose first fire time is later) — croniter's
    /// `get_prev`, cron-parser's `prev()`.
    ///
    /// The exact inverse of [`next_after`](Schedule::next_after), daylight saving time
    /// included: for every `t` with a previous fire time `p`, `next_after(p)` is at or
    /// after `t`, and nothing fires strictly between `p` and `t`. The default finds it
    /// from `next_after` alone (a search back over doubling windows, then a bisection to
    /// the nanosecond: at most about 110 calls of `next_after`), so every schedule kind,
    /// a user's own included, has it; override it only with something equal and faster.
    fn prev_before(&self, before: Timestamp) -> Option<Timestamp> {
        prev::prev_by_search(self, before)
    }

    /// How the engine treats this schedule; [`ScheduleKind::Recurring`] unless
    /// overridden.
    fn kind(&self) -> ScheduleKind {
        ScheduleKind::Recurring
    }

    /// How the schedule reads to a person (the admin API and status page show it). The
    /// default: its `Debug` text, no English; the built-in schedules say more.
    fn describe(&self) -> ScheduleDescription {
        ScheduleDescription { text: format!("{self:?}"), english: None, zone: None }
    }
}

/// What the engine needs to know about a schedule beyond its fire times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScheduleKind {
    /// Recurring fire times (cron expressions, custom schedules).
    Recurring,
    /// A fixed period anchored to the Unix epoch: recurring, and the only kind that
    /// permits `run_on_start`.
    Interval {
        /// The period between fire times.
        period: Duration,
    },
    /// One fire time at this instant; fires at once if already past at start-up.
    At(Timestamp),
    /// One fire time this long after the scheduler starts (or after the job is added to
    /// a running scheduler). Its trigger key is the job name alone.
    After(Duration),
    /// No fire times of its own: a trigger at each trigger instant of a parent job whose
    /// run ended ([`RunAfter`]), fired by the replica that ran the parent.
    Chained,
}

impl ScheduleKind {
    /// Whether the schedule fires at most once.
    pub fn is_one_shot(self) -> bool {
        matches!(self, Self::At(_) | Self::After(_))
    }
}

/// A schedule behind a smart pointer is that schedule.
macro_rules! schedule_behind {
    ($pointer:ty) => {
        impl<S: Schedule + ?Sized> Schedule for $pointer {
            fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
                (**self).next_after(after)
            }

            fn prev_before(&self, before: Timestamp) -> Option<Timestamp> {
                (**self).prev_before(before)
            }

            fn kind(&self) -> ScheduleKind {
                (**self).kind()
            }

            fn describe(&self) -> ScheduleDescription {
                (**self).describe()
            }
        }
    };
}

schedule_behind!(Box<S>);
schedule_behind!(std::sync::Arc<S>);
