//! Connection strings in messages: never with the password.

/// `url` without its password: removed from the user info of a URL
/// (`postgres://user:secret@host/db` → `postgres://user@host/db`), and the `password`
/// parameter removed from a URL's query or from a `key=value` connection string.
pub(crate) fn redact(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => format!("{scheme}://{}", redact_url_rest(rest)),
        None => redact_key_values(url),
    }
}

fn redact_url_rest(rest: &str) -> String {
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((user_info, hosts)) => {
            let user = user_info.split_once(':').map_or(user_info, |(user, _)| user);
            format!("{user}@{hosts}")
        }
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

fn is_password(param: &str) -> bool {
    param.split_once('=').map_or(param, |(key, _)| key).trim() == "password"
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
    fn urls_lose_their_password() {
        assert_eq!(
            redact("postgres://app:s3cr:et@db.example:5432/prod"),
            "postgres://app@db.example:5432/prod"
        );
        assert_eq!(
            redact("postgresql://app:p%40ss@h1,h2/db?sslmode=disable"),
            "postgresql://app@h1,h2/db?sslmode=disable"
        );
        assert_eq!(redact("postgres://app@localhost/db"), "postgres://app@localhost/db");
        assert_eq!(redact("postgres://localhost"), "postgres://localhost");
        assert_eq!(
            redact("postgres://localhost/db?user=app&password=secret&application_name=x"),
            "postgres://localhost/db?user=app&application_name=x"
        );
        assert_eq!(redact("postgres://localhost/db?password=secret"), "postgres://localhost/db");
    }

    #[test]
    fn key_value_strings_lose_their_password() {
        assert_eq!(redact("host=localhost password=secret dbname=test"), "host=localhost dbname=test");
        assert_eq!(redact("host=db password='a b\\' c' user=app"), "host=db user=app");
        assert_eq!(redact("host=db"), "host=db");
    }
}
