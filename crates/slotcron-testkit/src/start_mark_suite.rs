//! The suite's case for start marks and takeover (the coordinator's
//! ["Start marks and takeover"](slotcron::Coordinator#start-marks-and-takeover)), without a
//! scheduler. On a coordinator that keeps no start marks it checks nothing.

use std::collections::BTreeSet;
use std::time::Duration;

use jiff::Timestamp;
use slotcron::{ClaimOutcome, Coordinator, StartMark, TriggerRef, Unstarted};

use crate::CoordinatorFactory;
use crate::suite::{EXPIRED, MINUTE, brief, claim, later, namespace, won};

/// The unstarted claims of `instance` among `jobs`, as a set of keys.
async fn unstarted(coordinator: &dyn Coordinator, instance: &str, jobs: &[&str]) -> BTreeSet<String> {
    let listed = coordinator.unstarted(instance, jobs).await.expect("unstarted");
    listed.into_iter().map(|Unstarted { key, .. }| key).collect()
}

fn keys(keys: &[&String]) -> BTreeSet<String> {
    keys.iter().map(|key| (*key).clone()).collect()
}

/// Claims won are listed unstarted by holder until marked; a mark is the holder's alone
/// and idempotent; a takeover moves an unmarked claim to a new holder with a higher
/// fencing token (idempotently), refuses a marked one, and makes the old holder's mark
/// fail; a claim whose hold ended unmarked is still listed and taken over; claims ahead
/// are listed once won, until their owner's start of the instant marks them.
pub async fn start_marks_contract(factory: &impl CoordinatorFactory) {
    let ns = namespace("start_marks_contract");
    let (holder, taker) = (factory.coordinator(&ns).await, factory.coordinator(&ns).await);
    if !holder.keeps_start_marks() {
        return;
    }
    let at = Timestamp::from_second(Timestamp::now().as_second() + 60).expect("a valid instant");
    let (a, b) = (format!("mark-a:{at}"), format!("mark-b:{at}"));
    let jobs = ["mark-a", "mark-b"];
    let mut claims = [claim("mark-a", &a, at, MINUTE), claim("mark-b", &b, at, MINUTE)];
    claims.iter_mut().for_each(|c| c.instance = "holder");
    let tokens: Vec<u64> =
        holder.claim_batch(&claims).await.into_iter().map(|o| won(o.expect("claim"))).collect();
    assert_eq!(
        unstarted(holder.as_ref(), "holder", &jobs).await,
        keys(&[&a, &b]),
        "both won, neither marked"
    );
    assert!(unstarted(holder.as_ref(), "taker", &jobs).await.is_empty(), "listed by holder");

    let mark_a = [StartMark { job: "mark-a", key: &a }];
    assert_eq!(holder.mark_starts("holder", &mark_a).await.expect("mark"), [true]);
    assert_eq!(holder.mark_starts("holder", &mark_a).await.expect("mark again"), [true], "idempotent");
    assert_eq!(unstarted(holder.as_ref(), "holder", &jobs).await, keys(&[&b]));
    let mark_b = [StartMark { job: "mark-b", key: &b }];
    assert_eq!(taker.mark_starts("taker", &mark_b).await.expect("mark"), [false], "not the taker's claim");

    let refs = [TriggerRef { job: "mark-a", key: &a }, TriggerRef { job: "mark-b", key: &b }];
    let taken = taker.take_over("holder", "taker", &refs).await;
    assert_eq!(taken[0].as_ref().ok(), Some(&ClaimOutcome::Lost), "a marked claim stays: {taken:?}");
    let token = won(*taken[1].as_ref().expect("take over"));
    assert!(token > tokens[1], "a higher fencing token: {token} after {tokens:?}");
    let again = taker.take_over("holder", "taker", &refs).await;
    assert_eq!(again[1].as_ref().ok(), Some(&ClaimOutcome::Won { fencing_token: token }), "idempotent");
    assert_eq!(
        holder.mark_starts("holder", &mark_b).await.expect("mark"),
        [false],
        "taken over: not started"
    );
    assert!(unstarted(holder.as_ref(), "holder", &jobs).await.is_empty());
    assert_eq!(unstarted(holder.as_ref(), "taker", &jobs).await, keys(&[&b]));
    assert_eq!(taker.mark_starts("taker", &mark_b).await.expect("mark"), [true]);
    let third = taker.take_over("taker", "third", &refs[1..]).await;
    assert_eq!(third[0].as_ref().ok(), Some(&ClaimOutcome::Lost), "marked by the taker");

    // A claim whose hold ended before its mark is still the holder's to lose. Its trigger
    // is a minute past, so that a brief hold ends a few milliseconds after the claim (of
    // a trigger to come, it would hold until the trigger).
    let past = at - jiff::SignedDuration::from_secs(120);
    let c = format!("mark-c:{past}");
    let mut brief_claim = claim("mark-c", &c, past, brief(None));
    brief_claim.instance = "holder";
    won(holder.claim(&brief_claim).await.expect("claim"));
    tokio::time::sleep(EXPIRED).await;
    assert_eq!(unstarted(holder.as_ref(), "holder", &["mark-c"]).await, keys(&[&c]), "still listed");
    let taken = taker.take_over("holder", "taker", &[TriggerRef { job: "mark-c", key: &c }]).await;
    assert!(matches!(taken[0], Ok(ClaimOutcome::Won { .. })), "won afresh: {taken:?}");
    claims_ahead_are_marked_by_their_start(holder.as_ref(), taker.as_ref(), at).await;
}

/// Claims ahead are listed unstarted once won, until their owner's start of the instant
/// marks them; a marked one is not taken over.
async fn claims_ahead_are_marked_by_their_start(
    owner: &dyn Coordinator,
    taker: &dyn Coordinator,
    at: Timestamp,
) {
    if !owner.claims_ahead() {
        return;
    }
    let at = at + jiff::SignedDuration::from_secs(1);
    let key = format!("mark-ahead:{at}");
    let mut ahead = claim("mark-ahead", &key, at, MINUTE);
    ahead.instance = "owner";
    let until = later(at, Duration::from_secs(60));
    let answers = owner.claim_batch_ahead("owner", at, &[ahead], until).await;
    assert!(matches!(answers[0], Ok(ClaimOutcome::Won { .. })), "{answers:?}");
    assert_eq!(unstarted(owner, "owner", &["mark-ahead"]).await, keys(&[&key]), "before the start");
    let refs = [TriggerRef { job: "mark-ahead", key: &key }];
    owner.start_ahead("owner", at, &refs, until).await.expect("start");
    assert!(unstarted(owner, "owner", &["mark-ahead"]).await.is_empty(), "marked by the start");
    let taken = taker.take_over("owner", "taker", &refs).await;
    assert!(matches!(taken[0], Ok(ClaimOutcome::Lost)), "marked: {taken:?}");
}
