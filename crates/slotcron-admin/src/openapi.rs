//! `GET /openapi.json`: the OpenAPI 3.1 document of this API. Each route's operation
//! comes from its handler's `#[utoipa::path]` and types as the router registers it;
//! who may call it (the bearer token, the `Host` check) is added where the router
//! applies those rules ([`crate::access`], [`crate::steer::write`]), with [`require_token`]
//! and [`answer`].

use std::sync::Arc;

use axum::Extension;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use utoipa::Modify;
use utoipa::openapi::path::{Operation, Paths};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, ResponseBuilder};

use crate::error::ErrorBody;

/// The name of the bearer security scheme.
const BEARER: &str = "bearer";
/// The scope of a route any token opens: the full token or the read-only one.
pub(crate) const READ: &str = "read";
/// The scope of a route only the full token opens.
pub(crate) const FULL: &str = "full";

/// The document's title, tags, bearer scheme and error schema; the paths are added by
/// the router as it registers them.
#[derive(utoipa::OpenApi)]
#[openapi(
    info(title = "slotcron admin API"),
    components(schemas(ErrorBody)),
    modifiers(&BearerScheme),
    tags(
        (name = "probes", description = "Liveness and readiness: no token, any `Host`"),
        (name = "server", description = "The status page, this document and the metrics: no token"),
        (name = "jobs", description = "The jobs and their reloads"),
        (name = "fleet", description = "The fleet's live members"),
        (name = "runs", description = "The run history and output"),
        (name = "steering", description = "Pause, resume, trigger and backfill: the full token"),
        (name = "state jobs", description = "Change the jobs kept in a shared state (a daemon started with \
            `--jobs-from-state`), and list the changes"),
    )
)]
pub(crate) struct ApiDoc;

/// Adds the `bearer` security scheme.
struct BearerScheme;

impl Modify for BearerScheme {
    fn modify(&self, doc: &mut OpenApi) {
        let scheme = Http::builder()
            .scheme(HttpAuthScheme::Bearer)
            .description(Some(
                "`Authorization: Bearer TOKEN`, needed on a server with a token. Scope `read`: either \
                 token (SLOTCRON_ADMIN_TOKEN or SLOTCRON_ADMIN_READ_TOKEN); scope `full`: the full \
                 token. A server without a token needs none.",
            ))
            .build();
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(BEARER, SecurityScheme::Http(scheme));
    }
}

/// The document, as [`crate::Admin::router`] built it.
pub(crate) type Document = Arc<OpenApi>;

/// The document of the API as this router serves it.
#[utoipa::path(
    get,
    path = "/openapi.json",
    operation_id = "openapi",
    tag = "server",
    responses((status = 200, description = "This OpenAPI 3.1 document", body = Object))
)]
pub(crate) async fn document(Extension(doc): Extension<Document>) -> Response {
    Json(&*doc).into_response()
}

/// Calls `f` with each operation of `paths`.
pub(crate) fn each_operation(paths: &mut Paths, mut f: impl FnMut(&mut Operation)) {
    for item in paths.paths.values_mut() {
        let methods = [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.patch];
        methods.into_iter().flatten().for_each(&mut f);
    }
}

/// Documents that `operation` needs a bearer token of `scope` ([`READ`] or [`FULL`]),
/// unless a scope is already set.
pub(crate) fn require_token(operation: &mut Operation, scope: &str) {
    operation.security.get_or_insert_with(|| vec![SecurityRequirement::new(BEARER, [scope])]);
}

/// Documents that `operation` answers `status` with an error body, for this reason; a
/// status documented already gets the reason added to its description.
pub(crate) fn answer(operation: &mut Operation, status: StatusCode, reason: &str) {
    let responses = &mut operation.responses.responses;
    match responses.get_mut(status.as_str()) {
        Some(RefOr::T(response)) => response.description = format!("{}; or: {reason}", response.description),
        Some(RefOr::Ref(_)) => {}
        None => {
            let content = ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build();
            let response =
                ResponseBuilder::new().description(reason).content("application/json", content).build();
            responses.insert(status.as_str().to_owned(), RefOr::T(response));
        }
    }
}
