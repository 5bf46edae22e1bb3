//! Log output: `tracing` events to standard error, filtered by `RUST_LOG`.

use tracing_subscriber::EnvFilter;

/// The filter when `RUST_LOG` is unset.
const DEFAULT_FILTER: &str = "info";

/// Installs the global subscriber: human-readable lines on standard error, filtered by
/// the `RUST_LOG` environment variable (`tracing-subscriber` env-filter syntax, e.g.
/// `RUST_LOG=debug` or `RUST_LOG=info,slotcron=debug`), `info` by default.
pub fn init() {
    let filter = match EnvFilter::try_from_default_env() {
        Ok(filter) => filter,
        Err(e) => {
            if std::env::var_os(EnvFilter::DEFAULT_ENV).is_some() {
                eprintln!("slotcron: ignoring RUST_LOG ({e}); logging at {DEFAULT_FILTER}");
            }
            EnvFilter::new(DEFAULT_FILTER)
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Module paths (`slotcron::engine::table`) mean nothing to an operator.
        .with_target(false)
        // When standard error is gone (a closed pipe), lose the lines quietly: the
        // fallback message would panic in whatever task logged.
        .log_internal_errors(false)
        .init();
}
