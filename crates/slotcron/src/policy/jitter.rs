//! Deterministic jitter: each trigger of a job starts after an offset in `[0, jitter)`
//! derived from the job's name and the trigger, the same on every replica (docs/design.md,
//! "Run policies"). The trigger instant, its key and `SLOTCRON_TRIGGER` stay nominal;
//! the grace window and the lateness are measured from the jittered start. For spreading
//! a fleet's `@hourly` jobs off the top of the hour.

use std::time::Duration;

use jiff::Timestamp;
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;

/// The start offset of `job`'s `trigger` under `jitter`: in `[0, jitter)`, to the
/// millisecond, from a 64-bit FNV-1a hash of the name and the trigger's millisecond
/// (a hash fixed here, not the standard library's, so every release and every replica
/// computes the same offset). Zero for a jitter under 1 ms.
pub fn jitter_offset(job: &str, trigger: Timestamp, jitter: Duration) -> Duration {
    let span = jitter.as_millis();
    if span == 0 {
        return Duration::ZERO;
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let bytes = job.bytes().chain([0]).chain(trigger.as_millisecond().to_le_bytes());
    for byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    Duration::from_millis((u128::from(hash) % span) as u64)
}

/// The jittered start of a trigger: the nominal instant plus its offset.
pub(crate) fn jittered(job: &str, trigger: Timestamp, jitter: Option<Duration>) -> Timestamp {
    match jitter {
        Some(jitter) => crate::clock::later(trigger, jitter_offset(job, trigger, jitter)),
        None => trigger,
    }
}

/// The jitter layer: waits on `clock` until the trigger's jittered start and returns
/// it; the reason, if `stopping` fired first.
pub(crate) async fn wait_for_start(
    job: &str,
    trigger: Timestamp,
    jitter: Option<Duration>,
    clock: &dyn Clock,
    stopping: &CancellationToken,
) -> Result<Timestamp, String> {
    let start = jittered(job, trigger, jitter);
    if start > clock.now() {
        tokio::select! {
            biased;
            () = stopping.cancelled() => {
                return Err("the scheduler stopped before the trigger's jittered start".into());
            }
            () = clock.sleep_until(start) => {}
        }
    }
    Ok(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_below_the_jitter_stable_and_spread() {
        let jitter = Duration::from_secs(30);
        let hour = |h: i64| Timestamp::from_second(h * 3600).unwrap();
        let offsets: Vec<Duration> = (0..48).map(|h| jitter_offset("report", hour(h), jitter)).collect();
        assert!(offsets.iter().all(|o| *o < jitter));
        let mut distinct = offsets.clone();
        distinct.sort();
        distinct.dedup();
        assert!(distinct.len() > 40, "{distinct:?}");
        // Fixed by the hash: the same on every replica and in every release.
        assert_eq!(jitter_offset("report", hour(0), jitter), offsets[0]);
        assert_ne!(jitter_offset("backup", hour(0), jitter), offsets[0]);
        assert_eq!(jitter_offset("report", hour(0), Duration::from_micros(10)), Duration::ZERO);
        // Pinned: a change of hash would move every fleet's starts at an upgrade, and
        // replicas of two releases would disagree.
        assert_eq!(jitter_offset("report", hour(0), jitter), Duration::from_millis(5_681));
    }
}
