//! Which coordinator arbitrates the daemon's claims: Redis when a Redis URL is given,
//! else PostgreSQL when the state is there, else none (single-replica mode).

use std::fmt;
use std::sync::Arc;

use slotcron::{Coordinator, redact};
use slotcron_postgres::PostgresCoordinator;
use slotcron_redis::{RedisConfig, RedisCoordinator};

use crate::state::State;

/// The environment variable holding the Redis URL when `--redis` is not given.
pub const REDIS_URL_VAR: &str = "SLOTCRON_REDIS_URL";

/// Where the Redis URL was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The `--redis` flag.
    Flag,
    /// The `SLOTCRON_REDIS_URL` environment variable.
    Env,
    /// `redis` in the jobs file's `[coordination]` table.
    File,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Flag => "--redis",
            Self::Env => REDIS_URL_VAR,
            Self::File => "[coordination] redis",
        })
    }
}

/// The Redis the daemon claims triggers in.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisUrl {
    /// The URL, possibly with a password: shown only through [`redact`].
    pub url: String,
    /// Where it was given.
    pub source: Source,
}

impl fmt::Debug for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisUrl").field("url", &redact(&self.url)).field("source", &self.source).finish()
    }
}

impl RedisUrl {
    /// The Redis URL by precedence: the `--redis` flag, then the `SLOTCRON_REDIS_URL`
    /// variable, then the jobs file's `[coordination] redis`. An empty value counts as
    /// not given.
    pub fn choose(flag: Option<&str>, env: Option<&str>, file: Option<&str>) -> Option<Self> {
        [(flag, Source::Flag), (env, Source::Env), (file, Source::File)].into_iter().find_map(
            |(url, source)| url.filter(|u| !u.is_empty()).map(|url| Self { url: url.to_owned(), source }),
        )
    }
}

/// Checks the syntax of a Redis URL without connecting, as the `redis` crate reads it.
///
/// # Errors
/// The reason, naming the URL without its password.
pub fn check_redis_url(url: &str) -> Result<(), String> {
    redis::IntoConnectionInfo::into_connection_info(url).map(drop).map_err(|e| {
        format!(
            "{:?} is not a Redis URL (write redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], rediss://… \
             or redis+unix:///PATH): {e}",
            redact(url)
        )
    })
}

/// Connects the coordinator: Redis at `redis` if given; else the PostgreSQL of the state,
/// if it is there; else none, and the daemon says once that it runs in single-replica
/// mode.
///
/// An unreachable Redis at start is an error (a misconfigured URL, host or password is
/// caught at once); once running, the coordinator reconnects by itself and a trigger
/// that finds Redis down is skipped (fail closed).
///
/// # Errors
/// The reason, naming the URL (without its password), where it was given, and the
/// cause: an unreachable server, a refused password or TLS handshake (the URL's syntax
/// is checked earlier, by [`check_redis_url`]).
pub async fn connect(
    redis: Option<&RedisUrl>,
    state: &State,
) -> Result<Option<Arc<dyn Coordinator>>, String> {
    if let Some(RedisUrl { url, source }) = redis {
        let shown = redact(url);
        let coordinator = RedisCoordinator::connect(RedisConfig::new(url.as_str()))
            .await
            .map_err(|e| format!("Redis at {shown} (from {source}): {e}"))?;
        tracing::info!(url = %shown, from = %source, "coordination through Redis");
        return Ok(Some(Arc::new(coordinator)));
    }
    if let Some(database) = &state.postgres {
        tracing::info!(url = database.url(), "coordination through PostgreSQL (the state's database)");
        return Ok(Some(Arc::new(PostgresCoordinator::new(database.clone()))));
    }
    tracing::info!(
        "single-replica mode: no coordinator (--redis, {REDIS_URL_VAR}, [coordination] redis, or a \
         postgres:// state), so every daemon runs every trigger"
    );
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_wins_over_the_variable_which_wins_over_the_file() {
        let chosen = |flag, env, file| RedisUrl::choose(flag, env, file).map(|r| (r.url, r.source));
        let (f, e, t) = (Some("redis://flag"), Some("redis://env"), Some("redis://file"));
        assert_eq!(chosen(f, e, t), Some(("redis://flag".into(), Source::Flag)));
        assert_eq!(chosen(None, e, t), Some(("redis://env".into(), Source::Env)));
        assert_eq!(chosen(None, None, t), Some(("redis://file".into(), Source::File)));
        assert_eq!(chosen(None, Some(""), t), Some(("redis://file".into(), Source::File)));
        assert_eq!(chosen(None, None, None), None);
    }

    #[test]
    fn malformed_urls_are_named_without_their_password() {
        for url in ["http://:hunter2@cache:6379", "redis://:hunter2@cache:notaport", "cache:6379"] {
            let error = check_redis_url(url).unwrap_err();
            assert!(error.contains("is not a Redis URL"), "{error}");
            assert!(!error.contains("hunter2"), "{error}");
        }
        for url in
            ["redis://127.0.0.1:6379/2", "rediss://:pw@cache:6380", "redis+unix:///run/redis.sock?db=1"]
        {
            assert_eq!(check_redis_url(url), Ok(()), "{url}");
        }
    }
}
