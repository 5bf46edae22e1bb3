//! The suite's case for counted runs (the coordinator's
//! ["Counted runs"](slotcron::Coordinator#counted-runs), `max_runs`), without a
//! scheduler. On a coordinator that counts no runs it checks nothing.

use jiff::Timestamp;
use slotcron::{ClaimOutcome, CountedAnswer, CountedMark, StartMark, TriggerRef};

use crate::CoordinatorFactory;
use crate::suite::{MINUTE, claim, namespace, won};

/// Counted marks count each run once (a mark sent again counts nothing more), refuse
/// the runs past `max_runs` (again when sent again) and settle their claims (listed
/// unstarted no more, never taken over), answer `Lost` for a claim another holds, and
/// keep one count per job, read by `run_counts`.
pub async fn counted_marks_contract(factory: &impl CoordinatorFactory) {
    let ns = namespace("counted_marks_contract");
    let (holder, taker) = (factory.coordinator(&ns).await, factory.coordinator(&ns).await);
    if !holder.counts_runs() {
        return;
    }
    let first = Timestamp::now().as_second() + 60;
    let keys: Vec<String> = (0..4)
        .map(|i| format!("counted:{}", Timestamp::from_second(first + 60 * i).expect("a valid instant")))
        .collect();
    let mut claims: Vec<_> = keys.iter().map(|key| claim("counted", key, Timestamp::now(), MINUTE)).collect();
    claims.iter_mut().take(3).for_each(|c| c.instance = "holder");
    claims[3].instance = "taker";
    // A batch is one instance's (some backends refuse a batch of two).
    for outcome in
        holder.claim_batch(&claims[..3]).await.into_iter().chain(taker.claim_batch(&claims[3..]).await)
    {
        won(outcome.expect("claim"));
    }
    let counted = |i: usize| CountedMark { mark: StartMark { job: "counted", key: &keys[i] }, max_runs: 2 };
    let marked = holder.mark_counted_starts("holder", &[counted(0), counted(1)]).await.expect("mark");
    assert_eq!(marked, [CountedAnswer::Marked, CountedAnswer::Marked]);
    let again = holder.mark_counted_starts("holder", &[counted(0)]).await.expect("mark again");
    assert_eq!(again, [CountedAnswer::Marked], "a mark sent again counts nothing more");
    assert_eq!(holder.run_counts(&["counted", "uncounted"]).await.expect("counts"), [2, 0]);

    let refused = holder.mark_counted_starts("holder", &[counted(2), counted(3)]).await.expect("mark");
    assert_eq!(refused, [CountedAnswer::MaxRunsReached, CountedAnswer::Lost], "the last is the taker's");
    let again = holder.mark_counted_starts("holder", &[counted(2)]).await.expect("mark again");
    assert_eq!(again, [CountedAnswer::MaxRunsReached], "refused again");
    assert_eq!(taker.run_counts(&["counted"]).await.expect("counts"), [2], "one count for the fleet");
    let unstarted = holder.unstarted("holder", &["counted"]).await.expect("unstarted");
    assert!(unstarted.is_empty(), "a refused claim is settled: {unstarted:?}");
    let taken = taker.take_over("holder", "taker", &[TriggerRef { job: "counted", key: &keys[2] }]).await;
    assert_eq!(taken[0].as_ref().ok(), Some(&ClaimOutcome::Lost), "never taken over: {taken:?}");
}
