//! One Redis server through a `redis` connection manager, made again when a
//! reconnection's authentication fails.
//!
//! The manager reconnects by itself after a dropped connection; but when the new
//! connection's `AUTH` is refused (the password was rotated while it was down), it keeps
//! answering that failure and never tries again, even once the server takes the URL's
//! credentials again. A call that fails so here starts one new manager in the background
//! (at most one at a time, one a second), which replaces the old one once it connects.

use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{ErrorKind, RedisError};

/// The least time between two new managers.
const REMAKE_EVERY: Duration = Duration::from_secs(1);

/// A connection manager that can be made again.
pub(crate) struct Single {
    client: redis::Client,
    config: ConnectionManagerConfig,
    manager: RwLock<ConnectionManager>,
    /// When a new manager was last started, if ever; locked while one is being made.
    remade: Mutex<Option<Instant>>,
}

impl Single {
    /// Connects through `client` with `config`.
    ///
    /// # Errors
    /// The first connection failed.
    pub async fn connect(client: redis::Client, config: ConnectionManagerConfig) -> Result<Self, RedisError> {
        let manager = ConnectionManager::new_with_config(client.clone(), config.clone()).await?;
        Ok(Self { client, config, manager: RwLock::new(manager), remade: Mutex::new(None) })
    }

    /// The manager to send a command through (a cheap clone).
    pub fn current(&self) -> ConnectionManager {
        self.manager.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// After a call failed with `error`: if a reconnection's authentication failed, makes
    /// a new manager in the background (unless one was started less than
    /// [`REMAKE_EVERY`] ago), which replaces this one once it connects.
    pub fn failed(self: &Arc<Self>, error: &RedisError) {
        if error.kind() != ErrorKind::AuthenticationFailed {
            return;
        }
        {
            let mut remade = self.remade.lock().unwrap_or_else(|p| p.into_inner());
            if remade.is_some_and(|at| at.elapsed() < REMAKE_EVERY) {
                return;
            }
            *remade = Some(Instant::now());
        }
        let single = self.clone();
        tokio::spawn(async move {
            match ConnectionManager::new_with_config(single.client.clone(), single.config.clone()).await {
                Ok(manager) => {
                    *single.manager.write().unwrap_or_else(|p| p.into_inner()) = manager;
                    tracing::info!("Redis takes the credentials again: connected anew");
                }
                Err(e) => tracing::debug!("Redis still refuses the credentials: {e}"),
            }
        });
    }
}
