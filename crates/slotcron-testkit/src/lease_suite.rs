//! The suite's lease cases: each one a promise of the lease (see [`Lease`]) and of the
//! overlap policies across a fleet (docs/design.md, "Run policies").

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::join_all;
use jiff::Timestamp;
use slotcron::{
    CancellationToken, Clock, Coordinator, Job, JobContext, Lease, LeaseGrant, LeaseRenewal, ManualClock,
    Outcome, Overlap, Scheduler,
};

use crate::suite::namespace;
use crate::{CoordinatorFactory, WatchedLedger};

/// The most any wait of these cases takes before the test fails.
const WAIT: Duration = Duration::from_secs(30);

fn lease<'a>(job: &'a str, owner: &'a str, ttl: Duration) -> Lease<'a> {
    Lease { job, owner, ttl }
}

/// Polls (real time) until `acquire` gets the lease, failing after [`WAIT`].
async fn acquire_when_free(coordinator: &dyn Coordinator, lease: &Lease<'_>) {
    let waited = tokio::time::timeout(WAIT, async {
        while coordinator.acquire_lease(lease).await.expect("acquire") != LeaseGrant::Acquired {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    waited.unwrap_or_else(|_| panic!("lease of {} not free within {WAIT:?}", lease.job));
}

/// The lease contract without a scheduler: one owner at a time, re-acquirable by its
/// owner, renewed and released only by its owner, marked by a cancellation; of eight
/// simultaneous acquisitions exactly one wins; an expired lease retaken by another owner
/// is not renewed by the first (no two owners).
pub async fn lease_contract(factory: &impl CoordinatorFactory) {
    let ns = namespace("lease_contract");
    let (a, b) = (factory.coordinator(&ns).await, factory.coordinator(&ns).await);
    let ttl = Duration::from_secs(30);
    let (first, second) = (lease("job", "owner-a", ttl), lease("job", "owner-b", ttl));
    assert_eq!(a.acquire_lease(&first).await.expect("acquire"), LeaseGrant::Acquired);
    assert_eq!(b.acquire_lease(&second).await.expect("acquire"), LeaseGrant::Held, "one owner");
    assert_eq!(a.acquire_lease(&first).await.expect("acquire"), LeaseGrant::Acquired, "its owner's");
    assert_eq!(a.renew_lease(&first).await.expect("renew"), LeaseRenewal::Renewed);
    assert_eq!(b.renew_lease(&second).await.expect("renew"), LeaseRenewal::Lost, "renewed only by its owner");
    b.release_lease(&second).await.expect("release");
    assert_eq!(
        b.acquire_lease(&second).await.expect("acquire"),
        LeaseGrant::Held,
        "released only by its owner"
    );
    let other = lease("other", "owner-b", ttl);
    assert_eq!(b.acquire_lease(&other).await.expect("acquire"), LeaseGrant::Acquired, "leases are per job");

    assert!(b.cancel_lease("job").await.expect("cancel"), "a held lease can be asked to stop");
    assert_eq!(a.renew_lease(&first).await.expect("renew"), LeaseRenewal::CancelRequested);
    assert_eq!(a.renew_lease(&first).await.expect("renew"), LeaseRenewal::CancelRequested, "until released");
    a.release_lease(&first).await.expect("release");
    assert!(!b.cancel_lease("job").await.expect("cancel"), "nobody holds a released lease");

    let racers = join_all((0..8).map(|_| factory.coordinator(&ns))).await;
    let owners: Vec<String> = (0..8).map(|k| format!("racer-{k}")).collect();
    let grants = join_all(
        racers
            .iter()
            .zip(&owners)
            .map(|(c, o)| async move { c.acquire_lease(&lease("race", o, ttl)).await.expect("acquire") }),
    )
    .await;
    let winners = grants.iter().filter(|g| **g == LeaseGrant::Acquired).count();
    assert_eq!(winners, 1, "exactly one of 8 simultaneous acquisitions wins: {grants:?}");

    // An expired lease taken by another owner: the first one's renewal finds it lost.
    let short = Duration::from_millis(300);
    let (old, new) = (lease("expiring", "owner-a", short), lease("expiring", "owner-b", short));
    assert_eq!(a.acquire_lease(&old).await.expect("acquire"), LeaseGrant::Acquired);
    acquire_when_free(b.as_ref(), &new).await;
    assert_eq!(a.renew_lease(&old).await.expect("renew"), LeaseRenewal::Lost, "no two owners");
    assert_eq!(b.renew_lease(&new).await.expect("renew"), LeaseRenewal::Renewed);
    a.release_lease(&old).await.expect("release");
    assert_eq!(
        a.acquire_lease(&old).await.expect("acquire"),
        LeaseGrant::Held,
        "the first owner released nothing"
    );
}

/// One run of the lease cases' job: which replica ran which trigger, from when to when
/// on the fleet's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    replica: usize,
    trigger: Timestamp,
    start: Timestamp,
    end: Option<Timestamp>,
}

/// Three schedulers on manual clocks that read the fleet's time, each with its own
/// coordinator, running a 1 s `forbid` job whose handler works `work` of fleet time
/// (stopping early when cancelled).
struct LeaseFleet {
    start: Timestamp,
    now: Timestamp,
    /// How long each run works.
    work: Duration,
    ledgers: Vec<Arc<WatchedLedger>>,
    spans: Arc<Mutex<Vec<Span>>>,
    runs: Vec<(CancellationToken, tokio::task::JoinHandle<()>)>,
    /// Each replica's clock; `None` once its scheduler was dropped (its clock stopped).
    clocks: Vec<Option<ManualClock>>,
}

impl LeaseFleet {
    async fn start(
        factory: &impl CoordinatorFactory,
        ns: &str,
        start: Timestamp,
        lease_ttl: Duration,
        work: Duration,
    ) -> Self {
        let spans = Arc::new(Mutex::new(Vec::<Span>::new()));
        let mut fleet = Self {
            start,
            now: start,
            work,
            ledgers: Vec::new(),
            spans,
            runs: Vec::new(),
            clocks: Vec::new(),
        };
        for replica in 0..3 {
            let clock = ManualClock::new(start);
            let ledger = Arc::new(WatchedLedger::default());
            let (spans, handler_clock) = (fleet.spans.clone(), clock.clone());
            let job = Job::builder("long")
                .every(Duration::from_secs(1))
                .overlap(Overlap::Forbid)
                .handler(move |ctx: JobContext| {
                    let (clock, spans) = (handler_clock.clone(), spans.clone());
                    async move {
                        let begun = clock.now();
                        let index = {
                            let mut spans = spans.lock().expect("spans");
                            spans.push(Span { replica, trigger: ctx.trigger(), start: begun, end: None });
                            spans.len() - 1
                        };
                        tokio::select! {
                            () = clock.sleep_until(begun + work) => {}
                            () = ctx.cancellation_token().cancelled() => {}
                        }
                        spans.lock().expect("spans")[index].end = Some(clock.now());
                        Ok::<_, std::io::Error>(())
                    }
                })
                .build()
                .expect("a valid job");
            let scheduler = Scheduler::builder()
                .shared_work(false)
                .clock(clock.clone())
                .coordinator(factory.coordinator(ns).await)
                .ledger(ledger.clone())
                .instance(format!("replica-{replica}"))
                .lease_ttl(lease_ttl)
                // The manual clock is far from the real backend's: the skew guard would
                // skip every trigger (it has its own tests).
                .check_clock_skew(false)
                .build();
            scheduler.add(job).expect("one job");
            let cancel = CancellationToken::new();
            let task = tokio::spawn({
                let (scheduler, cancel) = (scheduler.clone(), cancel.clone());
                async move { scheduler.run(cancel).await }
            });
            // Started, on the start's clock: its first trigger is queued.
            let queued = tokio::time::timeout(WAIT, async {
                while scheduler.next_trigger("long").is_none() {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            });
            queued.await.unwrap_or_else(|_| panic!("replica {replica} did not start within {WAIT:?}"));
            fleet.ledgers.push(ledger);
            fleet.runs.push((cancel, task));
            fleet.clocks.push(Some(clock));
        }
        fleet
    }

    /// Moves every live replica's clock to `until` in steps of `step`, waiting at each
    /// until what came due is recorded or running.
    async fn advance_to(&mut self, until: Timestamp, step: Duration) {
        while self.now < until {
            self.now = (self.now + step).min(until);
            for clock in self.clocks.iter().flatten() {
                clock.set(self.now);
            }
            self.settle().await;
        }
    }

    /// Whether live replica `replica` recorded, or is running, every trigger due so far.
    fn caught_up(&self, replica: usize) -> bool {
        let spans = self.spans.lock().expect("spans");
        let overdue = |s: &Span| s.replica == replica && s.end.is_none() && s.start + self.work <= self.now;
        if spans.iter().any(overdue) {
            return false;
        }
        let mut second = Timestamp::from_second(self.now.as_second()).expect("in range");
        while second > self.start {
            let recorded = self.ledgers[replica].count("long", second) > 0;
            let running =
                || spans.iter().any(|s| s.replica == replica && s.trigger == second && s.end.is_none());
            if !recorded && !running() {
                return false;
            }
            second -= Duration::from_secs(1);
        }
        true
    }

    /// Waits (real time, bounded by [`WAIT`]) until every live replica caught up.
    async fn settle(&self) {
        let live: Vec<usize> = (0..3).filter(|k| self.clocks[*k].is_some()).collect();
        let waited = tokio::time::timeout(WAIT, async {
            while !live.iter().all(|k| self.caught_up(*k)) {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await;
        if waited.is_err() {
            let records: Vec<_> = self.ledgers.iter().map(|l| l.records()).collect();
            let spans = self.spans.lock().expect("spans").clone();
            panic!(
                "the fleet did not record what came due by {} within {WAIT:?}: {records:?} {spans:?}",
                self.now
            );
        }
    }

    /// Drops replica `replica`'s scheduler without a shutdown: its clock stops, so its
    /// runs and heartbeats stop where they are, as in a process that hangs or dies.
    fn drop_replica(&mut self, replica: usize) {
        self.clocks[replica] = None;
        self.runs[replica].1.abort();
    }

    /// Which replica holds the run still going, if any.
    fn running(&self) -> Option<usize> {
        self.spans.lock().expect("spans").iter().find(|s| s.end.is_none()).map(|s| s.replica)
    }

    fn outcomes(&self) -> HashMap<Outcome, usize> {
        let mut counts = HashMap::new();
        for ledger in &self.ledgers {
            for record in ledger.records() {
                *counts.entry(record.outcome).or_insert(0) += 1;
            }
        }
        counts
    }

    async fn stop(self) {
        for (replica, (cancel, task)) in self.runs.into_iter().enumerate() {
            cancel.cancel();
            if self.clocks[replica].is_some() {
                let stopped = tokio::time::timeout(WAIT, task).await;
                stopped.unwrap_or_else(|_| panic!("replica {replica} did not stop")).expect("no panic");
            }
        }
    }
}

/// Three replicas run a 1 s `forbid` job whose runs take 2.5 s, over 32 triggers: at
/// least 8 succeed, at least one is `skipped-overlap`, and no two runs overlap in time
/// across the replicas.
pub async fn forbid_keeps_runs_apart_across_replicas(factory: &impl CoordinatorFactory) {
    let ns = namespace("forbid_across_replicas");
    let start: Timestamp = "2024-05-17T00:00:00.500Z".parse().expect("an instant");
    let work = Duration::from_millis(2_500);
    let mut fleet = LeaseFleet::start(factory, &ns, start, Duration::from_secs(15), work).await;
    fleet.advance_to(start + Duration::from_secs(32), Duration::from_millis(250)).await;
    fleet.advance_to(start + Duration::from_secs(35), Duration::from_millis(250)).await;
    let counts = fleet.outcomes();
    let succeeded = counts.get(&Outcome::Succeeded).copied().unwrap_or(0);
    let skipped = counts.get(&Outcome::SkippedOverlap).copied().unwrap_or(0);
    assert!(succeeded >= 8, "{counts:?}");
    assert!(skipped >= 1, "{counts:?}");
    let mut spans = fleet.spans.lock().expect("spans").clone();
    spans.sort_by_key(|s| s.start);
    for pair in spans.windows(2) {
        let end = pair[0].end.expect("every run ended");
        assert!(end <= pair[1].start, "two runs overlap: {:?} and {:?}", pair[0], pair[1]);
    }
    fleet.stop().await;
}

/// The replica holding the lease is dropped without a shutdown (it neither renews nor
/// releases): once the lease's TTL has passed, the next trigger runs on another replica.
pub async fn a_dead_owners_lease_expires_within_its_ttl(factory: &impl CoordinatorFactory) {
    let ns = namespace("dead_owner");
    let start: Timestamp = "2024-05-17T00:00:00.500Z".parse().expect("an instant");
    let ttl = Duration::from_millis(500);
    let mut fleet = LeaseFleet::start(factory, &ns, start, ttl, Duration::from_secs(3_600)).await;
    fleet.advance_to(start + Duration::from_secs(3), Duration::from_millis(100)).await;
    let holder = fleet.running().expect("a run holds the lease");
    fleet.drop_replica(holder);
    // The lease's TTL runs on the coordinator's clock: real time.
    tokio::time::sleep(ttl * 2).await;
    fleet.advance_to(start + Duration::from_secs(4), Duration::from_millis(100)).await;
    let spans = fleet.spans.lock().expect("spans").clone();
    let after: Vec<&Span> = spans.iter().filter(|s| s.start > start + Duration::from_secs(3)).collect();
    assert_eq!(after.len(), 1, "the trigger after the TTL ran once: {spans:?}");
    assert_ne!(after[0].replica, holder, "on another replica");
    fleet.stop().await;
}
