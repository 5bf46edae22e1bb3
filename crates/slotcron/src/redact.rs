//! Connection strings in messages and logs: never with a password.

/// The query parameters (and PostgreSQL keywords) that carry a password: `password`
/// (PostgreSQL) and `pass` (Redis over a Unix socket, `redis+unix:///path?pass=…`, as the
/// `redis` crate reads it).
const PASSWORD_PARAMETERS: [&str; 2] = ["password", "pass"];

/// `url` without its password, for messages and logs of the daemon and the backends.
///
/// - A URL (`scheme://…`) loses the password of its user info
///   (`postgres://app:secret@db/x` → `postgres://app@db/x`; with no user name, the user
///   info goes: `redis://:secret@host` → `redis://host`; a raw `/` in the password is
///   taken as part of it) and its `password` and `pass` query parameters; the other
///   parameters stay in their order.
/// - Other text is read as a PostgreSQL keyword/value connection string
///   (`host=db password='a b' dbname=x`, quoted as libpq quotes: single quotes, backslash
///   escapes) and loses its `password` (and `pass`) pair; its pairs are joined by single
///   spaces. Text with neither (`sqlite:state.db`) comes back as it is.
pub fn redact(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => format!("{scheme}://{}", redact_url_rest(rest)),
        None => redact_key_values(url),
    }
}

fn redact_url_rest(rest: &str) -> String {
    let (authority, tail) = rest.split_at(authority_end(rest));
    let authority = match authority.rsplit_once('@') {
        Some((user_info, hosts)) => match user_info.split_once(':').map_or(user_info, |(user, _)| user) {
            "" => hosts.to_owned(),
            user => format!("{user}@{hosts}"),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<_> = query.split('&').filter(|param| !is_password(param)).collect();
            if kept.is_empty() { path.to_owned() } else { format!("{path}?{}", kept.join("&")) }
        }
        None => tail.to_owned(),
    };
    format!("{authority}{tail}")
}

/// Where the authority (`[user[:password]@]hosts`) of `rest` (a URL after `scheme://`)
/// ends: at the first `/`, `?` or `#` after its last `@`. The `@` is looked for before
/// the query and fragment, not just before the first `/`: a password with a raw `/` (as
/// base64 passwords have) makes the URL invalid, and the message saying so must not show
/// it either.
fn authority_end(rest: &str) -> usize {
    let before_query = rest.find(['?', '#']).unwrap_or(rest.len());
    let user_info_end = rest[..before_query].rfind('@').map_or(0, |at| at + 1);
    rest[user_info_end..].find(['/', '?', '#']).map_or(rest.len(), |end| user_info_end + end)
}

fn is_password(param: &str) -> bool {
    let key = param.split_once('=').map_or(param, |(key, _)| key).trim();
    PASSWORD_PARAMETERS.contains(&key)
}

/// `host=… password='a b' dbname=…` without the password, values quoted as libpq does
/// (single quotes, backslash escapes).
fn redact_key_values(connection_string: &str) -> String {
    let mut kept = Vec::new();
    let mut chars = connection_string.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut end = start;
        let mut quoted = false;
        let mut escaped = false;
        for (i, c) in chars.by_ref() {
            end = i + c.len_utf8();
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '\'' => quoted = !quoted,
                c if c.is_whitespace() && !quoted => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        let pair = &connection_string[start..end];
        if !is_password(pair) {
            kept.push(pair);
        }
    }
    kept.join(" ")
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn urls_lose_the_password_of_their_user_info() {
        assert_eq!(
            redact("postgres://app:s3cr:et@db.example:5432/prod"),
            "postgres://app@db.example:5432/prod"
        );
        assert_eq!(
            redact("postgresql://app:p%40ss@h1,h2/db?sslmode=disable"),
            "postgresql://app@h1,h2/db?sslmode=disable"
        );
        assert_eq!(redact("redis://:s3cret@10.0.0.5:6379/2"), "redis://10.0.0.5:6379/2");
        assert_eq!(redact("rediss://app:s3:cr@et@cache:6380"), "rediss://app@cache:6380");
        assert_eq!(redact("postgres://app@localhost/db"), "postgres://app@localhost/db");
        assert_eq!(redact("postgres://localhost"), "postgres://localhost");
        assert_eq!(redact("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(redact("redis://:secret@h:6379/2"), "redis://h:6379/2");
        assert_eq!(redact("postgres://app:a/b+c==@db/prod"), "postgres://app@db/prod");
    }

    #[test]
    fn query_parameters_after_the_password_are_kept() {
        assert_eq!(
            redact("postgres://u:secret@h/db?sslmode=disable&schema=x"),
            "postgres://u@h/db?sslmode=disable&schema=x"
        );
        assert_eq!(
            redact("postgres://u:secret@h/db?schema=x&application_name=me@laptop"),
            "postgres://u@h/db?schema=x&application_name=me@laptop"
        );
        assert_eq!(redact("postgres://h/db?password=x&schema=s"), "postgres://h/db?schema=s");
    }

    #[test]
    fn urls_lose_their_password_parameters() {
        assert_eq!(
            redact("postgres://localhost/db?user=app&password=secret&application_name=x"),
            "postgres://localhost/db?user=app&application_name=x"
        );
        assert_eq!(redact("postgres://localhost/db?password=secret"), "postgres://localhost/db");
        assert_eq!(
            redact("postgres://app:s3cret@db/prod?password=x&schema=jobs"),
            "postgres://app@db/prod?schema=jobs"
        );
        assert_eq!(
            redact("redis+unix:///run/redis.sock?db=1&pass=s3cret"),
            "redis+unix:///run/redis.sock?db=1"
        );
    }

    #[test]
    fn key_value_strings_lose_their_password() {
        assert_eq!(redact("host=localhost password=secret dbname=test"), "host=localhost dbname=test");
        assert_eq!(redact("host=db password='a b\\' c' user=app"), "host=db user=app");
        assert_eq!(redact("host=db"), "host=db");
    }

    #[test]
    fn other_text_comes_back_as_it_is() {
        assert_eq!(redact("sqlite:state.db"), "sqlite:state.db");
        assert_eq!(redact("memory"), "memory");
    }
}
