//! Why a Redis coordinator could not be set up.

/// A [`RedisCoordinator`](crate::RedisCoordinator) that cannot start. Errors never
/// include the URL, which may hold a password.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedisCoordinatorError {
    /// A setting with an invalid value.
    #[error("redis coordinator: {field}: {reason}")]
    Config {
        /// The setting at fault (`url`, `response_timeout`...).
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// The first connection failed: unreachable server, refused TLS, wrong password,
    /// unknown database.
    #[error("redis coordinator: cannot connect: {0}")]
    Connect(#[source] redis::RedisError),
}
