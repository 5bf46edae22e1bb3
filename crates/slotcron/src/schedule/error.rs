use super::cron::CronError;

/// An invalid schedule, naming the field and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScheduleError {
    /// A malformed cron expression.
    #[error(transparent)]
    Cron(#[from] CronError),
    /// A field whose value is out of its domain, e.g. a zero interval.
    #[error("{field}: {reason}")]
    Invalid {
        /// The field, as a user wrote it (`every`, `offset`, `at`, `timezone`...).
        field: &'static str,
        /// Why it is rejected.
        reason: String,
    },
}

impl ScheduleError {
    pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        Self::Invalid { field, reason: reason.into() }
    }
}
