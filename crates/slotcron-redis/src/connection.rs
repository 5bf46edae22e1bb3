//! The connection to Redis: one server through a connection manager, or a Redis Cluster
//! through the cluster client; the coordinator's commands are written once, for both.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::future::join_all;
use redis::aio::{ConnectionLike, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::{
    Cmd, ErrorKind, FromRedisValue, Pipeline, RedisError, RedisFuture, RedisResult, ScriptInvocation,
    ServerErrorKind, TlsCertificates, Value,
};

use crate::config::Target;
use crate::keys::KeyLayout;
use crate::single::Single;
use crate::{RedisConfig, RedisCoordinatorError};

/// A multiplexed connection to one server or to a cluster; cheap to clone, and each
/// re-establishes itself after a server restarts.
#[derive(Clone)]
pub(crate) enum Connection {
    /// One server (or a primary), through a `redis` connection manager made again after
    /// a refused reconnection ([`Single`]).
    Single(Arc<Single>),
    /// A Redis Cluster: commands go to the node serving their key's slot.
    Cluster {
        /// For commands that must not be sent twice (claims): its client never sends a
        /// request again by itself, since one sent again after a lost reply could find
        /// its own claim and answer "lost". A lost reply comes back to the coordinator,
        /// which reads the claim back.
        writes: ClusterConnection,
        /// For reads, which are safe to repeat: its client sends a read again by itself
        /// after a dropped connection, once it has reconnected — as the read-back right
        /// after a lost reply needs.
        reads: ClusterConnection,
    },
}

/// How many MOVED replies one script call follows: one per topology change met, which
/// the client learns from the reply before the call is sent again.
const MAX_REDIRECTS: usize = 3;

impl Connection {
    /// Connects as `config` says, and the key layout that goes with the URL: the
    /// single-server layout for one server, hash-tagged keys for a cluster.
    ///
    /// # Errors
    /// [`RedisCoordinatorError::Config`] for an invalid URL, and
    /// [`RedisCoordinatorError::Connect`] if the first connection fails.
    pub async fn open(config: &RedisConfig) -> Result<(Self, KeyLayout), RedisCoordinatorError> {
        let invalid_url =
            |e: RedisError| RedisCoordinatorError::Config { field: "url", reason: e.to_string() };
        let certificates = config
            .tls_root_certificate
            .clone()
            .map(|pem| TlsCertificates { client_tls: None, root_cert: Some(pem) });
        match config.target()? {
            Target::Single(url) => {
                let client = match certificates {
                    Some(certificates) => redis::Client::build_with_tls(url, certificates),
                    None => redis::Client::open(url),
                }
                .map_err(invalid_url)?;
                let manager = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(config.connection_timeout))
                    .set_response_timeout(Some(config.response_timeout))
                    .set_number_of_retries(config.reconnect_retries);
                let connection =
                    Single::connect(client, manager).await.map_err(RedisCoordinatorError::Connect)?;
                let connection = Self::Single(Arc::new(connection));
                connection.probe().await?;
                Ok((connection, KeyLayout::single(&config.key_prefix)))
            }
            Target::Cluster(nodes) => {
                let connect = async |retries: Option<u32>| {
                    let mut builder = ClusterClientBuilder::new(nodes.iter().map(String::as_str))
                        .connection_timeout(config.connection_timeout)
                        .response_timeout(config.response_timeout);
                    if let Some(retries) = retries {
                        builder = builder.retries(retries);
                    }
                    if let Some(certificates) = certificates.clone() {
                        builder = builder.certs(certificates);
                    }
                    let client = builder.build().map_err(invalid_url)?;
                    client.get_async_connection().await.map_err(RedisCoordinatorError::Connect)
                };
                // A redirect (MOVED) still updates the slot map of a client without retries.
                let writes = connect(Some(0)).await?;
                let reads = connect(None).await?;
                let connection = Self::Cluster { writes, reads };
                connection.probe().await?;
                Ok((connection, KeyLayout::cluster(&config.key_prefix)))
            }
        }
    }

    /// Sends `PING`: a connection made without the password a `requirepass` server (or
    /// an ACL user) needs is open, but the server answers every command but `AUTH` with
    /// `NOAUTH`; this makes that an error at start rather than a skipped trigger later.
    async fn probe(&self) -> Result<(), RedisCoordinatorError> {
        redis::cmd("PING").query_async::<()>(&mut self.clone()).await.map_err(RedisCoordinatorError::Connect)
    }
}

impl Connection {
    /// Runs `script` once. In a cluster, a MOVED reply (the slot is served by another node
    /// now; the script did not run) is followed, up to [`MAX_REDIRECTS`] times: the
    /// client, told of the new owner, sends the call there. An ASK (the slot is being
    /// migrated) is not followed: the call fails, and the claim fails closed.
    pub async fn invoke<T: FromRedisValue>(&self, script: &ScriptInvocation<'_>) -> RedisResult<T> {
        let mut connection = self.clone();
        let mut redirects = 0;
        loop {
            match script.invoke_async(&mut connection).await {
                Err(e)
                    if e.kind() == ErrorKind::Server(ServerErrorKind::Moved) && redirects < MAX_REDIRECTS =>
                {
                    redirects += 1;
                    tracing::debug!(error = %e, "claim script redirected");
                }
                result => return result,
            }
        }
    }

    /// The strings at `keys`, one per key (`MGET`, one command; in a cluster the client
    /// splits it into one `MGET` per slot), through the connection for reads.
    pub async fn mget(&self, keys: &[&str]) -> RedisResult<Vec<Option<String>>> {
        let mut mget = redis::cmd("MGET");
        mget.arg(keys);
        match self {
            Self::Single(single) => mget.query_async(&mut single.current()).await,
            Self::Cluster { reads, .. } => mget.query_async(&mut reads.clone()).await,
        }
    }

    /// Whether this is a Redis Cluster connection.
    pub fn is_cluster(&self) -> bool {
        matches!(self, Self::Cluster { .. })
    }
}

impl Connection {
    /// Each of `commands`, one key each, and their answers in order: one pipeline on one
    /// server; in a cluster, whose keys may sit on several nodes (a pipeline must stay on
    /// one slot), one request per command, all in flight at once through the connection
    /// for reads (the client sends those of one node together).
    async fn each<T: FromRedisValue>(&self, commands: Vec<Cmd>) -> RedisResult<Vec<T>> {
        match self {
            Self::Single(single) => {
                let mut pipe = redis::pipe();
                for command in commands {
                    pipe.add_command(command);
                }
                pipe.query_async(&mut single.current()).await
            }
            Self::Cluster { reads, .. } => {
                let each = commands
                    .iter()
                    .map(|command| async move { command.query_async(&mut reads.clone()).await });
                join_all(each).await.into_iter().collect()
            }
        }
    }

    /// `HMGET key fields...` of each key ([`Connection::each`]; a tally per owner: a few).
    pub async fn hmget_each(&self, keys: &[String], fields: &[&str]) -> RedisResult<Vec<Vec<Option<i64>>>> {
        self.each(keys.iter().map(|key| redis::cmd("HMGET").arg(key).arg(fields).clone()).collect()).await
    }

    /// `SCARD key` of each key ([`Connection::each`]; the jobs with `max_runs` a status
    /// shows: a few).
    pub async fn scard_each(&self, keys: &[String]) -> RedisResult<Vec<u64>> {
        self.each(keys.iter().map(|key| redis::cmd("SCARD").arg(key).clone()).collect()).await
    }

    /// `HGETALL` of each key ([`Connection::each`]).
    pub async fn hgetall_each(&self, keys: &[String]) -> RedisResult<Vec<HashMap<String, String>>> {
        self.each(keys.iter().map(|key| redis::cmd("HGETALL").arg(key).clone()).collect()).await
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(single) => {
                let single = single.clone();
                Box::pin(async move {
                    let result = single.current().req_packed_command(cmd).await;
                    if let Err(e) = &result {
                        single.failed(e);
                    }
                    result
                })
            }
            Self::Cluster { writes, .. } => writes.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(single) => {
                let single = single.clone();
                Box::pin(async move {
                    let result = single.current().req_packed_commands(pipeline, offset, count).await;
                    if let Err(e) = &result {
                        single.failed(e);
                    }
                    result
                })
            }
            Self::Cluster { writes, .. } => writes.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(single) => single.current().get_db(),
            Self::Cluster { writes, .. } => writes.get_db(),
        }
    }
}
