//! A fleet of three replicas against one local Redis, each replica a scheduler on its own
//! OS thread with its own tokio runtime and its own connection (`slotcron_testkit::
//! fleet_bench`), `allow` jobs with no-op handlers, the in-memory ledger.
//!
//! ```sh
//! cargo bench -p slotcron-redis --bench fleet [-- ROW] [-- URL]
//! ```
//!
//! ROW is `10k` (10,000 jobs every 1 s for 20 s) or `100k` (100,000 jobs every 10 s for
//! 60 s, all due at once); both by default. URL defaults to `$SLOTCRON_REDIS_URL`, else
//! `redis://127.0.0.1:6379`; the server should be otherwise idle, since its
//! `INFO commandstats` counts every client's commands (a script's own commands
//! included). Keys go under `slotcron-fleet:{pid}:{row}:` and are deleted at the end.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{BoxError, command_calls, delete_keys};
use futures_util::FutureExt;
use slotcron::Coordinator;
use slotcron_redis::{RedisConfig, RedisCoordinator};
use slotcron_testkit::fleet_bench::{self, Load};

const REPLICAS: usize = 3;

const ROWS: [(&str, Load); 2] = [
    (
        "10k",
        Load {
            replicas: REPLICAS,
            jobs: 10_000,
            every: Duration::from_secs(1),
            window: Duration::from_secs(20),
        },
    ),
    (
        "100k",
        Load {
            replicas: REPLICAS,
            jobs: 100_000,
            every: Duration::from_secs(10),
            window: Duration::from_secs(60),
        },
    ),
];

fn main() -> Result<(), BoxError> {
    let url = common::url_from_args();
    let only = std::env::args().skip(1).find(|a| !a.starts_with("--") && !a.contains("://"));
    for (name, load) in ROWS {
        if only.as_deref().is_some_and(|only| only != name) {
            continue;
        }
        let prefix = format!("slotcron-fleet:{}:{name}:", std::process::id());
        let connect = |_replica: usize| {
            let config = RedisConfig::new(url.as_str()).key_prefix(prefix.as_str());
            async move {
                let coordinator = RedisCoordinator::connect(config).await.expect("connect to Redis");
                Arc::new(coordinator) as Arc<dyn Coordinator>
            }
            .boxed_local()
        };
        let commands = || {
            // Every command the server ran, its own scripts' included, but for our INFO.
            let calls = command_calls(&url).expect("INFO commandstats");
            calls.iter().filter(|(name, _)| name.as_str() != "info").map(|(_, calls)| calls).sum::<u64>()
        };
        let report = fleet_bench::run(load, &connect, Some(&commands));
        println!(
            "redis, {REPLICAS} replicas, {} jobs every {:?} for {:?}: {report}",
            load.jobs, load.every, load.window
        );
        println!("deleted {} benchmark keys", delete_keys(&url, &[format!("{prefix}*")])?);
    }
    Ok(())
}
