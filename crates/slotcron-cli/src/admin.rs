//! `slotcron run --admin ADDR`: the admin HTTP API, status page and `/metrics` of the
//! daemon ([`slotcron_admin`]), on a TCP address or a Unix socket.

use std::path::PathBuf;
use std::sync::Arc;

use slotcron::{CancellationToken, Scheduler};
use slotcron::{OutputStore, Store};
use slotcron_admin::{Admin, PrometheusMetrics, ReloadStatus};
use tokio::net::{TcpListener, UnixListener};

use crate::admin_token::{self, READ_TOKEN_VAR, TOKEN_VAR};
use crate::cli::RunArgs;
use crate::settings::Listen;
use crate::state_jobs_reader::StateJobReader;

/// The environment variable naming the admin address when `--admin` is not given.
pub const ADMIN_VAR: &str = "SLOTCRON_ADMIN";

/// How the admin server is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminSettings {
    /// Where it listens.
    pub listen: Listen,
    /// Extra names the `Host` header may carry (`--admin-host`); checked only without a
    /// token.
    pub hosts: Vec<String>,
    /// The bearer token of full access (`SLOTCRON_ADMIN_TOKEN[_FILE]`), if set.
    pub token: Option<String>,
    /// The read-only bearer token (`SLOTCRON_ADMIN_READ_TOKEN[_FILE]`), if set; only
    /// beside [`Self::token`].
    pub read_token: Option<String>,
}

impl AdminSettings {
    /// The admin settings of `slotcron run`: the address from `--admin`, else
    /// `SLOTCRON_ADMIN`, else the jobs file's `[admin] listen`; `None`: no admin server.
    ///
    /// # Errors
    /// A malformed address, a token [`tokens`] refuses, or an address other machines can
    /// reach without `SLOTCRON_ADMIN_TOKEN` set.
    pub fn choose(args: &RunArgs, file: Option<&str>) -> Result<Option<Self>, String> {
        let var = std::env::var(ADMIN_VAR).ok();
        let given =
            [(args.admin.as_deref(), "--admin"), (var.as_deref(), ADMIN_VAR), (file, "[admin] listen")]
                .into_iter()
                .find_map(|(value, source)| value.map(|value| (value, source)));
        let Some((text, source)) = given else { return Ok(None) };
        let listen = Listen::parse(text).map_err(|e| format!("{source}: {e}"))?;
        let (token, read_token) = tokens()?;
        if token.is_none() && !listen.is_local() {
            return Err(format!(
                "{source} {text}: other machines can reach this address; set {TOKEN_VAR} so that \
                 requests need a bearer token, or listen on a loopback address or unix:PATH"
            ));
        }
        Ok(Some(Self { listen, hosts: args.admin_host.clone(), token, read_token }))
    }

    /// Binds the address: the server ready to serve.
    ///
    /// # Errors
    /// The address cannot be bound; the message names it.
    pub async fn bind(&self) -> Result<Bound, String> {
        let (listener, hosts) = match &self.listen {
            Listen::Tcp(addr) => {
                let listener = TcpListener::bind(addr)
                    .await
                    .map_err(|e| format!("--admin {addr}: cannot listen: {e}"))?;
                let local = listener.local_addr().map_err(|e| format!("--admin {addr}: {e}"))?;
                let mut hosts = vec![local.to_string()];
                if local.ip().is_loopback() {
                    hosts.push(format!("localhost:{}", local.port()));
                }
                hosts.extend(self.hosts.iter().cloned());
                tracing::info!(address = %local, "admin API listening");
                (Listener::Tcp(listener), hosts)
            }
            Listen::Unix(path) => {
                remove_stale_socket(path);
                let listener = UnixListener::bind(path)
                    .map_err(|e| format!("--admin unix:{}: cannot listen: {e}", path.display()))?;
                tracing::info!(socket = %path.display(), "admin API listening");
                // Browsers cannot reach a Unix socket: no Host check.
                (Listener::Unix(listener, path.clone()), Vec::new())
            }
        };
        Ok(Bound { listener, hosts, token: self.token.clone(), read_token: self.read_token.clone() })
    }
}

/// The full and the read-only token, each from its variable or its `_FILE`
/// ([`admin_token::from_env`]).
///
/// # Errors
/// What [`admin_token::from_env`] refuses; a read-only token without the full one (a
/// server nobody could steer through), or equal to it (it would open everything).
fn tokens() -> Result<(Option<String>, Option<String>), String> {
    let token = admin_token::from_env(TOKEN_VAR)?;
    let read_token = admin_token::from_env(READ_TOKEN_VAR)?;
    match (&token, &read_token) {
        (None, Some(_)) => Err(format!(
            "{READ_TOKEN_VAR} needs {TOKEN_VAR}: set the full token too (pause, resume, trigger and \
             backfill need it), or give the read-only token as {TOKEN_VAR}"
        )),
        (Some(token), Some(read)) if token == read => Err(format!(
            "{READ_TOKEN_VAR} is the same as {TOKEN_VAR}: the read-only token would open everything; \
             give it a value of its own"
        )),
        _ => Ok((token, read_token)),
    }
}

/// A socket file left by a daemon that died: removed so that the address can be bound
/// again (anything else at the path is left alone, and binding fails).
fn remove_stale_socket(path: &std::path::Path) {
    use std::os::unix::fs::FileTypeExt;
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
        let _ = std::fs::remove_file(path);
    }
}

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, PathBuf),
}

/// A bound admin address.
pub struct Bound {
    listener: Listener,
    hosts: Vec<String>,
    token: Option<String>,
    read_token: Option<String>,
}

impl Bound {
    /// Serves the admin API over `scheduler` until `stop` fires; the metrics from
    /// `metrics`, run output from `outputs`, the last reload from `reloads`, and (with
    /// `--jobs-from-state`) the changes of the jobs kept in `state_jobs`.
    pub async fn serve(
        self,
        scheduler: Scheduler,
        metrics: PrometheusMetrics,
        outputs: Arc<dyn OutputStore>,
        reloads: ReloadStatus,
        state_jobs: Option<Arc<dyn Store>>,
        stop: CancellationToken,
    ) {
        let mut admin =
            Admin::new(scheduler).metrics(move || metrics.render()).outputs(outputs).reloads(reloads);
        if let Some(store) = state_jobs {
            admin = admin.state_jobs(store, Arc::new(StateJobReader));
        }
        if let Some(token) = self.token {
            admin = admin.token(token);
        }
        if let Some(token) = self.read_token {
            admin = admin.read_token(token);
        }
        let router = admin.allowed_hosts(self.hosts).router();
        let shutdown = stop.cancelled_owned();
        let served = match self.listener {
            Listener::Tcp(listener) => axum::serve(listener, router).with_graceful_shutdown(shutdown).await,
            Listener::Unix(listener, path) => {
                let served = axum::serve(listener, router).with_graceful_shutdown(shutdown).await;
                let _ = std::fs::remove_file(path);
                served
            }
        };
        if let Err(e) = served {
            tracing::error!("the admin API stopped: {e}");
        }
    }
}
