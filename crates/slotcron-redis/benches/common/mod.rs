//! What the Redis benchmarks share: the server's command counts and the cleanup.

pub use slotcron::BoxError;
pub use slotcron_testkit::redis_stats::{command_calls, delete_keys};

/// The first argument that is not a flag (`cargo bench` passes `--bench`), else
/// `$SLOTCRON_REDIS_URL`, else `redis://127.0.0.1:6379`.
pub fn url_from_args() -> String {
    std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--") && a.contains("://"))
        .or_else(|| std::env::var("SLOTCRON_REDIS_URL").ok())
        .unwrap_or_else(|| "redis://127.0.0.1:6379".to_owned())
}
