//! Reconcile benchmark: `Scheduler::reconcile` of 10,000 plans, 1 % of them changed, on a
//! running scheduler (target: at most 20 ms per call).
//!
//! Run with `cargo bench -p slotcron --bench reconcile`. The scheduler runs 10,000 hourly
//! interval jobs on the system clock (none fires during the run); each call gets 10,000
//! plans built beforehand (outside the timing), of which 100 — a different 100 each call —
//! carry a new fingerprint and so are built and replaced. Also timed, as the baseline: the
//! same call with nothing changed, and with the plans' fingerprints derived rather than
//! stated.

use std::time::{Duration, Instant};

use slotcron::{CancellationToken, Job, JobContext, Plan, Scheduler};

const PLANS: usize = 10_000;
const CHANGED: usize = PLANS / 100;
const CALLS: usize = 30;

async fn noop(_ctx: JobContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn plans(call: usize, changed: usize, stated: bool) -> Vec<Plan> {
    (0..PLANS)
        .map(|i| {
            let job = Job::builder(format!("job-{i}")).every(Duration::from_secs(3600)).handler(noop);
            // Call c changes the jobs of window c (0 -> c + 1); earlier windows keep theirs.
            let window = i / CHANGED;
            let version = if changed > 0 && window <= call { window + 1 } else { 0 };
            if stated {
                Plan::new(job).fingerprint(version.to_string())
            } else {
                Plan::new(job).handler_name(format!("noop-{version}"))
            }
        })
        .collect()
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let scheduler = Scheduler::builder().build();
        let cancel = CancellationToken::new();
        let run = tokio::spawn({
            let (scheduler, cancel) = (scheduler.clone(), cancel.clone());
            async move { scheduler.run(cancel).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        scheduler.reconcile(plans(0, 0, true)).unwrap();
        println!("slotcron reconcile benchmark: {PLANS} plans on a running scheduler, {CALLS} calls each");
        for (label, changed, stated) in [
            ("1 % changed, stated fingerprints", CHANGED, true),
            ("nothing changed, stated fingerprints (baseline)", 0, true),
            ("1 % changed, derived fingerprints", CHANGED, false),
        ] {
            // Every job back to version 0 (in this label's kind of fingerprint).
            _ = scheduler.reconcile(plans(0, 0, stated));
            let mut times = Vec::with_capacity(CALLS);
            for call in 0..CALLS {
                let plans = plans(call, changed, stated);
                let started = Instant::now();
                let report = scheduler.reconcile(plans).unwrap();
                times.push(started.elapsed());
                assert_eq!(report.changed.len(), changed);
                assert_eq!(report.unchanged, PLANS - changed);
            }
            times.sort();
            println!(
                "{label}: min {:?}, median {:?}, max {:?}",
                times[0],
                times[CALLS / 2],
                times[CALLS - 1]
            );
        }
        cancel.cancel();
        run.await.unwrap();
    });
}
