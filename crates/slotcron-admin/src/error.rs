//! API errors: a status and `{"error": "…"}`.

use axum::Json;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// The most of a plain-text error body kept as the message.
const MAX_MESSAGE: usize = 4096;

/// An error answer: its status and the message of its `{"error": "…"}` body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, for a person.
    pub message: String,
}

impl ApiError {
    /// An error with this status and message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self { status, message: message.into() }
    }

    /// 400: the request is malformed.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// 404: no such thing.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    /// 503: a backend failed.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, message)
    }
}

/// The body of every error answer: `{"error": "…"}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ErrorBody {
    /// What went wrong, for a person.
    error: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(ErrorBody { error: self.message })).into_response()
    }
}

/// The answer to a path no route serves.
pub(crate) async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!("no such endpoint: {}", uri.path()))
}

/// Gives every 4xx answer this API's `{"error": "…"}` body: axum's own answers (the
/// rejection of a malformed query string or path, 405 for a method no route serves)
/// come as plain text, which becomes the message; their headers (`Allow`) stay.
pub(crate) async fn json_client_errors(request: Request, next: Next) -> Response {
    let (method, path) = (request.method().clone(), request.uri().path().to_owned());
    let response = next.run(request).await;
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|t| t.as_bytes().starts_with(b"application/json"));
    if !response.status().is_client_error() || json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, MAX_MESSAGE).await.unwrap_or_default();
    let text = String::from_utf8_lossy(&text).trim().to_owned();
    let message = match text.is_empty() {
        true => format!("{}: {method} {path}", parts.status.canonical_reason().unwrap_or("client error")),
        false => text,
    };
    let mut answer = ApiError::new(parts.status, message).into_response();
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            answer.headers_mut().append(name, value.clone());
        }
    }
    answer
}
