//! Fault suite, failure 8 of issue 8: the future of `Scheduler::run` dropped (it lost a
//! `tokio::select!`, its task was aborted) while a run goes on. On a manual clock and
//! tokio's paused time: every count below is exact.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use slotcron::{CancellationToken, Clock, Job, JobContext, ManualClock, MemoryLedger, Outcome, Scheduler};
use slotcron_testkit::harness::{ok, settle, ts};

/// Moves `clock` to `until`, stopping (and settling) at every deadline on the way.
async fn advance(clock: &ManualClock, until: slotcron::jiff::Timestamp) {
    settle().await;
    while let Some(next) = clock.next_deadline().filter(|d| *d <= until) {
        clock.set(next);
        settle().await;
    }
    clock.set(until);
    settle().await;
}

#[tokio::test(start_paused = true)]
async fn a_dropped_run_future_stops_firing_hands_its_runs_to_the_shutdown_and_a_later_run_works() {
    let clock = ManualClock::new(ts("2024-05-17T00:00:00Z"));
    let ledger = Arc::new(MemoryLedger::default());
    let scheduler = Scheduler::builder().clock(clock.clone()).ledger(ledger.clone()).instance("test").build();
    scheduler.add(Job::builder("tick").every(Duration::from_secs(1)).handler(ok).build().unwrap()).unwrap();
    // A run that goes on until it is told to stop.
    let stopped = Arc::new(AtomicUsize::new(0));
    let told = stopped.clone();
    let long = Job::builder("long")
        .at(ts("2024-05-17T00:00:01Z"))
        .handler(move |ctx: JobContext| {
            let told = told.clone();
            async move {
                ctx.cancellation_token().cancelled().await;
                told.fetch_add(1, Ordering::SeqCst);
                Ok::<_, std::io::Error>(())
            }
        })
        .build()
        .unwrap();
    scheduler.add(long).unwrap();

    // The run future loses a select after three ticks: it is dropped while "long" runs.
    let never = CancellationToken::new();
    tokio::select! {
        () = scheduler.run(never.clone()) => panic!("run() returned without being cancelled"),
        () = advance(&clock, ts("2024-05-17T00:00:03.500Z")) => {}
    }
    settle().await;
    let ticks = |ledger: &MemoryLedger| {
        ledger.records().iter().filter(|r| &*r.job == "tick" && r.outcome == Outcome::Succeeded).count()
    };
    assert_eq!(ticks(&ledger), 3);
    assert_eq!(stopped.load(Ordering::SeqCst), 1, "the dropped run's handler was told to stop");
    let long_records: Vec<_> = ledger.records().into_iter().filter(|r| &*r.job == "long").collect();
    assert_eq!(long_records.len(), 1, "{long_records:?}");
    assert!(long_records[0].outcome.ran(), "{long_records:?}");

    // Nothing fires without a run() ...
    advance(&clock, ts("2024-05-17T00:00:10.500Z")).await;
    assert_eq!(ticks(&ledger), 3, "no trigger fired after the future was dropped");

    // ... and a later run() works: it fires again, and stops when cancelled.
    let cancel = CancellationToken::new();
    let again = tokio::spawn({
        let scheduler = scheduler.clone();
        let cancel = cancel.clone();
        async move { scheduler.run(cancel).await }
    });
    settle().await;
    let resumed = ticks(&ledger);
    advance(&clock, clock.now() + Duration::from_secs(3)).await;
    assert_eq!(ticks(&ledger), resumed + 3, "the later run() fires every second");
    cancel.cancel();
    settle().await;
    assert!(again.is_finished(), "the later run() returns when cancelled");
    again.await.unwrap();
}
