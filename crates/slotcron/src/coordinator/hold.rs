//! How long a claim holds, and when a job's high-water mark refuses one: [`Hold`].

use std::time::Duration;

use jiff::Timestamp;

use crate::clock::later;

/// How long a claim holds, and when the job's high-water mark refuses a claim: the rules
/// of docs/design.md's "Exactly once across replicas", evaluated on the coordinator's clock.
///
/// Every coordinator applies the same two rules, in its own atomic step (the in-process
/// coordinator through these methods, the Redis coordinator in its claim script,
/// the PostgreSQL coordinator in its claim function):
///
/// - **Expiry**: a won claim of a recurring trigger holds until the later of
///   *trigger + max(slot, run budget) + slack* ([`Hold::after_trigger`]) and
///   *claim time + slot + slack* ([`Hold::after_claim`]), an absolute instant on the
///   coordinator's clock. A replica whose clock is off by less than the slack still
///   finds the claim, a run that lasts its whole budget is still covered, and a claim
///   made late (catch-up) still holds for a slot.
/// - **High-water mark**: the coordinator keeps, per job, the newest trigger it has
///   granted, set in the same atomic step as the claim. A claim of a trigger at or before
///   the mark is refused once the trigger is [`Hold::after_trigger`] old: by then the
///   trigger's own claim, if there was one, may have expired, and only the mark still
///   says the fleet handled it. So a replica catching up after downtime never runs a
///   trigger another replica ran (or skipped) while it was down. Younger triggers are
///   decided by their claim alone, so replicas whose clocks differ by less than the slack
///   still each find the triggers only they saw.
///
/// What the mark costs: a trigger older than the mark that *nobody* ran — the fleet was
/// entirely down, and the first replica back claimed the current trigger before another
/// caught up the older one — can no longer be claimed. It fails closed: the catching-up
/// replica records it as `skipped-lost`, saying the mark refused it.
///
/// One-shots (`at`, `after`) have no [`Hold`]: their claims never expire and the mark
/// does not apply.
///
/// All durations are on the coordinator's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hold {
    /// The slot: from this trigger to the job's next one (zero when the schedule has no
    /// next trigger).
    pub slot: Duration,
    /// How long the run may take, from
    /// [`policy::run_budget`](crate::policy::run_budget); `None` when the run is
    /// unbounded (no timeout), which then counts as the slot.
    pub run_budget: Option<Duration>,
    /// The clock-skew slack.
    pub slack: Duration,
}

impl Hold {
    /// *max(slot, run budget) + slack*: the claim holds at least this long after its
    /// trigger, and the mark refuses the trigger from then on.
    pub fn after_trigger(&self) -> Duration {
        self.slot.max(self.run_budget.unwrap_or_default()).saturating_add(self.slack)
    }

    /// *slot + slack*: the claim holds at least this long after it was made.
    pub fn after_claim(&self) -> Duration {
        self.slot.saturating_add(self.slack)
    }

    /// When a claim of `trigger` made at `now` (coordinator's clock) expires.
    pub fn expires_at(&self, trigger: Timestamp, now: Timestamp) -> Timestamp {
        later(trigger, self.after_trigger()).max(later(now, self.after_claim()))
    }

    /// Whether the job's high-water mark `mark` refuses a claim of `trigger` at `now`.
    pub fn refused_by_mark(&self, mark: Option<Timestamp>, trigger: Timestamp, now: Timestamp) -> bool {
        mark.is_some_and(|mark| trigger <= mark) && now >= later(trigger, self.after_trigger())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn a_claim_holds_past_its_slot_its_run_budget_and_a_slot_after_a_late_claim() {
        let t = ts("2024-05-17T10:00:00Z");
        let hold = Hold { slot: 60 * S, run_budget: Some(90 * S), slack: 5 * S };
        assert_eq!(hold.expires_at(t, t), ts("2024-05-17T10:01:35Z"));
        // Claimed an hour late (catch-up): a slot and the slack from the claim.
        assert_eq!(hold.expires_at(t, ts("2024-05-17T11:00:00Z")), ts("2024-05-17T11:01:05Z"));
        let unbounded = Hold { run_budget: None, ..hold };
        assert_eq!(unbounded.expires_at(t, t), ts("2024-05-17T10:01:05Z"));
    }

    #[test]
    fn the_mark_refuses_only_triggers_at_or_before_it_old_enough_for_their_claims_to_expire() {
        let hold = Hold { slot: S, run_budget: None, slack: 5 * S };
        let (t, mark) = (ts("2024-05-17T10:00:00Z"), Some(ts("2024-05-17T10:00:10Z")));
        assert!(hold.refused_by_mark(mark, t, ts("2024-05-17T10:00:06Z")));
        assert!(!hold.refused_by_mark(mark, t, ts("2024-05-17T10:00:05.999Z")), "its claim would hold");
        assert!(!hold.refused_by_mark(mark, ts("2024-05-17T10:00:11Z"), ts("2024-05-17T11:00:00Z")));
        assert!(!hold.refused_by_mark(None, t, ts("2024-05-17T11:00:00Z")));
    }
}
