//! The admin API client of `slotcron status`, `pause`, `resume`, `trigger` and
//! `backfill`: one HTTP/1 request to a running daemon's admin API, over TCP or a Unix
//! socket, with the token from `SLOTCRON_ADMIN_TOKEN` (or the file named by
//! `SLOTCRON_ADMIN_TOKEN_FILE`), whichever kind the daemon takes it for.

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::admin_token::{self, TOKEN_VAR};

/// How long the daemon may take to answer.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Where the admin API is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminUrl {
    /// `http://HOST:PORT[/]`: the authority to connect to and send as `Host`.
    Http(String),
    /// `unix:PATH`.
    Unix(String),
}

impl AdminUrl {
    /// Reads `http://HOST:PORT` or `unix:PATH`.
    ///
    /// # Errors
    /// The forms accepted.
    pub fn parse(text: &str) -> Result<Self, String> {
        if let Some(path) = text.strip_prefix("unix:").filter(|p| !p.is_empty()) {
            return Ok(Self::Unix(path.to_owned()));
        }
        match text.strip_prefix("http://").map(|rest| rest.trim_end_matches('/')) {
            Some(authority) if !authority.is_empty() && !authority.contains('/') => {
                Ok(Self::Http(authority.to_owned()))
            }
            _ => Err(format!(
                "--admin-url {text:?}: write http://HOST:PORT (e.g. http://127.0.0.1:9090) or unix:PATH"
            )),
        }
    }
}

/// One request to the admin API.
pub struct Call<'a> {
    /// `GET` or `POST`.
    pub method: hyper::Method,
    /// The path, e.g. `/api/v1/jobs`.
    pub path: &'a str,
    /// Extra headers.
    pub headers: Vec<(&'static str, String)>,
    /// The body; a `POST` is sent as `application/json`.
    pub body: Option<serde_json::Value>,
}

impl<'a> Call<'a> {
    /// `GET path`.
    pub fn get(path: &'a str) -> Self {
        Self { method: hyper::Method::GET, path, headers: Vec::new(), body: None }
    }

    /// `POST path` with a JSON body.
    pub fn post(path: &'a str, body: serde_json::Value) -> Self {
        Self { method: hyper::Method::POST, path, headers: Vec::new(), body: Some(body) }
    }
}

/// Makes `call` against `admin_url` on a runtime of its own, bounded by [`TIMEOUT`], with
/// the token of `SLOTCRON_ADMIN_TOKEN[_FILE]` if set: the body of a 2xx answer as JSON,
/// else the reason (the API's message with its status), prefixed by the URL.
///
/// # Errors
/// A malformed URL, a token [`admin_token::from_env`] refuses, no connection, no answer
/// within [`TIMEOUT`], or an error answer.
pub fn call(admin_url: &str, call: Call<'_>) -> Result<serde_json::Value, String> {
    let url = AdminUrl::parse(admin_url)?;
    let token = admin_token::from_env(TOKEN_VAR)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let body = runtime.block_on(async {
        tokio::time::timeout(TIMEOUT, send(&url, token.as_deref(), call))
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {TIMEOUT:?}")))
    });
    let body = body.map_err(|e| format!("{admin_url}: {e}"))?;
    serde_json::from_slice(&body).map_err(|e| format!("{admin_url}: not a slotcron admin API answer: {e}"))
}

async fn send(url: &AdminUrl, token: Option<&str>, call: Call<'_>) -> Result<Bytes, String> {
    match url {
        AdminUrl::Http(authority) => {
            let stream = tokio::net::TcpStream::connect(authority)
                .await
                .map_err(|e| format!("cannot connect: {e}"))?;
            exchange(stream, authority, token, call).await
        }
        AdminUrl::Unix(socket) => {
            let stream =
                tokio::net::UnixStream::connect(socket).await.map_err(|e| format!("cannot connect: {e}"))?;
            exchange(stream, "localhost", token, call).await
        }
    }
}

async fn exchange(
    stream: impl AsyncRead + AsyncWrite + Send + Unpin + 'static,
    host: &str,
    token: Option<&str>,
    call: Call<'_>,
) -> Result<Bytes, String> {
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    tokio::spawn(connection);
    let mut request = hyper::Request::builder().method(call.method).uri(call.path).header(header::HOST, host);
    if let Some(token) = token {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    for (name, value) in call.headers {
        request = request.header(name, value);
    }
    let body = match call.body {
        Some(body) => {
            request = request.header(header::CONTENT_TYPE, "application/json");
            Bytes::from(body.to_string())
        }
        None => Bytes::new(),
    };
    let request = request.body(Full::new(body)).map_err(|e| format!("HTTP: {e}"))?;
    let response = sender.send_request(request).await.map_err(|e| format!("HTTP: {e}"))?;
    let status = response.status();
    let body = response.into_body().collect().await.map_err(|e| format!("HTTP: {e}"))?.to_bytes();
    if status.is_success() {
        return Ok(body);
    }
    let message = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(&body).into_owned());
    Err(format!("{status}: {message}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_urls() {
        assert_eq!(AdminUrl::parse("http://127.0.0.1:9090/"), Ok(AdminUrl::Http("127.0.0.1:9090".into())));
        assert_eq!(AdminUrl::parse("unix:/run/s.sock"), Ok(AdminUrl::Unix("/run/s.sock".into())));
        assert!(AdminUrl::parse("https://host:1").is_err());
        assert!(AdminUrl::parse("http://host:1/api").is_err());
    }
}
