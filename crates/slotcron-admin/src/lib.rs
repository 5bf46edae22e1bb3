//! The slotcron admin HTTP API and status page: an [`axum::Router`] over a
//! [`Scheduler`], which the `slotcron` daemon serves with `--admin` and a service
//! embedding the library can mount in its own server.
//!
//! ```no_run
//! use slotcron::Scheduler;
//! use slotcron_admin::Admin;
//!
//! # async fn example(scheduler: Scheduler) -> std::io::Result<()> {
//! let router = Admin::new(scheduler).router();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:9090").await?;
//! axum::serve(listener, router).await
//! # }
//! ```
//!
//! Endpoints (JSON; errors are `{"error": "…"}` with a 4xx or 5xx status):
//!
//! | request | answer |
//! |---|---|
//! | `GET /` | the status page (one static HTML file reading the API) |
//! | `GET /healthz` | 200 while [`Scheduler::run`] runs, else 503 |
//! | `GET /readyz` | 200 while the coordinator and the state answer, else 503 |
//! | `GET /metrics` | the Prometheus text exposition, when [`Admin::metrics`] gave a renderer |
//! | `GET /api/v1/jobs` | every job: name, schedule, English, zone, policies, next fire times, last run |
//! | `GET /api/v1/jobs/{name}` | one job, the same fields |
//! | `GET /api/v1/jobs/{name}/runs?limit=N&before=T` | its run records, newest trigger first |
//! | `GET /api/v1/jobs/{name}/runs/{trigger}/output` | what that run wrote, per instance |
//! | `POST /api/v1/jobs/{name}/pause` | pauses the job across the fleet |
//! | `POST /api/v1/jobs/{name}/resume` | resumes it; body `{"catch_up": bool}` (default false) |
//! | `POST /api/v1/jobs/{name}/trigger` | queues one manual run; header `Idempotency-Key` optional |
//! | `POST /api/v1/jobs/{name}/backfill` | runs each trigger of `{"from": T1, "to": T2}` (≤ 1,000) |
//!
//! Every `POST` needs `Content-Type: application/json` (415 otherwise), a body of at most
//! 1 MiB (413) that is a JSON object of the endpoint's fields (400 otherwise; an empty
//! body for an endpoint whose fields are optional), and the same token as the reads; a
//! refused request changes nothing.
//!
//! Access ([`Admin::token`], [`Admin::allowed_hosts`]): with a token, every request but
//! `/healthz`, `/metrics` and the static page `/` needs `Authorization: Bearer TOKEN`
//! (compared in constant time), else 401; with allowed hosts, a request whose `Host` is
//! not one of them gets 403 (a defence against DNS rebinding: a web page cannot make a
//! browser send its own host name to a loopback server and read the answer).

mod access;
mod error;
mod health;
mod jobs;
mod page;
mod runs;
mod steer;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use slotcron::OutputStore;
use slotcron::Scheduler;

pub use access::Access;
pub use error::ApiError;
pub use steer::{IDEMPOTENCY_KEY, MAX_BODY};

/// Renders the metrics exposition (e.g. `PrometheusHandle::render`).
pub type RenderMetrics = Arc<dyn Fn() -> String + Send + Sync>;

/// What the handlers share.
#[derive(Clone)]
struct AdminState {
    scheduler: Scheduler,
    metrics: Option<RenderMetrics>,
    outputs: Option<Arc<dyn OutputStore>>,
}

/// Builds the admin [`Router`] over a scheduler.
#[must_use]
pub struct Admin {
    state: AdminState,
    access: Access,
}

impl Admin {
    /// The API over `scheduler`: no metrics, no run output, no access control.
    pub fn new(scheduler: Scheduler) -> Self {
        Self { state: AdminState { scheduler, metrics: None, outputs: None }, access: Access::default() }
    }

    /// Serves `GET /metrics` with what `render` returns, as Prometheus text format 0.0.4
    /// (without it, `/metrics` is 404). Each request first flushes the scheduler's
    /// metrics ([`Scheduler::flush_metrics`]) so the exposition holds every record
    /// written so far.
    pub fn metrics(mut self, render: impl Fn() -> String + Send + Sync + 'static) -> Self {
        self.state.metrics = Some(Arc::new(render));
        self
    }

    /// Where run output is read from for `…/runs/{trigger}/output` (without it, 404).
    pub fn outputs(mut self, outputs: Arc<dyn OutputStore>) -> Self {
        self.state.outputs = Some(outputs);
        self
    }

    /// Requires `Authorization: Bearer TOKEN` on every request but `/healthz`,
    /// `/metrics` and `/` (default: no token).
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.access.token = Some(token.into());
        self
    }

    /// Answers only requests whose `Host` header is one of `hosts` (`name` or
    /// `name:port`; a name without a port matches any port; compared ignoring ASCII
    /// case). Default: any host.
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = String>) -> Self {
        self.access.hosts = hosts.into_iter().collect();
        self
    }

    /// The router: mount it at `/` of a server (it owns `/`, `/healthz`, `/readyz`,
    /// `/metrics` and `/api/v1/`).
    pub fn router(self) -> Router {
        let access = Arc::new(self.access);
        let open = Router::new()
            .route("/", get(page::status_page))
            .route("/healthz", get(health::healthz))
            .route("/metrics", get(health::metrics));
        let guarded = Router::new()
            .route("/readyz", get(health::readyz))
            .nest("/api/v1", api_v1())
            .layer(axum::middleware::from_fn_with_state(access.clone(), access::require_token));
        open.merge(guarded)
            .fallback(error::not_found)
            .layer(axum::middleware::from_fn_with_state(access, access::check_host))
            .layer(axum::middleware::from_fn(error::json_client_errors))
            .with_state(self.state)
    }
}

/// The `/api/v1` routes, reads and writes, behind one token check.
fn api_v1() -> Router<AdminState> {
    Router::new()
        .route("/jobs", get(jobs::list))
        .route("/jobs/{name}", get(jobs::one))
        .route("/jobs/{name}/runs", get(runs::list))
        .route("/jobs/{name}/runs/{trigger}/output", get(runs::output))
        .route("/jobs/{name}/pause", post(steer::pause))
        .route("/jobs/{name}/resume", post(steer::resume))
        .route("/jobs/{name}/trigger", post(steer::trigger))
        .route("/jobs/{name}/backfill", post(steer::backfill))
        .layer(DefaultBodyLimit::max(MAX_BODY))
}
