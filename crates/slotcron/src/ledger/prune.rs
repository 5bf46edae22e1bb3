use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use jiff::Timestamp;

use super::{Outcome, Retention, RunRecord};

/// When a durable ledger prunes, and what: for implementations of [`Ledger`](super::Ledger)
/// that apply a [`Retention`] as they append.
///
/// Every `every` appends it hands out a [`Prune`]: the age cutoff is measured from the
/// appended record's `started` instant — the scheduler's clock, not the host's, so a
/// scheduler on a manual clock prunes by its own time — and the count limit applies to
/// the jobs appended to since the previous pruning (the others have not grown).
#[derive(Debug)]
pub struct PruneSchedule {
    retention: Retention,
    every: u64,
    pending: Mutex<Pending>,
}

#[derive(Debug, Default)]
struct Pending {
    appends: u64,
    jobs: HashSet<Arc<str>>,
}

/// One pruning to carry out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prune {
    /// Drop every job's records whose trigger is strictly older than this.
    pub older_than: Option<Timestamp>,
    /// Keep at most this many records (the newest triggers) of each of [`Prune::jobs`].
    pub keep_per_job: Option<u64>,
    /// The jobs to hold to [`Prune::keep_per_job`].
    pub jobs: Vec<Arc<str>>,
}

impl PruneSchedule {
    /// The default number of appends between two prunings.
    pub const DEFAULT_EVERY: u64 = 100;

    /// Prunes by `retention` every `every` appends (at least 1).
    pub fn new(retention: Retention, every: u64) -> Self {
        Self { retention, every: every.max(1), pending: Mutex::default() }
    }

    /// Counts the append of `record`; the pruning due now, if any. Nothing is ever due
    /// for a retention without limits.
    pub fn on_append(&self, record: &RunRecord) -> Option<Prune> {
        let Retention { max_age, max_records_per_job } = self.retention;
        if max_age.is_none() && max_records_per_job.is_none() {
            return None;
        }
        let mut pending = self.pending.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        pending.appends += 1;
        if max_records_per_job.is_some() && !pending.jobs.contains(&record.job) {
            pending.jobs.insert(record.job.clone());
        }
        if pending.appends < self.every {
            return None;
        }
        pending.appends = 0;
        let mut jobs: Vec<_> = pending.jobs.drain().collect();
        jobs.sort();
        Some(self.retention.prune_at(record.started, jobs))
    }

    /// Counts the appends of `records`, one after the other, as [`Self::on_append`] does;
    /// the pruning due after the last, if any: the prunings due on the way as one (the
    /// latest age cutoff, every job they name), as a batch of appends carries them out
    /// once it is written.
    pub fn on_appends<'a>(&self, records: impl IntoIterator<Item = &'a RunRecord>) -> Option<Prune> {
        records.into_iter().filter_map(|record| self.on_append(record)).reduce(Prune::then)
    }
}

impl Prune {
    /// The outcomes of which pruning keeps each job's newest record, however old: a
    /// success, and each failure ([`Outcome::is_failure`]) — the newest success is kept, and
    /// the newest failure of any of these kinds.
    pub fn kept_outcomes() -> impl Iterator<Item = Outcome> {
        std::iter::once(Outcome::Succeeded)
            .chain(Outcome::ALL.into_iter().filter(|outcome| outcome.is_failure()))
    }

    /// This pruning and `later` as one: what carrying out both leaves.
    fn then(mut self, later: Prune) -> Prune {
        self.older_than = self.older_than.max(later.older_than);
        self.keep_per_job = later.keep_per_job;
        self.jobs.extend(later.jobs);
        self.jobs.sort();
        self.jobs.dedup();
        self
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::ledger::{Cause, Outcome};

    fn record(job: &str, started: &str) -> RunRecord {
        RunRecord {
            job: Arc::from(job),
            trigger: started.parse().unwrap(),
            instance: Arc::from("test"),
            cause: Cause::Scheduled,
            attempts: 1,
            outcome: Outcome::Succeeded,
            fencing_token: None,
            started: started.parse().unwrap(),
            duration: Duration::ZERO,
            error: None,
            process: None,
        }
    }

    #[test]
    fn prunes_every_n_appends_the_jobs_appended_to() {
        let retention = Retention { max_age: Some(Duration::from_secs(60)), max_records_per_job: Some(5) };
        let schedule = PruneSchedule::new(retention, 3);
        assert_eq!(schedule.on_append(&record("b", "2024-01-01T00:00:00Z")), None);
        assert_eq!(schedule.on_append(&record("a", "2024-01-01T00:00:01Z")), None);
        assert_eq!(
            schedule.on_append(&record("b", "2024-01-01T00:10:00Z")),
            Some(Prune {
                older_than: Some("2024-01-01T00:09:00Z".parse().unwrap()),
                keep_per_job: Some(5),
                jobs: vec![Arc::from("a"), Arc::from("b")],
            })
        );
        assert_eq!(schedule.on_append(&record("c", "2024-01-01T00:10:00Z")), None);
    }

    #[test]
    fn prunings_due_within_a_batch_are_one() {
        let retention = Retention { max_age: Some(Duration::from_secs(60)), max_records_per_job: Some(5) };
        let schedule = PruneSchedule::new(retention, 2);
        let batch = [
            record("b", "2024-01-01T00:10:00Z"),
            record("a", "2024-01-01T00:00:00Z"),
            record("c", "2024-01-01T00:05:00Z"),
            record("b", "2024-01-01T00:06:00Z"),
            record("d", "2024-01-01T00:07:00Z"),
        ];
        assert_eq!(
            schedule.on_appends(&batch),
            Some(Prune {
                older_than: Some("2024-01-01T00:05:00Z".parse().unwrap()),
                keep_per_job: Some(5),
                jobs: vec![Arc::from("a"), Arc::from("b"), Arc::from("c")],
            })
        );
        assert_eq!(schedule.on_appends(&[]), None);
        assert_eq!(
            schedule.on_appends(&batch[..1]).map(|prune| prune.jobs),
            Some(vec![Arc::from("b"), Arc::from("d")])
        );
    }

    #[test]
    fn without_limits_nothing_is_due_and_a_huge_age_drops_nothing() {
        let unlimited = PruneSchedule::new(Retention { max_age: None, max_records_per_job: None }, 1);
        assert_eq!(unlimited.on_append(&record("a", "2024-01-01T00:00:00Z")), None);
        let forever = Retention { max_age: Some(Duration::MAX), max_records_per_job: None };
        assert_eq!(
            PruneSchedule::new(forever, 1).on_append(&record("a", "2024-01-01T00:00:00Z")),
            Some(Prune { older_than: None, keep_per_job: None, jobs: vec![] })
        );
    }
}
