//! Instants as `timestamptz` columns (microseconds; finer digits are dropped).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use slotcron::BoxError;
use slotcron::jiff::Timestamp;

pub(crate) fn timestamptz(instant: Timestamp) -> Result<SystemTime, BoxError> {
    Ok(SystemTime::try_from(instant)?)
}

pub(crate) fn instant(column: SystemTime) -> Result<Timestamp, BoxError> {
    Ok(Timestamp::try_from(column)?)
}

/// The microseconds since 2000-01-01 that a `timestamptz` parameter of `instant` stores:
/// what the server compares. As tokio-postgres encodes it, the digits finer than a
/// microsecond are dropped towards 2000.
pub(crate) fn stored_micros(instant: SystemTime) -> i64 {
    const POSTGRES_EPOCH: Duration = Duration::from_secs(946_684_800);
    let micros = |since: Duration| since.as_micros() as i64;
    match instant.duration_since(UNIX_EPOCH + POSTGRES_EPOCH) {
        Ok(after) => micros(after),
        Err(before) => -micros(before.duration()),
    }
}
