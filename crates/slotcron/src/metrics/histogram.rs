//! A histogram kept next to what it measures: a sample costs two uncontended atomic
//! additions; its bucket counts and sums go to the recorder at the next flush.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use metrics::Histogram;

use super::METRIC_BUCKETS;

/// Buckets: one per bound of [`METRIC_BUCKETS`], and one above the last.
const SLOTS: usize = METRIC_BUCKETS.len() + 1;

/// One bucket's samples since the last drain: how many, and their sum in nanoseconds
/// (side by side: a sample touches one cache line).
#[derive(Debug, Default)]
struct Slot {
    count: AtomicU64,
    sum_nanos: AtomicU64,
}

/// Samples by [`METRIC_BUCKETS`] bucket, drained by [`LocalHistogram::drain_into`].
#[derive(Debug, Default)]
pub(crate) struct LocalHistogram {
    slots: [Slot; SLOTS],
}

impl LocalHistogram {
    /// One sample.
    pub fn record(&self, sample: Duration) {
        let slot = &self.slots[bucket(sample.as_secs_f64())];
        slot.count.fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(sample.as_nanos()).unwrap_or(u64::MAX);
        slot.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Moves the samples recorded since the last drain into `into`.
    pub fn drain_into(&self, into: &mut Drained) {
        for (slot, (count, sum)) in self.slots.iter().zip(into.slots.iter_mut()) {
            if slot.count.load(Ordering::Relaxed) == 0 {
                continue;
            }
            *count += slot.count.swap(0, Ordering::Relaxed);
            *sum = sum.saturating_add(slot.sum_nanos.swap(0, Ordering::Relaxed));
        }
    }
}

/// The bucket of a sample of `seconds`: the first whose bound it does not exceed, as the
/// Prometheus exporter files it (`le`: less than or equal).
fn bucket(seconds: f64) -> usize {
    METRIC_BUCKETS.partition_point(|bound| *bound < seconds)
}

/// Drained samples: count and sum (nanoseconds) per bucket.
#[derive(Debug, Default)]
pub(crate) struct Drained {
    slots: [(u64, u64); SLOTS],
}

impl Drained {
    /// Hands the samples to the recorder's `histogram`, as each bucket's count of
    /// samples at that bucket's mean: the recorder's bucket counts (for bounds among
    /// [`METRIC_BUCKETS`]), sample count and sum come out as if it had had every sample.
    pub fn feed(&self, histogram: &Histogram) {
        for (i, &(count, sum_nanos)) in self.slots.iter().enumerate() {
            if count == 0 {
                continue;
            }
            let mean = sum_nanos as f64 / count as f64 / 1e9;
            // Within the bucket, whatever the rounding (or a sample counted in one drain
            // and summed in the next).
            let lowest = i.checked_sub(1).map_or(0.0, |below| METRIC_BUCKETS[below].next_up());
            let highest = METRIC_BUCKETS.get(i).copied().unwrap_or(f64::INFINITY);
            let count = usize::try_from(count).unwrap_or(usize::MAX);
            histogram.record_many(mean.clamp(lowest, highest), count);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_filed_as_prometheus_files_them() {
        assert_eq!(bucket(0.0), 0);
        assert_eq!(bucket(0.001), 0, "le: a sample on a bound is in that bound's bucket");
        assert_eq!(bucket(0.0011), 1);
        assert_eq!(bucket(3600.0), METRIC_BUCKETS.len() - 1);
        assert_eq!(bucket(3600.5), METRIC_BUCKETS.len(), "above the last bound: the +Inf bucket");
    }

    #[test]
    fn a_drain_takes_the_samples_once() {
        let histogram = LocalHistogram::default();
        histogram.record(Duration::from_millis(2));
        histogram.record(Duration::from_millis(4));
        histogram.record(Duration::from_secs(7200));
        let mut drained = Drained::default();
        histogram.drain_into(&mut drained);
        assert_eq!(drained.slots[1], (2, 6_000_000));
        assert_eq!(drained.slots[SLOTS - 1], (1, 7_200_000_000_000));
        assert_eq!(drained.slots.iter().map(|s| s.0).sum::<u64>(), 3);
        let mut again = Drained::default();
        histogram.drain_into(&mut again);
        assert!(again.slots.iter().all(|s| *s == (0, 0)));
    }

    /// The exposition lines of histogram `name`, from a Prometheus exporter with the
    /// engine's buckets that got `record`'s samples.
    fn exposed(name: &'static str, record: impl FnOnce(&Histogram)) -> Vec<String> {
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new()
            .set_buckets(&METRIC_BUCKETS)
            .unwrap()
            .build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || record(&metrics::histogram!(name)));
        let text = handle.render();
        text.lines().filter(|l| l.starts_with(name)).map(|l| l.replacen(name, "h", 1)).collect()
    }

    #[test]
    fn a_fed_histogram_is_exposed_as_its_samples_would_be() {
        let samples: Vec<Duration> = [0, 1, 3, 4, 7, 90, 250, 251, 1_000, 42_000, 3_600_000, 5_000_000]
            .into_iter()
            .map(Duration::from_millis)
            .chain([Duration::from_micros(1_234), Duration::from_nanos(17)])
            .collect();
        let direct = exposed("direct", |h| samples.iter().for_each(|s| h.record(s.as_secs_f64())));
        let fed = exposed("fed", |h| {
            let local = LocalHistogram::default();
            samples.iter().for_each(|s| local.record(*s));
            let mut drained = Drained::default();
            local.drain_into(&mut drained);
            drained.feed(h);
        });
        assert_eq!(direct.len(), METRIC_BUCKETS.len() + 3, "{direct:?}");
        let (direct_sum, fed_sum) = (sum(&direct), sum(&fed));
        assert!((direct_sum - fed_sum).abs() < 1e-9, "{direct_sum} {fed_sum}");
        let without_sum =
            |lines: Vec<String>| lines.into_iter().filter(|l| !l.starts_with("h_sum")).collect::<Vec<_>>();
        assert_eq!(without_sum(fed), without_sum(direct), "buckets and count");
    }

    fn sum(lines: &[String]) -> f64 {
        let line = lines.iter().find(|l| l.starts_with("h_sum")).unwrap();
        line.rsplit(' ').next().unwrap().parse().unwrap()
    }
}
