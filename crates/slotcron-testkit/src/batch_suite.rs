//! The suite's batch cases: [`Coordinator::claim_batch`]
//! keeps every promise of docs/design.md's "Exactly once across replicas" per trigger.

use std::collections::HashMap;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use slotcron::{Claim, ClaimOutcome, Coordinator, CoordinatorError, Hold, ScheduleKind, trigger_key};

use crate::CoordinatorFactory;
use crate::suite::{EXPIRED, MINUTE, brief, claim, namespace, real_now, won};

/// The outcomes of a batch, each claim's error failing the test.
async fn batch(coordinator: &dyn Coordinator, claims: &[Claim<'_>]) -> Vec<ClaimOutcome> {
    let outcomes: Vec<Result<ClaimOutcome, CoordinatorError>> = coordinator.claim_batch(claims).await;
    assert_eq!(outcomes.len(), claims.len(), "one result per claim");
    outcomes.into_iter().zip(claims).map(|(o, c)| o.unwrap_or_else(|e| panic!("{}: {e}", c.key))).collect()
}

/// `count` triggers of `jobs` jobs named `{prefix}-{j}`, interleaved (trigger k of every
/// job, then k + 1...), a second apart in 2100: ahead of the coordinator's clock, so no
/// claim expires and the mark refuses none.
fn triggers(prefix: &str, jobs: usize, count: usize) -> Vec<(String, Timestamp, String)> {
    let base: Timestamp = "2100-01-01T00:00:00Z".parse().expect("an instant");
    (0..count)
        .map(|i| {
            let job = format!("{prefix}-{}", i % jobs);
            let trigger = base + SignedDuration::from_secs((i / jobs) as i64);
            let key = trigger_key(&job, ScheduleKind::Recurring, trigger);
            (job, trigger, key)
        })
        .collect()
}

fn claims<'a>(triggers: &'a [(String, Timestamp, String)], hold: Option<Hold>) -> Vec<Claim<'a>> {
    triggers.iter().map(|(job, trigger, key)| claim(job, key, *trigger, hold)).collect()
}

/// Batches of 1, 64 and 10,000 claims (over up to 100 jobs): the first batch wins every
/// trigger, with fencing tokens that grow per job in trigger order; the same batch from
/// another coordinator loses every one, and so does a single claim of any of them; a
/// job's next claim gets a greater token.
pub async fn batch_claims(factory: &impl CoordinatorFactory) {
    let ns = namespace("batch_claims");
    let (a, b) = (factory.coordinator(&ns).await, factory.coordinator(&ns).await);
    for size in [1, 64, 10_000] {
        let jobs = size.min(100);
        let triggers = triggers(&format!("b{size}"), jobs, size);
        let claims = claims(&triggers, MINUTE);
        let mut tokens: HashMap<&str, Vec<u64>> = HashMap::new();
        for (claim, outcome) in claims.iter().zip(batch(a.as_ref(), &claims).await) {
            tokens.entry(claim.job).or_default().push(won(outcome));
        }
        for (job, tokens) in &tokens {
            assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{job}'s tokens follow its triggers: {tokens:?}");
        }
        let again = batch(b.as_ref(), &claims).await;
        assert!(again.iter().all(|o| *o == ClaimOutcome::Lost), "batch of {size}: every trigger stays taken");
        let single = b.claim(&claims[size / 2]).await.expect("claim");
        assert_eq!(single, ClaimOutcome::Lost, "a single claim finds the batch's claim");
        let (job, last) = (&triggers[size - 1].0, triggers[size - 1].1);
        let next = last + SignedDuration::from_secs(3_600);
        let key = trigger_key(job, ScheduleKind::Recurring, next);
        let token = won(b.claim(&claim(job, &key, next, MINUTE)).await.expect("claim"));
        assert!(token > *tokens[job.as_str()].last().expect("a token"), "tokens grow after the batch too");
    }
}

/// A batch of which another replica already won every third trigger: those are lost,
/// every other is won; a third replica's batch then loses all of them.
pub async fn a_batch_of_which_another_replica_won_some(factory: &impl CoordinatorFactory) {
    let ns = namespace("batch_partly_won");
    let (a, b, c) =
        (factory.coordinator(&ns).await, factory.coordinator(&ns).await, factory.coordinator(&ns).await);
    let triggers = triggers("partly", 8, 64);
    let claims = claims(&triggers, MINUTE);
    for claim in claims.iter().step_by(3) {
        won(b.claim(claim).await.expect("claim"));
    }
    for (k, outcome) in batch(a.as_ref(), &claims).await.into_iter().enumerate() {
        match k % 3 {
            0 => assert_eq!(outcome, ClaimOutcome::Lost, "{} was b's", claims[k].key),
            _ => {
                won(outcome);
            }
        }
    }
    assert!(batch(c.as_ref(), &claims).await.iter().all(|o| *o == ClaimOutcome::Lost));
}

/// Every claim rule holds per trigger within one batch: triggers another replica ran
/// whose claims expired are refused by the mark; a claim made an hour late holds for a
/// slot; a claim holds for its run budget, and without one expires and is then refused
/// by the mark; a job's triggers caught up in one batch get growing tokens; a one-shot
/// holds; a young trigger behind the mark is decided by its claim.
pub async fn every_claim_rule_holds_within_a_batch(factory: &impl CoordinatorFactory) {
    let ns = namespace("batch_rules");
    let (a, b) = (factory.coordinator(&ns).await, factory.coordinator(&ns).await);
    let kind = ScheduleKind::Recurring;
    let base = real_now() - SignedDuration::from_mins(10);
    let at = |s: i64| base + SignedDuration::from_secs(s);
    // b ran five triggers of `ran` and the first of `down`; a claimed `skew`'s next one.
    let ran: Vec<(Timestamp, String)> = (0..5).map(|s| (at(s), trigger_key("ran", kind, at(s)))).collect();
    for (t, key) in &ran {
        won(b.claim(&claim("ran", key, *t, brief(None))).await.expect("claim"));
    }
    won(b.claim(&claim("down", &trigger_key("down", kind, at(0)), at(0), MINUTE)).await.expect("claim"));
    let next = real_now() + SignedDuration::from_secs(1);
    won(a.claim(&claim("skew", &trigger_key("skew", kind, next), next, MINUTE)).await.expect("claim"));
    tokio::time::sleep(EXPIRED).await;

    let (hour_ago, recent, young) =
        (real_now() - SignedDuration::from_hours(1), real_now() - SignedDuration::from_secs(10), real_now());
    let budget = brief(Some(Duration::from_secs(3_600)));
    let down: Vec<(Timestamp, String)> =
        (1..=10).map(|s| (at(s), trigger_key("down", kind, at(s)))).collect();
    let (late, long, short) = (
        trigger_key("late", kind, hour_ago),
        trigger_key("long", kind, recent),
        trigger_key("short", kind, recent),
    );
    let once = trigger_key("once", ScheduleKind::At(young), young);
    let skew = trigger_key("skew", kind, young);
    let mut first: Vec<Claim<'_>> = ran.iter().map(|(t, key)| claim("ran", key, *t, brief(None))).collect();
    first.push(claim("late", &late, hour_ago, MINUTE));
    first.push(claim("long", &long, recent, budget));
    first.push(claim("short", &short, recent, brief(None)));
    first.extend(down.iter().map(|(t, key)| claim("down", key, *t, MINUTE)));
    first.push(claim("once", &once, young, None));
    first.push(claim("skew", &skew, young, MINUTE));
    let outcomes = batch(a.as_ref(), &first).await;
    for (claim, outcome) in first.iter().zip(&outcomes).take(5) {
        assert_eq!(*outcome, ClaimOutcome::BehindMark, "{} ran on b and its claim expired", claim.key);
    }
    let tokens: Vec<u64> = outcomes[5..].iter().map(|o| won(*o)).collect();
    let down_tokens = &tokens[3..13];
    assert!(down_tokens.windows(2).all(|w| w[0] < w[1]), "caught up in trigger order: {down_tokens:?}");

    tokio::time::sleep(EXPIRED).await;
    let again = batch(b.as_ref(), &first[5..first.len() - 1]).await;
    assert_eq!(again[0], ClaimOutcome::Lost, "a claim made an hour late holds for a slot from the claim");
    assert_eq!(again[1], ClaimOutcome::Lost, "a claim holds for its run budget after its trigger");
    assert_eq!(again[2], ClaimOutcome::BehindMark, "without a budget it expired, and the mark refuses it");
    assert!(again[3..13].iter().all(|o| *o == ClaimOutcome::Lost), "b catching up finds a's claims");
    assert_eq!(again[13], ClaimOutcome::Lost, "a one-shot claim holds");
}
