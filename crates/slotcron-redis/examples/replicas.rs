//! Three schedulers in one process, as three replicas of a service would be, sharing one
//! Redis: each trigger runs on exactly one of them, and each prints the triggers it won.
//! Each replica runs on its own thread with its own tokio runtime and Redis connection,
//! so they race for claims as separate processes would.
//!
//! ```sh
//! cargo run -p slotcron-redis --example replicas -- [URL] [SECONDS]
//! ```
//!
//! URL defaults to `$SLOTCRON_REDIS_URL`, else `redis://127.0.0.1:6379`; SECONDS (how
//! long to run) to 10. Keys go under `slotcron-example:`: the claims expire after a few
//! seconds, the two jobs' fencing counters stay (and keep growing across runs).

use std::sync::Arc;
use std::time::Duration;

use slotcron::{
    BoxError, CancellationToken, Job, JobContext, Ledger, LedgerQuery, MemoryLedger, Outcome, Scheduler,
};
use slotcron_redis::{RedisConfig, RedisCoordinator};

fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .or_else(|| std::env::var("SLOTCRON_REDIS_URL").ok())
        .unwrap_or_else(|| "redis://127.0.0.1:6379".to_owned());
    let seconds: u64 = args.next().map(|s| s.parse()).transpose()?.unwrap_or(10);

    let cancel = CancellationToken::new();
    let replicas: Vec<_> = ["replica-a", "replica-b", "replica-c"]
        .into_iter()
        .map(|instance| {
            let (url, cancel) = (url.clone(), cancel.clone());
            std::thread::spawn(move || -> Result<usize, BoxError> {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
                runtime.block_on(replica(instance, url, cancel))
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(seconds));
    cancel.cancel();
    println!("--- triggers won over {seconds} s");
    for (instance, replica) in ["replica-a", "replica-b", "replica-c"].into_iter().zip(replicas) {
        let won = replica.join().expect("replica thread")?;
        println!("{instance}: {won}");
    }
    Ok(())
}

/// Runs one replica until `cancel` fires; returns how many triggers it won.
async fn replica(instance: &str, url: String, cancel: CancellationToken) -> Result<usize, BoxError> {
    let config = RedisConfig::new(url).key_prefix("slotcron-example:");
    let coordinator = RedisCoordinator::connect(config).await?;
    let ledger = Arc::new(MemoryLedger::default());
    let scheduler = Scheduler::builder()
        .coordinator(Arc::new(coordinator))
        .ledger(ledger.clone())
        .instance(instance)
        .build();
    scheduler.add(Job::builder("tick").every(Duration::from_secs(1)).handler(report).build()?)?;
    scheduler.add(Job::builder("every-3s").cron("*/3 * * * * *").handler(report).build()?)?;
    scheduler.run(cancel).await;
    let won = LedgerQuery { outcome: Some(Outcome::Succeeded), limit: usize::MAX, ..LedgerQuery::default() };
    Ok(ledger.query(&won).await?.len())
}

/// Prints the trigger this replica won.
async fn report(ctx: JobContext) -> Result<(), std::io::Error> {
    println!("{} won {} (fencing token {})", ctx.instance(), ctx.trigger_key(), ctx.fencing_token());
    Ok(())
}
