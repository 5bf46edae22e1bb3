//! Who may ask: the bearer token and the `Host` check.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use subtle::ConstantTimeEq;

use crate::ApiError;

/// The access rules of an admin router; see [`Admin::token`](crate::Admin::token) and
/// [`Admin::allowed_hosts`](crate::Admin::allowed_hosts).
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// The bearer token every guarded request must carry, if any.
    pub token: Option<String>,
    /// The `Host` values accepted while no token is set; empty: any.
    pub hosts: Vec<String>,
}

impl Access {
    /// Whether the `Host` header is checked: only while no token is set and hosts are
    /// given. A web page that rebinds its own name to the server cannot send a token, so a
    /// server with one needs no `Host` check.
    pub fn checks_host(&self) -> bool {
        self.token.is_none() && !self.hosts.is_empty()
    }

    /// Whether `host` (a `Host` header) is one of the hosts (or none are given).
    pub fn host_allowed(&self, host: &str) -> bool {
        self.hosts.is_empty()
            || self.hosts.iter().any(|allowed| {
                host.eq_ignore_ascii_case(allowed)
                    || (!has_port(allowed) && name_of(host).eq_ignore_ascii_case(allowed))
            })
    }

    /// Whether an `Authorization` header value carries the token: `Bearer TOKEN`, the
    /// scheme in any case and followed by one or more spaces (RFC 7235 section 2.1), the
    /// token compared in constant time.
    pub fn authorized(&self, authorization: Option<&[u8]>) -> bool {
        let Some(token) = &self.token else { return true };
        let Some(given) = authorization.and_then(bearer_token) else { return false };
        bool::from(given.ct_eq(token.as_bytes()))
    }
}

/// The credentials of a `Bearer` `Authorization` header value, if it is one.
fn bearer_token(value: &[u8]) -> Option<&[u8]> {
    let space = value.iter().position(|b| *b == b' ')?;
    let (scheme, rest) = value.split_at(space);
    scheme.eq_ignore_ascii_case(b"bearer").then(|| rest.trim_ascii_start())
}

/// Whether `host` ends in a port: `name:port` or `[v6]:port`.
fn has_port(host: &str) -> bool {
    match host.rsplit_once(':') {
        Some((name, port)) => {
            !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) && !name.ends_with(':')
        }
        None => false,
    }
}

/// `host` without its port.
fn name_of(host: &str) -> &str {
    if has_port(host) { host.rsplit_once(':').map_or(host, |(name, _)| name) } else { host }
}

/// Refuses a request whose `Host` is not allowed (403), on a server without a token
/// ([`Access::checks_host`]).
pub(crate) async fn check_host(
    State(access): State<Arc<Access>>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    if !access.checks_host() {
        return Ok(next.run(request).await);
    }
    let host = request.headers().get(header::HOST).and_then(|h| h.to_str().ok());
    match host {
        Some(host) if access.host_allowed(host) => Ok(next.run(request).await),
        Some(host) => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("Host {host:?} is not this server's; allowed: {}", access.hosts.join(", ")),
        )),
        None => Err(ApiError::new(StatusCode::FORBIDDEN, "the request has no Host header")),
    }
}

/// Refuses a request without the bearer token (401).
pub(crate) async fn require_token(
    State(access): State<Arc<Access>>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let authorization = request.headers().get(header::AUTHORIZATION).map(|value| value.as_bytes());
    if access.authorized(authorization) {
        Ok(next.run(request).await)
    } else {
        let mut error = ApiError::new(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
        if authorization.is_none() {
            error.message = "this server needs Authorization: Bearer TOKEN (SLOTCRON_ADMIN_TOKEN)".into();
        }
        Err(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(list: &[&str]) -> Access {
        Access { token: None, hosts: list.iter().map(|h| h.to_string()).collect() }
    }

    #[test]
    fn hosts_match_with_or_without_a_port() {
        let access = hosts(&["127.0.0.1:9090", "cron.example"]);
        assert!(access.host_allowed("127.0.0.1:9090"));
        assert!(!access.host_allowed("127.0.0.1:9091"));
        assert!(access.host_allowed("CRON.example:443"));
        assert!(access.host_allowed("cron.example"));
        assert!(!access.host_allowed("evil.example"));
        assert!(hosts(&["[::1]:9090"]).host_allowed("[::1]:9090"));
        assert!(hosts(&[]).host_allowed("anything"));
    }

    #[test]
    fn the_token_is_a_bearer_token() {
        let access = Access { token: Some("s3cret".into()), hosts: Vec::new() };
        assert!(access.authorized(Some(b"Bearer s3cret")));
        assert!(!access.authorized(Some(b"Bearer s3cre")));
        assert!(!access.authorized(Some(b"Basic s3cret")));
        assert!(!access.authorized(None));
        assert!(Access::default().authorized(None));
    }

    #[test]
    fn only_a_server_without_a_token_checks_the_host() {
        let mut access = hosts(&["127.0.0.1:9090"]);
        assert!(access.checks_host());
        access.token = Some("full".into());
        assert!(!access.checks_host());
        assert!(!hosts(&[]).checks_host(), "no hosts given: any");
    }

    #[test]
    fn the_bearer_scheme_is_matched_in_any_case() {
        let access = Access { token: Some("s3cret".into()), hosts: Vec::new() };
        for header in [&b"bearer s3cret"[..], b"BEARER s3cret", b"bEaReR s3cret", b"Bearer   s3cret"] {
            assert!(access.authorized(Some(header)), "{}", String::from_utf8_lossy(header));
        }
        for header in [&b"Bearers3cret"[..], b"Bearer", b"Bearer ", b"bearer S3CRET", b"xbearer s3cret"] {
            assert!(!access.authorized(Some(header)), "{}", String::from_utf8_lossy(header));
        }
    }
}
