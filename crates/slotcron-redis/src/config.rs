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
    ///   Unix domain socket;
    /// - `redis+cluster://[[user]:password@]host:port[,host:port…]` — a Redis Cluster,
    ///   found through any of the nodes listed (the client learns the others from them);
    ///   `rediss+cluster://…` over TLS. The user and password go to every node; a
    ///   cluster has database 0 only, so the URL has no path. Its keys carry the job's
    ///   hash tag, as [`RedisConfig::key_prefix`] shows.
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
    ///
    /// In a Redis Cluster (a `redis+cluster://` URL) each key of a job carries the job
    /// name as its hash tag, so that one claim's keys sit in one slot:
    /// `{prefix}{{job}}:{trigger}` (`{prefix}{{job}}` for an `after` job) and
    /// `{prefix}{{job}}:fencing`; there the prefix must hold no `{` or `}`.
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
    /// decides. Must be longer than zero. In a cluster it bounds each reply of a node.
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// After a lost connection, how many more connection attempts one reconnection makes,
    /// with jittered exponential back-off from 100 ms (default 1). Every claim made while
    /// disconnected starts a new reconnection, so a few retries suffice; more retries
    /// make claims wait longer while Redis is down (the scheduler's claim timeout bounds
    /// that wait). One server only: a cluster client reconnects to a node when a claim
    /// needs it.
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

    /// Checks the settings without connecting: the URL's syntax (all the forms
    /// [`RedisConfig::new`] lists), a key prefix without braces for a cluster, and the
    /// durations. [`RedisCoordinator::connect`](crate::RedisCoordinator::connect) checks
    /// the same first.
    ///
    /// # Errors
    /// [`RedisCoordinatorError::Config`] naming the setting, with a reason that never
    /// holds the URL's password.
    pub fn check(&self) -> Result<(), RedisCoordinatorError> {
        if let Target::Single(url) = self.target()? {
            redis::IntoConnectionInfo::into_connection_info(url)
                .map_err(|e| RedisCoordinatorError::Config { field: "url", reason: e.to_string() })?;
        }
        self.validate()
    }

    /// The URL of each server the coordinator talks to: the one server's URL as given,
    /// or one `redis://` (`rediss://`) URL per node of a `redis+cluster://` URL, each
    /// with the URL's credentials (for tools that read every node, e.g. `INFO`).
    ///
    /// # Errors
    /// A cluster URL that [`RedisConfig::new`] would refuse (no nodes, an empty node, a
    /// node without a port, a path or options), `RedisCoordinatorError::Config`.
    pub fn servers(&self) -> Result<Vec<String>, RedisCoordinatorError> {
        Ok(match self.target()? {
            Target::Single(url) => vec![url.to_owned()],
            Target::Cluster(nodes) => nodes,
        })
    }

    /// The server or the cluster nodes of the URL.
    pub(crate) fn target(&self) -> Result<Target<'_>, RedisCoordinatorError> {
        let target = Target::parse(&self.url)
            .map_err(|reason| RedisCoordinatorError::Config { field: "url", reason })?;
        if matches!(target, Target::Cluster(_)) && self.key_prefix.contains(['{', '}']) {
            return Err(RedisCoordinatorError::Config {
                field: "key_prefix",
                reason: format!(
                    "{:?} holds a brace; in a Redis Cluster the keys' hash tag is the job's name, \
                     so the prefix must hold no {{ or }}",
                    self.key_prefix
                ),
            });
        }
        Ok(target)
    }

    /// Checks the durations.
    fn validate(&self) -> Result<(), RedisCoordinatorError> {
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

/// What a URL points at.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Target<'a> {
    /// One server: the URL as given.
    Single(&'a str),
    /// A cluster: one `redis://` (or `rediss://`) URL per listed node.
    Cluster(Vec<String>),
}

impl<'a> Target<'a> {
    /// The cluster schemes, and the node scheme each stands for.
    const CLUSTER_SCHEMES: [(&'static str, &'static str); 2] =
        [("redis+cluster://", "redis://"), ("rediss+cluster://", "rediss://")];

    /// Reads a URL; a single server's URL is left to the `redis` crate.
    ///
    /// # Errors
    /// A cluster URL without nodes, with an empty node, a node without a port, or a path
    /// or options; the reason names the node without the URL's password.
    fn parse(url: &'a str) -> Result<Self, String> {
        let Some((rest, scheme)) =
            Self::CLUSTER_SCHEMES.iter().find_map(|(cluster, node)| Some((url.strip_prefix(cluster)?, node)))
        else {
            return Ok(Self::Single(url));
        };
        let (user_info, hosts) = match rest.rsplit_once('@') {
            Some((user_info, hosts)) => (format!("{user_info}@"), hosts),
            None => (String::new(), rest),
        };
        if let Some(c) = hosts.chars().find(|c| matches!(c, '/' | '?' | '#')) {
            return Err(format!(
                "a cluster URL lists HOST:PORT,HOST:PORT… only; {c:?} starts a path or options, \
                 which a cluster does not take (it has database 0 only)"
            ));
        }
        hosts
            .split(',')
            .enumerate()
            .map(|(n, host)| {
                let node = n + 1;
                let port = host.rsplit_once(':').map(|(_, port)| port);
                if host.is_empty() {
                    Err(format!("node {node} of the cluster URL is empty"))
                } else if port.is_none_or(|port| port.parse::<u16>().is_err()) {
                    Err(format!("node {node} of the cluster URL, {host:?}, needs HOST:PORT"))
                } else {
                    let url = format!("{scheme}{user_info}{host}");
                    redis::IntoConnectionInfo::into_connection_info(url.as_str())
                        .map(|_| url)
                        .map_err(|e| format!("node {node} of the cluster URL, {host:?}: {e}"))
                }
            })
            .collect::<Result<_, _>>()
            .map(Self::Cluster)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_url_lists_its_nodes_with_the_credentials_on_each() {
        let nodes = |url| match Target::parse(url) {
            Ok(Target::Cluster(nodes)) => nodes,
            other => panic!("{url}: {other:?}"),
        };
        assert_eq!(nodes("redis+cluster://10.0.0.1:7000"), ["redis://10.0.0.1:7000"]);
        assert_eq!(
            nodes("rediss+cluster://app:s3cret@a:7000,b:7001,[::1]:7002"),
            ["rediss://app:s3cret@a:7000", "rediss://app:s3cret@b:7001", "rediss://app:s3cret@[::1]:7002"]
        );
        assert_eq!(Target::parse("redis://h:6379/2"), Ok(Target::Single("redis://h:6379/2")));
    }

    #[test]
    fn a_malformed_cluster_url_names_the_node_without_the_password() {
        let cases = [
            ("redis+cluster://", "node 1 of the cluster URL is empty"),
            ("redis+cluster://:pw@a:1,,b:2", "node 2 of the cluster URL is empty"),
            ("redis+cluster://:pw@a:1,b", "node 2 of the cluster URL, \"b\", needs HOST:PORT"),
            ("redis+cluster://:pw@a:notaport", "node 1 of the cluster URL, \"a:notaport\", needs HOST:PORT"),
            ("redis+cluster://:pw@a:1/2", "a cluster URL lists HOST:PORT,HOST:PORT… only; '/' starts"),
        ];
        for (url, expected) in cases {
            let error = Target::parse(url).unwrap_err();
            assert!(error.starts_with(expected), "{url}: {error}");
            assert!(!error.contains("pw"), "{error}");
        }
    }

    #[test]
    fn a_brace_in_the_prefix_is_refused_for_a_cluster_only() {
        let braced = RedisConfig::new("redis+cluster://a:7000").key_prefix("{app}:");
        let error = braced.target().unwrap_err().to_string();
        assert!(error.starts_with("redis coordinator: key_prefix: \"{app}:\" holds a brace"), "{error}");
        assert!(RedisConfig::new("redis://a:6379").key_prefix("{app}:").target().is_ok());
    }
}
