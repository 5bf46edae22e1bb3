//! The [`Store`] conformance suite: state merge rules and definition round trips.

use std::collections::HashMap;

use jiff::Timestamp;
use slotcron::{
    DEFINITION_CHANGES_KEPT, DefinitionChange, JobDefinition, JobState, Misfire, Outcome, ScheduleSpec, Store,
};

/// Runs every case of this module, each on a fresh, empty store made by `make`.
pub async fn run<S: Store>(mut make: impl AsyncFnMut() -> S) {
    starts_empty(&make().await).await;
    states_round_trip(&make().await).await;
    state_merge_rules(&make().await).await;
    state_delete(&make().await).await;
    definitions_round_trip(&make().await).await;
    definitions_replace_and_delete(&make().await).await;
    definition_changes_are_kept(&make().await).await;
    definition_changes_are_bounded(&make().await).await;
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

/// A change asked of `job`: to `new`, at `at`, with a note.
fn change(job: &str, at: &str, new: Option<JobDefinition>) -> DefinitionChange {
    DefinitionChange {
        job: job.into(),
        at: ts(at),
        token: "full".into(),
        note: Some(format!("at {at}")),
        old: None,
        new,
    }
}

/// [`Store::change_definition`] creates, replaces and deletes a definition, and keeps each
/// change with the definition it replaced; deleting a job without one changes nothing.
/// The changes come back newest first, of one job or of all, a job deleted keeping its.
pub async fn definition_changes_are_kept(store: &dyn Store) {
    let first = full_definition("mail 'ünï'");
    let mut second = first.clone();
    second.payload = serde_json::json!({"to": "someone else"});
    let job = first.name.clone();
    let created = store.change_definition(change(&job, "2024-01-01T00:00:00Z", Some(first.clone()))).await;
    assert_eq!(created.unwrap(), Some(change(&job, "2024-01-01T00:00:00Z", Some(first.clone()))));
    let other = minimal_definition("other", ScheduleSpec::After { delay_ms: 1 });
    store.change_definition(change("other", "2024-01-01T00:00:30Z", Some(other.clone()))).await.unwrap();
    let replaced = store.change_definition(change(&job, "2024-01-01T00:01:00Z", Some(second.clone()))).await;
    let replaced = replaced.unwrap().expect("a replacement is a change");
    assert_eq!(replaced.old.as_ref(), Some(&first), "the replaced definition is kept as old");
    assert_eq!(sorted(store.load_definitions().await.unwrap()), [second.clone(), other]);
    let deleted = store.change_definition(change(&job, "2024-01-01T00:02:00Z", None)).await.unwrap();
    assert_eq!(deleted.expect("a deletion is a change").old, Some(second.clone()));
    assert_eq!(store.change_definition(change(&job, "2024-01-01T00:03:00Z", None)).await.unwrap(), None);
    assert_eq!(store.load_definitions().await.unwrap().len(), 1, "the job is deleted, the other kept");

    let of_job = store.definition_changes(Some(&job), 10).await.unwrap();
    let news: Vec<_> = of_job.iter().map(|c| (c.at.to_string(), c.old.clone(), c.new.clone())).collect();
    assert_eq!(
        news,
        [
            ("2024-01-01T00:02:00Z".into(), Some(second.clone()), None),
            ("2024-01-01T00:01:00Z".into(), Some(first.clone()), Some(second)),
            ("2024-01-01T00:00:00Z".into(), None, Some(first)),
        ],
        "newest first, with old and new; the deletion that changed nothing is not kept"
    );
    assert_eq!(of_job[0].note.as_deref(), Some("at 2024-01-01T00:02:00Z"));
    let all = store.definition_changes(None, 2).await.unwrap();
    let jobs: Vec<&str> = all.iter().map(|c| c.job.as_str()).collect();
    assert_eq!(jobs, [job.as_str(), job.as_str()], "the newest two of every job");
    assert_eq!(store.definition_changes(None, 10).await.unwrap().len(), 4);
    assert_eq!(store.definition_changes(Some("never"), 10).await.unwrap(), []);
}

/// A job keeps its newest [`DEFINITION_CHANGES_KEPT`] changes; another job's are not
/// counted against it.
pub async fn definition_changes_are_bounded(store: &dyn Store) {
    let tick =
        |n: u64| minimal_definition("tick", ScheduleSpec::Every { period_ms: 1_000 * (n + 1), offset_ms: 0 });
    store.change_definition(change("other", "2024-01-01T00:00:00Z", Some(tick(0)))).await.unwrap();
    let second = |n: usize| Timestamp::from_second(1_704_067_200 + n as i64).expect("an instant").to_string();
    for n in 0..DEFINITION_CHANGES_KEPT + 5 {
        store.change_definition(change("tick", &second(n), Some(tick(n as u64)))).await.unwrap();
    }
    let kept = store.definition_changes(Some("tick"), usize::MAX).await.unwrap();
    assert_eq!(kept.len(), DEFINITION_CHANGES_KEPT);
    assert_eq!(kept[0].at.to_string(), second(DEFINITION_CHANGES_KEPT + 4), "the newest first");
    assert_eq!(kept.last().map(|c| c.at.to_string()), Some(second(5)), "the oldest five removed");
    assert_eq!(store.definition_changes(Some("other"), 10).await.unwrap().len(), 1);
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
