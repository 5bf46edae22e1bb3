//! The token the runs of rerun jobs watch while this replica is cut off from its
//! coordinator ([`partition`](super::partition) fires and heals it).

use std::sync::Mutex;
use std::time::Duration;

use jiff::Timestamp;
use tokio_util::sync::CancellationToken;

/// The token the runs of rerun jobs watch: fired when this replica finds itself cut off,
/// replaced by a fresh one when its heartbeats answer again.
#[derive(Default)]
pub(crate) struct CutOff(Mutex<CancellationToken>);

impl CutOff {
    pub fn current(&self) -> CancellationToken {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Fires the current token (once), logging it.
    pub fn fire(&self, since: Timestamp, lapse: Duration) {
        let token = self.current();
        if !token.is_cancelled() {
            tracing::warn!(
                %since,
                ?lapse,
                "cut off from the coordinator longer than this replica's own lapse: starting nothing new, \
                 and stopping the runs of on_interrupt = \"rerun\" jobs (a live member reruns them)"
            );
            token.cancel();
        }
    }

    /// A fresh token once the heartbeats answer again.
    pub fn heal(&self) {
        let mut token = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if token.is_cancelled() {
            tracing::info!("the coordinator answers again: this replica is back in the fleet");
            *token = CancellationToken::new();
        }
    }
}
