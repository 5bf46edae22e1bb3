//! JSON answers with an `ETag`, and `304 Not Modified` for a client that has them.

use std::hash::{DefaultHasher, Hasher};

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::ApiError;

/// `body` as JSON with an `ETag` (a hash of its bytes, strong), or `304` with the same
/// `ETag` and no body when the request's `If-None-Match` names it (or is `*`).
pub(crate) fn json(request: &HeaderMap, body: &impl Serialize) -> Response {
    let bytes = match serde_json::to_vec(body) {
        Ok(bytes) => bytes,
        Err(e) => {
            return ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("cannot write the answer: {e}"))
                .into_response();
        }
    };
    // Every `DefaultHasher::new()` of a build hashes alike: a tag holds while the
    // process serves (not across releases, which a client's next 200 corrects).
    let mut hasher = DefaultHasher::new();
    hasher.write(&bytes);
    let tag = format!("\"{:016x}\"", hasher.finish());
    if matches_tag(request, &tag) {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, tag)]).into_response();
    }
    ([(header::ETAG, tag), (header::CONTENT_TYPE, "application/json".to_owned())], bytes).into_response()
}

/// Whether `If-None-Match` holds `tag` (compared weakly, as RFC 9110 says for it) or `*`.
fn matches_tag(request: &HeaderMap, tag: &str) -> bool {
    request.get_all(header::IF_NONE_MATCH).iter().filter_map(|value| value.to_str().ok()).any(|list| {
        list.split(',').map(str::trim).any(|given| given == "*" || given.trim_start_matches("W/") == tag)
    })
}
