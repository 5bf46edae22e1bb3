//! The admin API client of `slotcron status`, `pause`, `resume`, `trigger`, `backfill`,
//! `logs` and `cancel`: one request through [`slotcron_admin::client`] to a running
//! daemon's admin API, with the token from `SLOTCRON_ADMIN_TOKEN` (or the file named by
//! `SLOTCRON_ADMIN_TOKEN_FILE`), whichever kind the daemon takes it for.

use std::time::Duration;

pub use slotcron_admin::client::Call;
use slotcron_admin::client::{AdminUrl, Answer, send};

use crate::admin_token::{self, TOKEN_VAR};

/// How long the daemon may take to answer.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Makes `call` against `admin_url` on a runtime of its own, bounded by [`TIMEOUT`], with
/// the token of `SLOTCRON_ADMIN_TOKEN[_FILE]` if set: the body of a 2xx answer as JSON,
/// else the reason (the API's message with its status), prefixed by the URL.
///
/// # Errors
/// A malformed URL, a token [`admin_token::from_env`] refuses, no connection, no answer
/// within [`TIMEOUT`], or an error answer.
pub fn call(admin_url: &str, call: Call<'_>) -> Result<serde_json::Value, String> {
    answer(admin_url, call)?.json().map_err(|e| format!("{admin_url}: {e}"))
}

/// As [`call`], with `None` for a 404 (nothing there).
///
/// # Errors
/// As [`call`], but for a 404.
pub fn call_found(admin_url: &str, call: Call<'_>) -> Result<Option<serde_json::Value>, String> {
    let answer = answer(admin_url, call)?;
    if answer.status == axum::http::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    answer.json().map(Some).map_err(|e| format!("{admin_url}: {e}"))
}

/// The answer to `call`, whatever its status.
fn answer(admin_url: &str, call: Call<'_>) -> Result<Answer, String> {
    let url = AdminUrl::parse(admin_url)?;
    let token = admin_token::from_env(TOKEN_VAR)?;
    let call = match &token {
        Some(token) => call.bearer(token),
        None => call,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let answer = runtime.block_on(async {
        tokio::time::timeout(TIMEOUT, send(&url, call))
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {TIMEOUT:?}")))
    });
    answer.map_err(|e| format!("{admin_url}: {e}"))
}
