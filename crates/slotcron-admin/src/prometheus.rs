//! The Prometheus recorder for a scheduler's metrics: `metrics-exporter-prometheus` keeps
//! the counters and gauges; the histograms are counted here, in their buckets.
//!
//! The engine hands its histograms to the recorder at each flush as each bucket's count of
//! samples at one value (`record_many`, see [`slotcron::METRIC_BUCKETS`]). The exporter's histogram
//! takes samples one by one (a push each, and a pass over the bounds for each at its
//! upkeep), and its upkeep copies every histogram's key and labels: with a duration
//! histogram per job, that is most of what per-job metrics cost. Here `record_many` is two
//! atomic additions and nothing needs an upkeep; the exposition (names, labels, `le`
//! bounds, `_bucket`, `_sum`, `_count`) is written with the exporter's own formatting, as
//! the exporter writes it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use metrics::{Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use metrics_exporter_prometheus::formatting::{
    sanitize_metric_name, write_help_line, write_metric_line, write_type_line,
};
use metrics_exporter_prometheus::{LabelSet, PrometheusBuilder, PrometheusHandle, PrometheusRecorder};

/// Renders what [`MetricsRecorder`] recorded, as Prometheus text format 0.0.4 (for
/// [`Admin::metrics`](crate::Admin::metrics)).
#[derive(Clone)]
pub struct PrometheusMetrics {
    exporter: PrometheusHandle,
    histograms: Arc<Histograms>,
}

/// The recorder behind [`PrometheusMetrics`]: install it with
/// [`metrics::set_global_recorder`] (or use [`PrometheusMetrics::install`]).
pub struct MetricsRecorder {
    exporter: PrometheusRecorder,
    histograms: Arc<Histograms>,
}

/// Every histogram series, and the histograms' descriptions.
struct Histograms {
    /// Upper bounds of the buckets, in increasing order.
    bounds: Arc<[f64]>,
    series: Mutex<HashMap<Key, Arc<Buckets>>>,
    /// The first description given for each name (as the exporter keeps it).
    descriptions: Mutex<HashMap<String, SharedString>>,
}

/// One histogram series: samples per bucket (one per bound, and one above the last) and
/// their sum.
struct Buckets {
    bounds: Arc<[f64]>,
    counts: Box<[AtomicU64]>,
    /// The sum of the samples, as `f64` bits.
    sum: AtomicU64,
}

impl PrometheusMetrics {
    /// A recorder whose histograms have buckets with upper bounds `bounds` (pass
    /// [`slotcron::METRIC_BUCKETS`], which the engine files samples in; sorted here, NaN
    /// and repeated bounds dropped), and what renders it.
    pub fn recorder(bounds: &[f64]) -> (MetricsRecorder, PrometheusMetrics) {
        let exporter = PrometheusBuilder::new().build_recorder();
        let mut bounds: Vec<f64> = bounds.iter().copied().filter(|b| !b.is_nan()).collect();
        bounds.sort_by(f64::total_cmp);
        bounds.dedup();
        let histograms = Arc::new(Histograms {
            bounds: bounds.into(),
            series: Mutex::default(),
            descriptions: Mutex::default(),
        });
        let metrics = PrometheusMetrics { exporter: exporter.handle(), histograms: histograms.clone() };
        (MetricsRecorder { exporter, histograms }, metrics)
    }

    /// Installs the recorder with [`slotcron::METRIC_BUCKETS`] as the process's recorder,
    /// and gives it the engine's descriptions ([`slotcron::describe_metrics`]).
    ///
    /// # Errors
    /// A recorder is already installed.
    pub fn install() -> Result<PrometheusMetrics, String> {
        let (recorder, metrics) = Self::recorder(&slotcron::METRIC_BUCKETS);
        metrics::set_global_recorder(recorder)
            .map_err(|e| format!("cannot install the metrics recorder: {e}"))?;
        slotcron::describe_metrics();
        Ok(metrics)
    }

    /// The exposition: the exporter's counters and gauges, then the histograms.
    pub fn render(&self) -> String {
        let mut text = self.exporter.render();
        self.histograms.render(&mut text);
        text
    }
}

impl Recorder for MetricsRecorder {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.exporter.describe_counter(key, unit, description);
    }

    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.exporter.describe_gauge(key, unit, description);
    }

    fn describe_histogram(&self, key: KeyName, _unit: Option<Unit>, description: SharedString) {
        // The exporter shows no unit either (its unit suffix is off by default).
        let name = sanitize_metric_name(key.as_str());
        lock(&self.histograms.descriptions).entry(name).or_insert(description);
    }

    fn register_counter(&self, key: &Key, metadata: &Metadata<'_>) -> Counter {
        self.exporter.register_counter(key, metadata)
    }

    fn register_gauge(&self, key: &Key, metadata: &Metadata<'_>) -> Gauge {
        self.exporter.register_gauge(key, metadata)
    }

    fn register_histogram(&self, key: &Key, _metadata: &Metadata<'_>) -> Histogram {
        let mut series = lock(&self.histograms.series);
        let buckets =
            series.entry(key.clone()).or_insert_with(|| Arc::new(Buckets::new(&self.histograms.bounds)));
        Histogram::from_arc(buckets.clone())
    }
}

impl Histograms {
    /// Appends each histogram family to `text`, as the exporter writes one.
    fn render(&self, text: &mut String) {
        let mut series: Vec<(String, LabelSet, Arc<Buckets>)> = lock(&self.series)
            .iter()
            .map(|(key, buckets)| {
                let labels = LabelSet::from_key_and_global(key, &Default::default());
                (sanitize_metric_name(key.name()), labels, buckets.clone())
            })
            .collect();
        series.sort_by(|a, b| a.0.cmp(&b.0));
        let descriptions = lock(&self.descriptions);
        let mut family: Option<&str> = None;
        for (name, labels, buckets) in &series {
            if family != Some(name) {
                if family.is_some() {
                    text.push('\n');
                }
                if let Some(description) = descriptions.get(name) {
                    write_help_line(text, name, None, None, description);
                }
                write_type_line(text, name, None, None, "histogram");
                family = Some(name);
            }
            buckets.render(text, name, labels);
        }
        if family.is_some() {
            text.push('\n');
        }
    }
}

impl Buckets {
    fn new(bounds: &Arc<[f64]>) -> Self {
        Self {
            bounds: bounds.clone(),
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0f64.to_bits()),
        }
    }

    /// The series' `_bucket` lines (cumulative, `le` each bound then `+Inf`), `_sum` and
    /// `_count`.
    fn render(&self, text: &mut String, name: &str, labels: &LabelSet) {
        let mut count = 0;
        for (bound, bucket) in self.bounds.iter().zip(self.counts.iter()) {
            count += bucket.load(Ordering::Relaxed);
            write_metric_line(text, name, Some("bucket"), labels, Some(("le", bound)), count, None);
        }
        count += self.counts[self.bounds.len()].load(Ordering::Relaxed);
        write_metric_line(text, name, Some("bucket"), labels, Some(("le", "+Inf")), count, None);
        let sum = f64::from_bits(self.sum.load(Ordering::Relaxed));
        write_metric_line::<&str, f64>(text, name, Some("sum"), labels, None, sum, None);
        write_metric_line::<&str, u64>(text, name, Some("count"), labels, None, count, None);
    }
}

impl HistogramFn for Buckets {
    fn record(&self, value: f64) {
        self.record_many(value, 1);
    }

    /// `count` samples of `value`: in the first bucket whose bound `value` does not exceed
    /// (none for NaN, which only `+Inf` counts, as in the exporter).
    fn record_many(&self, value: f64, count: usize) {
        let bucket = if value.is_nan() {
            self.bounds.len()
        } else {
            self.bounds.partition_point(|bound| *bound < value)
        };
        self.counts[bucket].fetch_add(count as u64, Ordering::Relaxed);
        let add = value * count as f64;
        // Only the engine's flushes record, one at a time: the loop does not spin.
        let _ = self.sum.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |sum| {
            Some((f64::from_bits(sum) + add).to_bits())
        });
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: [f64; 4] = [0.001, 0.5, 1.0, 60.0];

    /// The sorted exposition lines of a recorder given `record`'s histograms, with the
    /// `_sum` values parsed apart.
    fn exposed(
        recorder: &impl Recorder,
        render: impl Fn() -> String,
        record: impl Fn(),
    ) -> (Vec<String>, Vec<f64>) {
        metrics::with_local_recorder(recorder, || {
            metrics::describe_histogram!("latency_seconds", Unit::Seconds, "How \"long\"\nruns took.");
            record();
        });
        let text = render();
        let mut lines: Vec<String> = text.lines().filter(|l| !l.is_empty()).map(str::to_owned).collect();
        lines.sort();
        let sums = lines
            .iter()
            .filter(|l| l.contains("_sum"))
            .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
            .collect();
        (lines.into_iter().filter(|l| !l.contains("_sum")).collect(), sums)
    }

    fn exporter(record: impl Fn()) -> (Vec<String>, Vec<f64>) {
        let exporter = PrometheusBuilder::new().set_buckets(&BOUNDS).unwrap().build_recorder();
        let handle = exporter.handle();
        exposed(&exporter, || handle.render(), record)
    }

    fn ours(record: impl Fn()) -> (Vec<String>, Vec<f64>) {
        let (recorder, metrics) = PrometheusMetrics::recorder(&BOUNDS);
        exposed(&recorder, || metrics.render(), record)
    }

    const SAMPLES: [f64; 12] = [0.0, 0.001, 0.0011, 0.25, 0.5, 1.0, 59.9, 60.0, 61.0, 7200.0, 0.3, f64::NAN];

    #[test]
    fn histograms_are_exposed_as_the_exporter_exposes_them() {
        let record = || {
            let histograms = [
                metrics::histogram!("latency_seconds", "job" => "a\"b\\c"),
                metrics::histogram!("latency_seconds", "job" => "d", "kind" => "e"),
                metrics::histogram!("other_seconds"),
            ];
            for (i, histogram) in histograms.iter().enumerate() {
                SAMPLES.iter().skip(i).for_each(|s| histogram.record(*s));
            }
            metrics::counter!("runs_total", "job" => "a").increment(3);
            metrics::gauge!("running").set(2.0);
        };
        let (expected, expected_sums) = exporter(record);
        let (got, sums) = ours(record);
        assert!(expected.iter().any(|l| l.starts_with("# HELP latency_seconds")), "{expected:#?}");
        assert!(expected.iter().any(|l| l.starts_with("runs_total")), "{expected:#?}");
        assert!(
            expected.contains(&r#"latency_seconds_bucket{job="d",kind="e",le="+Inf"} 11"#.to_owned()),
            "{expected:#?}"
        );
        assert_eq!(got, expected);
        assert_eq!(sums.len(), 3);
        assert_eq!(
            sums.iter().map(|s| s.to_bits()).collect::<Vec<_>>(),
            expected_sums.iter().map(|s| s.to_bits()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn many_samples_at_once_are_exposed_as_each_would_be() {
        let (expected, expected_sums) = exporter(|| {
            SAMPLES.iter().for_each(|s| (0..7).for_each(|_| metrics::histogram!("h").record(*s)))
        });
        let (got, sums) = ours(|| SAMPLES.iter().for_each(|s| metrics::histogram!("h").record_many(*s, 7)));
        assert_eq!(got, expected);
        assert!(expected_sums[0].is_nan() && sums[0].is_nan(), "a NaN sample makes the sum NaN in both");
    }

    #[test]
    fn bounds_are_sorted() {
        let (recorder, metrics) = PrometheusMetrics::recorder(&[1.0, f64::NAN, 0.5, 1.0]);
        metrics::with_local_recorder(&recorder, || metrics::histogram!("h").record(0.7));
        let text = metrics.render();
        let buckets: Vec<&str> = text.lines().filter(|l| l.starts_with("h_bucket")).collect();
        assert_eq!(buckets, [r#"h_bucket{le="0.5"} 0"#, r#"h_bucket{le="1"} 1"#, r#"h_bucket{le="+Inf"} 1"#]);
    }

    #[test]
    fn many_samples_sum_as_each_would() {
        let finite = || SAMPLES.iter().filter(|s| !s.is_nan());
        let (_, expected) =
            exporter(|| finite().for_each(|s| (0..7).for_each(|_| metrics::histogram!("h").record(*s))));
        let (_, got) = ours(|| finite().for_each(|s| metrics::histogram!("h").record_many(*s, 7)));
        assert!((got[0] - expected[0]).abs() < 1e-9 * expected[0], "{got:?} {expected:?}");
    }
}
