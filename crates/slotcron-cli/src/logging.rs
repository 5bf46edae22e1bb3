//! Log output: `tracing` events to standard error, filtered by `RUST_LOG`.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::prelude::*;

use crate::cli::LogFormat;

/// The filter when `RUST_LOG` is unset.
const DEFAULT_FILTER: &str = "info";

/// Installs the global subscriber: human-readable lines on standard error, filtered by
/// the `RUST_LOG` environment variable (`tracing-subscriber` env-filter syntax, e.g.
/// `RUST_LOG=debug` or `RUST_LOG=info,slotcron=debug`), `info` by default.
///
/// With [`LogFormat::Json`], each line is one JSON object: `timestamp`, `level`,
/// `target`, the event's fields (`message`, `job`, `trigger`, `instance`, `outcome`, `duration_ms`...)
/// flattened, and those of the run's span (`job`, `trigger`) under `span`.
pub fn init(format: LogFormat) {
    let filter = match EnvFilter::try_from_default_env() {
        Ok(filter) => filter,
        Err(e) => {
            if std::env::var_os(EnvFilter::DEFAULT_ENV).is_some() {
                eprintln!("slotcron: ignoring RUST_LOG ({e}); logging at {DEFAULT_FILTER}");
            }
            EnvFilter::new(DEFAULT_FILTER)
        }
    };
    let lines = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        // When standard error is gone (a closed pipe), lose the lines quietly: the
        // fallback message would panic in whatever task logged.
        .log_internal_errors(false);
    let registry = tracing_subscriber::registry().with(filter);
    match format {
        // The text lines stay as they were: without the run span's prefix (its fields
        // are on the engine's lines already).
        // Module paths (`slotcron::engine::table`) mean nothing to an operator reading
        // text; a JSON line keeps its `target` for filtering.
        LogFormat::Text => registry
            .with(lines.with_target(false).with_filter(filter_fn(|m| !(m.is_span() && m.name() == "run"))))
            .init(),
        LogFormat::Json => registry.with(lines.json().flatten_event(true).with_span_list(false)).init(),
    }
}
