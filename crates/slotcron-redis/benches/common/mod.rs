//! What the Redis benchmarks share: the server's command counts and the cleanup.

use std::collections::HashMap;
use std::time::Duration;

pub use slotcron::BoxError;

/// The first argument that is not a flag (`cargo bench` passes `--bench`), else
/// `$SLOTCRON_REDIS_URL`, else `redis://127.0.0.1:6379`.
pub fn url_from_args() -> String {
    std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--") && a.contains("://"))
        .or_else(|| std::env::var("SLOTCRON_REDIS_URL").ok())
        .unwrap_or_else(|| "redis://127.0.0.1:6379".to_owned())
}

/// Calls per command since the server started (`INFO commandstats`); a script's own
/// commands are counted under their names, beside `evalsha`.
pub fn command_calls(url: &str) -> Result<HashMap<String, u64>, BoxError> {
    let mut admin = redis::Client::open(url)?.get_connection()?;
    let stats: String = redis::cmd("INFO").arg("commandstats").query(&mut admin)?;
    Ok(stats
        .lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest.strip_prefix("calls=")?.split(',').next()?.parse().ok()?;
            Some((name.to_owned(), calls))
        })
        .collect())
}

/// Deletes the keys matching `patterns`; returns how many.
pub fn delete_keys(url: &str, patterns: &[String]) -> Result<usize, BoxError> {
    let mut admin = redis::Client::open(url)?.get_connection_with_timeout(Duration::from_secs(5))?;
    let mut deleted = 0;
    for pattern in patterns {
        let keys: Vec<String> =
            redis::Commands::scan_match::<_, String>(&mut admin, pattern)?.collect::<Result<_, _>>()?;
        for chunk in keys.chunks(1_000) {
            deleted += redis::cmd("UNLINK").arg(chunk).query::<usize>(&mut admin)?;
        }
    }
    Ok(deleted)
}
