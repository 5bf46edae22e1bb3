//! Why a claim has no answer, as a kind the engine and the run policies decide on
//! (never the message), after sqlx's `Error`: the backend's own error stays the source.

use std::fmt;

use crate::error::BoxError;

/// What went wrong with a claim, for decisions: every kind leaves the trigger unclaimed
/// by this replica, so the engine skips it (`skipped-backend-unavailable`, fail closed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CoordinatorErrorKind {
    /// The backend could not be asked, or answered with an error: the claim was not
    /// made (no connection, refused, a script or statement error, no random token).
    Unavailable,
    /// No answer within the scheduler's claim timeout: the claim may or may not have
    /// been made, and no read-back was tried.
    TimedOut,
    /// The request may have reached the backend but no answer came back, and reading
    /// the claim back failed too: the claim may have been made.
    OutcomeUnknown,
    /// The backend refused this replica's credentials or permissions (a password that
    /// was rotated, an ACL user without a command): the claim was not made, and no
    /// claim will be until the configuration is fixed.
    Unauthorized,
}

impl CoordinatorErrorKind {
    /// The kind's name in logs, metrics and run records: `unavailable`, `timed-out`,
    /// `outcome-unknown`, `unauthorized`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unavailable => "unavailable",
            Self::TimedOut => "timed-out",
            Self::OutcomeUnknown => "outcome-unknown",
            Self::Unauthorized => "unauthorized",
        }
    }
}

impl fmt::Display for CoordinatorErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A coordinator backend failure: its [`kind`](Self::kind) and the backend's error.
/// Its message is the backend's error alone.
#[derive(Debug, thiserror::Error)]
#[error("{source}")]
pub struct CoordinatorError {
    kind: CoordinatorErrorKind,
    #[source]
    source: BoxError,
}

impl CoordinatorError {
    /// An error of `kind` caused by `error`.
    pub fn new(kind: CoordinatorErrorKind, error: impl Into<BoxError>) -> Self {
        Self { kind, source: error.into() }
    }

    /// [`CoordinatorErrorKind::Unavailable`]: the claim was not made.
    pub fn unavailable(error: impl Into<BoxError>) -> Self {
        Self::new(CoordinatorErrorKind::Unavailable, error)
    }

    /// [`CoordinatorErrorKind::TimedOut`]: no answer in time.
    pub fn timed_out(error: impl Into<BoxError>) -> Self {
        Self::new(CoordinatorErrorKind::TimedOut, error)
    }

    /// [`CoordinatorErrorKind::OutcomeUnknown`]: the claim may have been made.
    pub fn outcome_unknown(error: impl Into<BoxError>) -> Self {
        Self::new(CoordinatorErrorKind::OutcomeUnknown, error)
    }

    /// What went wrong.
    pub fn kind(&self) -> CoordinatorErrorKind {
        self.kind
    }

    /// Whether a later claim of another trigger may well succeed: the backend was
    /// unreachable or slow ([`Unavailable`](CoordinatorErrorKind::Unavailable),
    /// [`TimedOut`](CoordinatorErrorKind::TimedOut)), or refused the credentials
    /// ([`Unauthorized`](CoordinatorErrorKind::Unauthorized), until they are fixed). `false` for
    /// [`OutcomeUnknown`](CoordinatorErrorKind::OutcomeUnknown): the claim of this very
    /// trigger may stand, so it must not simply be made again.
    pub fn is_transient(&self) -> bool {
        matches!(
            self.kind,
            CoordinatorErrorKind::Unavailable
                | CoordinatorErrorKind::TimedOut
                | CoordinatorErrorKind::Unauthorized
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kind_decides_and_the_message_is_the_backends() {
        let error = CoordinatorError::unavailable("connection refused");
        assert_eq!(
            (error.kind(), error.to_string()),
            (CoordinatorErrorKind::Unavailable, "connection refused".into())
        );
        assert!(error.is_transient());
        assert!(CoordinatorError::timed_out("slow").is_transient());
        assert!(!CoordinatorError::outcome_unknown("reset").is_transient());
        assert_eq!(CoordinatorErrorKind::OutcomeUnknown.to_string(), "outcome-unknown");
    }
}
