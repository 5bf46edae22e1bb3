//! The coordinator the fleet runs against: its connections (one per replica), its own
//! command counter where it has one, and the cleanup of what the run stored.

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::LocalBoxFuture;
use slotcron::{BoxError, Coordinator};
use slotcron_postgres::{PostgresCoordinator, PostgresDatabase};
use slotcron_redis::{RedisConfig, RedisCoordinator};
use slotcron_testkit::redis_stats;

/// A backend and the namespace this run uses in it.
pub enum Backend {
    /// A Redis server or a Redis Cluster (`redis+cluster://`), keys under `prefix`.
    Redis { url: String, prefix: String },
    /// A PostgreSQL database, tables in `schema`.
    Postgres { url: String, schema: String },
}

impl Backend {
    /// The backend of `url`, with a namespace of this process's own.
    ///
    /// # Errors
    /// A Redis URL the coordinator refuses (a cluster URL without nodes, say), or a URL
    /// of neither Redis (`redis://`, `rediss://`, a cluster's `redis+cluster://`,
    /// `rediss+cluster://`) nor PostgreSQL (`postgres://`, `postgresql://`).
    pub fn new(url: &str) -> Result<Self, String> {
        let pid = std::process::id();
        let scheme = url.split_once("://").map_or("", |(scheme, _)| scheme);
        match scheme {
            "redis" | "rediss" | "redis+cluster" | "rediss+cluster" => {
                // A URL the coordinator would refuse is bad input here, not a failed connection.
                RedisConfig::new(url).servers().map_err(|e| e.to_string())?;
                Ok(Self::Redis { url: url.to_owned(), prefix: format!("slotcron-bench:{pid}:") })
            }
            "postgres" | "postgresql" => {
                Ok(Self::Postgres { url: url.to_owned(), schema: format!("slotcron_bench_{pid}") })
            }
            _ => Err(format!("{url:?} is neither a redis:// (redis+cluster://) nor a postgres:// URL")),
        }
    }

    /// What the figures line calls it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Redis { url, .. } if url.contains("+cluster://") => "redis cluster",
            Self::Redis { .. } => "redis",
            Self::Postgres { .. } => "postgres",
        }
    }

    /// Connects once, before the replicas do: a backend that cannot be reached (or
    /// refuses) is an error here, not a replica's thread that ends with a panic.
    ///
    /// # Errors
    /// The backend cannot be reached, or refuses the connection.
    pub fn check(&self) -> Result<(), BoxError> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        runtime.block_on(async {
            match self {
                Self::Redis { url, prefix } => {
                    let config = RedisConfig::new(url.as_str()).key_prefix(prefix.as_str());
                    RedisCoordinator::connect(config).await?;
                }
                Self::Postgres { url, .. } => {
                    let (_client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
                    drop(connection);
                }
            }
            Ok(())
        })
    }

    /// Replica `index`'s coordinator, on a connection of its own; panics (ending the
    /// replica's thread, and the run) if it cannot connect.
    pub fn connect(&self, _index: usize) -> LocalBoxFuture<'static, Arc<dyn Coordinator>> {
        match self {
            Self::Redis { url, prefix } => {
                let config = RedisConfig::new(url.as_str()).key_prefix(prefix.as_str());
                async move {
                    let coordinator = RedisCoordinator::connect(config).await.expect("connect to Redis");
                    Arc::new(coordinator) as Arc<dyn Coordinator>
                }
                .boxed_local()
            }
            Self::Postgres { url, schema } => {
                let (url, schema) = (url.clone(), schema.clone());
                async move {
                    let database = PostgresDatabase::open(&url, &schema).await.expect("open the database");
                    Arc::new(PostgresCoordinator::new(database)) as Arc<dyn Coordinator>
                }
                .boxed_local()
            }
        }
    }

    /// The backend's own count of the commands it ran, where it keeps one (Redis' `INFO
    /// commandstats`, summed over a cluster's nodes); a count that cannot be read is 0.
    pub fn counter(&self) -> Option<impl Fn() -> u64 + use<'_>> {
        match self {
            Self::Redis { url, .. } => {
                Some(move || servers(url).iter().map(|url| redis_stats::commands_run(url).unwrap_or(0)).sum())
            }
            Self::Postgres { .. } => None,
        }
    }

    /// The memory the backend holds for its data now, in bytes, where it tells
    /// (Redis' `used_memory`, summed over a cluster's nodes); `None` for PostgreSQL or
    /// when it cannot be read.
    pub fn used_memory(&self) -> Option<u64> {
        match self {
            Self::Redis { url, .. } => {
                servers(url).iter().map(|url| redis_stats::used_memory(url).ok()).sum()
            }
            Self::Postgres { .. } => None,
        }
    }

    /// Removes what the run stored: the Redis keys under its prefix, or its PostgreSQL
    /// schema.
    ///
    /// # Errors
    /// The backend could not be reached, or refused.
    pub fn clean_up(&self) -> Result<(), BoxError> {
        match self {
            Self::Redis { url, prefix } => {
                for url in servers(url) {
                    redis_stats::delete_keys(&url, &[format!("{prefix}*")])?;
                }
                Ok(())
            }
            Self::Postgres { url, schema } => {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
                runtime.block_on(async {
                    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
                    tokio::spawn(connection);
                    client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE")).await?;
                    Ok(())
                })
            }
        }
    }
}

/// The servers of a Redis URL: the one server, or each node of a cluster's (as the
/// coordinator reads the URL; [`Backend::new`] has refused a URL it cannot read).
fn servers(url: &str) -> Vec<String> {
    RedisConfig::new(url).servers().unwrap_or_else(|_| vec![url.to_owned()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_url_is_read_as_its_nodes_and_a_server_url_as_itself() {
        assert_eq!(servers("redis+cluster://u:p@10.0.0.1:7000,10.0.0.2:7001").len(), 2);
        assert_eq!(servers("redis://127.0.0.1:6379"), ["redis://127.0.0.1:6379"]);
    }

    #[test]
    fn a_cluster_url_without_nodes_is_refused_as_bad_input() {
        let Err(e) = Backend::new("redis+cluster://") else { panic!("accepted") };
        assert!(e.contains("node 1 of the cluster URL is empty"), "{e}");
    }
}
