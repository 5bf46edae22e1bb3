//! The ordered queues of next triggers: calendars of instants, each with the triggers
//! due then. Many jobs share instants (every job of a period fires at the same anchored
//! instants), so a burst is taken from one bucket rather than sifted out of a heap item
//! by item.
//!
//! The table keeps two ([`Lanes`]): the triggers this replica claims at their instant,
//! and those another replica owns, which this one only looks at (and takes over if
//! they are left unclaimed) a takeover delay later. So at a burst's instant a replica
//! takes only its share of the burst, and the rest of its work waits for the instant
//! it is needed at.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;

/// A queued trigger of the job in `slot`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Queued {
    /// Tells this item from those of a removed job that used the same slot.
    pub generation: u64,
    /// The job's index in the table.
    pub slot: u32,
    /// A start-up run (`run_on_start`), which does not advance the schedule.
    pub start_up: bool,
}

#[derive(Debug, Default)]
pub(crate) struct TriggerQueue {
    buckets: BTreeMap<Timestamp, Vec<Queued>>,
}

impl TriggerQueue {
    pub fn push(&mut self, at: Timestamp, item: Queued) {
        self.buckets.entry(at).or_default().push(item);
    }

    /// The earliest queued instant.
    pub fn next_deadline(&self) -> Option<Timestamp> {
        self.buckets.first_key_value().map(|(at, _)| *at)
    }

    /// The items queued at instants after `after` up to `upto`, earliest first.
    pub fn between(&self, after: Timestamp, upto: Timestamp) -> impl Iterator<Item = (Timestamp, &Queued)> {
        use std::ops::Bound::{Excluded, Included};
        let range = (after < upto).then_some((Excluded(after), Included(upto)));
        range
            .into_iter()
            .flat_map(|range| self.buckets.range(range))
            .flat_map(|(at, items)| items.iter().map(|item| (*at, item)))
    }

    /// The earliest instant queued after `after`, and how many items are queued then.
    pub fn first_after(&self, after: Timestamp) -> Option<(Timestamp, usize)> {
        use std::ops::Bound::{Excluded, Unbounded};
        self.buckets.range((Excluded(after), Unbounded)).next().map(|(at, items)| (*at, items.len()))
    }

    /// Takes one item due at or before `now`, earliest instant first.
    pub fn pop_due(&mut self, now: Timestamp) -> Option<(Timestamp, Queued)> {
        let mut bucket = self.buckets.first_entry().filter(|b| *b.key() <= now)?;
        let at = *bucket.key();
        let item = bucket.get_mut().pop();
        if bucket.get().is_empty() {
            bucket.remove();
        }
        item.map(|item| (at, item))
    }

    /// Keeps only the items for which `keep` holds.
    pub fn retain(&mut self, mut keep: impl FnMut(&Queued) -> bool) {
        self.buckets.retain(|_, items| {
            items.retain(&mut keep);
            !items.is_empty()
        });
    }
}

/// Which of the [`Lanes`] a trigger waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lane {
    /// Taken at its instant: the triggers this replica claims first (those it owns, and
    /// those every replica claims at once).
    Own,
    /// Taken a takeover delay after its instant: the triggers another replica owns,
    /// which this one waits for anyway before it looks at them.
    Others,
}

/// The table's two queues: [`Lane::Own`]'s items come due at their instant,
/// [`Lane::Others`]' a lag (the takeover delay) later.
#[derive(Debug, Default)]
pub(crate) struct Lanes {
    own: TriggerQueue,
    others: TriggerQueue,
    lag: Duration,
}

impl Lanes {
    /// Empty lanes, [`Lane::Others`] lagging by `lag`.
    pub fn new(lag: Duration) -> Self {
        Self { lag, ..Self::default() }
    }

    pub fn push(&mut self, lane: Lane, at: Timestamp, item: Queued) {
        match lane {
            Lane::Own => self.own.push(at, item),
            Lane::Others => self.others.push(at, item),
        }
    }

    /// The earliest instant at which an item comes due, in either lane.
    pub fn next_deadline(&self) -> Option<Timestamp> {
        let others = self.others.next_deadline().map(|at| crate::clock::later(at, self.lag));
        self.own.next_deadline().into_iter().chain(others).min()
    }

    /// [`TriggerQueue::between`] of [`Lane::Own`]: what this replica may claim ahead.
    pub fn between(&self, after: Timestamp, upto: Timestamp) -> impl Iterator<Item = (Timestamp, &Queued)> {
        self.own.between(after, upto)
    }

    /// [`TriggerQueue::first_after`] of [`Lane::Own`].
    pub fn first_after(&self, after: Timestamp) -> Option<(Timestamp, usize)> {
        self.own.first_after(after)
    }

    /// Takes one item due by `now`, [`Lane::Own`] first: its instant, the item, the
    /// time it came due at in its lane's terms (`now`, less the lag for
    /// [`Lane::Others`]), which its lateness counts to, and its lane.
    pub fn pop_due(&mut self, now: Timestamp) -> Option<(Timestamp, Queued, Timestamp, Lane)> {
        if let Some((at, item)) = self.own.pop_due(now) {
            return Some((at, item, now, Lane::Own));
        }
        let lagged = now.checked_sub(self.lag).unwrap_or(Timestamp::MIN);
        self.others.pop_due(lagged).map(|(at, item)| (at, item, lagged, Lane::Others))
    }

    /// Keeps only the items for which `keep` holds, in both lanes.
    pub fn retain(&mut self, mut keep: impl FnMut(&Queued) -> bool) {
        self.own.retain(&mut keep);
        self.others.retain(&mut keep);
    }

    /// Whether an item for which `is` holds waits in [`Lane::Others`] at `at`.
    pub fn lags(&self, at: Timestamp, is: impl Fn(&Queued) -> bool) -> bool {
        self.others.buckets.get(&at).is_some_and(|items| items.iter().any(is))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(slot: u32) -> Queued {
        Queued { generation: 1, slot, start_up: false }
    }

    #[test]
    fn items_come_out_earliest_instant_first_and_only_when_due() {
        let t = |s: i64| Timestamp::from_second(s).unwrap();
        let mut queue = TriggerQueue::default();
        queue.push(t(20), q(2));
        queue.push(t(10), q(1));
        queue.push(t(10), q(3));
        assert_eq!(queue.next_deadline(), Some(t(10)));
        assert_eq!(queue.pop_due(t(9)), None);
        let mut at_ten: Vec<u32> =
            [queue.pop_due(t(15)), queue.pop_due(t(15))].map(|i| i.unwrap().1.slot).to_vec();
        at_ten.sort();
        assert_eq!(at_ten, [1, 3]);
        assert_eq!(queue.pop_due(t(15)), None);
        queue.retain(|item| item.slot != 2);
        assert_eq!(queue.next_deadline(), None);
    }

    #[test]
    fn the_others_lane_comes_due_a_lag_after_its_instants_and_after_the_own_lane() {
        let t = |ms: i64| Timestamp::from_millisecond(ms).unwrap();
        let mut lanes = Lanes::new(Duration::from_millis(300));
        lanes.push(Lane::Others, t(1000), q(1));
        lanes.push(Lane::Own, t(1200), q(2));
        assert_eq!(lanes.next_deadline(), Some(t(1200)));
        assert_eq!(lanes.first_after(t(0)), Some((t(1200), 1)));
        assert_eq!(
            lanes.pop_due(t(1299)).map(|(at, i, due_at, lane)| (at, i.slot, due_at, lane)),
            Some((t(1200), 2, t(1299), Lane::Own))
        );
        assert_eq!(lanes.next_deadline(), Some(t(1300)));
        assert_eq!(lanes.pop_due(t(1299)), None);
        let (at, item, due_at, lane) = lanes.pop_due(t(1350)).unwrap();
        assert_eq!((at, item.slot, due_at, lane), (t(1000), 1, t(1050), Lane::Others));
        assert_eq!(lanes.next_deadline(), None);
    }
}
