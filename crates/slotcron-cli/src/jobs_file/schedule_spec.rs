//! A job's schedule as a jobs file states it, before it becomes a [`slotcron::Job`].

use std::fmt::{self, Write as _};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use slotcron::{At, CronError, CronSchedule, EveryDays, Interval, Schedule, ScheduleKind, parse_duration};
use slotcron::{Job, JobBuilder, JobState, Misfire};

use super::Streamed;
use crate::zone;
use crate::{cron_error, duration};

/// The one schedule of a job.
#[derive(Debug, Clone)]
pub enum ScheduleSpec {
    /// `every = "10s"`: an interval anchored to the Unix epoch.
    Every(Duration),
    /// `every = "2d"` with `at_time = "04:30"`: every N days at a time of day in the
    /// job's zone, the days counted from 1970-01-01 there.
    EveryDays(EveryDays),
    /// `cron = "..."` (or a crontab line): an expression in its time zone.
    Cron(CronSchedule),
    /// `at = "RFC 3339"`: once at this instant.
    At(Timestamp),
    /// `after = "5s"`: once across the fleet and the state's lifetime, this long after
    /// start-up.
    After(Duration),
    /// A crontab `@reboot`: once each time the daemon starts, as cron does: a one-shot at
    /// the instant the jobs are loaded, so every start is a trigger of its own, which
    /// every replica runs on its own, without a claim.
    AtStartUp,
    /// `run_after = "extract"`: after each successful run of the job named so, at its
    /// trigger instant (a job chain).
    RunAfter(String),
}

/// When a schedule fires next, as `slotcron check` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextFire {
    /// At this instant, written in the schedule's zone.
    At(Timestamp, TimeZone),
    /// This long after the daemon starts.
    AfterStart(Duration),
    /// At start-up, because its instant is already past.
    AtStartUp,
    /// Never again: the schedule is exhausted.
    Never,
    /// Never: an `at` whose instant is past by more than the grace, and whose misfire
    /// policy is `skip` (it is recorded missed at start-up).
    Missed,
    /// Never again: a one-shot the state says is done.
    Done,
    /// After each successful run of this parent job.
    AfterParent(String),
}

impl ScheduleSpec {
    /// The shortest interval (`every`, `@every`) of a job of a jobs file: one second,
    /// cron's finest step (a 6-field expression's), as each trigger starts a command. The
    /// core takes down to [`Interval::MIN_PERIOD`] (1 ms), for handlers of a program's own.
    pub const MIN_EVERY: Duration = Duration::from_secs(1);

    /// This schedule, if its interval (`every`, or a cron expression's `@every`) is at
    /// least [`Self::MIN_EVERY`].
    ///
    /// # Errors
    /// The reason, naming the interval and the minimum.
    pub fn checked(self) -> Result<Self, String> {
        let period = match &self {
            Self::Every(period) => Some(*period),
            Self::Cron(cron) => cron.every_period(),
            _ => None,
        };
        match period {
            Some(period) if period < Self::MIN_EVERY => Err(too_short(period)),
            _ => Ok(self),
        }
    }

    /// Why the core refused the cron expression `expression` with `error` (`offset`: the
    /// characters of its line before it): an `@every` shorter than [`Self::MIN_EVERY`]
    /// gets this rule, as [`Self::checked`] says it (the core's own minimum is 1 ms, and
    /// refuses `@every 0s` before a jobs file's rule is asked), any other the core's reason.
    pub fn cron_refused(expression: &str, error: &CronError, offset: usize) -> String {
        let every = expression.trim().strip_prefix("@every").and_then(|d| parse_duration(d).ok());
        match every {
            Some(period) if period < Self::MIN_EVERY => too_short(period),
            _ => cron_error::reason(error, offset),
        }
    }

    /// Sets this schedule on a job being built; `@reboot` also makes it a job of every
    /// replica ([`JobBuilder::on_every_replica`]).
    pub fn apply(&self, builder: JobBuilder) -> JobBuilder {
        match self {
            Self::Every(period) => builder.every(*period),
            Self::EveryDays(days) => builder.schedule(days.clone()),
            Self::Cron(cron) => builder.schedule(cron.clone()),
            Self::At(instant) => builder.at(*instant),
            Self::After(delay) => builder.after(*delay),
            Self::AtStartUp => {
                let now = Timestamp::now();
                builder
                    .at(Timestamp::from_millisecond(now.as_millisecond()).unwrap_or(now))
                    .on_every_replica(true)
            }
            Self::RunAfter(parent) => builder.run_after(parent),
        }
    }

    /// The schedule alone, with no window nor calendar; `None` for `after` and
    /// `@reboot`, whose instant depends on the daemon's start.
    pub fn base(&self) -> Option<Arc<dyn Schedule>> {
        match self {
            Self::Every(period) => Interval::every(*period).ok().map(|i| Arc::new(i) as Arc<dyn Schedule>),
            Self::EveryDays(days) => Some(Arc::new(days.clone())),
            Self::Cron(cron) => Some(Arc::new(cron.clone())),
            Self::At(instant) => Some(Arc::new(At::new(*instant))),
            Self::After(_) | Self::AtStartUp | Self::RunAfter(_) => None,
        }
    }

    /// One line of English describing when the job fires, e.g. "At 09:30 on Monday
    /// through Friday (Europe/Paris)", as crontab editors show it.
    pub fn explain(&self) -> String {
        match self {
            // A listed job's period is valid; an invalid one explains itself by its error.
            Self::Every(period) => Interval::every(*period).map_or_else(|e| e.to_string(), |i| i.explain()),
            Self::Cron(cron) => with_zone(&cron.explain(), cron.time_zone()),
            Self::EveryDays(days) => days.describe().english.unwrap_or_else(|| days.describe().text),
            Self::At(at) => format!("Once, at {at}"),
            Self::After(delay) => {
                format!("Once, {} after the daemon first starts", duration::display(*delay))
            }
            Self::AtStartUp => "Once each time the daemon starts".into(),
            Self::RunAfter(parent) => format!("After each successful run of {parent}"),
        }
    }

    /// The zone fire times are written in: the cron expression's, UTC otherwise.
    pub fn zone(&self) -> TimeZone {
        match self {
            Self::Cron(cron) => cron.time_zone().clone(),
            Self::EveryDays(days) => days.time_zone().clone(),
            _ => TimeZone::UTC,
        }
    }
}

impl NextFire {
    /// The first fire time of `job` after `now`, for a daemon started at `now`,
    /// written in `zone`.
    pub fn of(job: &Job, zone: &TimeZone, now: Timestamp) -> Self {
        match job.schedule().kind() {
            ScheduleKind::After(delay) => Self::AfterStart(delay),
            ScheduleKind::At(at) if at <= now => {
                let late = Duration::try_from(now.duration_since(at)).is_ok_and(|late| late > job.grace());
                match job.misfire() {
                    Misfire::Skip if late => Self::Missed,
                    _ => Self::AtStartUp,
                }
            }
            ScheduleKind::Chained => Self::AfterParent(job.parent().unwrap_or_default().to_owned()),
            _ => job.schedule().next_after(now).map_or(Self::Never, |t| Self::At(t, zone.clone())),
        }
    }

    /// The instant it fires at, if it is one.
    pub fn instant(&self) -> Option<Timestamp> {
        match self {
            Self::At(at, _) => Some(*at),
            _ => None,
        }
    }
}

impl NextFire {
    /// The next fire time of `job` given its stored `state`: [`NextFire::Done`] for a
    /// one-shot that ran (an `after`, or an `at` whose instant is not later than the
    /// state's last trigger: moved later, it runs again, as the scheduler does).
    pub fn with_state(self, job: &Job, state: Option<&JobState>) -> Self {
        let Some(state) = state.filter(|state| state.one_shot_done) else { return self };
        match job.schedule().kind() {
            ScheduleKind::After(_) => Self::Done,
            ScheduleKind::At(at) if at <= state.last_trigger => Self::Done,
            _ => self,
        }
    }
}

/// Why an interval of `period` is refused in a jobs file: shorter than
/// [`ScheduleSpec::MIN_EVERY`].
fn too_short(period: Duration) -> String {
    format!(
        "{} is shorter than {}, the shortest interval: each trigger starts a command, and a second is \
         cron's finest step",
        duration::display(period),
        duration::display(ScheduleSpec::MIN_EVERY)
    )
}

/// What a job's fingerprint takes from its schedule: the kind, what the file gives and the
/// zone (a fixed offset or a POSIX rule by its Debug text, which has no name).
impl Hash for ScheduleSpec {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Self::Every(period) | Self::After(period) => period.hash(state),
            // Rare: its Debug text says it all, zone included.
            Self::EveryDays(days) => _ = write!(Streamed(state), "{days:?}"),
            Self::Cron(cron) => {
                cron.expression().hash(state);
                match cron.time_zone().iana_name() {
                    Some(name) => name.hash(state),
                    None => _ = write!(Streamed(state), "{:?}", cron.time_zone()),
                }
            }
            Self::At(instant) => instant.hash(state),
            Self::AtStartUp => {}
            Self::RunAfter(parent) => parent.hash(state),
        }
    }
}

impl fmt::Display for ScheduleSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Every(period) => write!(f, "every {}", duration::display(*period)),
            Self::EveryDays(days) => {
                let zone = days.time_zone().iana_name().unwrap_or("fixed offset");
                write!(f, "{} in {zone}", days.describe().text)
            }
            Self::Cron(cron) => {
                let zone = cron.time_zone().iana_name().unwrap_or("fixed offset");
                write!(f, "cron {:?} in {zone}", cron.expression())
            }
            Self::At(at) => write!(f, "at {at}"),
            Self::After(delay) => write!(f, "after {}", duration::display(*delay)),
            Self::AtStartUp => f.write_str("@reboot"),
            Self::RunAfter(parent) => write!(f, "after success of {parent}"),
        }
    }
}

/// An explanation with the time zone it is read in, e.g. "At 09:30 (Europe/Paris)".
pub fn with_zone(explanation: &str, zone: &TimeZone) -> String {
    format!("{explanation} ({})", zone.iana_name().unwrap_or("fixed offset"))
}

impl fmt::Display for NextFire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::At(at, zone) => f.write_str(&zone::rfc3339(*at, zone)),
            Self::AfterStart(delay) => write!(f, "{} after start-up", duration::display(*delay)),
            Self::AtStartUp => f.write_str("at start-up"),
            Self::Never => f.write_str("never (no fire time left)"),
            Self::Missed => f.write_str("never (past the grace; misfire = skip)"),
            Self::Done => f.write_str("never (done)"),
            Self::AfterParent(parent) => write!(f, "after {parent} succeeds"),
        }
    }
}
