//! What the Redis benchmarks read from and do to their server: its command counts and
//! the cleanup of their keys.

use std::collections::HashMap;
use std::time::Duration;

use slotcron::BoxError;

/// Calls per command since the server started (`INFO commandstats`); a script's own
/// commands are counted under their names, beside `evalsha`.
///
/// # Errors
/// The server cannot be reached or does not answer `INFO`.
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

/// The memory the server holds for its data now, in bytes (`INFO memory`'s
/// `used_memory`).
///
/// # Errors
/// The server cannot be reached, does not answer `INFO`, or its answer lacks the field.
pub fn used_memory(url: &str) -> Result<u64, BoxError> {
    let mut admin = redis::Client::open(url)?.get_connection()?;
    let info: String = redis::cmd("INFO").arg("memory").query(&mut admin)?;
    let field = info.lines().find_map(|line| line.strip_prefix("used_memory:"));
    Ok(field.ok_or("INFO memory has no used_memory")?.trim().parse()?)
}

/// Every command the server ran since it started, its scripts' own included, but for
/// `INFO` (which reading the count runs).
///
/// # Errors
/// As [`command_calls`].
pub fn commands_run(url: &str) -> Result<u64, BoxError> {
    let calls = command_calls(url)?;
    Ok(calls.iter().filter(|(name, _)| name.as_str() != "info").map(|(_, calls)| calls).sum())
}

/// Deletes the keys matching `patterns` (`SCAN`, then one `UNLINK` per key, pipelined
/// 1,000 at a time: a Redis Cluster node's keys lie in many slots, which one `UNLINK` of
/// several would refuse); returns how many.
///
/// # Errors
/// The server cannot be reached within 5 s, or refuses a command.
pub fn delete_keys(url: &str, patterns: &[String]) -> Result<usize, BoxError> {
    let mut admin = redis::Client::open(url)?.get_connection_with_timeout(Duration::from_secs(5))?;
    let mut deleted = 0;
    for pattern in patterns {
        let keys: Vec<String> =
            redis::Commands::scan_match::<_, String>(&mut admin, pattern)?.collect::<Result<_, _>>()?;
        for chunk in keys.chunks(1_000) {
            let mut pipe = redis::pipe();
            for key in chunk {
                pipe.cmd("UNLINK").arg(key);
            }
            deleted += pipe.query::<Vec<usize>>(&mut admin)?.iter().sum::<usize>();
        }
    }
    Ok(deleted)
}
