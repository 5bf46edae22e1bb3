//! The one ordered queue of next triggers: a calendar of instants, each with the
//! triggers due then. Many jobs share instants (every job of a period fires at the same
//! anchored instants), so a burst is taken from one bucket rather than sifted out of a
//! heap item by item.

use std::collections::BTreeMap;

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
}
