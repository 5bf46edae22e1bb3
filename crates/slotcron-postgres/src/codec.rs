//! Instants as `timestamptz` columns (microseconds; finer digits are dropped).

use std::time::SystemTime;

use slotcron::BoxError;
use slotcron::jiff::Timestamp;

pub(crate) fn timestamptz(instant: Timestamp) -> Result<SystemTime, BoxError> {
    Ok(SystemTime::try_from(instant)?)
}

pub(crate) fn instant(column: SystemTime) -> Result<Timestamp, BoxError> {
    Ok(Timestamp::try_from(column)?)
}
