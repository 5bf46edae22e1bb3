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
//! Endpoints (JSON; errors are `{"error": "…"}` with a 4xx or 5xx status), and what
//! each needs when [`Admin::token`] is set (*full*: the full token; *read*: either
//! token; *none*: no token):
//!
//! | request | answer | token |
//! |---|---|---|
//! | `GET /` | the status page (one static HTML file reading the API) | none |
//! | `GET /healthz` | 200 while [`Scheduler::run`] runs, else 503 | none |
//! | `GET /readyz` | 200 while the coordinator and the state answer, else 503 | none |
//! | `GET /metrics` | the Prometheus text exposition, when [`Admin::metrics`] gave a renderer | none |
//! | `GET /openapi.json` | the OpenAPI 3.1 document of these endpoints, generated from the handlers | none |
//! | `GET /api/v1/status` | the last reload of the jobs (`{"last_reload": …}`, see [`ReloadStatus`]) | read |
//! | `GET /api/v1/fleet` | the fleet's live members (instance, host, version, started, admin address, last heartbeat, runs in flight, jobs owned, shared settings); `members` is `null` for a daemon alone | read |
//! | `GET /api/v1/jobs?limit&cursor&q&state&outcome&sort&order` | a page of the jobs: name, schedule, English, zone, policies, next fire times, last run; `ETag`, 304 | read |
//! | `GET /api/v1/jobs/{name}` | one job, the same fields | read |
//! | `GET /api/v1/jobs/{name}/runs?limit=N&before=T&scope=fleet\|member` | its run records, newest trigger first; by default merged with those of the other live members that keep a ledger of their own, naming the members that did not answer | read |
//! | `GET /api/v1/jobs/{name}/runs/{trigger}/output` | what that run wrote, per instance | read |
//! | `POST /api/v1/jobs/{name}/pause` | pauses the job across the fleet | full |
//! | `POST /api/v1/jobs/{name}/resume` | resumes it; body `{"catch_up": bool}` (default false) | full |
//! | `POST /api/v1/jobs/{name}/trigger` | queues one manual run; header `Idempotency-Key` optional | full |
//! | `POST /api/v1/jobs/{name}/backfill` | runs each trigger of `{"from": T1, "to": T2}` (≤ 1,000) | full |
//! | `POST /api/v1/jobs/{name}/runs/{trigger}/cancel?note=TEXT` | stops that run on whichever member holds it, recorded `cancelled` ([`Scheduler::cancel`]); 404 for no such run, 409 for one that ended | full |
//! | `PUT /api/v1/jobs/{name}?note=TEXT` | stores the job in the shared state; body: its `[[job]]` fields, `application/toml` or `application/json` (see [`Admin::state_jobs`]) | full |
//! | `DELETE /api/v1/jobs/{name}?note=TEXT` | removes the job from the shared state | full |
//! | `GET /api/v1/audit?job&limit` | the changes `PUT` and `DELETE` made, newest first | read |
//!
//! Every `POST` needs `Content-Type: application/json` (415 otherwise), a body of at most
//! 1 MiB (413) that is a JSON object of the endpoint's fields (400 otherwise; an empty
//! body for an endpoint whose fields are optional), and the full token; a refused request
//! changes nothing.
//!
//! Access ([`Admin::token`], [`Admin::read_token`], [`Admin::allowed_hosts`]):
//!
//! | server | `/healthz`, `/readyz` | `/metrics`, `/`, `/openapi.json` | `/api/v1/` reads | `/api/v1/` writes |
//! |---|---|---|---|---|
//! | no token, no hosts | any request | any request | any request | any request |
//! | no token, allowed hosts | any `Host` | an allowed `Host`, else 403 | an allowed `Host`, else 403 | an allowed `Host`, else 403 |
//! | a token (and a read token) | any `Host` | any `Host` | either token, else 401; any `Host` | the full token, else 401 (403 for the read token); any `Host` |
//!
//! A token is sent as `Authorization: Bearer TOKEN` and compared in constant time. The
//! `Host` check is a defence against DNS rebinding: a web page cannot make a browser send
//! its own host name to a token-less loopback server and read the answer. A server with a
//! token needs none (such a page cannot send the token), so Kubernetes probes and
//! Prometheus scrapes reach it at a pod IP not known in advance. The probes answer any
//! `Host` on a token-less server too: they tell only whether the scheduler runs and its
//! backends answer.

mod access;
mod audit;
mod cancel;
mod change_view;
pub mod client;
mod error;
mod etag;
mod fleet;
mod fleet_runs;
mod health;
mod jobs;
mod jobs_write;
mod listing;
mod openapi;
mod output_view;
mod page;
mod peers;
mod prometheus;
mod query;
mod reloads;
mod run_view;
mod runs;
mod steer;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::{Extension, Router};
use jobs_write::StateJobs;
use slotcron::Scheduler;
use slotcron::{OutputStore, Store};
use utoipa::OpenApi as _;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use access::{Access, Grant};
pub use audit::{DEFAULT_LIMIT as DEFAULT_AUDIT_LIMIT, MAX_LIMIT as MAX_AUDIT_LIMIT};
pub use error::ApiError;
pub use jobs_write::{BodyFormat, DefinitionReader, JobBody, MAX_NOTE};
pub use listing::{DEFAULT_LIMIT as DEFAULT_JOBS_LIMIT, MAX_LIMIT as MAX_JOBS_LIMIT};
pub use output_view::{AttemptView, ChunkView, OutputView, RunOutputs};
pub use peers::{PEER_TIMEOUT, SHARED_LEDGER, Unanswered};
pub use prometheus::{MetricsRecorder, PrometheusMetrics};
pub use reloads::{Reload, ReloadStatus};
pub use runs::MAX_LIMIT as MAX_RUNS_LIMIT;
pub use steer::{IDEMPOTENCY_KEY, MAX_BODY};

/// Renders the metrics exposition (e.g. [`PrometheusMetrics::render`]).
pub type RenderMetrics = Arc<dyn Fn() -> String + Send + Sync>;

/// What the handlers share.
#[derive(Clone)]
struct AdminState {
    scheduler: Scheduler,
    metrics: Option<RenderMetrics>,
    outputs: Option<Arc<dyn OutputStore>>,
    reloads: ReloadStatus,
    state_jobs: Option<StateJobs>,
}

/// Builds the admin [`Router`] over a scheduler.
///
/// Who may ask (see the crate's table):
/// - Without a token, anyone who reaches the server may do anything; with
///   [`Admin::allowed_hosts`], a request whose `Host` is not one of them is 403 — except
///   `/healthz` and `/readyz`, which answer any `Host`.
/// - With [`Admin::token`], `/api/v1/` needs `Authorization: Bearer TOKEN` (401
///   otherwise); with [`Admin::read_token`] as well, that token opens the reads and a
///   write with it is 403. `/`, `/openapi.json`, `/healthz`, `/readyz` and `/metrics`
///   need no token, and no `Host` is checked.
#[must_use]
pub struct Admin {
    state: AdminState,
    access: Access,
}

impl Admin {
    /// The API over `scheduler`: no metrics, no run output, no access control.
    pub fn new(scheduler: Scheduler) -> Self {
        Self {
            state: AdminState {
                scheduler,
                metrics: None,
                outputs: None,
                reloads: ReloadStatus::default(),
                state_jobs: None,
            },
            access: Access::default(),
        }
    }

    /// Serves `GET /metrics` with what `render` returns, as Prometheus text format 0.0.4
    /// (without it, `/metrics` is 404). Each request first refreshes the scheduler's
    /// metrics ([`Scheduler::refresh_metrics`]: the paused jobs, then a flush) so the
    /// exposition holds every record written so far.
    pub fn metrics(mut self, render: impl Fn() -> String + Send + Sync + 'static) -> Self {
        self.state.metrics = Some(Arc::new(render));
        self
    }

    /// Where run output is read from for `…/runs/{trigger}/output` (without it, 404).
    pub fn outputs(mut self, outputs: Arc<dyn OutputStore>) -> Self {
        self.state.outputs = Some(outputs);
        self
    }

    /// Where `GET /api/v1/status` reads the last reload of the jobs from (without it,
    /// `last_reload` is `null`): whatever reloads them records each in a clone of
    /// `reloads`.
    pub fn reloads(mut self, reloads: ReloadStatus) -> Self {
        self.state.reloads = reloads;
        self
    }

    /// Serves `PUT` and `DELETE /api/v1/jobs/{name}` and `GET /api/v1/audit` over the jobs
    /// kept in `store` (without it, they answer 409): a `PUT` body is read by `reader`,
    /// and each change is stored with its record ([`slotcron::DefinitionChange`]: when,
    /// the token kind, the old and new definitions, the `note` parameter) by
    /// [`Store::change_definition`], so a refused request stores nothing. Whoever runs the
    /// store's jobs follows the change (the daemon's `--jobs-from-state` does within 2 s).
    pub fn state_jobs(mut self, store: Arc<dyn Store>, reader: Arc<dyn DefinitionReader>) -> Self {
        self.state.state_jobs = Some(StateJobs::new(store, reader));
        self
    }

    /// Requires `Authorization: Bearer TOKEN` on every `/api/v1/` request, and opens all
    /// of them, reads and writes (default: no token). `/`, `/openapi.json`, `/healthz`,
    /// `/readyz` and `/metrics` need no token. With a token (this one or
    /// [`Admin::read_token`]) no `Host` is checked: [`Admin::allowed_hosts`] no longer
    /// applies.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.access.token = Some(token.into());
        self
    }

    /// A second bearer token that opens the `/api/v1/` reads only (jobs, runs, output); a
    /// write (`POST`) with it is 403 naming the token kind. Without [`Admin::token`] the
    /// server is read-only: every write is refused (401 without a token, 403 with this
    /// one). A read token equal to the full token opens everything.
    pub fn read_token(mut self, token: impl Into<String>) -> Self {
        self.access.read_token = Some(token.into());
        self
    }

    /// While no token is set, answers only requests whose `Host` header is one of `hosts`
    /// (`name` or `name:port`; a name without a port matches any port; compared ignoring
    /// ASCII case); others get 403, but `/healthz` and `/readyz` answer any `Host`.
    /// Default: any host. A server with a token checks no `Host`.
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = String>) -> Self {
        self.access.hosts = hosts.into_iter().collect();
        self
    }

    /// The router: mount it at `/` of a server (it owns `/`, `/openapi.json`, `/healthz`,
    /// `/readyz`, `/metrics` and `/api/v1/`).
    pub fn router(self) -> Router {
        let (router, doc) = routes(Arc::new(self.access)).split_for_parts();
        router
            .layer(Extension(openapi::Document::new(doc)))
            .layer(axum::middleware::from_fn(error::json_client_errors))
            .with_state(self.state)
    }
}

/// Every route, each registered with its operation in the OpenAPI document (so that the
/// document holds what the router serves), behind the access rules.
fn routes(access: Arc<Access>) -> OpenApiRouter<AdminState> {
    let probes = OpenApiRouter::default().routes(routes!(health::healthz)).routes(routes!(health::readyz));
    let host_checked = OpenApiRouter::default()
        .routes(routes!(page::status_page))
        .routes(routes!(openapi::document))
        .routes(routes!(health::metrics))
        .nest("/api/v1", access::token_required(api_v1(), access.clone()))
        .fallback(error::not_found);
    OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .merge(probes)
        .merge(access::host_checked(host_checked, access))
}

/// The `/api/v1` routes, reads and writes; the writes refused to the read-only token.
fn api_v1() -> OpenApiRouter<AdminState> {
    OpenApiRouter::default()
        .routes(routes!(reloads::status))
        .routes(routes!(fleet::fleet))
        .routes(routes!(jobs::list))
        .routes(routes!(jobs::one))
        .routes(routes!(runs::list))
        .routes(routes!(runs::output))
        .routes(steer::write(routes!(steer::pause)))
        .routes(steer::write(routes!(steer::resume)))
        .routes(steer::write(routes!(steer::trigger)))
        .routes(steer::write(routes!(steer::backfill)))
        .routes(steer::write(routes!(cancel::cancel)))
        .routes(access::full_token(jobs_write::documented(routes!(jobs_write::put))))
        .routes(access::full_token(jobs_write::documented(routes!(jobs_write::delete))))
        .routes(jobs_write::documented(routes!(audit::list)))
        .layer(DefaultBodyLimit::max(MAX_BODY))
}
