//! The error items every module shares: [`BoxError`], [`BackendErrorKind`] and
//! [`error_chain`].

use std::error::Error;

/// A boxed error: what handlers, stores, ledgers and controls return when the cause is
/// theirs to choose. Defined once for the workspace; the backend crates use this one.
pub type BoxError = Box<dyn Error + Send + Sync + 'static>;

/// What went wrong with a store or a ledger, for decisions (after sqlx's `Error`): the
/// backend's own error stays the source, and the message is its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BackendErrorKind {
    /// The backend could not be asked, or refused the request (no connection, a
    /// statement error, a full disk): asking again later may succeed. The engine keeps
    /// such writes and writes them again.
    Unavailable,
    /// What the backend holds cannot be read as slotcron's (a row that does not decode,
    /// a definition that is not valid JSON): asking again does not help.
    InvalidData,
}

impl BackendErrorKind {
    /// The kind's name in logs: `unavailable`, `invalid-data`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unavailable => "unavailable",
            Self::InvalidData => "invalid-data",
        }
    }
}

impl std::fmt::Display for BackendErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Defines a backend failure type: its [`BackendErrorKind`] and the backend's error, the
/// message `{label}: {backend's message}`. One definition for the ledger's, the store's
/// and the controls' errors.
macro_rules! backend_error {
    ($(#[$doc:meta])* $name:ident, $label:literal) => {
        $(#[$doc])*
        #[derive(Debug, thiserror::Error)]
        #[error("{}: {source}", $label)]
        pub struct $name {
            kind: $crate::error::BackendErrorKind,
            #[source]
            source: $crate::error::BoxError,
        }

        impl $name {
            /// An error of `kind` caused by `error`.
            pub fn with_kind(kind: $crate::error::BackendErrorKind, error: impl Into<$crate::error::BoxError>) -> Self {
                Self { kind, source: error.into() }
            }

            /// [`BackendErrorKind::Unavailable`](crate::BackendErrorKind::Unavailable): the
            /// backend could not be asked, or refused.
            pub fn new(error: impl Into<$crate::error::BoxError>) -> Self {
                Self::with_kind($crate::error::BackendErrorKind::Unavailable, error)
            }

            /// [`BackendErrorKind::InvalidData`](crate::BackendErrorKind::InvalidData): what
            /// the backend holds cannot be read.
            pub fn invalid_data(error: impl Into<$crate::error::BoxError>) -> Self {
                Self::with_kind($crate::error::BackendErrorKind::InvalidData, error)
            }

            /// What went wrong.
            pub fn kind(&self) -> $crate::error::BackendErrorKind {
                self.kind
            }
        }
    };
}
pub(crate) use backend_error;

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
