//! Instants as integer microseconds since the Unix epoch (UTC; finer digits are dropped).

use slotcron::BoxError;
use slotcron::jiff::Timestamp;

pub(crate) fn micros(instant: Timestamp) -> i64 {
    instant.as_microsecond()
}

pub(crate) fn instant(micros: i64) -> Result<Timestamp, BoxError> {
    Ok(Timestamp::from_microsecond(micros)?)
}
