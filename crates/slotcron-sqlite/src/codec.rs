//! Conversions between slotcron's types and the columns: instants and durations are
//! integer microseconds (instants since the Unix epoch, UTC), outcomes their stable names.

use std::time::Duration;

use slotcron::Outcome;
use slotcron::jiff::Timestamp;

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Microseconds since the Unix epoch; finer digits are dropped.
pub(crate) fn micros(instant: Timestamp) -> i64 {
    instant.as_microsecond()
}

pub(crate) fn instant(micros: i64) -> Result<Timestamp, BoxError> {
    Ok(Timestamp::from_microsecond(micros)?)
}

/// Microseconds; finer digits are dropped.
pub(crate) fn duration_micros(duration: Duration) -> Result<i64, BoxError> {
    i64::try_from(duration.as_micros()).map_err(|_| format!("duration {duration:?} out of range").into())
}

pub(crate) fn duration(micros: i64) -> Result<Duration, BoxError> {
    let micros = u64::try_from(micros).map_err(|_| format!("negative duration {micros} µs"))?;
    Ok(Duration::from_micros(micros))
}

pub(crate) fn outcome(name: &str) -> Result<Outcome, BoxError> {
    Ok(name.parse::<Outcome>()?)
}

/// A fencing token as a signed 64-bit column.
pub(crate) fn token_column(token: u64) -> Result<i64, BoxError> {
    i64::try_from(token).map_err(|_| format!("fencing token {token} out of range").into())
}

pub(crate) fn token(column: i64) -> Result<u64, BoxError> {
    u64::try_from(column).map_err(|_| format!("negative fencing token {column}").into())
}
