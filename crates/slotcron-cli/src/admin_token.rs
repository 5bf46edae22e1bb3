//! The admin API's bearer tokens from the environment, for the daemon (`slotcron run
//! --admin`) and the client (`slotcron status`, `pause`…) alike: a token is given in
//! `VAR`, or in a file named by `VAR_FILE` (a Kubernetes Secret mounted as a file).

use std::ffi::OsString;
use std::path::Path;

/// The full token: reads and writes. The client sends what it holds.
pub const TOKEN_VAR: &str = "SLOTCRON_ADMIN_TOKEN";
/// The read-only token: reads only.
pub const READ_TOKEN_VAR: &str = "SLOTCRON_ADMIN_READ_TOKEN";

/// The token given in the environment variable `var`, or in the file named by
/// `{var}_FILE` (its trailing line breaks removed); `None` if neither is set.
///
/// # Errors
/// Both are set; either is set but empty; the file cannot be read, is not UTF-8, or
/// holds nothing but line breaks. The message names the variable (and the file) and the
/// reason, on one line.
pub fn from_env(var: &str) -> Result<Option<String>, String> {
    let file_var = format!("{var}_FILE");
    from(var, std::env::var_os(var), &file_var, std::env::var_os(&file_var))
}

/// [`from_env`] over the values given.
fn from(
    var: &str,
    value: Option<OsString>,
    file_var: &str,
    file: Option<OsString>,
) -> Result<Option<String>, String> {
    match (value, file) {
        (Some(_), Some(_)) => Err(format!("{var} and {file_var} are both set; set only one of them")),
        (Some(value), None) => {
            let value = value.into_string().map_err(|_| format!("{var} is not UTF-8"))?;
            if value.is_empty() {
                return Err(format!("{var} is set but empty; remove it, or give a token"));
            }
            one_word(&value).map_err(|reason| format!("{var}: {reason}"))?;
            Ok(Some(value))
        }
        (None, Some(path)) if path.is_empty() => {
            Err(format!("{file_var} is set but empty; remove it, or name the file holding the token"))
        }
        (None, Some(path)) => read(file_var, Path::new(&path)).map(Some),
        (None, None) => Ok(None),
    }
}

/// The token in the file at `path`, named by `file_var`.
fn read(file_var: &str, path: &Path) -> Result<String, String> {
    let named = || format!("{file_var} {}", path.display());
    let text = std::fs::read(path).map_err(|e| format!("{}: cannot read the file: {e}", named()))?;
    let text = String::from_utf8(text).map_err(|_| format!("{}: the file is not UTF-8", named()))?;
    let token = text.trim_end_matches(['\n', '\r']);
    if token.is_empty() {
        return Err(format!("{}: the file is empty; write the token in it", named()));
    }
    one_word(token).map_err(|reason| format!("{}: {reason}", named()))?;
    Ok(token.to_owned())
}

/// Refuses a token an `Authorization: Bearer` header cannot carry as one word: a bearer
/// token is visible ASCII without spaces (RFC 6750 section 2.1, `b64token`, and any other
/// visible character a header may hold).
fn one_word(token: &str) -> Result<(), String> {
    match token.char_indices().find(|(_, c)| !c.is_ascii_graphic()) {
        Some((at, c)) => Err(format!(
            "the token holds {c:?} at byte {at}: a bearer token is one word of visible ASCII \
             characters (no spaces, line breaks or other control characters)"
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(value: Option<&str>, file: Option<&Path>) -> Result<Option<String>, String> {
        from("T", value.map(OsString::from), "T_FILE", file.map(OsString::from))
    }

    #[test]
    fn a_token_comes_from_the_variable_or_its_file_without_the_trailing_newline() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "s3cret\r\n").unwrap();
        assert_eq!(given(Some("abc"), None), Ok(Some("abc".into())));
        assert_eq!(given(None, Some(&file)), Ok(Some("s3cret".into())));
        assert_eq!(given(None, None), Ok(None));
    }

    #[test]
    fn both_empty_or_unreadable_are_errors_naming_the_variable_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "\n").unwrap();
        let missing = dir.path().join("missing");
        assert_eq!(
            given(Some("a"), Some(&empty)),
            Err("T and T_FILE are both set; set only one of them".into())
        );
        assert_eq!(given(Some(""), None), Err("T is set but empty; remove it, or give a token".into()));
        assert!(given(None, Some(Path::new(""))).unwrap_err().starts_with("T_FILE is set but empty"));
        assert_eq!(
            given(None, Some(&empty)),
            Err(format!("T_FILE {}: the file is empty; write the token in it", empty.display()))
        );
        let error = given(None, Some(&missing)).unwrap_err();
        assert!(
            error.starts_with(&format!("T_FILE {}: cannot read the file: ", missing.display())),
            "{error}"
        );
    }

    #[test]
    fn a_token_that_is_not_one_word_of_visible_ascii_is_refused_naming_where() {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in [("spaces", "   \n"), ("two-lines", "tok\nmore\n"), ("inner", "to k")] {
            let file = dir.path().join(name);
            std::fs::write(&file, text).unwrap();
            let error = given(None, Some(&file)).unwrap_err();
            assert!(error.starts_with("T_FILE ") && error.contains("a bearer token is one word"), "{error}");
        }
        let error = given(Some("tab\there"), None).unwrap_err();
        assert!(error.starts_with("T: the token holds '\\t' at byte 3"), "{error}");
        assert_eq!(given(Some("A-z_0.9~+/="), None), Ok(Some("A-z_0.9~+/=".into())));
    }
}
