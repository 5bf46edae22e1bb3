//! Claims per second and round trips per trigger from one replica against a local Redis,
//! beside `redis-benchmark` running `SET ... NX PX` on the same server.
//!
//! ```sh
//! cargo bench -p slotcron-redis --bench claims [-- URL]
//! ```
//!
//! URL defaults to `$SLOTCRON_REDIS_URL`, else `redis://127.0.0.1:6379`. The server should
//! be otherwise idle. Keys go under `slotcron-bench:{pid}:` and `slotcron-bench-rb:` and
//! are deleted at the end. `redis-benchmark` must be on PATH for the comparison.

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::{ConnectionAddr, IntoConnectionInfo};
use slotcron::jiff::{SignedDuration, Timestamp};
use slotcron::{Claim, ClaimOutcome, Coordinator, Job, JobContext, Outcome};
use slotcron_redis::{RedisConfig, RedisCoordinator};
use slotcron_testkit::{Delivery, Fleet};

mod common;

use common::{BoxError, command_calls, delete_keys};

const SEQUENTIAL_CLAIMS: u64 = 20_000;
const CONCURRENT_CLAIMS: u64 = 100_000;
const IN_FLIGHT: u64 = 50;
const SIMULATED_TRIGGERS: u64 = 1_000;
const REDIS_BENCHMARK_PREFIX: &str = "slotcron-bench-rb:";

fn main() -> Result<(), BoxError> {
    // `cargo bench` passes `--bench`; the first other argument is the URL.
    let url = common::url_from_args();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let prefix = format!("slotcron-bench:{}:", std::process::id());
    let result = runtime.block_on(bench(&url, &prefix));
    let cleaned = delete_keys(&url, &[format!("{prefix}*"), format!("{REDIS_BENCHMARK_PREFIX}*")]);
    result?;
    println!("deleted {} benchmark keys", cleaned?);
    Ok(())
}

async fn bench(url: &str, prefix: &str) -> Result<(), BoxError> {
    let coordinator = Arc::new(RedisCoordinator::connect(RedisConfig::new(url).key_prefix(prefix)).await?);
    claims(&coordinator, "warm-up", 0..1_000).await?;

    let started = Instant::now();
    claims(&coordinator, "sequential", 0..SEQUENTIAL_CLAIMS).await?;
    let sequential = SEQUENTIAL_CLAIMS as f64 / started.elapsed().as_secs_f64();

    let started = Instant::now();
    let per_task = CONCURRENT_CLAIMS / IN_FLIGHT;
    let mut tasks = tokio::task::JoinSet::new();
    for task in 0..IN_FLIGHT {
        let coordinator = coordinator.clone();
        tasks.spawn(async move {
            claims(&coordinator, "concurrent", task * per_task..(task + 1) * per_task).await
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let concurrent = CONCURRENT_CLAIMS as f64 / started.elapsed().as_secs_f64();

    let round_trips = round_trips_per_trigger(url, prefix).await?;

    let (host, port) = tcp_address(url)?;
    let baseline = |clients: u64, requests: u64| redis_benchmark(&host, port, clients, requests);
    let (baseline_sequential, baseline_concurrent) =
        (baseline(1, SEQUENTIAL_CLAIMS), baseline(IN_FLIGHT, CONCURRENT_CLAIMS));

    println!("one replica, RedisCoordinator::claim against {host}:{port}");
    println!("| load | slotcron claims/s | redis-benchmark SET NX PX req/s | ratio |");
    println!("|---|---|---|---|");
    for (load, ours, theirs) in [
        ("1 in flight (redis-benchmark -c 1)", sequential, baseline_sequential),
        (
            "50 in flight, one connection (redis-benchmark -c 50, 50 connections)",
            concurrent,
            baseline_concurrent,
        ),
    ] {
        match theirs {
            Ok(theirs) => println!("| {load} | {ours:.0} | {theirs:.0} | {:.2} |", ours / theirs),
            Err(e) => println!("| {load} | {ours:.0} | ({e}) | |"),
        }
    }
    println!(
        "round trips per trigger (scheduler on a manual clock, {SIMULATED_TRIGGERS} triggers): {round_trips:.3}"
    );
    Ok(())
}

/// Claims the triggers `range` (seconds after 2024-05-17) of job `job`; each must be won.
async fn claims(
    coordinator: &RedisCoordinator,
    job: &str,
    range: std::ops::Range<u64>,
) -> Result<(), BoxError> {
    let base: Timestamp = "2024-05-17T00:00:00Z".parse()?;
    for k in range {
        let trigger = base + Duration::from_secs(k);
        let key = format!("{job}:{trigger}");
        let claim = Claim {
            job,
            trigger,
            key: &key,
            instance: "bench",
            hold: Some(slotcron::Hold {
                slot: Duration::from_secs(60),
                run_budget: None,
                slack: Duration::ZERO,
            }),
        };
        match coordinator.claim(&claim).await? {
            ClaimOutcome::Won { .. } => {}
            other => return Err(format!("claim {key}: {other:?}: the key prefix is not fresh").into()),
        }
    }
    Ok(())
}

/// Runs one replica's scheduler with a 1 s job on a manual clock through
/// [`SIMULATED_TRIGGERS`] triggers and counts the commands the client sent, from the
/// server's command statistics (the claim script's own EXISTS, INCR and SET are not
/// round trips).
async fn round_trips_per_trigger(url: &str, prefix: &str) -> Result<f64, BoxError> {
    let config = RedisConfig::new(url).key_prefix(format!("{prefix}fleet:"));
    let coordinator: Arc<dyn Coordinator> = Arc::new(RedisCoordinator::connect(config).await?);
    let job = Job::builder("tick").every(Duration::from_secs(1)).handler(ok).build()?;
    let mut fleet = Fleet::new("2024-05-17T00:00:00Z".parse()?);
    let replica = fleet.add_replica("bench", SignedDuration::ZERO, vec![job]);
    fleet.start(replica, coordinator).await;
    let before = command_calls(url)?;
    fleet.advance(Duration::from_secs(SIMULATED_TRIGGERS), Delivery::Together).await;
    let after = command_calls(url)?;
    fleet.stop_all().await;
    let won = fleet.records().iter().filter(|r| r.outcome == Outcome::Succeeded).count() as u64;
    if won != SIMULATED_TRIGGERS {
        return Err(format!("{won} of {SIMULATED_TRIGGERS} triggers ran").into());
    }
    let sent: u64 = after
        .iter()
        .filter(|(name, _)| !["exists", "incr", "set", "info"].contains(&name.as_str()))
        .map(|(name, calls)| calls - before.get(name).copied().unwrap_or(0))
        .sum();
    Ok(sent as f64 / SIMULATED_TRIGGERS as f64)
}

async fn ok(_ctx: JobContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn tcp_address(url: &str) -> Result<(String, u16), BoxError> {
    match url.into_connection_info()?.addr() {
        ConnectionAddr::Tcp(host, port) => Ok((host.clone(), *port)),
        other => Err(format!("redis-benchmark needs a plain TCP address, not {other:?}").into()),
    }
}

/// `redis-benchmark` requests per second for `SET {prefix}{random} x NX PX 60000`.
fn redis_benchmark(host: &str, port: u16, clients: u64, requests: u64) -> Result<f64, BoxError> {
    let key = format!("{REDIS_BENCHMARK_PREFIX}__rand_int__");
    let output = Command::new("redis-benchmark")
        .args(["-h", host, "-p", &port.to_string(), "-c", &clients.to_string(), "-n", &requests.to_string()])
        .args(["-r", "100000000", "--csv", "SET", &key, "x", "NX", "PX", "60000"])
        .output()
        .map_err(|e| format!("redis-benchmark: {e}"))?;
    let csv = String::from_utf8(output.stdout)?;
    let rps = csv.lines().nth(1).and_then(|line| line.split(',').nth(1)).map(|f| f.trim_matches('"').parse());
    Ok(rps.ok_or_else(|| format!("unexpected redis-benchmark output: {csv}"))??)
}
