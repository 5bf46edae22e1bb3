//! A recurring schedule bounded to a window of time (Temporal's `startAt`/`endAt`).

use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};

use super::{Schedule, ScheduleDescription, ScheduleError, ScheduleKind};

/// The fire times of a recurring schedule from `start` (included) until `end`
/// (excluded), as Temporal's `startAt` and `endAt` bound a schedule; either bound may be
/// open. The inner schedule's own anchor is unchanged: an `every = "1h"` bounded from
/// 10:30 fires at 11:00, 12:00... Past `end` the schedule is exhausted.
///
/// Its [`kind`](Schedule::kind) is [`ScheduleKind::Recurring`] even around an
/// [`Interval`](super::Interval), so that missed triggers are walked one by one and
/// never counted past `end`.
#[derive(Debug, Clone)]
pub struct Window {
    inner: Arc<dyn Schedule>,
    start: Option<Timestamp>,
    end: Option<Timestamp>,
}

impl Window {
    /// `inner`'s fire times within `[start, end)`; `None` leaves that side open.
    ///
    /// # Errors
    /// `end` not later than `start` (field `end`); `inner` a one-shot (`at`, `after`),
    /// which a window does not bound (field `start` or `end`, whichever is given).
    pub fn new(
        inner: Arc<dyn Schedule>,
        start: Option<Timestamp>,
        end: Option<Timestamp>,
    ) -> Result<Self, ScheduleError> {
        if let (Some(start), Some(end)) = (start, end)
            && end <= start
        {
            return Err(ScheduleError::invalid("end", format!("{end} is not later than start {start}")));
        }
        if inner.kind().is_one_shot() {
            let field = if start.is_some() { "start" } else { "end" };
            return Err(ScheduleError::invalid(field, "bounds recurring schedules only (every, cron)"));
        }
        Ok(Self { inner, start, end })
    }
}

impl Schedule for Window {
    fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        let from = match self.start {
            // The first fire time at or after `start`.
            Some(start) if after < start => start.checked_sub(SignedDuration::from_nanos(1)).ok()?,
            _ => after,
        };
        self.inner.next_after(from).filter(|next| self.end.is_none_or(|end| *next < end))
    }

    fn kind(&self) -> ScheduleKind {
        ScheduleKind::Recurring
    }

    fn describe(&self) -> ScheduleDescription {
        let inner = self.inner.describe();
        let bounds = match (self.start, self.end) {
            (Some(start), Some(end)) => format!(" from {start} until {end}"),
            (Some(start), None) => format!(" from {start}"),
            (None, Some(end)) => format!(" until {end}"),
            (None, None) => String::new(),
        };
        inner.followed_by(&bounds)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::schedule::{At, Interval};

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn hourly() -> Arc<dyn Schedule> {
        Arc::new(Interval::every(Duration::from_secs(3600)).unwrap())
    }

    #[test]
    fn fires_within_the_window_on_the_inner_anchor() {
        let w = Window::new(hourly(), Some(ts("2026-12-06T10:30:00Z")), Some(ts("2026-12-06T13:00:00Z")))
            .unwrap();
        assert_eq!(w.next_after(ts("2026-12-01T00:00:00Z")), Some(ts("2026-12-06T11:00:00Z")));
        assert_eq!(w.next_after(ts("2026-12-06T11:00:00Z")), Some(ts("2026-12-06T12:00:00Z")));
        assert_eq!(w.next_after(ts("2026-12-06T12:00:00Z")), None, "13:00 is excluded");
        let on_start = Window::new(hourly(), Some(ts("2026-12-06T10:00:00Z")), None).unwrap();
        assert_eq!(
            on_start.next_after(ts("2026-12-01T00:00:00Z")),
            Some(ts("2026-12-06T10:00:00Z")),
            "start included"
        );
        assert_eq!(w.kind(), ScheduleKind::Recurring);
        assert_eq!(w.describe().text, "every 1h from 2026-12-06T10:30:00Z until 2026-12-06T13:00:00Z");
    }

    #[test]
    fn an_empty_window_or_a_one_shot_is_refused_naming_the_field() {
        let at = ts("2026-12-06T10:00:00Z");
        let empty = Window::new(hourly(), Some(at), Some(at)).unwrap_err();
        assert_eq!(
            empty.to_string(),
            "end: 2026-12-06T10:00:00Z is not later than start 2026-12-06T10:00:00Z"
        );
        let one_shot = Window::new(Arc::new(At::new(at)), None, Some(at)).unwrap_err();
        assert_eq!(one_shot.to_string(), "end: bounds recurring schedules only (every, cron)");
    }
}
