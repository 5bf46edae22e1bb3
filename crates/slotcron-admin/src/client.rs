//! A client of the admin API: one HTTP/1 request to a daemon's admin server, over TCP or
//! a Unix socket. The `slotcron` commands that steer a daemon use it, and a daemon asks
//! the other members of its fleet with it (their run records, for a merged history).

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::header;
use hyper::{Method, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};

/// `text` (a job's name, an instant) as one path segment or query value of a request:
/// every byte but ASCII letters and digits percent-encoded (RFC 3986), so that a `/`, `&`,
/// `+` or `%` cannot change the request.
#[must_use]
pub fn encode(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// The largest answer read, in bytes: a page of [`MAX_JOBS_LIMIT`](crate::MAX_JOBS_LIMIT)
/// jobs or of 1,000 runs fits many times over.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;

/// Where an admin API is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminUrl {
    /// `http://HOST:PORT[/]`: the authority to connect to and send as `Host`.
    Http(String),
    /// `unix:PATH`.
    Unix(String),
}

impl AdminUrl {
    /// Reads `http://HOST:PORT` or `unix:PATH`, as given to `--admin-url`.
    ///
    /// # Errors
    /// The forms accepted, naming `--admin-url`.
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

    /// The address a member publishes in the fleet's membership (its `admin` detail):
    /// `unix:PATH`, or `HOST:PORT` (without a scheme).
    #[must_use]
    pub fn published(address: &str) -> Self {
        match address.strip_prefix("unix:") {
            Some(path) => Self::Unix(path.to_owned()),
            None => Self::Http(address.to_owned()),
        }
    }
}

/// One request to the admin API.
pub struct Call<'a> {
    /// `GET` or `POST`.
    pub method: Method,
    /// The path and query, e.g. `/api/v1/jobs?limit=10`.
    pub path: &'a str,
    /// Extra headers, `Authorization` among them if the API needs a token.
    pub headers: Vec<(&'static str, String)>,
    /// The body; a `POST` is sent as `application/json`.
    pub body: Option<serde_json::Value>,
}

impl<'a> Call<'a> {
    /// `GET path`.
    #[must_use]
    pub fn get(path: &'a str) -> Self {
        Self { method: Method::GET, path, headers: Vec::new(), body: None }
    }

    /// `POST path` with a JSON body.
    #[must_use]
    pub fn post(path: &'a str, body: serde_json::Value) -> Self {
        Self { method: Method::POST, path, headers: Vec::new(), body: Some(body) }
    }

    /// The same call with `Authorization: Bearer TOKEN`.
    #[must_use]
    pub fn bearer(mut self, token: &str) -> Self {
        self.headers.push(("authorization", format!("Bearer {token}")));
        self
    }
}

/// An answer: its status and body (at most [`MAX_ANSWER_BYTES`]).
#[derive(Debug)]
pub struct Answer {
    /// The HTTP status.
    pub status: StatusCode,
    /// The body as sent.
    pub body: Bytes,
}

impl Answer {
    /// The body of a 2xx answer as JSON.
    ///
    /// # Errors
    /// For another status, the API's message (`{"error": "…"}`, else the body as text)
    /// after the status; for a body that is not JSON, the parser's reason.
    pub fn json(&self) -> Result<serde_json::Value, String> {
        if !self.status.is_success() {
            let message = serde_json::from_slice::<serde_json::Value>(&self.body)
                .ok()
                .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned))
                .unwrap_or_else(|| String::from_utf8_lossy(&self.body).into_owned());
            return Err(format!("{}: {message}", self.status));
        }
        serde_json::from_slice(&self.body).map_err(|e| format!("not a slotcron admin API answer: {e}"))
    }
}

/// Sends `call` to the admin API at `url` and reads the whole answer. Unbounded in time:
/// the caller bounds it (e.g. with `tokio::time::timeout`).
///
/// # Errors
/// No connection, or an HTTP failure (a closed connection, an answer over
/// [`MAX_ANSWER_BYTES`]), as one line.
pub async fn send(url: &AdminUrl, call: Call<'_>) -> Result<Answer, String> {
    match url {
        AdminUrl::Http(authority) => {
            let stream = tokio::net::TcpStream::connect(authority)
                .await
                .map_err(|e| format!("cannot connect: {e}"))?;
            exchange(stream, authority, call).await
        }
        AdminUrl::Unix(socket) => {
            let stream =
                tokio::net::UnixStream::connect(socket).await.map_err(|e| format!("cannot connect: {e}"))?;
            exchange(stream, "localhost", call).await
        }
    }
}

async fn exchange(
    stream: impl AsyncRead + AsyncWrite + Send + Unpin + 'static,
    host: &str,
    call: Call<'_>,
) -> Result<Answer, String> {
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    tokio::spawn(connection);
    let mut request = hyper::Request::builder().method(call.method).uri(call.path).header(header::HOST, host);
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
    let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
        .collect()
        .await
        .map_err(|e| format!("HTTP: {e}"))?
        .to_bytes();
    Ok(Answer { status, body })
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
        assert_eq!(AdminUrl::published("10.0.0.5:9090"), AdminUrl::Http("10.0.0.5:9090".into()));
        assert_eq!(AdminUrl::published("unix:/run/s.sock"), AdminUrl::Unix("/run/s.sock".into()));
    }
}
