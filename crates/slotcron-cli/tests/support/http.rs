//! HTTP requests to a daemon's admin API, over TCP or a Unix socket (hyper's client).

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};

/// An answer: its status and body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    /// The `ETag` header, if any.
    pub etag: Option<String>,
    pub body: String,
}

impl Answer {
    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// The `error` message of a JSON error body.
    pub fn error(&self) -> String {
        self.json()["error"].as_str().unwrap_or_else(|| panic!("no error message: {}", self.body)).to_owned()
    }
}

/// `GET path` at `addr` (`IP:PORT`) with `Host: addr` and `headers`.
pub fn get(addr: &str, path: &str, headers: &[(&str, &str)]) -> Answer {
    let mut all = vec![("host", addr)];
    all.extend_from_slice(headers);
    request(|| async { tokio::net::TcpStream::connect(addr).await.unwrap() }, "GET", path, &all, "")
}

/// `POST path` at `addr` (`IP:PORT`) with `Host: addr`, `headers` and `body`.
pub fn post(addr: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    send(addr, "POST", path, headers, body)
}

/// `METHOD path` at `addr` (`IP:PORT`) with `Host: addr`, `headers` and `body`.
pub fn send(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut all = vec![("host", addr)];
    all.extend_from_slice(headers);
    request(|| async { tokio::net::TcpStream::connect(addr).await.unwrap() }, method, path, &all, body)
}

/// `GET path` with exactly these headers (a `Host` among them, or none).
pub fn get_with(addr: &str, path: &str, headers: &[(&str, &str)]) -> Answer {
    request(|| async { tokio::net::TcpStream::connect(addr).await.unwrap() }, "GET", path, headers, "")
}

/// `GET path` over the Unix socket at `socket`.
pub fn get_unix(socket: &std::path::Path, path: &str) -> Answer {
    request(
        || async { tokio::net::UnixStream::connect(socket).await.unwrap() },
        "GET",
        path,
        &[("host", "localhost")],
        "",
    )
}

fn request<S, F>(
    connect: impl FnOnce() -> F,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    F: Future<Output = S>,
{
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let stream = connect().await;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
        tokio::spawn(connection);
        let mut request = hyper::Request::builder().method(method).uri(path);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let body = Full::new(Bytes::from(body.to_owned()));
        let response = sender.send_request(request.body(body).unwrap()).await.unwrap();
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let etag = response.headers().get("etag").map(|v| v.to_str().unwrap().to_owned());
        let body = response.into_body().collect().await.unwrap().to_bytes();
        Answer { status, content_type, etag, body: String::from_utf8_lossy(&body).into_owned() }
    })
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
