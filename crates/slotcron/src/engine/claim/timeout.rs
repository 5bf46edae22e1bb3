//! The bound on every call to the coordinator: the claim timeout.

use std::time::Duration;

use futures_util::FutureExt;

use crate::clock::{Clock, later};
use crate::coordinator::CoordinatorError;

/// Awaits a call to the coordinator for at most `timeout` on `clock`; its end is the
/// [`TimedOut`](crate::CoordinatorErrorKind::TimedOut) kind.
pub(crate) async fn within<T>(
    clock: &dyn Clock,
    timeout: Duration,
    call: impl Future<Output = Result<T, CoordinatorError>>,
) -> Result<T, CoordinatorError> {
    let mut call = std::pin::pin!(call);
    // Most calls answer at once: arm the timeout only if not.
    if let Some(answer) = (&mut call).now_or_never() {
        return answer;
    }
    tokio::select! {
        biased;
        answer = call => answer,
        () = clock.sleep_until(later(clock.now(), timeout)) => Err(CoordinatorError::timed_out(
            format!("no answer within the claim timeout of {timeout:?}"),
        )),
    }
}
