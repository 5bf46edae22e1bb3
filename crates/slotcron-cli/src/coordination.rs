//! Which coordinator arbitrates the daemon's claims: Redis when a Redis URL is given,
//! else PostgreSQL when the state is there, else none (single-replica mode).

use std::env::VarError;
use std::fmt;
use std::sync::Arc;

use slotcron::{Coordinator, redact};
use slotcron_postgres::PostgresCoordinator;
use slotcron_redis::{RedisConfig, RedisCoordinator, RedisCoordinatorError};

use crate::jobs_file::Coordination;
use crate::settings;
use crate::state::{State, StateUrl};

/// The environment variable holding the Redis URL when `--redis` is not given.
pub const REDIS_URL_VAR: &str = "SLOTCRON_REDIS_URL";

/// The environment variable holding the Redis key prefix when `--redis-prefix` is not
/// given.
pub const REDIS_PREFIX_VAR: &str = "SLOTCRON_REDIS_PREFIX";

/// Where a Redis setting is given, by precedence: a flag, then an environment variable,
/// then a key of the jobs file's `[coordination]` table.
struct Sources {
    flag: &'static str,
    var: &'static str,
    key: &'static str,
}

const URL_SOURCES: Sources = Sources { flag: "--redis", var: REDIS_URL_VAR, key: "[coordination] redis" };
const PREFIX_SOURCES: Sources =
    Sources { flag: "--redis-prefix", var: REDIS_PREFIX_VAR, key: "[coordination] prefix" };

/// A setting and the flag, variable or key it came from.
#[derive(Clone, PartialEq, Eq)]
pub struct Given {
    /// The value, possibly a URL with a password: shown only through [`redact`].
    pub value: String,
    /// Where it was given: `--redis`, `SLOTCRON_REDIS_URL`, `[coordination] redis`...
    pub source: &'static str,
}

impl fmt::Debug for Given {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Given").field("value", &redact(&self.value)).field("source", &self.source).finish()
    }
}

impl Sources {
    /// The first of the flag, the variable and the file's key that is set.
    ///
    /// # Errors
    /// A value that is set but empty (a mistake, not a way to unset it) or holds a
    /// control character, naming where.
    fn choose(
        &self,
        flag: Option<&str>,
        var: Option<&str>,
        key: Option<&str>,
    ) -> Result<Option<Given>, String> {
        let given = [(flag, self.flag), (var, self.var), (key, self.key)]
            .into_iter()
            .find_map(|(value, source)| value.map(|value| Given { value: value.to_owned(), source }));
        match given {
            Some(Given { value, source }) if value.is_empty() => {
                Err(format!("{source} is set but empty; remove it, or give a value"))
            }
            Some(Given { value, source }) if value.contains(char::is_control) => {
                let c = value.chars().find(|c| c.is_control()).unwrap_or_default();
                Err(format!("{source} contains the control character {c:?}"))
            }
            given => Ok(given),
        }
    }
}

/// The Redis the daemon claims triggers in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redis {
    /// The URL and where it was given.
    pub url: Given,
    /// The prefix of every key the daemon writes (`--redis-prefix`,
    /// `SLOTCRON_REDIS_PREFIX` or `[coordination] prefix`, in that order; default
    /// [`RedisConfig::DEFAULT_KEY_PREFIX`]), so that several fleets can share one Redis.
    pub key_prefix: String,
}

impl Redis {
    /// The Redis of `slotcron run` with the flags `--redis` (`url`) and `--redis-prefix`
    /// (`prefix`), the `SLOTCRON_REDIS_URL` and `SLOTCRON_REDIS_PREFIX` environment
    /// variables and the jobs file's `[coordination]` table, each by precedence flag,
    /// variable, file; `None` when no URL is given.
    ///
    /// # Errors
    /// A URL or prefix that is set but empty, a prefix without a URL (it would have no
    /// effect), a variable that is not UTF-8, or a malformed URL; the message names where
    /// the value was given.
    pub fn choose(
        url: Option<&str>,
        prefix: Option<&str>,
        file: &Coordination,
    ) -> Result<Option<Self>, String> {
        let url = URL_SOURCES.choose(url, env(REDIS_URL_VAR)?.as_deref(), file.redis.as_deref())?;
        let prefix =
            PREFIX_SOURCES.choose(prefix, env(REDIS_PREFIX_VAR)?.as_deref(), file.prefix.as_deref())?;
        let Some(url) = url else {
            return match prefix {
                Some(prefix) => Err(format!(
                    "{} sets a Redis key prefix, but no Redis is given ({}, {REDIS_URL_VAR} or {})",
                    prefix.source, URL_SOURCES.flag, URL_SOURCES.key
                )),
                None => Ok(None),
            };
        };
        settings::check_redis_url(&url.value).map_err(|e| format!("{}: {e}", url.source))?;
        let (key_prefix, prefix_source) = match prefix {
            Some(Given { value, source }) => (value, source),
            None => (RedisConfig::DEFAULT_KEY_PREFIX.to_owned(), "the default key prefix"),
        };
        // A cluster's keys take their hash tag from the job: the prefix holds no braces.
        match RedisConfig::new(url.value.as_str()).key_prefix(key_prefix.as_str()).check() {
            Err(RedisCoordinatorError::Config { field: "key_prefix", reason }) => {
                Err(format!("{prefix_source}: {reason}"))
            }
            _ => Ok(Some(Self { url, key_prefix })),
        }
    }
}

/// The environment variable `name`, if set.
///
/// # Errors
/// It is not valid UTF-8.
fn env(name: &str) -> Result<Option<String>, String> {
    match std::env::var(name) {
        Ok(value) => Ok(Some(value)),
        Err(VarError::NotPresent) => Ok(None),
        Err(VarError::NotUnicode(_)) => Err(format!("{name} is not valid UTF-8")),
    }
}

/// Connects to the Redis the daemons claim triggers in. Called before the state is
/// opened, so that a Redis that cannot be used leaves no new state behind.
///
/// An unreachable Redis at start is an error (a misconfigured URL, host or password is
/// caught at once); once running, the coordinator reconnects by itself and a trigger
/// that finds Redis down is skipped (fail closed).
///
/// # Errors
/// The reason, naming the URL (without its password), where it was given, and the
/// cause: an unreachable server, a refused password or TLS handshake (the URL's syntax
/// is checked earlier, by [`settings::check_redis_url`]).
pub async fn connect_redis(redis: &Redis) -> Result<Arc<dyn Coordinator>, String> {
    let Redis { url: Given { value: url, source }, key_prefix } = redis;
    let shown = redact(url);
    let config = RedisConfig::new(url.as_str()).key_prefix(key_prefix.as_str());
    let coordinator = RedisCoordinator::connect(config)
        .await
        .map_err(|e| format!("Redis at {shown} (from {source}): {e}"))?;
    tracing::info!(url = %shown, from = %source, key_prefix, "coordination through Redis");
    Ok(Arc::new(coordinator))
}

/// The coordinator when no Redis is given: the PostgreSQL of the state (opened from
/// `state_url`, which the log shows), if it is there; else none, and the daemon says
/// once that it runs in single-replica mode.
pub fn of_state(state: &State, state_url: &StateUrl) -> Option<Arc<dyn Coordinator>> {
    if let Some(database) = &state.postgres {
        tracing::info!(url = %state_url, "coordination through PostgreSQL (the state's database)");
        return Some(Arc::new(PostgresCoordinator::new(database.clone())));
    }
    tracing::info!(
        "single-replica mode: no coordinator (--redis, {REDIS_URL_VAR}, [coordination] redis, or a \
         postgres:// state), so every daemon runs every trigger"
    );
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_wins_over_the_variable_which_wins_over_the_file() {
        for sources in [URL_SOURCES, PREFIX_SOURCES] {
            let chosen =
                |flag, var, key| sources.choose(flag, var, key).map(|g| g.map(|g| (g.value, g.source)));
            let (f, v, k) = (Some("flag"), Some("var"), Some("key"));
            assert_eq!(chosen(f, v, k), Ok(Some(("flag".into(), sources.flag))));
            assert_eq!(chosen(None, v, k), Ok(Some(("var".into(), sources.var))));
            assert_eq!(chosen(None, None, k), Ok(Some(("key".into(), sources.key))));
            assert_eq!(chosen(None, None, None), Ok(None));
        }
    }

    #[test]
    fn an_empty_setting_is_an_error_naming_where_it_was_given() {
        let empty = |flag, var, key| URL_SOURCES.choose(flag, var, key).unwrap_err();
        assert!(empty(Some(""), Some("redis://var"), None).starts_with("--redis is set but empty"));
        assert!(
            empty(None, Some(""), Some("redis://file")).starts_with("SLOTCRON_REDIS_URL is set but empty")
        );
        assert!(empty(None, None, Some("")).starts_with("[coordination] redis is set but empty"));
        let prefix = PREFIX_SOURCES.choose(Some(""), None, None).unwrap_err();
        assert!(prefix.starts_with("--redis-prefix is set but empty"), "{prefix}");
        let newline = PREFIX_SOURCES.choose(None, Some("app:\n"), None).unwrap_err();
        assert_eq!(newline, "SLOTCRON_REDIS_PREFIX contains the control character '\\n'");
    }
}
