//! The [`Ledger`] conformance suite: record round trips (names of other releases
//! included), `running` records completed by updates, batches, query filters, order and
//! limit ([`run`], for every ledger), retention and appends and batches written twice
//! ([`run_retention`], for durable ledgers), and the run output kept beside the records:
//! each attempt's ([`run_attempts`], for every output store) and pruned with its record
//! ([`run_output`], for durable output stores).

use std::sync::Arc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use crate::fixtures::run_output as output_of;
use slotcron::{
    AttemptEnd, AttemptOutput, Cause, Ledger, LedgerQuery, LedgerWrite, MAX_OUTPUT_BYTES, Outcome,
    OutputStore, OutputStream, Retention, RunProcess, RunRecord, UnknownName,
};

/// Runs the query cases, each on a fresh, empty ledger made by `make`.
pub async fn run<L: Ledger>(mut make: impl AsyncFnMut() -> L) {
    starts_empty(&make().await).await;
    records_round_trip(&make().await).await;
    names_of_other_releases_read_back(&make().await).await;
    an_update_completes_the_running_record(&make().await).await;
    a_real_end_keeps_that_the_run_was_presumed_lost(&make().await).await;
    a_batch_is_written_in_order(&make().await).await;
    a_batch_is_its_writes_one_after_the_other(&make().await).await;
    newest_trigger_first_with_a_limit(&make().await).await;
    filters(&make().await).await;
}

/// Runs the retention cases, [`an_append_written_twice_is_stored_once`] and
/// [`a_batch_written_twice_is_stored_once`]. `make` returns a fresh, empty ledger with the
/// given retention that prunes on every append.
pub async fn run_retention<L: Ledger>(mut make: impl AsyncFnMut(Retention) -> L) {
    keeps_the_newest_records_per_job(&make(count(3)).await).await;
    drops_records_older_than_the_max_age(&make(age(Duration::from_secs(3600))).await).await;
    keeps_everything_without_limits(&make(Retention { max_age: None, max_records_per_job: None }).await)
        .await;
    an_append_written_twice_is_stored_once(
        &make(Retention { max_age: None, max_records_per_job: None }).await,
    )
    .await;
    a_batch_written_twice_is_stored_once(&make(Retention { max_age: None, max_records_per_job: None }).await)
        .await;
    a_batch_prunes_as_its_appends_do(&make(count(3)).await).await;
    keeps_each_jobs_last_success_and_failure(&make(count(2)).await).await;
    keeps_each_jobs_last_success_and_failure_however_old(&make(age(Duration::from_secs(3600))).await).await;
}

/// An append written again (its reply was lost) adds nothing: a record of the same run
/// is stored. A record of another start is another run.
pub async fn an_append_written_twice_is_stored_once(ledger: &dyn Ledger) {
    let skipped = record("tick", 0, Outcome::SkippedBackendUnavailable);
    let later = started_at(skipped.clone(), 5);
    append_all(ledger, &[skipped.clone(), skipped.clone(), later.clone()]).await;
    assert_eq!(ledger.query(&query(None)).await.unwrap(), [later, skipped]);
}

/// Runs the run-output cases: [`run_attempts`], and the output of a run pruned with its
/// record. `make` returns a fresh, empty ledger keeping one record per job and pruning on
/// every append, and an output store in the same database.
pub async fn run_output<L: Ledger, O: OutputStore>(mut make: impl AsyncFnMut(Retention) -> (L, O)) {
    let (ledger, outputs) = make(count(1)).await;
    output_goes_with_its_record(&ledger, &outputs).await;
    run_attempts(async || make(count(1)).await.1).await;
}

/// Runs the attempt cases, each on a fresh, empty output store made by `make`: every
/// output store, the memory one included.
pub async fn run_attempts<O: OutputStore>(mut make: impl AsyncFnMut() -> O) {
    outputs_round_trip_by_instance(&make().await).await;
    every_attempt_is_kept_in_full_and_read_back_by_number(&make().await).await;
    an_attempt_saved_again_replaces_only_itself(&make().await).await;
}

/// Attempt `attempt` of a run that wrote `out` then `err`, ended as `end`, started `attempt`
/// seconds after [`T0`] (and some microseconds).
fn attempt(attempt: u32, out: &[u8], err: &[u8], end: AttemptEnd) -> AttemptOutput {
    let started = at(i64::from(attempt)) + SignedDuration::from_micros(123);
    crate::fixtures::attempt_output(attempt, started, out, err, end)
}

/// The output of a trigger reads back one per instance, by instance; none for another
/// trigger or job.
pub async fn outputs_round_trip_by_instance(outputs: &dyn OutputStore) {
    assert!(outputs.output("pair", at(0)).await.unwrap().is_empty(), "nothing kept yet");
    let elsewhere =
        output_of("pair", at(0), "replica-2", vec![attempt(1, b"elsewhere\n", b"", AttemptEnd::Exited(0))]);
    let here = output_of(
        "pair",
        at(0),
        "replica-1",
        vec![attempt(1, b"line\n\xff bytes\n", b"", AttemptEnd::Exited(0))],
    );
    outputs.save_output(&elsewhere).await.unwrap();
    outputs.save_output(&here).await.unwrap();
    assert_eq!(outputs.output("pair", at(0)).await.unwrap(), [here, elsewhere]);
    assert!(outputs.output("pair", at(1)).await.unwrap().is_empty(), "another trigger");
    assert!(outputs.output("other", at(0)).await.unwrap().is_empty(), "another job");
}

/// Each attempt of a run is kept, saved as it ends, with its start, duration, end (an
/// exit status, a signal, an error) and both streams in the order written; each keeps up
/// to [`MAX_OUTPUT_BYTES`] of its own, so three full attempts are all read back whole.
pub async fn every_attempt_is_kept_in_full_and_read_back_by_number(outputs: &dyn OutputStore) {
    let full = |n: u32, end| {
        let mut kept = attempt(n, format!("out{n}\n").as_bytes(), &vec![b'e'; 2 * MAX_OUTPUT_BYTES], end);
        kept.push(OutputStream::Stdout, b"exit\n");
        kept.bound();
        kept
    };
    let attempts = [
        full(1, AttemptEnd::Exited(3)),
        full(2, AttemptEnd::Signalled("SIGTERM".into())),
        attempt(3, b"", b"", AttemptEnd::Failed("cannot start /bin/sh: no such file".into())),
    ];
    for kept in [&attempts[1], &attempts[0], &attempts[2]] {
        outputs.save_output(&output_of("retried", at(0), "replica-1", vec![kept.clone()])).await.unwrap();
    }
    let found = outputs.output("retried", at(0)).await.unwrap();
    assert_eq!(found, [output_of("retried", at(0), "replica-1", attempts.to_vec())]);
    let first = &found[0].attempts[0];
    assert!(first.truncated && first.len() == MAX_OUTPUT_BYTES, "each attempt keeps its own last 64 KiB");
    let streams: Vec<_> = first.chunks.iter().map(|c| c.stream).collect();
    assert_eq!(streams, [OutputStream::Stderr, OutputStream::Stdout], "in the order written");
}

/// An attempt saved again (its number kept before) replaces that attempt only.
pub async fn an_attempt_saved_again_replaces_only_itself(outputs: &dyn OutputStore) {
    let first = attempt(1, b"first\n", b"", AttemptEnd::Exited(1));
    outputs.save_output(&output_of("job", at(0), "replica-1", vec![first.clone()])).await.unwrap();
    outputs
        .save_output(&output_of(
            "job",
            at(0),
            "replica-1",
            vec![attempt(2, b"draft", b"", AttemptEnd::Unknown)],
        ))
        .await
        .unwrap();
    let second = attempt(2, b"second\n", b"oops\n", AttemptEnd::Exited(0));
    outputs.save_output(&output_of("job", at(0), "replica-1", vec![second.clone()])).await.unwrap();
    assert_eq!(
        outputs.output("job", at(0)).await.unwrap(),
        [output_of("job", at(0), "replica-1", vec![first, second])]
    );
}

/// Keeping one record per job: appending the next record prunes the first, and the
/// output of each of its attempts.
async fn output_goes_with_its_record(ledger: &dyn Ledger, outputs: &dyn OutputStore) {
    // A run that succeeded at its second attempt (a last failure would be kept).
    let first = record("job", 0, Outcome::Succeeded);
    let attempts = vec![
        attempt(1, b"first\n", b"", AttemptEnd::Exited(1)),
        attempt(2, b"again\n", b"", AttemptEnd::Exited(0)),
    ];
    outputs.save_output(&output_of("job", first.trigger, "replica-1", attempts)).await.unwrap();
    ledger.append(&first).await.unwrap();
    let second = record("job", 60, Outcome::Succeeded);
    let kept = output_of(
        "job",
        second.trigger,
        "replica-1",
        vec![attempt(1, b"second\n", b"", AttemptEnd::Exited(0))],
    );
    outputs.save_output(&kept).await.unwrap();
    ledger.append(&second).await.unwrap();
    assert!(outputs.output("job", first.trigger).await.unwrap().is_empty(), "pruned with its record");
    assert_eq!(outputs.output("job", second.trigger).await.unwrap(), [kept]);
}

fn count(n: u64) -> Retention {
    Retention { max_age: None, max_records_per_job: Some(n) }
}

fn age(max_age: Duration) -> Retention {
    Retention { max_age: Some(max_age), max_records_per_job: None }
}

const T0: &str = "2024-05-17T00:00:00Z";

fn at(seconds: i64) -> Timestamp {
    T0.parse::<Timestamp>().expect("a valid instant") + SignedDuration::from_secs(seconds)
}

/// A record of `job` for the trigger `seconds` after [`T0`], started one second later.
fn record(job: &str, seconds: i64, outcome: Outcome) -> RunRecord {
    RunRecord {
        job: Arc::from(job),
        trigger: at(seconds),
        instance: Arc::from("replica-1"),
        cause: Cause::Scheduled,
        attempts: u32::from(outcome.ran()),
        outcome,
        fencing_token: outcome.ran().then_some(seconds.unsigned_abs() + 1),
        started: at(seconds + 1),
        duration: Duration::from_millis(250),
        error: (outcome == Outcome::Failed).then(|| "exit status 1".to_owned()),
        process: None,
    }
}

async fn append_all(ledger: &dyn Ledger, records: &[RunRecord]) {
    for record in records {
        ledger.append(record).await.unwrap();
    }
}

fn query(job: Option<&str>) -> LedgerQuery {
    LedgerQuery { job: job.map(str::to_owned), limit: usize::MAX, ..LedgerQuery::default() }
}

fn triggers(records: &[RunRecord]) -> Vec<i64> {
    records.iter().map(|r| r.trigger.duration_since(at(0)).as_secs()).collect()
}

/// A new ledger has no records.
pub async fn starts_empty(ledger: &dyn Ledger) {
    assert_eq!(ledger.query(&query(None)).await.unwrap(), []);
}

/// Every field of a record comes back as appended: each outcome and cause, attempts up
/// to `u32::MAX`, with and without a fencing token (up to `u64::MAX`), an error and a
/// process (pid and start time up to their maximum), microsecond instants and durations.
pub async fn records_round_trip(ledger: &dyn Ledger) {
    let mut appended = Vec::new();
    for (i, outcome) in Outcome::ALL.into_iter().enumerate() {
        let i = i as i64;
        appended.push(RunRecord {
            job: Arc::from("report 'quoted' \"ünï\""),
            trigger: at(i * 60) + SignedDuration::from_micros(123_456),
            instance: Arc::from(format!("host-{i}:4242").as_str()),
            cause: Cause::ALL[i as usize % Cause::ALL.len()],
            attempts: if i == 3 { u32::MAX } else { i as u32 },
            outcome,
            fencing_token: (i % 2 == 0).then_some(if i == 2 { u64::MAX } else { i as u64 * 1_000_000_007 }),
            started: at(i * 60 + 1) + SignedDuration::from_micros(654_321),
            duration: Duration::from_micros(i as u64 * 1_500_001),
            error: (i % 3 != 0).then(|| format!("error {i}: ünï 'quoted'\nsecond line")),
            process: (i % 2 == 1).then(|| RunProcess {
                host: Arc::from(format!("host-{i}").as_str()),
                pid: if i == 1 { u32::MAX } else { 4242 + i as u32 },
                start_time: if i == 1 { u64::MAX } else { 1_234_567 * i as u64 },
            }),
        });
    }
    append_all(ledger, &appended).await;
    appended.reverse();
    assert_eq!(ledger.query(&query(None)).await.unwrap(), appended);
}

/// An outcome and a cause that a newer release wrote read back as written
/// ([`Outcome::Other`], [`Cause::Other`]), never failing the read.
pub async fn names_of_other_releases_read_back(ledger: &dyn Ledger) {
    let mut newer = record("tick", 0, Outcome::Other(UnknownName::new("skipped-quarantined")));
    newer.cause = Cause::Other(UnknownName::new("replay"));
    ledger.append(&newer).await.unwrap();
    let read = ledger.query(&query(None)).await.unwrap();
    assert_eq!(read, [newer]);
    assert_eq!((read[0].outcome.as_str(), read[0].cause.as_str()), ("skipped-quarantined", "replay"));
}

/// [`Ledger::update`] replaces the record of the same run (job, trigger, instance and
/// start) — not another instance's, not another start's — written twice it leaves one
/// record, and it appends when there is none.
pub async fn an_update_completes_the_running_record(ledger: &dyn Ledger) {
    let running = record("tick", 0, Outcome::Running);
    let mut other_replica = running.clone();
    other_replica.instance = Arc::from("replica-2");
    let finished_before = record("tick", 10, Outcome::Failed);
    append_all(ledger, &[running.clone(), other_replica.clone(), finished_before.clone()]).await;

    let mut with_process = running.clone();
    with_process.process = Some(RunProcess { host: Arc::from("host-1"), pid: 4242, start_time: 99 });
    ledger.update(&with_process).await.unwrap();
    let mut done = with_process.clone();
    done.outcome = Outcome::Succeeded;
    done.duration = Duration::from_secs(3);
    ledger.update(&done).await.unwrap();
    ledger.update(&done).await.unwrap();
    // Another run of trigger 10 (a later start): appended beside the failed one.
    let again = started_at(record("tick", 10, Outcome::Succeeded), 12);
    ledger.update(&again).await.unwrap();

    let mut read = ledger.query(&query(None)).await.unwrap();
    read.sort_by_key(|r| (r.trigger, r.instance.clone(), r.outcome.as_str()));
    assert_eq!(read, [done, other_replica, finished_before, again]);
}

/// A run recorded `interrupted` by a live member while its daemon was cut off, then
/// ended for real by its daemon: one record, the real end, whose error keeps both
/// ([`ended_after_presumed_lost`](slotcron::ended_after_presumed_lost)); the same end written
/// again leaves it as it is.
pub async fn a_real_end_keeps_that_the_run_was_presumed_lost(ledger: &dyn Ledger) {
    let running = record("tick", 0, Outcome::Running);
    append_all(ledger, std::slice::from_ref(&running)).await;
    let mut interrupted = running.clone();
    interrupted.outcome = Outcome::Interrupted;
    interrupted.error = Some("its daemon left the membership; recorded by b".into());
    ledger.update(&interrupted).await.unwrap();
    let mut ended = running.clone();
    ended.outcome = Outcome::Failed;
    ended.error = Some("exit status 3".into());
    ledger.update(&ended).await.unwrap();
    ledger.update(&ended).await.unwrap();
    let read = ledger.query(&query(None)).await.unwrap();
    assert_eq!(read.len(), 1, "{read:?}");
    assert_eq!(read[0].outcome, Outcome::Failed);
    let expected = "exit status 3; presumed lost meanwhile: its daemon left the membership; recorded by b";
    assert_eq!(read[0].error.as_deref(), Some(expected));
}

/// [`Ledger::write_batch`] writes in order: a run's append and its update in one batch
/// leave one completed record.
pub async fn a_batch_is_written_in_order(ledger: &dyn Ledger) {
    let running = record("tick", 0, Outcome::Running);
    let mut done = running.clone();
    done.outcome = Outcome::Succeeded;
    let skipped = record("tick", 10, Outcome::SkippedLost);
    let writes = [
        LedgerWrite::Append(running),
        LedgerWrite::Append(skipped.clone()),
        LedgerWrite::Update(done.clone()),
    ];
    ledger.write_batch(&writes).await.unwrap();
    assert_eq!(ledger.query(&query(None)).await.unwrap(), [skipped, done]);
}

/// [`Ledger::write_batch`] leaves what its writes one after the other leave: updates of
/// runs stored before it, of runs it appends (each update the next, the last one kept)
/// and of runs with no record (appended), beside appends of other runs, other instances'
/// and other starts' records untouched.
pub async fn a_batch_is_its_writes_one_after_the_other(ledger: &dyn Ledger) {
    let stored = record("tick", 0, Outcome::Running);
    let mut other_replica = stored.clone();
    other_replica.instance = Arc::from("replica-2");
    append_all(ledger, &[stored.clone(), other_replica.clone()]).await;
    let ended = |mut record: RunRecord, outcome, seconds| {
        record.outcome = outcome;
        record.duration = Duration::from_secs(seconds);
        record
    };
    let running = record("tick", 10, Outcome::Running);
    let mut with_process = running.clone();
    with_process.process = Some(RunProcess { host: Arc::from("host-1"), pid: 4242, start_time: 99 });
    let unrecorded = record("report", 10, Outcome::Failed);
    let another_start = started_at(record("tick", 10, Outcome::SkippedLost), 15);
    let writes = [
        LedgerWrite::Append(running.clone()),
        LedgerWrite::Update(with_process.clone()),
        LedgerWrite::Update(ended(stored.clone(), Outcome::Failed, 1)),
        LedgerWrite::Append(another_start.clone()),
        LedgerWrite::Update(unrecorded.clone()),
        LedgerWrite::Update(ended(with_process.clone(), Outcome::Succeeded, 2)),
        LedgerWrite::Update(ended(stored.clone(), Outcome::Succeeded, 3)),
    ];
    ledger.write_batch(&writes).await.unwrap();
    let mut read = ledger.query(&query(None)).await.unwrap();
    read.sort_by_key(|r| (r.trigger, r.job.clone(), r.instance.clone(), r.started));
    let expected = [
        ended(stored, Outcome::Succeeded, 3),
        other_replica,
        unrecorded,
        ended(with_process, Outcome::Succeeded, 2),
        another_start,
    ];
    assert_eq!(read, expected);
}

/// A batch written again (its reply was lost) leaves the same records, and so does an
/// append of a run the batch wrote before, in the batch or after it.
pub async fn a_batch_written_twice_is_stored_once(ledger: &dyn Ledger) {
    let running = record("tick", 0, Outcome::Running);
    let mut done = running.clone();
    done.outcome = Outcome::Succeeded;
    let skipped = record("tick", 10, Outcome::SkippedLost);
    let writes = [
        LedgerWrite::Append(running.clone()),
        LedgerWrite::Append(skipped.clone()),
        LedgerWrite::Append(skipped.clone()),
        LedgerWrite::Update(done.clone()),
        LedgerWrite::Append(running.clone()),
    ];
    ledger.write_batch(&writes).await.unwrap();
    ledger.write_batch(&writes).await.unwrap();
    ledger.append(&running).await.unwrap();
    assert_eq!(ledger.query(&query(None)).await.unwrap(), [skipped, done]);
}

/// The appends of a batch count towards pruning as appends one by one do: each job keeps
/// its newest records (three here), those of every job the batch appended to.
pub async fn a_batch_prunes_as_its_appends_do(ledger: &dyn Ledger) {
    let tick = [0, 10, 20, 30, 40].map(|seconds| record("tick", seconds, Outcome::Succeeded));
    let other = [0, 10, 20, 30].map(|seconds| record("other", seconds, Outcome::Failed));
    let writes: Vec<_> = tick.into_iter().chain(other).map(LedgerWrite::Append).collect();
    ledger.write_batch(&writes).await.unwrap();
    assert_eq!(triggers(&ledger.query(&query(Some("tick"))).await.unwrap()), [40, 30, 20]);
    assert_eq!(triggers(&ledger.query(&query(Some("other"))).await.unwrap()), [30, 20, 10]);
}

/// Newest trigger first, ties broken by the newest start; at most `limit` records.
pub async fn newest_trigger_first_with_a_limit(ledger: &dyn Ledger) {
    let mut late_start = record("tick", 20, Outcome::Succeeded);
    late_start.started = at(40);
    late_start.instance = Arc::from("replica-2");
    let records = [
        record("tick", 20, Outcome::SkippedLost),
        record("tick", 0, Outcome::Succeeded),
        record("tick", 30, Outcome::Succeeded),
        late_start.clone(),
        record("tick", 10, Outcome::Succeeded),
    ];
    append_all(ledger, &records).await;
    let all = ledger.query(&query(Some("tick"))).await.unwrap();
    assert_eq!(triggers(&all), [30, 20, 20, 10, 0]);
    assert_eq!(all[1], late_start, "the later start first among equal triggers");
    for limit in [0, 1, 3, 5, 6] {
        let limited = ledger.query(&LedgerQuery { limit, ..query(Some("tick")) }).await.unwrap();
        assert_eq!(limited, all[..limit.min(all.len())], "limit {limit}");
    }
}

/// Job, time range (since inclusive, until exclusive) and outcome filters, alone and
/// together.
pub async fn filters(ledger: &dyn Ledger) {
    let mut ab = record("ab", 20, Outcome::Succeeded);
    ab.started = at(22);
    let records = [
        record("a", 0, Outcome::Succeeded),
        record("b", 0, Outcome::Succeeded),
        record("a", 10, Outcome::Failed),
        record("a", 20, Outcome::Succeeded),
        ab,
        record("b", 30, Outcome::Missed),
        record("a", 40, Outcome::Succeeded),
    ];
    append_all(ledger, &records).await;
    let find = async |q: LedgerQuery| {
        let found = ledger.query(&q).await.unwrap();
        found
            .iter()
            .map(|r| format!("{}@{}", r.job, r.trigger.duration_since(at(0)).as_secs()))
            .collect::<Vec<_>>()
    };
    assert_eq!(find(query(Some("a"))).await, ["a@40", "a@20", "a@10", "a@0"]);
    assert_eq!(find(query(Some("nobody"))).await, Vec::<String>::new());
    let range = LedgerQuery { since: Some(at(10)), until: Some(at(40)), ..query(None) };
    assert_eq!(find(range.clone()).await, ["b@30", "ab@20", "a@20", "a@10"]);
    assert_eq!(find(LedgerQuery { since: Some(at(30)), ..query(None) }).await, ["a@40", "b@30"]);
    assert_eq!(find(LedgerQuery { until: Some(at(10)), ..query(Some("b")) }).await, ["b@0"]);
    assert_eq!(find(LedgerQuery { outcome: Some(Outcome::Failed), ..query(None) }).await, ["a@10"]);
    let all_filters = LedgerQuery { outcome: Some(Outcome::Succeeded), job: Some("a".into()), ..range };
    assert_eq!(find(all_filters).await, ["a@20"]);
    let mut elsewhere = record("a", 50, Outcome::Running);
    elsewhere.instance = Arc::from("replica-2");
    ledger.append(&elsewhere).await.unwrap();
    let of_instance = LedgerQuery { instance: Some("replica-2".into()), ..query(None) };
    assert_eq!(find(of_instance).await, ["a@50"]);
    let running = LedgerQuery { outcome: Some(Outcome::Running), ..query(None) };
    assert_eq!(find(running).await, ["a@50"]);
}

fn started_at(mut record: RunRecord, seconds: i64) -> RunRecord {
    record.started = at(seconds);
    record
}

/// `max_records_per_job`: each job keeps its newest triggers, however they arrive.
pub async fn keeps_the_newest_records_per_job(ledger: &dyn Ledger) {
    for seconds in [0, 10, 20, 30, 40] {
        ledger.append(&record("tick", seconds, Outcome::Succeeded)).await.unwrap();
    }
    append_all(ledger, &[record("other", 0, Outcome::Succeeded), record("other", 10, Outcome::Failed)]).await;
    assert_eq!(triggers(&ledger.query(&query(Some("tick"))).await.unwrap()), [40, 30, 20]);
    assert_eq!(triggers(&ledger.query(&query(Some("other"))).await.unwrap()), [10, 0]);
    // A late record for an older trigger is not among the newest three.
    ledger.append(&record("tick", -10, Outcome::Succeeded)).await.unwrap();
    assert_eq!(triggers(&ledger.query(&query(Some("tick"))).await.unwrap()), [40, 30, 20]);
}

/// `max_age` (one hour here): records whose trigger is older than the appended record's
/// start minus the age are dropped, for every job; one exactly that old is kept, and so is
/// a job's last success however old.
pub async fn drops_records_older_than_the_max_age(ledger: &dyn Ledger) {
    let all = async || ledger.query(&query(None)).await.unwrap();
    let a = |seconds| record("a", seconds, Outcome::Succeeded);
    let b = |seconds| record("b", seconds, Outcome::Succeeded);
    append_all(ledger, &[a(0), a(1800), b(1000)]).await;
    assert_eq!(triggers(&all().await), [1800, 1000, 0]);
    ledger.append(&a(7200)).await.unwrap();
    assert_eq!(triggers(&all().await), [7200, 1000], "b's last success stays");
    ledger.append(&started_at(b(3601), 7201)).await.unwrap();
    assert_eq!(triggers(&all().await), [7200, 3601]);
    ledger.append(&started_at(b(3600), 7201)).await.unwrap();
    assert_eq!(triggers(&all().await), [7200, 3601]);
}

/// Pruning by count (two records per job here) never drops a job's newest success nor
/// its newest failure (of any kind), nor a `running` record; the others go.
pub async fn keeps_each_jobs_last_success_and_failure(ledger: &dyn Ledger) {
    let outcomes = [
        (0, Outcome::Succeeded),
        (10, Outcome::TimedOut),
        (20, Outcome::Running),
        (30, Outcome::Failed),
        (40, Outcome::Succeeded),
        (50, Outcome::Interrupted),
        (60, Outcome::Missed),
        (70, Outcome::SkippedLost),
        (80, Outcome::Missed),
    ];
    let records: Vec<_> =
        outcomes.iter().map(|(seconds, outcome)| record("job", *seconds, *outcome)).collect();
    append_all(ledger, &records).await;
    // The newest two, the last success (40), the last failure (50: interrupted) and the
    // running record (20); the older success (0) and failures (10, 30) and the skip go.
    assert_eq!(triggers(&ledger.query(&query(Some("job"))).await.unwrap()), [80, 70, 50, 40, 20]);
}

/// Pruning by age keeps a job's last success and last failure however old, whether it
/// runs on an append or is asked for ([`Ledger::prune`]) on a quiet ledger.
pub async fn keeps_each_jobs_last_success_and_failure_however_old(ledger: &dyn Ledger) {
    const DAY: i64 = 86_400;
    let records = [
        record("quiet", 0, Outcome::Succeeded),
        record("quiet", 10, Outcome::Failed),
        record("quiet", 20, Outcome::Succeeded),
        record("quiet", 30, Outcome::Missed),
        record("quiet", 40, Outcome::Panicked),
    ];
    append_all(ledger, &records).await;
    let pruned = ledger.prune(at(10 * DAY)).await.unwrap();
    assert_eq!(pruned, 3, "the older success and failure and the skip");
    assert_eq!(triggers(&ledger.query(&query(Some("quiet"))).await.unwrap()), [40, 20]);
    // An append of another job prunes by age too, and keeps them.
    ledger.append(&record("busy", 20 * DAY, Outcome::Succeeded)).await.unwrap();
    assert_eq!(triggers(&ledger.query(&query(Some("quiet"))).await.unwrap()), [40, 20]);
    assert_eq!(ledger.prune(at(20 * DAY)).await.unwrap(), 0);
}

/// Without limits nothing is dropped.
pub async fn keeps_everything_without_limits(ledger: &dyn Ledger) {
    const YEAR: i64 = 366 * 86_400;
    let records: Vec<_> = (0..30).map(|i| record("tick", i * YEAR, Outcome::Succeeded)).collect();
    append_all(ledger, &records).await;
    let kept = ledger.query(&query(None)).await.unwrap();
    assert_eq!(kept.len(), 30);
    assert_eq!(kept.last(), records.first());
}
