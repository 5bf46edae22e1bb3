//! The error items every module shares: [`BoxError`] and [`error_chain`].

use std::error::Error;

/// A boxed error: what handlers, stores, ledgers and controls return when the cause is
/// theirs to choose. Defined once for the workspace; the backend crates use this one.
pub type BoxError = Box<dyn Error + Send + Sync + 'static>;

/// An error and its sources on one line, joined with `: ` (`error connecting to server:
/// Connection refused (os error 111)` rather than a bare `error connecting to server`).
/// A source whose text the message already ends with is not repeated, as wrappers that
/// print their cause (`#[error("…: {0}")]`) would otherwise show it twice.
pub fn error_chain(error: &(dyn Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.ends_with(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("wrapped: {0}")]
    struct Wrapped(#[source] std::io::Error);

    #[test]
    fn the_chain_joins_each_source_once() {
        let io = || std::io::Error::other("refused");
        assert_eq!(error_chain(&Outer(io())), "outer: refused");
        assert_eq!(
            error_chain(&Wrapped(io())),
            "wrapped: refused",
            "a cause already printed is not repeated"
        );
    }
}
