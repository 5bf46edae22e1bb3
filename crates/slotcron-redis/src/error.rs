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
    /// unknown database, or a server that does not speak Redis' protocol (the message
    /// then says so).
    #[error("redis coordinator: cannot connect: {}", connect_reason(.0))]
    Connect(#[source] redis::RedisError),
}

/// Why the first connection failed, with a hint where the answer suggests the address is
/// not a Redis server's (an answer that is not RESP, or the connection dropped at once, as
/// a PostgreSQL or HTTP server does to Redis' greeting), or where no answer came at all.
fn connect_reason(error: &redis::RedisError) -> String {
    let dropped = error.is_connection_dropped() && !error.is_connection_refusal();
    if error.is_timeout() {
        return format!(
            "{error} (no answer within the connection timeout: is the address right, and does the \
             server expect TLS (rediss://) or not?)"
        );
    }
    if error.kind() == redis::ErrorKind::Parse || dropped {
        format!(
            "{error} (the server did not answer as Redis does: is this the address and port of a Redis server?)"
        )
    } else {
        error.to_string()
    }
}
