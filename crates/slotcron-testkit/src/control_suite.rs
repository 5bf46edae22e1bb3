//! The pause and request contract of a coordinator ([`Coordinator::controls`](slotcron::Coordinator::controls),
//! [`Coordinator::claim_request`](slotcron::Coordinator::claim_request)), shared by every backend's tests.

use std::time::Duration;

use jiff::Timestamp;
use slotcron::{Cause, Claim, ClaimOutcome, Hold, RequestClaim, ScheduleKind, request_key, trigger_key};

use crate::CoordinatorFactory;
use crate::suite::namespace;

fn ts(s: &str) -> Timestamp {
    s.parse().expect("a valid instant")
}

/// A pause made through one coordinator refuses the job's claims through another of
/// the same namespace (and only that job's), one by one and in a batch (each paused
/// claim of a batch refused, the others' decided as usual), survives a new connection,
/// and is listed; a resume lets claims win again. Request claims ignore the pause, win
/// once per key, and take fencing tokens from the job's counter, so that tokens grow
/// per job across trigger claims, batches and request claims; an idempotency key is
/// remembered once, atomically.
pub async fn pauses_and_requests(factory: &impl CoordinatorFactory) {
    let ns = namespace("controls");
    let (a, b) = (factory.coordinator(&ns).await, factory.coordinator(&ns).await);
    let (ca, cb) = (a.controls().expect("controls"), b.controls().expect("controls"));
    let kind = ScheduleKind::Recurring;
    let hold = Some(Hold { slot: Duration::from_secs(60), run_budget: None, slack: Duration::ZERO });
    let now = Timestamp::from_second(Timestamp::now().as_second()).expect("a valid instant");
    let claim = |job, trigger, key| Claim { job, trigger, key, instance: "suite", hold };

    let paused_at = ts("2024-05-17T00:00:00Z");
    assert_eq!(ca.set_paused("job", Some(paused_at)).await.expect("pause"), None);
    let later = ts("2024-05-17T01:00:00Z");
    assert_eq!(ca.set_paused("job", Some(later)).await.expect("pause"), Some(paused_at), "the first instant");
    assert_eq!(cb.paused("job").await.expect("paused"), Some(paused_at));
    assert_eq!(cb.paused("other").await.expect("paused"), None);
    let k1 = trigger_key("job", kind, now);
    assert_eq!(b.claim(&claim("job", now, &k1)).await.expect("claim"), ClaimOutcome::Paused);
    let other = trigger_key("other", kind, now);
    assert!(matches!(b.claim(&claim("other", now, &other)).await.expect("claim"), ClaimOutcome::Won { .. }));
    let next = now + Duration::from_secs(60);
    let (k2, other_next) = (trigger_key("job", kind, next), trigger_key("other", kind, next));
    let batch = [claim("job", now, &k1), claim("other", next, &other_next), claim("job", next, &k2)];
    let outcomes: Vec<ClaimOutcome> =
        b.claim_batch(&batch).await.into_iter().map(|o| o.expect("batch claim")).collect();
    assert_eq!(outcomes[0], ClaimOutcome::Paused, "a paused job's claim in a batch");
    assert!(
        matches!(outcomes[1], ClaimOutcome::Won { .. }),
        "another job's claim in the batch: {outcomes:?}"
    );
    assert_eq!(outcomes[2], ClaimOutcome::Paused, "each paused claim of the batch");
    let fresh = factory.coordinator(&ns).await;
    let listed = fresh.controls().expect("controls").paused_jobs().await.expect("paused jobs");
    assert_eq!(listed.into_iter().collect::<Vec<_>>(), [("job".to_owned(), paused_at)]);

    let manual = request_key("job", kind, Cause::Manual, now);
    let request = RequestClaim {
        job: "job",
        trigger: now,
        key: &manual,
        instance: "suite",
        ttl: Duration::from_secs(60),
    };
    let first = match a.claim_request(&request).await.expect("request claim") {
        ClaimOutcome::Won { fencing_token } => fencing_token,
        other => panic!("a request claim of a paused job wins: {other:?}"),
    };
    assert_eq!(b.claim_request(&request).await.expect("request claim"), ClaimOutcome::Lost);

    assert_eq!(cb.set_paused("job", None).await.expect("resume"), Some(paused_at));
    assert_eq!(ca.paused("job").await.expect("paused"), None);
    assert!(ca.paused_jobs().await.expect("paused jobs").is_empty());
    let resumed = match a.claim(&claim("job", now, &k1)).await.expect("claim") {
        ClaimOutcome::Won { fencing_token } if fencing_token > first => fencing_token,
        other => panic!("a resumed job's claim wins with a greater token than {first}: {other:?}"),
    };
    let backfill = request_key("job", kind, Cause::Backfill, now);
    let request = RequestClaim { key: &backfill, ..request };
    let requested = match b.claim_request(&request).await.expect("request claim") {
        ClaimOutcome::Won { fencing_token } if fencing_token > resumed => fencing_token,
        other => panic!("a request claim after a claim wins with a greater token than {resumed}: {other:?}"),
    };
    match b.claim_batch(&[claim("job", next, &k2)]).await.pop().expect("one answer").expect("batch claim") {
        ClaimOutcome::Won { fencing_token } => assert!(fencing_token > requested, "tokens grow per job"),
        other => panic!("a resumed job's claim in a batch wins: {other:?}"),
    }

    let day = Duration::from_secs(86_400);
    assert_eq!(ca.remember_request("job", "deploy-1", now, day).await.expect("remember"), None);
    let again = now + Duration::from_secs(5);
    assert_eq!(cb.remember_request("job", "deploy-1", again, day).await.expect("remember"), Some(now));
    assert_eq!(cb.remember_request("other", "deploy-1", again, day).await.expect("remember"), None);
    let racers = futures_util::future::join_all((0..4).map(|_| factory.coordinator(&ns))).await;
    let answers =
        futures_util::future::join_all(racers.iter().map(|c| async {
            c.controls().expect("controls").remember_request("job", "race", now, day).await
        }))
        .await;
    let firsts = answers.into_iter().filter(|a| a.as_ref().expect("remember").is_none()).count();
    assert_eq!(firsts, 1, "of concurrent calls with one key, one is first");
}
