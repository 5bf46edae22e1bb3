//! The ledger throughput benchmark's common part (not a test): the SQL ledgers'
//! `benches/ledger_throughput.rs` hand [`measure`] one ledger per writer, each sharing
//! one database, once as they are ([`Ledger::write_batch`] overridden) and once wrapped
//! in [`OneAtATime`] (the trait's default: one call per write), the baseline.
//!
//! Each writer writes what the engine's outbox would for its share of the runs: batches
//! of up to [`BATCH`] writes, each run a `running` [`LedgerWrite::Append`] and, one batch
//! later (the run took a while), the [`LedgerWrite::Update`] that ends it. A run is one
//! record but two writes; both rates are printed. Figures and commands are in
//! BENCHMARKS.md.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use slotcron::{Cause, Ledger, LedgerError, LedgerQuery, LedgerWrite, Outcome, RunProcess, RunRecord};

use crate::ledger_bench::BASE;

/// The most writes in a batch, as the engine's outbox hands them.
pub const BATCH: usize = slotcron::MAX_WRITES_PER_BATCH;
/// The jobs of the fleet, a trigger every 10 s each; writer `w` of `n` has the jobs
/// whose number is `w` modulo `n`.
pub const JOBS: usize = 6_000;

/// How many runs to write in all: `SLOTCRON_BENCH_RUNS`, default 60,000.
pub fn runs() -> usize {
    std::env::var("SLOTCRON_BENCH_RUNS").ok().and_then(|n| n.parse().ok()).unwrap_or(60_000)
}

/// A ledger whose [`Ledger::write_batch`] is the trait's default, one
/// [`append`](Ledger::append) or [`update`](Ledger::update) after the other: the path
/// of a backend that does not batch.
#[derive(Debug)]
pub struct OneAtATime<L>(pub L);

#[async_trait]
impl<L: Ledger> Ledger for OneAtATime<L> {
    async fn append(&self, record: &RunRecord) -> Result<(), LedgerError> {
        self.0.append(record).await
    }

    async fn update(&self, record: &RunRecord) -> Result<(), LedgerError> {
        self.0.update(record).await
    }

    async fn query(&self, query: &LedgerQuery) -> Result<Vec<RunRecord>, LedgerError> {
        self.0.query(query).await
    }
}

/// The `running` record of run `i` of the fleet, written by `writer`.
fn running(i: usize, writer: usize) -> RunRecord {
    let trigger = BASE + Duration::from_secs((i / JOBS) as u64 * 10);
    RunRecord {
        job: Arc::from(format!("job-{}", i % JOBS).as_str()),
        trigger,
        instance: Arc::from(format!("replica-{writer}").as_str()),
        cause: Cause::Scheduled,
        attempts: 1,
        outcome: Outcome::Running,
        fencing_token: Some(i as u64),
        started: trigger + Duration::from_millis(2),
        duration: Duration::ZERO,
        error: None,
        process: Some(RunProcess { host: Arc::from("bench-host"), pid: 4242, start_time: 1 }),
    }
}

/// The batches `writer` of `writers` writes for its share of `runs` runs: batch `k` holds
/// the appends of its runs `k·BATCH/2 ..` and the updates ending those of batch `k - 1`.
pub fn batches(writer: usize, writers: usize, runs: usize) -> Vec<Vec<LedgerWrite>> {
    let mine: Vec<RunRecord> = (writer..runs).step_by(writers).map(|i| running(i, writer)).collect();
    let chunks: Vec<&[RunRecord]> = mine.chunks(BATCH / 2).collect();
    let end = |record: &RunRecord| {
        let mut ended = record.clone();
        ended.outcome = Outcome::Succeeded;
        ended.duration = Duration::from_millis(1_500);
        LedgerWrite::Update(ended)
    };
    (0..=chunks.len())
        .map(|k| {
            let appends =
                chunks.get(k).into_iter().flat_map(|chunk| chunk.iter().cloned().map(LedgerWrite::Append));
            let ends = k.checked_sub(1).map(|before| chunks[before]).into_iter().flatten().map(end);
            appends.chain(ends).collect()
        })
        .collect()
}

/// Writes `runs` runs through `ledgers` (one writer each, all at once, each writing its
/// [`batches`] one after the other), timed from the first batch to the last reply;
/// prints `{label}: …` with the writes/s and the records (runs)/s, and returns the
/// records/s. Panics if a write fails or the ledger does not then hold every run, ended.
pub async fn measure(label: &str, ledgers: Vec<Arc<dyn Ledger>>, runs: usize) -> f64 {
    let writers = ledgers.len();
    let work: Vec<_> = (0..writers).map(|writer| batches(writer, writers, runs)).collect();
    let writes: usize = work.iter().flatten().map(Vec::len).sum();
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (ledger, batches) in ledgers.iter().cloned().zip(work) {
        tasks.spawn(async move {
            for batch in batches {
                ledger.write_batch(&batch).await.unwrap();
            }
        });
    }
    tasks.join_all().await;
    let took = started.elapsed().as_secs_f64();
    let stored = ledgers[0].query(&LedgerQuery::new().limit(usize::MAX)).await.unwrap();
    assert_eq!(stored.len(), runs, "{label}: every run stored once");
    assert!(stored.iter().all(|record| record.outcome == Outcome::Succeeded), "{label}: every run ended");
    println!(
        "{label}: {writers} writer(s), {runs} runs = {writes} writes in batches of up to {BATCH}, in {took:.2} s: \
         {:.0} writes/s, {:.0} records/s",
        writes as f64 / took,
        runs as f64 / took
    );
    runs as f64 / took
}
