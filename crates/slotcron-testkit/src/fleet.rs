//! A simulated fleet: replicas on skewed manual clocks that follow one shared time.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use slotcron::{Coordinator, Job, Outcome, RunRecord, ScheduleKind, SchedulerBuilder, trigger_key};

use crate::Replica;
use crate::replica::Configure;

/// How a step of fleet time reaches the replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Move every replica's clock, then wait for all of them: claims on the same trigger
    /// race.
    Together,
    /// Move one replica's clock and wait until it has recorded what came due (its run
    /// finished), then the next: a claim released after a run would let the next
    /// replica run the trigger again.
    InTurn,
}

/// Replicas of one service on their own [`ManualClock`](slotcron::ManualClock)s, each
/// reading the fleet's time plus its skew.
///
/// The fleet only moves time when told to, and after each step it waits, in real time,
/// until every replica has a ledger record for every trigger that came due on its clock:
/// claims travel over real networks, so there is no instant "settle". A wait longer than
/// the fleet's timeout fails the test with the missing triggers.
///
/// It runs on a tokio runtime whose time is not paused (the coordinator's I/O and the
/// waits are real).
pub struct Fleet {
    now: Timestamp,
    timeout: Duration,
    check_clock_skew: bool,
    replicas: Vec<Replica>,
    configure: Option<Configure>,
    /// With shared work: the takeover delay, and the triggers due whose success the fleet
    /// waits for once the fleet's time reaches their deadline (their fleet time plus it).
    shared_work: Option<(Duration, Vec<Deadline>)>,
}

/// A trigger (job, scheduled instant) whose success the fleet waits for once its time
/// reaches the first field.
type Deadline = (Timestamp, Arc<str>, Timestamp);

impl Fleet {
    /// The default bound on each wait: generous, since it only fails a broken test.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

    /// An empty fleet whose time reads `now`.
    pub fn new(now: Timestamp) -> Self {
        Self {
            now,
            timeout: Self::DEFAULT_TIMEOUT,
            check_clock_skew: false,
            replicas: Vec::new(),
            configure: None,
            shared_work: None,
        }
    }

    /// Applies `configure` to every replica's scheduler builder, after the fleet's own
    /// settings.
    pub fn with_settings(
        mut self,
        configure: impl Fn(SchedulerBuilder) -> SchedulerBuilder + Send + Sync + 'static,
    ) -> Self {
        self.configure = Some(Arc::new(configure));
        self
    }

    /// Shared work across replicas (a coordinator with a
    /// [membership](slotcron::Coordinator#membership)): a replica records only the triggers
    /// it tried to claim, so after each step the fleet no longer waits for every replica
    /// to record every trigger. It waits instead, once the fleet's time has reached a
    /// trigger's fleet time (or its instant, if later: a replica ahead sees it early) plus
    /// `takeover_delay` (the replicas' setting; time stops there), until some replica has
    /// run it. Check the outcome with
    /// [`Fleet::assert_shared_exactly_once`].
    pub fn with_shared_work(mut self, takeover_delay: Duration) -> Self {
        self.shared_work = Some((takeover_delay, Vec::new()));
        self
    }

    /// Whether the replicas' schedulers check their clocks against the coordinator's
    /// ([`SchedulerBuilder::check_clock_skew`](slotcron::SchedulerBuilder::check_clock_skew)).
    /// Off by default: the replicas' manual clocks run ahead of a real server's clock as
    /// the fleet's time is advanced. Turn it on with a coordinator whose clock follows
    /// the fleet's time (an [`InProcessCoordinator`](slotcron::InProcessCoordinator) on a
    /// replica's clock).
    pub fn with_clock_skew_check(mut self, check: bool) -> Self {
        self.check_clock_skew = check;
        self
    }

    /// Sets how long a wait may take before the test fails.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The fleet's time.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// Adds a stopped replica whose clock reads the fleet's time plus `skew`; returns its
    /// index.
    pub fn add_replica(&mut self, instance: &str, skew: SignedDuration, jobs: Vec<Job>) -> usize {
        self.replicas.push(Replica::new(instance, skew, self.now, jobs));
        self.replicas.len() - 1
    }

    /// The replica at `index`.
    pub fn replica(&self, index: usize) -> &Replica {
        &self.replicas[index]
    }

    /// Every replica.
    pub fn replicas(&self) -> &[Replica] {
        &self.replicas
    }

    /// Starts replica `index` with `coordinator` and waits until it has recorded what is
    /// due at once.
    pub async fn start(&mut self, index: usize, coordinator: Arc<dyn Coordinator>) {
        let replica = &mut self.replicas[index];
        let delay = self.shared_work.as_ref().map(|(delay, _)| *delay);
        let user = self.configure.clone();
        let configure: Option<Configure> = Some(Arc::new(move |builder: SchedulerBuilder| {
            let builder = match delay {
                Some(delay) => builder.takeover_delay(delay),
                // Every replica claims every trigger: the claims race.
                None => builder.shared_work(false),
            };
            match &user {
                Some(configure) => configure(builder),
                None => builder,
            }
        }));
        replica.start(coordinator, self.timeout, self.check_clock_skew, configure.as_ref()).await;
        self.wait(self.now, index).await;
    }

    /// Stops replica `index`; its clock keeps following the fleet's time.
    pub async fn stop(&mut self, index: usize) {
        self.replicas[index].stop(self.timeout).await;
    }

    /// Stops replica `index` as a crash would: it stops heartbeating and claiming at once
    /// and never leaves the membership.
    pub async fn kill(&mut self, index: usize) {
        self.replicas[index].kill(self.timeout).await;
    }

    /// After a step to `step`: with shared work, notes what came due on replica `index`
    /// and waits for the successes whose deadline has come (or the refusal, recorded
    /// `skipped-paused`, of a paused job's trigger, or `skipped-no-member`, of a job no
    /// live member carries the labels of); else waits until the replica has
    /// recorded what came due.
    async fn wait(&mut self, step: Timestamp, index: usize) {
        self.replicas[index].wait_idle(self.timeout).await;
        let Some((delay, waiting)) = &mut self.shared_work else {
            return self.replicas[index].wait_recorded(self.timeout).await;
        };
        for (job, trigger) in self.replicas[index].take_pending(self.timeout).await {
            // A replica whose clock is ahead sees the trigger early: the fleet waits for
            // it from its instant on the fleet's (the coordinator's) clock.
            let deadline = step.max(trigger).checked_add(*delay).expect("fleet time in range");
            if !waiting.iter().any(|(_, j, t)| *j == job && *t == trigger) {
                waiting.push((deadline, job, trigger));
            }
        }
        let due: Vec<(Arc<str>, Timestamp)> =
            waiting.iter().filter(|(at, ..)| *at <= step).map(|(_, j, t)| (j.clone(), *t)).collect();
        waiting.retain(|(at, ..)| *at > step);
        let replicas = &self.replicas;
        let ran = |(job, trigger): &(Arc<str>, Timestamp)| {
            replicas.iter().any(|r| {
                r.records().iter().any(|rec| {
                    rec.job == *job
                        && rec.trigger == *trigger
                        && (rec.outcome.ran()
                            || matches!(rec.outcome, Outcome::SkippedPaused | Outcome::SkippedNoMember))
                })
            })
        };
        // A non-owner gives an owner it finds still claiming another takeover delay: the
        // trigger is waited for again at the first of the next looks, once every replica
        // that waits for its owner sleeps until a later look.
        let next_look = |(job, trigger): &(Arc<str>, Timestamp)| {
            let looks: Vec<Option<Timestamp>> =
                replicas.iter().filter_map(|r| r.takeover_look(job, *trigger)).collect();
            let later = looks.iter().all(|look| look.is_some_and(|at| at > step));
            looks.into_iter().flatten().min().filter(|_| later)
        };
        let what = || {
            let missing: Vec<String> =
                due.iter().filter(|d| !ran(d)).map(|(j, t)| format!("{j}@{t}")).collect();
            format!("no replica ran (or refused for a pause) {}", missing.join(", "))
        };
        let settled = || due.iter().all(|d| ran(d) || next_look(d).is_some());
        crate::replica::wait_until(self.timeout, settled, what).await;
        for d in &due {
            if let Some(look) = next_look(d).filter(|_| !ran(d)) {
                waiting.push((look, d.0.clone(), d.1));
            }
        }
    }

    /// The next fleet time at which shared work waits for a success.
    fn next_deadline(&self) -> Option<Timestamp> {
        let (_, waiting) = self.shared_work.as_ref()?;
        waiting.iter().map(|(at, ..)| *at).min()
    }

    /// Moves the fleet's time to `until`, stopping at every instant a trigger of a running
    /// replica comes due, and waits for the records after each step.
    pub async fn advance_to(&mut self, until: Timestamp, delivery: Delivery) {
        loop {
            let next = self.replicas.iter().filter_map(Replica::next_due).chain(self.next_deadline());
            let next = next.min().filter(|at| *at <= until);
            let step = next.unwrap_or(until).max(self.now);
            self.now = step;
            match delivery {
                Delivery::Together => {
                    self.replicas.iter_mut().for_each(|r| r.set_time(step));
                    for index in 0..self.replicas.len() {
                        self.wait(step, index).await;
                    }
                }
                Delivery::InTurn => {
                    for index in 0..self.replicas.len() {
                        self.replicas[index].set_time(step);
                        self.wait(step, index).await;
                    }
                }
            }
            if next.is_none() {
                return;
            }
        }
    }

    /// Moves the fleet's time forwards by `by`; see [`Fleet::advance_to`].
    pub async fn advance(&mut self, by: Duration, delivery: Delivery) {
        let until = self.now.checked_add(by).expect("fleet time in range");
        self.advance_to(until, delivery).await;
    }

    /// Stops every replica.
    pub async fn stop_all(&mut self) {
        for replica in &mut self.replicas {
            replica.stop(self.timeout).await;
        }
    }

    /// The records of every replica.
    pub fn records(&self) -> Vec<RunRecord> {
        self.replicas.iter().flat_map(Replica::records).collect()
    }

    /// Asserts the fleet's promise over everything that came due so far: every replica
    /// recorded each trigger exactly once each time it came due, as a success or a lost claim; each
    /// trigger key that came due on any replica has exactly one success across the fleet;
    /// and each job's fencing tokens strictly increase in the order its claims were won
    /// (fleet time).
    ///
    /// # Panics
    /// On the first broken promise, naming the job and trigger.
    pub fn assert_exactly_once(&self) {
        // Per trigger key: each success and the fleet time its claim was won.
        let mut successes: BTreeMap<String, Vec<(RunRecord, Timestamp)>> = BTreeMap::new();
        let mut keys_due: BTreeSet<String> = BTreeSet::new();
        let kinds: HashMap<&str, ScheduleKind> =
            self.replicas.iter().flat_map(Replica::jobs).map(|j| (j.name(), j.schedule().kind())).collect();
        for replica in &self.replicas {
            // A restarted replica sees a past `at` again: once per start.
            let mut seen: HashMap<(&str, Timestamp), usize> = HashMap::new();
            for (job, trigger) in replica.due() {
                *seen.entry((job.name(), *trigger)).or_default() += 1;
                keys_due.insert(trigger_key(job.name(), job.schedule().kind(), *trigger));
            }
            for ((job, trigger), times) in seen {
                let count = replica.ledger().count(job, trigger);
                assert_eq!(
                    count,
                    times,
                    "replica {}: {job}@{trigger} came due {times} time(s) but has {count} record(s)",
                    replica.instance()
                );
            }
            let records = replica.records();
            assert_eq!(
                records.len(),
                replica.due().len(),
                "replica {}: records for triggers that never came due",
                replica.instance()
            );
            for record in records {
                assert!(
                    matches!(record.outcome, Outcome::Succeeded | Outcome::SkippedLost),
                    "replica {}: {}@{} ended {}: {:?}",
                    replica.instance(),
                    record.job,
                    record.trigger,
                    record.outcome,
                    record.error
                );
                if record.outcome == Outcome::Succeeded {
                    let key = trigger_key(&record.job, kinds[&*record.job], record.trigger);
                    let won_at = record.started.saturating_sub(replica.skew()).expect("in range");
                    successes.entry(key).or_default().push((record, won_at));
                }
            }
        }
        for key in &keys_due {
            let won = successes.get(key).map_or(0, Vec::len);
            assert_eq!(won, 1, "trigger {key} ran {won} times across the fleet: {:?}", successes.get(key));
        }
        assert_fencing_order(&successes);
    }
}

impl Fleet {
    /// Asserts the promise of shared work over everything that came due so far: each
    /// trigger key that came due on any replica ran exactly once across the fleet; every
    /// replica has exactly one record for each trigger it tried to claim, each time it
    /// came due, and no record of a trigger it did not try to claim unless the record says
    /// why it did not (its concurrency cap, its clock); and each job's fencing tokens grow
    /// in the order its claims were won.
    ///
    /// # Panics
    /// On the first broken promise, naming the replica, job and trigger.
    pub fn assert_shared_exactly_once(&self) {
        let mut successes: BTreeMap<String, Vec<(RunRecord, Timestamp)>> = BTreeMap::new();
        let mut keys_due: BTreeSet<String> = BTreeSet::new();
        for replica in &self.replicas {
            for (job, trigger) in replica.due() {
                keys_due.insert(trigger_key(job.name(), job.schedule().kind(), *trigger));
            }
            let mut claimed: HashMap<(Arc<str>, Timestamp), usize> = HashMap::new();
            for claim in replica.claimed() {
                *claimed.entry(claim).or_default() += 1;
            }
            // A claim ahead was tried for a trigger this replica saw only if the trigger
            // came due while it ran: one it stopped (or died) before has no record here.
            for claim in replica.claimed_ahead() {
                if replica.due().iter().any(|(job, at)| job.name() == &*claim.0 && *at == claim.1) {
                    *claimed.entry(claim).or_default() += 1;
                }
            }
            let mut recorded: HashMap<(Arc<str>, Timestamp), usize> = HashMap::new();
            for record in replica.records() {
                let unclaimed =
                    matches!(record.outcome, Outcome::SkippedConcurrency | Outcome::SkippedClockSkew);
                let id = (record.job.clone(), record.trigger);
                if unclaimed {
                    assert!(
                        !claimed.contains_key(&id),
                        "replica {}: {}@{} claimed, yet recorded {}",
                        replica.instance(),
                        record.job,
                        record.trigger,
                        record.outcome
                    );
                } else {
                    *recorded.entry(id).or_default() += 1;
                }
                if record.outcome == Outcome::Succeeded {
                    let job = replica.jobs().iter().find(|j| j.name() == &*record.job).expect("its job");
                    let key = trigger_key(&record.job, job.schedule().kind(), record.trigger);
                    let won_at = record.started.saturating_sub(replica.skew()).expect("in range");
                    successes.entry(key).or_default().push((record, won_at));
                }
            }
            assert_eq!(
                recorded,
                claimed,
                "replica {}: its records (left) are not one per trigger it tried to claim (right)",
                replica.instance()
            );
        }
        for key in &keys_due {
            let won = successes.get(key).map_or(0, Vec::len);
            assert_eq!(won, 1, "trigger {key} ran {won} times across the fleet: {:?}", successes.get(key));
        }
        assert_fencing_order(&successes);
    }
}

/// Fencing tokens grow in the order claims are won (`successes`: per trigger key, each
/// success and the fleet time its claim was won).
fn assert_fencing_order(successes: &BTreeMap<String, Vec<(RunRecord, Timestamp)>>) {
    // Fencing tokens grow in the order claims are won, which is not trigger order when
    // clocks are skewed by more than a slot. Claims won at the same fleet instant may
    // be in any order, but their tokens differ.
    let mut by_job: BTreeMap<&str, Vec<&(RunRecord, Timestamp)>> = BTreeMap::new();
    for success in successes.values().flatten() {
        by_job.entry(&success.0.job).or_default().push(success);
    }
    for (job, mut runs) in by_job {
        runs.sort_by_key(|(record, won_at)| (*won_at, record.fencing_token));
        for pair in runs.windows(2) {
            let ((a, a_at), (b, b_at)) = (pair[0], pair[1]);
            assert!(
                a.fencing_token < b.fencing_token,
                "job {job}: fencing token {:?} of {} (won at fleet time {a_at}) is not below {:?} of {} \
                 (won at {b_at})",
                a.fencing_token,
                a.trigger,
                b.fencing_token,
                b.trigger
            );
        }
    }
}
