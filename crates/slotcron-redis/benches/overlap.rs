//! The cost of `overlap = "forbid"` per trigger next to `allow` against a Redis
//! (`slotcron_testkit::overlap_bench`): 5,000 triggers of each, one at a time.
//!
//! ```sh
//! cargo bench -p slotcron-redis --bench overlap [-- URL]
//! ```
//!
//! URL defaults to `$SLOTCRON_REDIS_URL`, else `redis://127.0.0.1:6379`. Keys go under
//! `slotcron-bench-overlap:{pid}:`; they expire within the hour.

use slotcron_redis::{RedisConfig, RedisCoordinator};
use slotcron_testkit::overlap_bench::forbid_cost;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let url = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .or_else(|| std::env::var("SLOTCRON_REDIS_URL").ok())
        .unwrap_or_else(|| "redis://127.0.0.1:6379".to_owned());
    let prefix = format!("slotcron-bench-overlap:{}:", std::process::id());
    let coordinator = RedisCoordinator::connect(RedisConfig::new(&url).key_prefix(&prefix)).await.unwrap();
    forbid_cost(&coordinator, "warm-up", 500).await;
    for round in 1..=3 {
        let (allow, forbid) = forbid_cost(&coordinator, &format!("job-{round}"), 5_000).await;
        println!(
            "round {round}: allow {} round trip(s), {:.1} µs/trigger; forbid {} round trips, {:.1} µs/trigger",
            allow.round_trips, allow.micros, forbid.round_trips, forbid.micros
        );
    }
}
