//! The daemon's settings that the command line (a flag or an environment variable) and
//! the jobs file can both give, read and checked alike wherever they are given: the
//! admin listen address ([`Listen`]) and the checks of the coordination settings — the
//! Redis URL, the clock-skew slack, the membership TTL and the takeover delay.
//!
//! A leaf: the command line, the jobs file, the coordinator and the admin server all
//! use it, and it uses none of them.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use slotcron::{DEFAULT_MEMBERSHIP_TTL, redact};
use slotcron_redis::{RedisConfig, RedisCoordinatorError};

use crate::duration;

/// Where the admin server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// An IP address and port (`localhost:PORT` is `127.0.0.1:PORT`).
    Tcp(SocketAddr),
    /// `unix:PATH`: a Unix socket.
    Unix(PathBuf),
}

impl Listen {
    /// Reads `IP:PORT`, `[IPv6]:PORT`, `localhost:PORT` or `unix:PATH`.
    ///
    /// # Errors
    /// The reason, with the forms accepted.
    pub fn parse(text: &str) -> Result<Self, String> {
        if let Some(path) = text.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(format!("{text:?}: no path after unix:"));
            }
            return Ok(Self::Unix(PathBuf::from(path)));
        }
        if let Some(port) = text.strip_prefix("localhost:")
            && let Ok(port) = port.parse::<u16>()
        {
            return Ok(Self::Tcp(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)));
        }
        text.parse().map(Self::Tcp).map_err(|_| {
            format!(
                "{text:?} is not an address to listen on: write IP:PORT (e.g. 127.0.0.1:9090) or unix:PATH"
            )
        })
    }

    /// Whether only this machine can connect: a loopback address or a Unix socket.
    pub fn is_local(&self) -> bool {
        match self {
            Self::Tcp(addr) => addr.ip().is_loopback(),
            Self::Unix(_) => true,
        }
    }
}

/// Checks the syntax of a Redis URL without connecting, as the `redis` crate reads it.
///
/// # Errors
/// The reason, naming the URL without its password.
pub fn check_redis_url(url: &str) -> Result<(), String> {
    match RedisConfig::new(url).check() {
        Err(RedisCoordinatorError::Config { field: "url", reason }) => Err(format!(
            "{:?} is not a Redis URL (write redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], rediss://…, \
             redis+unix:///PATH or redis+cluster://HOST:PORT[,HOST:PORT…]): {reason}",
            redact(url)
        )),
        _ => Ok(()),
    }
}

/// Refuses a clock-skew slack of zero: every measurable offset would skip every
/// trigger.
///
/// # Errors
/// The slack is zero.
pub fn check_slack(slack: Duration) -> Result<(), String> {
    if slack.is_zero() {
        return Err(format!(
            "must be longer than zero (the default is {})",
            duration::display(slotcron::SchedulerBuilder::DEFAULT_SLACK)
        ));
    }
    Ok(())
}

/// Refuses a membership TTL of zero: a member would lapse as it joins.
///
/// # Errors
/// The TTL is zero.
pub fn check_membership_ttl(ttl: Duration) -> Result<(), String> {
    if ttl.is_zero() {
        return Err(format!(
            "must be longer than zero (the default is {})",
            duration::display(DEFAULT_MEMBERSHIP_TTL)
        ));
    }
    Ok(())
}

/// Refuses a takeover delay that is not shorter than the membership TTL (`ttl`, given in
/// `ttl_source`): a trigger's owner that died would have left the fleet before the others
/// even began to take its triggers over, and each takeover would cost a run longer than
/// the TTL that bounds how long a dead owner keeps its jobs.
///
/// # Errors
/// The delay is the TTL or longer.
pub fn check_takeover_delay(delay: Duration, ttl: Duration, ttl_source: &str) -> Result<(), String> {
    if delay >= ttl {
        return Err(format!(
            "{} must be shorter than the membership TTL ({}, {ttl_source})",
            duration::display(delay),
            duration::display(ttl)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(Listen::parse("127.0.0.1:9090").unwrap(), Listen::Tcp("127.0.0.1:9090".parse().unwrap()));
        assert_eq!(Listen::parse("localhost:9090").unwrap(), Listen::Tcp("127.0.0.1:9090".parse().unwrap()));
        assert_eq!(Listen::parse("unix:/run/s.sock").unwrap(), Listen::Unix("/run/s.sock".into()));
        assert!(Listen::parse("[::1]:9090").unwrap().is_local());
        assert!(!Listen::parse("0.0.0.0:9090").unwrap().is_local());
        assert!(Listen::parse("unix:").is_err());
        assert!(Listen::parse("example.com:80").unwrap_err().contains("IP:PORT"));
    }

    #[test]
    fn malformed_urls_are_named_without_their_password() {
        for url in ["http://:hunter2@cache:6379", "redis://:hunter2@cache:notaport", "cache:6379"] {
            let error = check_redis_url(url).unwrap_err();
            assert!(error.contains("is not a Redis URL"), "{error}");
            assert!(!error.contains("hunter2"), "{error}");
        }
        let cluster = check_redis_url("redis+cluster://:hunter2@a:7000,b").unwrap_err();
        assert!(cluster.contains("node 2 of the cluster URL, \"b\", needs HOST:PORT"), "{cluster}");
        assert!(!cluster.contains("hunter2"), "{cluster}");
        for url in [
            "redis://127.0.0.1:6379/2",
            "rediss://:pw@cache:6380",
            "redis+unix:///run/redis.sock?db=1",
            "redis+cluster://:pw@10.0.0.1:7000,10.0.0.2:7000",
            "rediss+cluster://cache:6380",
        ] {
            assert_eq!(check_redis_url(url), Ok(()), "{url}");
        }
    }
}
