//! Instants as integer microseconds since the Unix epoch (UTC; finer digits are dropped).

use slotcron::jiff::Timestamp;

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

pub(crate) fn micros(instant: Timestamp) -> i64 {
    instant.as_microsecond()
}

pub(crate) fn instant(micros: i64) -> Result<Timestamp, BoxError> {
    Ok(Timestamp::from_microsecond(micros)?)
}
