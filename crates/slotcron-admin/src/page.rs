//! The status page: one static HTML file, with its script, that reads the JSON API.

use axum::http::header;
use axum::response::IntoResponse;

/// The page, embedded at build time.
const STATUS_PAGE: &str = include_str!("status.html");

/// The status page.
#[utoipa::path(
    get,
    path = "/",
    operation_id = "status_page",
    tag = "server",
    responses(
        (status = 200, description = "The status page, which reads this API", body = String,
            content_type = "text/html; charset=utf-8"),
    )
)]
pub(crate) async fn status_page() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")], STATUS_PAGE)
}
