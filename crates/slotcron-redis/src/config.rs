//! How to reach Redis and how to lay out the claims there.

use std::fmt;
use std::time::Duration;

use crate::RedisCoordinatorError;

/// The configuration of a [`RedisCoordinator`](crate::RedisCoordinator).
///
/// ```
/// use std::time::Duration;
/// use slotcron_redis::RedisConfig;
///
/// let config = RedisConfig::new("redis://:secret@10.0.0.5:6379/2")
///     .key_prefix("billing:slotcron:")
///     .one_shot_retention(Duration::from_secs(30 * 24 * 3600));
/// ```
#[derive(Clone)]
#[must_use]
pub struct RedisConfig {
    pub(crate) url: String,
    pub(crate) key_prefix: String,
    pub(crate) one_shot_retention: Option<Duration>,
    pub(crate) connection_timeout: Duration,
    pub(crate) response_timeout: Duration,
    pub(crate) reconnect_retries: usize,
    pub(crate) tls_root_certificate: Option<Vec<u8>>,
}

impl RedisConfig {
    /// The default key prefix.
    pub const DEFAULT_KEY_PREFIX: &str = "slotcron:";
    /// The default bound on establishing a connection.
    pub const DEFAULT_CONNECTION_TIMEOUT: Duration = Duration::from_secs(1);
    /// The default bound on waiting for one reply.
    pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_millis(500);
    /// The default number of extra connection attempts after a connection is lost.
    pub const DEFAULT_RECONNECT_RETRIES: usize = 1;

    /// A configuration for the server at `url`, with the defaults below.
    ///
    /// URL forms, as the `redis` crate parses them:
    /// - `redis://[[user]:password@]host[:port][/db]` — TCP; port 6379 and database 0
    ///   by default; user and password percent-encoded;
    /// - `rediss://...` — the same over TLS (rustls), verifying the server's
    ///   certificate against the system's root certificates, or against
    ///   [`RedisConfig::tls_root_certificate`];
    /// - `redis+unix:///path/to/redis.sock[?db=N&user=U&pass=P]` (also `unix://`) — a
    ///   Unix domain socket.
    ///
    /// The URL is checked by [`RedisCoordinator::connect`](crate::RedisCoordinator::connect).
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            key_prefix: Self::DEFAULT_KEY_PREFIX.to_owned(),
            one_shot_retention: None,
            connection_timeout: Self::DEFAULT_CONNECTION_TIMEOUT,
            response_timeout: Self::DEFAULT_RESPONSE_TIMEOUT,
            reconnect_retries: Self::DEFAULT_RECONNECT_RETRIES,
            tls_root_certificate: None,
        }
    }

    /// Prepended to every key, so several applications can share one Redis
    /// (default `slotcron:`). The keys are `{prefix}{job}:{trigger}` per trigger (the
    /// trigger in RFC 3339 UTC; `{prefix}{job}` for an `after` job) and
    /// `{prefix}fencing:{job}` per job; job names contain no `:`, so the two never meet.
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = prefix.into();
        self
    }

    /// How long the claim of a one-shot (`at` / `after`) trigger is kept. Default: for
    /// ever — the job runs at most once across the fleet, ever; with a retention it may
    /// run again when a replica starts after the retention has passed. Must be longer than
    /// zero; rounded up to whole milliseconds.
    pub fn one_shot_retention(mut self, retention: Duration) -> Self {
        self.one_shot_retention = Some(retention);
        self
    }

    /// How long establishing a connection may take (TCP, TLS, AUTH, SELECT), per attempt
    /// (default 1 s). Must be longer than zero.
    pub fn connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = timeout;
        self
    }

    /// How long to wait for one reply before the connection counts as lost (default
    /// 500 ms, below the scheduler's default claim timeout of 1 s). A claim whose reply
    /// timed out may still have been made: the coordinator reads the claim back before it
    /// decides. Must be longer than zero.
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// After a lost connection, how many more connection attempts one reconnection makes,
    /// with jittered exponential back-off from 100 ms (default 1). Every claim made while
    /// disconnected starts a new reconnection, so a few retries suffice; more retries
    /// make claims wait longer while Redis is down (the scheduler's claim timeout bounds
    /// that wait).
    pub fn reconnect_retries(mut self, retries: usize) -> Self {
        self.reconnect_retries = retries;
        self
    }

    /// Trusts this root certificate (PEM) for `rediss://` instead of the system's roots:
    /// for a Redis whose certificate comes from a private certificate authority.
    pub fn tls_root_certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.tls_root_certificate = Some(pem.into());
        self
    }

    /// Checks the settings that need no server.
    pub(crate) fn validate(&self) -> Result<(), RedisCoordinatorError> {
        let positive = |field: &'static str, value: Option<Duration>| match value {
            Some(Duration::ZERO) => {
                Err(RedisCoordinatorError::Config { field, reason: "must be longer than zero".into() })
            }
            _ => Ok(()),
        };
        positive("connection_timeout", Some(self.connection_timeout))?;
        positive("response_timeout", Some(self.response_timeout))?;
        positive("one_shot_retention", self.one_shot_retention)
    }
}

impl fmt::Debug for RedisConfig {
    /// Leaves the URL out: it may hold a password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &"<redacted>")
            .field("key_prefix", &self.key_prefix)
            .field("one_shot_retention", &self.one_shot_retention)
            .field("connection_timeout", &self.connection_timeout)
            .field("response_timeout", &self.response_timeout)
            .field("reconnect_retries", &self.reconnect_retries)
            .field("tls_root_certificate", &self.tls_root_certificate.as_ref().map(|_| "<set>"))
            .finish()
    }
}
