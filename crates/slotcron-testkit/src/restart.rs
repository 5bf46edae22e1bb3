//! A scheduler restarted after downtime, on whatever store keeps its state: the scenario
//! of the restart tests, which then check what each misfire policy did.

use std::time::Duration;

use slotcron::{Job, Misfire, Outcome};

use crate::harness::{Harness, ok, ts};

/// Runs a job `tick` every 2 s (with `misfire`, or the interval default when `None`) on a
/// scheduler from `open` from 2024-05-17T00:00:00Z to 00:00:10Z, checks that it ran the
/// five triggers 00:00:02 to 00:00:10, then stops and drops it; then starts another
/// scheduler from `open` at 00:00:21.5, when the 00:00:20 trigger is past its 1 s grace
/// window, with the same job, and returns it once it has handled what was due.
///
/// `open(start)` builds a [`Harness`] whose clock starts at `start` (RFC 3339) on the
/// store under test: a second call must see what the first scheduler stored, as a process
/// started again would. The check reads the first scheduler's ledger through
/// [`Harness::history`].
pub async fn restart_after_downtime(
    mut open: impl AsyncFnMut(&'static str) -> Harness,
    misfire: Option<Misfire>,
) -> Harness {
    let tick = || {
        let builder = Job::builder("tick").every(Duration::from_secs(2)).handler(ok);
        match misfire {
            Some(policy) => builder.misfire(policy),
            None => builder,
        }
        .build()
        .unwrap()
    };
    let mut first = open("2024-05-17T00:00:00Z").await;
    first.add(tick());
    first.start().await;
    first.advance_to(ts("2024-05-17T00:00:10Z")).await;
    first.stop().await;
    let ran: Vec<_> = first.history("tick").await.into_iter().rev().map(|r| (r.trigger, r.outcome)).collect();
    let expected: Vec<_> =
        (1..=5).map(|i| (ts(&format!("2024-05-17T00:00:{:02}Z", 2 * i)), Outcome::Succeeded)).collect();
    assert_eq!(ran, expected, "the runs before the restart");
    drop(first);
    let mut second = open("2024-05-17T00:00:21.500Z").await;
    second.add(tick());
    second.start().await;
    second
}
