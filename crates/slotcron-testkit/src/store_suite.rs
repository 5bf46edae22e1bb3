//! The [`Store`] conformance suite: state merge rules and definition round trips.

use std::collections::HashMap;

use jiff::Timestamp;
use slotcron::{JobDefinition, JobState, Misfire, Outcome, ScheduleSpec, Store};

/// Runs every case of this module, each on a fresh, empty store made by `make`.
pub async fn run<S: Store>(mut make: impl AsyncFnMut() -> S) {
    starts_empty(&make().await).await;
    states_round_trip(&make().await).await;
    state_merge_rules(&make().await).await;
    state_delete(&make().await).await;
    definitions_round_trip(&make().await).await;
    definitions_replace_and_delete(&make().await).await;
    fencing_tokens_grow_per_job(&make().await).await;
    pauses_and_idempotency_keys(&make().await).await;
}

fn ts(s: &str) -> Timestamp {
    s.parse().expect("a valid test instant")
}

/// A state as the engine saves it: its last success or failure is its trigger when its
/// outcome is one.
fn state(at: &str, outcome: Option<Outcome>, one_shot_done: bool) -> JobState {
    JobState::of(ts(at), outcome, one_shot_done)
}

/// A new store has no state and no definitions.
pub async fn starts_empty(store: &dyn Store) {
    assert_eq!(store.load_states().await.unwrap(), HashMap::new());
    assert_eq!(store.load_definitions().await.unwrap(), []);
    assert!(!store.delete_definition("nothing").await.unwrap(), "deleting a missing definition");
}

/// Every outcome (and none), both `one_shot_done` values, instants before and after the
/// epoch and awkward job names come back as saved.
pub async fn states_round_trip(store: &dyn Store) {
    let instants = [
        "2024-05-17T00:00:00.123456Z",
        "1969-12-31T23:59:59.999999Z",
        "2400-02-29T12:00:00Z",
        "2024-05-17T00:00:00Z",
    ];
    let outcomes = Outcome::ALL.into_iter().map(Some).chain([None]);
    let mut expected = HashMap::new();
    for (i, outcome) in outcomes.enumerate() {
        let job = format!("job {i} 'quoted' \"ünï\"");
        let state = state(instants[i % instants.len()], outcome, i % 2 == 0);
        store.save_state(&job, &state).await.unwrap();
        expected.insert(job, state);
    }
    assert_eq!(store.load_states().await.unwrap(), expected);
}

/// [`Store::save_state`]'s rules, as [`merge_job_state`](slotcron::merge_job_state) states them.
pub async fn state_merge_rules(store: &dyn Store) {
    let load = async |job: &str| store.load_states().await.unwrap().remove(job);
    store.save_state("a", &state("2024-01-01T00:01:00Z", None, false)).await.unwrap();
    store.save_state("b", &state("2024-01-01T00:05:00Z", Some(Outcome::Failed), false)).await.unwrap();

    // Same trigger with an outcome: the outcome is recorded.
    store.save_state("a", &state("2024-01-01T00:01:00Z", Some(Outcome::Succeeded), true)).await.unwrap();
    assert_eq!(load("a").await, Some(state("2024-01-01T00:01:00Z", Some(Outcome::Succeeded), true)));

    // Same trigger without an outcome (a run starting again): the outcome is kept.
    store.save_state("a", &state("2024-01-01T00:01:00Z", None, false)).await.unwrap();
    assert_eq!(load("a").await, Some(state("2024-01-01T00:01:00Z", Some(Outcome::Succeeded), true)));

    // Same trigger from a replica that lost its claim: the winner's outcome stands.
    store.save_state("a", &state("2024-01-01T00:01:00Z", Some(Outcome::SkippedLost), false)).await.unwrap();
    assert_eq!(load("a").await, Some(state("2024-01-01T00:01:00Z", Some(Outcome::Succeeded), true)));

    // An older trigger leaves the trigger and outcome; its failure is the last one.
    store.save_state("a", &state("2024-01-01T00:00:00Z", Some(Outcome::Failed), false)).await.unwrap();
    let kept = state("2024-01-01T00:01:00Z", Some(Outcome::Succeeded), true);
    let with_failure = JobState { last_failure: Some(ts("2024-01-01T00:00:00Z")), ..kept.clone() };
    assert_eq!(load("a").await, Some(with_failure.clone()));

    // A newer trigger replaces the state, but `one_shot_done` stays set, and so do the
    // last success and failure.
    store.save_state("a", &state("2024-01-01T00:02:00Z", None, false)).await.unwrap();
    let newer = JobState { one_shot_done: true, ..with_failure.clone() };
    let newer = JobState { last_trigger: ts("2024-01-01T00:02:00Z"), last_outcome: None, ..newer };
    assert_eq!(load("a").await, Some(newer.clone()));

    // Neither moves backwards, whatever the trigger of the state saved.
    let older_success = JobState { last_success: Some(ts("2023-12-31T00:00:00Z")), ..newer.clone() };
    store.save_state("a", &older_success).await.unwrap();
    assert_eq!(load("a").await, Some(newer.clone()));
    store.save_state("a", &state("2024-01-01T00:01:30Z", Some(Outcome::Succeeded), false)).await.unwrap();
    let success = JobState { last_success: Some(ts("2024-01-01T00:01:30Z")), ..newer };
    assert_eq!(load("a").await, Some(success), "a long run of an older trigger succeeded");

    // Other jobs are untouched.
    assert_eq!(load("b").await, Some(state("2024-01-01T00:05:00Z", Some(Outcome::Failed), false)));
    assert_eq!(store.load_states().await.unwrap().len(), 2);
}

/// [`Store::delete_state`] forgets one job's state, which then starts afresh: an older
/// trigger is accepted again.
pub async fn state_delete(store: &dyn Store) {
    store.save_state("gone", &state("2024-01-01T00:05:00Z", Some(Outcome::Succeeded), true)).await.unwrap();
    store.save_state("kept", &state("2024-01-01T00:05:00Z", Some(Outcome::Failed), false)).await.unwrap();
    assert!(store.delete_state("gone").await.unwrap());
    assert!(!store.delete_state("gone").await.unwrap(), "deleted twice");
    assert!(!store.delete_state("never saved").await.unwrap());
    let states = store.load_states().await.unwrap();
    assert_eq!(states.keys().collect::<Vec<_>>(), ["kept"]);
    store.save_state("gone", &state("2024-01-01T00:01:00Z", None, false)).await.unwrap();
    assert_eq!(
        store.load_states().await.unwrap().remove("gone"),
        Some(state("2024-01-01T00:01:00Z", None, false)),
        "a state saved after the delete starts afresh: older trigger, one_shot_done unset"
    );
}

fn full_definition(name: &str) -> JobDefinition {
    JobDefinition {
        name: name.into(),
        schedule: ScheduleSpec::Cron {
            expression: "0 9 * * MON-FRI".into(),
            timezone: Some("Europe/Paris".into()),
        },
        handler: "send".into(),
        payload: serde_json::json!({
            "to": ["ops@example.com", "ünï"],
            "retries": 3,
            "ratio": 0.25,
            "big": 12_345_678_901_234_567_u64,
            "nested": {"ok": true, "none": null},
        }),
        timeout_ms: Some(90_000),
        run_on_start: false,
        misfire: Some(Misfire::RunAll { cap: 3 }),
        grace_ms: Some(30_000),
        other_fields: serde_json::Map::new(),
    }
}

/// A definition with every optional field absent.
fn minimal_definition(name: &str, schedule: ScheduleSpec) -> JobDefinition {
    JobDefinition::new(name, schedule, "noop")
}

fn sorted(mut definitions: Vec<JobDefinition>) -> Vec<JobDefinition> {
    definitions.sort_by(|a, b| a.name.cmp(&b.name));
    definitions
}

/// Definitions of every schedule kind, with every field set or absent, come back equal.
pub async fn definitions_round_trip(store: &dyn Store) {
    let mut every = minimal_definition("every", ScheduleSpec::Every { period_ms: 2_000, offset_ms: -500 });
    every.run_on_start = true;
    let definitions = vec![
        full_definition("cron 'quoted' \"ünï\""),
        every,
        minimal_definition("at", ScheduleSpec::At { instant: "2030-01-01T00:00:00Z".into() }),
        minimal_definition("after", ScheduleSpec::After { delay_ms: 5_000 }),
    ];
    for definition in &definitions {
        store.save_definition(definition).await.unwrap();
    }
    assert_eq!(sorted(store.load_definitions().await.unwrap()), sorted(definitions));
}

/// Saving a definition under an existing name replaces it; deleting removes only it.
pub async fn definitions_replace_and_delete(store: &dyn Store) {
    let every = minimal_definition("tick", ScheduleSpec::Every { period_ms: 1_000, offset_ms: 0 });
    store.save_definition(&full_definition("mail")).await.unwrap();
    store.save_definition(&every).await.unwrap();
    let mut replaced = full_definition("mail");
    replaced.payload = serde_json::json!({"to": "someone else"});
    replaced.misfire = Some(Misfire::Skip);
    store.save_definition(&replaced).await.unwrap();
    assert_eq!(sorted(store.load_definitions().await.unwrap()), [replaced, every.clone()]);

    assert!(store.delete_definition("mail").await.unwrap());
    assert!(!store.delete_definition("mail").await.unwrap(), "deleted twice");
    assert_eq!(store.load_definitions().await.unwrap(), [every]);
}

/// Fencing tokens start at 1 and grow by one per job, each job on its own, and calls at
/// once get distinct tokens.
pub async fn fencing_tokens_grow_per_job(store: &dyn Store) {
    let mut tokens = Vec::new();
    for _ in 0..3 {
        tokens.push(store.next_fencing_token("a").await.unwrap());
    }
    assert_eq!(tokens, [1, 2, 3]);
    assert_eq!(store.next_fencing_token("b 'quoted'").await.unwrap(), 1, "each job counts its own");
    let at_once = futures_util::future::join_all((0..8).map(|_| store.next_fencing_token("a"))).await;
    let mut at_once: Vec<u64> = at_once.into_iter().map(|t| t.unwrap()).collect();
    at_once.sort();
    assert_eq!(at_once, (4..=11).collect::<Vec<u64>>(), "distinct tokens for calls at once");
}

/// The store's controls keep pauses (the first instant of a repeated pause) until a
/// resume, and remember an idempotency key once per job.
pub async fn pauses_and_idempotency_keys(store: &dyn Store) {
    let controls = store.controls().expect("a store keeps pauses");
    assert!(controls.paused_jobs().await.unwrap().is_empty());
    let (first, second) = (ts("2024-05-17T00:00:00Z"), ts("2024-05-17T00:05:00Z"));
    assert_eq!(controls.set_paused("a", Some(first)).await.unwrap(), None);
    assert_eq!(controls.set_paused("a", Some(second)).await.unwrap(), Some(first));
    assert_eq!(controls.paused("a").await.unwrap(), Some(first));
    assert_eq!(controls.paused("b").await.unwrap(), None);
    assert_eq!(controls.paused_jobs().await.unwrap(), HashMap::from([("a".to_owned(), first)]));
    assert_eq!(controls.set_paused("a", None).await.unwrap(), Some(first));
    assert_eq!(controls.set_paused("a", None).await.unwrap(), None);
    assert!(controls.paused_jobs().await.unwrap().is_empty());
    let day = std::time::Duration::from_secs(86_400);
    assert_eq!(controls.remember_request("a", "k", first, day).await.unwrap(), None);
    assert_eq!(controls.remember_request("a", "k", second, day).await.unwrap(), Some(first));
    assert_eq!(controls.remember_request("b", "k", second, day).await.unwrap(), None);
}
