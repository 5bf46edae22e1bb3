//! Misfires: which of a job's late triggers run, and which are recorded as missed.

use std::collections::VecDeque;

use jiff::Timestamp;

use crate::policy::Misfire;
use crate::schedule::{Schedule, ScheduleKind};

/// The most fire times walked to count a misfire; beyond it the count is a lower bound.
/// A one-second cron job reaches it after 115 days of downtime.
const WALK_LIMIT: u64 = 10_000_000;

/// What to do about the triggers from `first` that are older than the cutoff.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The late triggers to run, oldest first.
    pub run: Vec<Timestamp>,
    /// The late triggers dropped: how many, and the newest of them.
    pub missed: Option<(u64, Timestamp)>,
    /// The first trigger that is not late, if the schedule has one.
    pub next: Option<Timestamp>,
}

/// Plans the late triggers of a schedule: every fire time from `first` (itself late)
/// that is before `cutoff` (now minus the grace window).
pub(crate) fn plan(schedule: &dyn Schedule, policy: Misfire, first: Timestamp, cutoff: Timestamp) -> Plan {
    let keep = match policy {
        Misfire::Skip => 1,
        Misfire::RunOnce => 1,
        Misfire::RunAll { cap } => cap as usize,
    };
    let late = late_triggers(schedule, first, cutoff, keep);
    let newest = late.newest.back().copied().unwrap_or(first);
    let (run, missed) = match policy {
        Misfire::Skip => (Vec::new(), Some((late.count, newest))),
        // The one run stands for every missed trigger.
        Misfire::RunOnce => (vec![newest], None),
        Misfire::RunAll { .. } => {
            let dropped = late.count - late.newest.len() as u64;
            let missed = (dropped > 0).then(|| (dropped, late.newest_dropped.unwrap_or(first)));
            (late.newest.into_iter().collect(), missed)
        }
    };
    Plan { run, missed, next: late.next }
}

struct Late {
    /// How many late triggers there are (at least one).
    count: u64,
    /// The newest `keep` of them, oldest first.
    newest: VecDeque<Timestamp>,
    /// The newest one that did not fit in `newest`.
    newest_dropped: Option<Timestamp>,
    /// The first trigger at or after the cutoff.
    next: Option<Timestamp>,
}

fn late_triggers(schedule: &dyn Schedule, first: Timestamp, cutoff: Timestamp, keep: usize) -> Late {
    let one_shot = schedule.kind().is_one_shot();
    let mut late =
        Late { count: 0, newest: VecDeque::with_capacity(keep.min(1024)), newest_dropped: None, next: None };
    let push = |late: &mut Late, at: Timestamp| {
        late.count += 1;
        if late.newest.len() == keep {
            late.newest_dropped = late.newest.pop_front();
        }
        late.newest.push_back(at);
    };
    if let ScheduleKind::Interval { period } = schedule.kind() {
        // Anchored periods: count arithmetically rather than walk.
        let period_ns = period.as_nanos() as i128;
        let span = cutoff.as_nanosecond() - first.as_nanosecond();
        let count = ((span + period_ns - 1) / period_ns).max(1) as u64;
        let nth = |k: u64| Timestamp::from_nanosecond(first.as_nanosecond() + k as i128 * period_ns).ok();
        let start = count.saturating_sub(keep as u64 + 1);
        for k in start..count {
            if let Some(at) = nth(k) {
                push(&mut late, at);
            }
        }
        late.count = count;
        late.next = nth(count);
        return late;
    }
    let mut at = Some(first);
    while let Some(t) = at {
        if t >= cutoff && late.count > 0 {
            late.next = Some(t);
            break;
        }
        push(&mut late, t);
        if one_shot || late.count >= WALK_LIMIT {
            late.next = if one_shot { None } else { schedule.next_after(cutoff) };
            break;
        }
        at = schedule.next_after(t);
    }
    late
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::schedule::{At, CronSchedule, Interval};

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn every_2s() -> Interval {
        Interval::every(Duration::from_secs(2)).unwrap()
    }

    #[test]
    fn skip_drops_every_late_trigger() {
        let plan = plan(&every_2s(), Misfire::Skip, ts("2024-01-01T00:00:00Z"), ts("2024-01-01T00:00:09Z"));
        assert_eq!(plan.run, vec![]);
        assert_eq!(plan.missed, Some((5, ts("2024-01-01T00:00:08Z"))));
        assert_eq!(plan.next, Some(ts("2024-01-01T00:00:10Z")));
    }

    #[test]
    fn run_once_coalesces_into_the_newest() {
        let plan =
            plan(&every_2s(), Misfire::RunOnce, ts("2024-01-01T00:00:00Z"), ts("2024-01-01T00:00:09Z"));
        assert_eq!(plan.run, vec![ts("2024-01-01T00:00:08Z")]);
        assert_eq!(plan.missed, None);
    }

    #[test]
    fn run_all_runs_the_newest_cap_oldest_first() {
        let cron = CronSchedule::parse("*/2 * * * * *").unwrap();
        for schedule in [&every_2s() as &dyn Schedule, &cron] {
            let plan = plan(
                schedule,
                Misfire::RunAll { cap: 3 },
                ts("2024-01-01T00:00:00Z"),
                ts("2024-01-01T00:00:09Z"),
            );
            let want =
                vec![ts("2024-01-01T00:00:04Z"), ts("2024-01-01T00:00:06Z"), ts("2024-01-01T00:00:08Z")];
            assert_eq!(plan.run, want, "{schedule:?}");
            assert_eq!(plan.missed, Some((2, ts("2024-01-01T00:00:02Z"))), "{schedule:?}");
            assert_eq!(plan.next, Some(ts("2024-01-01T00:00:10Z")), "{schedule:?}");
        }
    }

    #[test]
    fn one_shot_is_run_or_missed_once() {
        let at = At::new(ts("2024-01-01T00:00:00Z"));
        let cutoff = ts("2024-02-01T00:00:00Z");
        let plan_once = plan(&at, Misfire::RunOnce, at.instant(), cutoff);
        assert_eq!((plan_once.run, plan_once.missed, plan_once.next), (vec![at.instant()], None, None));
        let plan_skip = plan(&at, Misfire::Skip, at.instant(), cutoff);
        assert_eq!((plan_skip.run, plan_skip.missed), (vec![], Some((1, at.instant()))));
    }
}
