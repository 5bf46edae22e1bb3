//! Who may ask: the bearer tokens (full and read-only) and the `Host` check.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use subtle::{Choice, ConstantTimeEq};
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter, UtoipaMethodRouterExt};

use crate::{AdminState, ApiError, openapi};

/// The access rules of an admin router; see [`Admin::token`](crate::Admin::token),
/// [`Admin::read_token`](crate::Admin::read_token) and
/// [`Admin::allowed_hosts`](crate::Admin::allowed_hosts).
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// The bearer token that opens every `/api/v1/` request, reads and writes, if any.
    pub token: Option<String>,
    /// The bearer token that opens the `/api/v1/` reads only (a write with it is 403), if
    /// any.
    pub read_token: Option<String>,
    /// The `Host` values accepted while neither token is set; empty: any.
    pub hosts: Vec<String>,
}

/// What a request's credentials open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// The reads only: the read-only token.
    Read,
    /// Everything: the full token, or a server with no token at all.
    Full,
}

/// The kind of credential a request came with, as a change's record names it: `full`
/// (the full token), `read` (the read-only token) or `none` (a server without a token).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TokenKind(pub(crate) &'static str);

impl Access {
    /// Whether the `Host` header is checked: only while neither token is set and hosts
    /// are given. A web page that rebinds its own name to the server cannot send a token,
    /// so a server with one needs no `Host` check.
    pub fn checks_host(&self) -> bool {
        self.token.is_none() && self.read_token.is_none() && !self.hosts.is_empty()
    }

    /// Whether `host` (a `Host` header) is one of the hosts (or none are given).
    pub fn host_allowed(&self, host: &str) -> bool {
        self.hosts.is_empty()
            || self.hosts.iter().any(|allowed| {
                host.eq_ignore_ascii_case(allowed)
                    || (!has_port(allowed) && name_of(host).eq_ignore_ascii_case(allowed))
            })
    }

    /// What an `Authorization` header value opens: [`Grant::Full`] for the full token or
    /// when no token is set, [`Grant::Read`] for the read-only token, `None` for anything
    /// else. The value is `Bearer TOKEN`, the scheme in any case and followed by one or
    /// more spaces (RFC 7235 section 2.1); it is compared with both tokens in constant
    /// time. A read-only token equal to the full token opens everything.
    pub fn grant(&self, authorization: Option<&[u8]>) -> Option<Grant> {
        if self.token.is_none() && self.read_token.is_none() {
            return Some(Grant::Full);
        }
        let given = authorization.and_then(bearer_token)?;
        let matches = |token: &Option<String>| -> Choice {
            token.as_ref().map_or(Choice::from(0), |token| given.ct_eq(token.as_bytes()))
        };
        // Both comparisons run whatever the first one found.
        let (full, read) = (matches(&self.token), matches(&self.read_token));
        if bool::from(full) {
            Some(Grant::Full)
        } else if bool::from(read) {
            Some(Grant::Read)
        } else {
            None
        }
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

/// `router` behind [`check_host`], each of its operations documented to answer 403.
pub(crate) fn host_checked(
    router: OpenApiRouter<AdminState>,
    access: Arc<Access>,
) -> OpenApiRouter<AdminState> {
    let mut router = router.layer(axum::middleware::from_fn_with_state(access, check_host));
    openapi::each_operation(&mut router.get_openapi_mut().paths, |operation| {
        openapi::answer(
            operation,
            StatusCode::FORBIDDEN,
            "The Host is not allowed (a server without a token)",
        );
    });
    router
}

/// `router` behind [`require_token`], each of its operations documented to need a token
/// (the read-only one will do unless it is documented to need the full one) and to
/// answer 401.
pub(crate) fn token_required(
    router: OpenApiRouter<AdminState>,
    access: Arc<Access>,
) -> OpenApiRouter<AdminState> {
    let mut router = router.layer(axum::middleware::from_fn_with_state(access, require_token));
    openapi::each_operation(&mut router.get_openapi_mut().paths, |operation| {
        openapi::require_token(operation, openapi::READ);
        openapi::answer(operation, StatusCode::UNAUTHORIZED, "No bearer token, or a wrong one");
    });
    router
}

/// Refuses a request whose `Host` is not allowed (403), on a server without a token
/// ([`Access::checks_host`]).
async fn check_host(
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

/// Refuses a request without either bearer token (401); passes on what it opens as a
/// [`Grant`] in the request's extensions, for [`refuse_read_only`].
async fn require_token(
    State(access): State<Arc<Access>>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let authorization = request.headers().get(header::AUTHORIZATION).map(|value| value.as_bytes());
    match access.grant(authorization) {
        Some(grant) => {
            let kind = match grant {
                _ if access.token.is_none() && access.read_token.is_none() => "none",
                Grant::Full => "full",
                Grant::Read => "read",
            };
            request.extensions_mut().insert(grant);
            request.extensions_mut().insert(TokenKind(kind));
            Ok(next.run(request).await)
        }
        None if authorization.is_none() => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "this server needs Authorization: Bearer TOKEN (SLOTCRON_ADMIN_TOKEN)",
        )),
        None => Err(ApiError::new(StatusCode::UNAUTHORIZED, "missing or wrong bearer token")),
    }
}

/// A write route: refused to the read-only token ([`refuse_read_only`]), and documented
/// so (the full token's scope, 403).
pub(crate) fn full_token(routes: UtoipaMethodRouter<AdminState>) -> UtoipaMethodRouter<AdminState> {
    let (schemas, mut paths, method_router) =
        routes.map(|method_router| method_router.route_layer(axum::middleware::from_fn(refuse_read_only)));
    openapi::each_operation(&mut paths, |operation| {
        openapi::require_token(operation, openapi::FULL);
        openapi::answer(operation, StatusCode::FORBIDDEN, "The read-only token cannot write");
    });
    (schemas, paths, method_router)
}

/// Refuses a write made with the read-only token (403, naming the operation: the last
/// segment of the path, e.g. `pause`, or "change a job" / "delete a job" for a `PUT` /
/// `DELETE` of a job). Behind [`require_token`], which gives every
/// request it passes a [`Grant`]; only [`Grant::Full`] goes on.
pub(crate) async fn refuse_read_only(request: Request, next: Next) -> Result<Response, ApiError> {
    if request.extensions().get::<Grant>() == Some(&Grant::Full) {
        return Ok(next.run(request).await);
    }
    // The action routes end in their operation (`…/pause`); a job's own route is changed
    // or deleted by its method.
    let operation = match *request.method() {
        axum::http::Method::PUT => "change a job",
        axum::http::Method::DELETE => "delete a job",
        _ => request.uri().path().rsplit('/').next().unwrap_or("write"),
    };
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        format!(
            "the read-only token (SLOTCRON_ADMIN_READ_TOKEN) cannot {operation}; use SLOTCRON_ADMIN_TOKEN"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(list: &[&str]) -> Access {
        Access { hosts: list.iter().map(|h| h.to_string()).collect(), ..Access::default() }
    }

    fn tokens(token: Option<&str>, read_token: Option<&str>) -> Access {
        Access {
            token: token.map(str::to_owned),
            read_token: read_token.map(str::to_owned),
            hosts: Vec::new(),
        }
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
        let access = tokens(Some("s3cret"), None);
        assert_eq!(access.grant(Some(b"Bearer s3cret")), Some(Grant::Full));
        assert_eq!(access.grant(Some(b"Bearer s3cre")), None);
        assert_eq!(access.grant(Some(b"Basic s3cret")), None);
        assert_eq!(access.grant(None), None);
        assert_eq!(Access::default().grant(None), Some(Grant::Full));
    }

    #[test]
    fn the_read_token_grants_reads_and_the_full_token_everything() {
        let access = tokens(Some("full"), Some("read"));
        assert_eq!(access.grant(Some(b"Bearer full")), Some(Grant::Full));
        assert_eq!(access.grant(Some(b"Bearer read")), Some(Grant::Read));
        assert_eq!(access.grant(Some(b"Bearer reads")), None);
        assert_eq!(access.grant(None), None);
        let reads_only = tokens(None, Some("read"));
        assert_eq!(reads_only.grant(Some(b"Bearer read")), Some(Grant::Read));
        assert_eq!(reads_only.grant(None), None, "a read token alone still closes the server");
        assert_eq!(tokens(Some("same"), Some("same")).grant(Some(b"Bearer same")), Some(Grant::Full));
    }

    #[test]
    fn only_a_server_without_a_token_checks_the_host() {
        let mut access = hosts(&["127.0.0.1:9090"]);
        assert!(access.checks_host());
        access.token = Some("full".into());
        assert!(!access.checks_host());
        access.token = None;
        access.read_token = Some("read".into());
        assert!(!access.checks_host());
        assert!(!hosts(&[]).checks_host(), "no hosts given: any");
    }

    #[test]
    fn the_bearer_scheme_is_matched_in_any_case() {
        let access = tokens(Some("s3cret"), None);
        for header in [&b"bearer s3cret"[..], b"BEARER s3cret", b"bEaReR s3cret", b"Bearer   s3cret"] {
            assert_eq!(access.grant(Some(header)), Some(Grant::Full), "{}", String::from_utf8_lossy(header));
        }
        for header in [&b"Bearers3cret"[..], b"Bearer", b"Bearer ", b"bearer S3CRET", b"xbearer s3cret"] {
            assert_eq!(access.grant(Some(header)), None, "{}", String::from_utf8_lossy(header));
        }
    }
}
