//! The suite's case for streaks of failures (the controls'
//! [`Controls::count_failure`](slotcron::Controls::count_failure),
//! `pause_after_failures`), through two coordinators of one namespace. On controls that
//! keep no streaks it checks nothing.

use jiff::Timestamp;
use slotcron::FailureStreak;

use crate::CoordinatorFactory;
use crate::suite::namespace;

/// Failures counted through either coordinator add to one streak per job; the one that
/// reaches the limit pauses the job, atomically, with its reason kept beside the pause
/// (listed by either), and later ones pause nothing more; a reset ends the streak; a
/// resume ends it and drops the reason. Other jobs' streaks are apart.
pub async fn failure_streaks_contract(factory: &impl CoordinatorFactory) {
    let ns = namespace("failure_streaks");
    let (a, b) = (factory.coordinator(&ns).await, factory.coordinator(&ns).await);
    let (ca, cb) = (a.controls().expect("controls"), b.controls().expect("controls"));
    if !ca.counts_failures() {
        return;
    }
    let at = Timestamp::from_second(Timestamp::now().as_second()).expect("a valid instant");
    let streak = |failures, paused| FailureStreak { failures, paused };
    assert_eq!(ca.count_failure("job", 3, at, "why").await.expect("count"), streak(1, false));
    assert_eq!(cb.count_failure("job", 3, at, "why").await.expect("count"), streak(2, false));
    cb.reset_failures("job").await.expect("reset");
    assert_eq!(ca.count_failure("job", 3, at, "why").await.expect("count"), streak(1, false));
    assert_eq!(cb.count_failure("other", 1, at, "other's").await.expect("count"), streak(1, true));
    assert_eq!(ca.count_failure("job", 3, at, "why").await.expect("count"), streak(2, false));
    assert!(cb.paused("job").await.expect("paused").is_none());
    assert_eq!(cb.count_failure("job", 3, at, "why").await.expect("count"), streak(3, true));
    assert_eq!(
        ca.count_failure("job", 3, at, "later").await.expect("count"),
        streak(4, false),
        "paused once"
    );
    assert_eq!(ca.paused("job").await.expect("paused"), Some(at));
    let reasons = cb.pause_reasons().await.expect("reasons");
    assert_eq!(reasons.get("job").map(String::as_str), Some("why"), "{reasons:?}");
    assert_eq!(reasons.get("other").map(String::as_str), Some("other's"), "{reasons:?}");

    assert_eq!(cb.set_paused("job", None).await.expect("resume"), Some(at));
    let reasons = ca.pause_reasons().await.expect("reasons");
    assert!(!reasons.contains_key("job"), "the reason goes with the pause: {reasons:?}");
    assert_eq!(ca.count_failure("job", 3, at, "why").await.expect("count"), streak(1, false), "a new streak");
    // A pause made by hand keeps no reason, and a streak reaching its limit keeps it as is.
    let by_hand = Timestamp::from_second(at.as_second() - 60).expect("a valid instant");
    assert_eq!(ca.set_paused("manual", Some(by_hand)).await.expect("pause"), None);
    assert_eq!(cb.count_failure("manual", 1, at, "why").await.expect("count"), streak(1, false));
    assert_eq!(cb.paused("manual").await.expect("paused"), Some(by_hand));
    assert!(!ca.pause_reasons().await.expect("reasons").contains_key("manual"));
}
