//! URLs in messages and logs: never with a password.

/// The query parameters that carry a password: `password` (PostgreSQL) and `pass`
/// (Redis over a Unix socket, `redis+unix:///path?pass=…`).
const PASSWORD_PARAMETERS: [&str; 2] = ["password", "pass"];

/// `url` without its password: the password of the user info is removed
/// (`redis://:secret@host` → `redis://host`, `postgres://app:secret@db/x` →
/// `postgres://app@db/x`), and so are the `password` and `pass` query parameters. Text
/// that is not `scheme://…` is returned as it is.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((user_info, hosts)) => match user_info.split_once(':').map_or(user_info, |(user, _)| user) {
            "" => hosts.to_owned(),
            user => format!("{user}@{hosts}"),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<&str> = query.split('&').filter(|param| !is_password(param)).collect();
            if kept.is_empty() { path.to_owned() } else { format!("{path}?{}", kept.join("&")) }
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

fn is_password(param: &str) -> bool {
    let key = param.split_once('=').map_or(param, |(key, _)| key);
    PASSWORD_PARAMETERS.contains(&key)
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn passwords_leave_user_info_and_query() {
        assert_eq!(redact("redis://:s3cret@10.0.0.5:6379/2"), "redis://10.0.0.5:6379/2");
        assert_eq!(redact("rediss://app:s3:cr@et@cache:6380"), "rediss://app@cache:6380");
        assert_eq!(
            redact("redis+unix:///run/redis.sock?db=1&pass=s3cret"),
            "redis+unix:///run/redis.sock?db=1"
        );
        assert_eq!(
            redact("postgres://app:s3cret@db/prod?password=x&schema=jobs"),
            "postgres://app@db/prod?schema=jobs"
        );
        assert_eq!(redact("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(redact("sqlite:state.db"), "sqlite:state.db");
    }
}
