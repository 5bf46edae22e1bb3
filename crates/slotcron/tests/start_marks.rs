//! A burst's start marks go out together (docs/design.md, "Claims, start marks and
//! takeover"): a thousand starts cost a few coordinator calls, not one per run, and every
//! run still ends in exactly one record.

use std::sync::Arc;
use std::time::Duration;

use slotcron::{InProcessCoordinator, Job, Outcome};
use slotcron_testkit::Link;
use slotcron_testkit::harness::{Harness, ts};

/// How many jobs come due together.
const BURST: usize = 2_500;

#[tokio::test(start_paused = true)]
async fn a_bursts_starts_are_marked_in_a_few_calls_and_each_run_has_one_record() {
    let link = Arc::new(Link::new(Arc::new(InProcessCoordinator::new())));
    // The coordinator keeps the system's time: the manual clock's skew is not checked.
    let mut h =
        Harness::with("2024-05-17T00:00:30Z", |b| b.coordinator(link.clone()).check_clock_skew(false));
    for n in 0..BURST {
        let job = Job::builder(format!("job-{n}"))
            .every(Duration::from_secs(60))
            .handler(|_| async { Ok::<(), std::io::Error>(()) })
            .build()
            .unwrap();
        h.add(job);
    }
    h.start().await;
    h.advance_to(ts("2024-05-17T00:01:10Z")).await;
    h.stop().await;
    let calls = link.mark_calls();
    assert_eq!(calls.iter().sum::<usize>(), BURST, "one mark per run: {calls:?}");
    // A call carries at most 1,000 marks; a few senders at once may each take part of
    // the burst.
    assert!(calls.len() <= 8, "a few calls for {BURST} starts, not one per run: {calls:?}");
    for n in [0, BURST / 2, BURST - 1] {
        let records = h.records(&format!("job-{n}"));
        let outcomes: Vec<Outcome> = records.iter().map(|r| r.outcome).collect();
        assert_eq!(outcomes, [Outcome::Succeeded], "job-{n}: {records:?}");
    }
}
