//! Dispatch benchmark: how the engine keeps time under load and when idle.
//!
//! Run with `cargo bench -p slotcron-admin --bench dispatch` on a quiet machine. Scenarios:
//!
//! 1. idle — one hourly job for 20 s: process CPU time and voluntary context switches
//!    (all threads) must stay near zero: no periodic wake-ups.
//! 2. dispatch — 10,000 jobs firing every second for 20 s on the system clock: fires
//!    delivered vs expected, lateness from the scheduled instant to the handler's start
//!    (p50/p99/max), CPU µs per fire, peak memory per job.
//! 3. adds — the time to add 100,000 cron jobs to a running scheduler.
//!
//! CPU time and context switches come from /proc (Linux only).
//!
//! `-- --metrics` installs the Prometheus recorder the daemon uses
//! (`slotcron_admin::PrometheusMetrics`: the engine's metrics then cost what they cost in
//! production); without it the metrics go nowhere.
//! `-- --no-job-labels` builds the scheduler with `metrics_per_job(false)`, `-- --no-metrics`
//! with `metrics(false)` (nothing counted: what the daemon does without `--admin`).
//!
//! `-- dispatch --jobs N --seconds S` changes the dispatch scenario's job count (default
//! 10,000) and measured window (default 20 s): small enough to run under
//! `valgrind --tool=callgrind`, whose instruction counts are repeatable where CPU time is
//! not. The instructions of the window alone are the difference of two runs of different
//! lengths (start-up, adding the jobs and shutdown cancel out); make both windows
//! multiples of `slotcron::METRICS_FLUSH_EVERY` so each counts its share of flushes.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use slotcron::jiff::Timestamp;
use slotcron::{CancellationToken, Job, JobContext, Scheduler};
use slotcron_testkit::fleet_bench::memory_kib;

/// The dispatch scenario's defaults (`--jobs`, `--seconds`).
const JOBS: usize = 10_000;
const SECONDS: u64 = 20;
const ADDS: usize = 100_000;

fn main() {
    let runtime =
        || tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let baseline_kb = memory_kib("VmRSS").unwrap_or(0);
    println!(
        "slotcron dispatch benchmark ({} CPUs)",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    // `cargo bench -p slotcron-admin --bench dispatch -- dispatch` runs one scenario.
    let only = std::env::args().skip(1).filter(|a| !a.starts_with('-')).find(|a| a.parse::<u64>().is_err());
    let wanted = |name: &str| only.as_deref().is_none_or(|o| o == name);
    let metrics = std::env::args()
        .any(|a| a == "--metrics")
        .then(|| slotcron_admin::PrometheusMetrics::install().unwrap());
    println!("metrics: {}", if metrics.is_some() { "on (Prometheus recorder)" } else { "off (no recorder)" });
    if wanted("idle") {
        runtime().block_on(idle());
    }
    if wanted("dispatch") {
        runtime().block_on(dispatch(baseline_kb));
    }
    if wanted("adds") {
        runtime().block_on(adds());
    }
    if let Some(metrics) = metrics {
        println!("  metrics exposition: {} bytes", metrics.render().len());
    }
}

async fn idle() {
    let scheduler = Scheduler::builder().build();
    let job = Job::builder("hourly").cron("0 * * * *").handler(noop).build().unwrap();
    scheduler.add(job).unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (scheduler, cancel) = (scheduler.clone(), cancel.clone());
        async move { scheduler.run(cancel).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (cpu_before, switches_before) = (cpu_time(), voluntary_switches());
    tokio::time::sleep(Duration::from_secs(SECONDS)).await;
    let (cpu, switches) = (cpu_time() - cpu_before, voluntary_switches() - switches_before);
    cancel.cancel();
    run.await.unwrap();
    println!(
        "idle, 1 hourly job, {SECONDS} s: CPU {:.1} ms, voluntary context switches {switches}",
        cpu.as_secs_f64() * 1e3
    );
    println!("  (the benchmark's own main thread wakes once, at the end of its 20 s sleep)");
}

async fn noop(_ctx: JobContext) -> Result<(), std::io::Error> {
    Ok(())
}

async fn dispatch(baseline_kb: u64) {
    let per_job = !std::env::args().any(|a| a == "--no-job-labels");
    let count = !std::env::args().any(|a| a == "--no-metrics");
    let jobs = option("--jobs").map_or(JOBS, |n| n as usize);
    let seconds = option("--seconds").unwrap_or(SECONDS);
    let scheduler = Scheduler::builder().metrics(count).metrics_per_job(per_job).build();
    let fires = Arc::new(AtomicU64::new(0));
    let lateness = Arc::new(Histogram::default());
    for i in 0..jobs {
        let (fires, lateness) = (fires.clone(), lateness.clone());
        let job = Job::builder(format!("job-{i}"))
            .every(Duration::from_secs(1))
            .handler(move |ctx: JobContext| {
                let late = Timestamp::now().duration_since(ctx.trigger()).as_micros().max(0) as u64;
                fires.fetch_add(1, Ordering::Relaxed);
                lateness.record(late);
                async { Ok::<_, std::io::Error>(()) }
            })
            .build()
            .unwrap();
        scheduler.add(job).unwrap();
    }
    let added_kb = memory_kib("VmRSS").unwrap_or(0);
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (scheduler, cancel) = (scheduler.clone(), cancel.clone());
        async move { scheduler.run(cancel).await }
    });
    // Measure whole seconds: from just after one trigger instant to just after another.
    let now = Timestamp::now();
    let first = Timestamp::from_second(now.as_second() + 2).unwrap();
    tokio::time::sleep(until(first) + Duration::from_millis(500)).await;
    // As a first scrape would: each series is registered with the recorder at its first
    // flush, once for the life of the process, before the measured window.
    scheduler.flush_metrics();
    let (fires_before, cpu_before) = (fires.load(Ordering::SeqCst), cpu_time());
    lateness.reset();
    let last = first + Duration::from_secs(seconds);
    tokio::time::sleep(until(last) + Duration::from_millis(500)).await;
    let (delivered, cpu) = (fires.load(Ordering::SeqCst) - fires_before, cpu_time() - cpu_before);
    let peak_kb = memory_kib("VmHWM").unwrap_or(0);
    cancel.cancel();
    run.await.unwrap();
    let expected = jobs as u64 * seconds;
    println!("dispatch, {jobs} jobs every 1 s, {seconds} s:");
    println!(
        "  fires delivered {delivered} of {expected} expected ({:.2} %)",
        delivered as f64 * 100.0 / expected as f64
    );
    println!(
        "  lateness p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        lateness.percentile(0.50) as f64 / 1e3,
        lateness.percentile(0.99) as f64 / 1e3,
        lateness.max.load(Ordering::SeqCst) as f64 / 1e3
    );
    println!(
        "  CPU {:.2} µs per fire ({:.0} ms over {seconds} s)",
        cpu.as_secs_f64() * 1e6 / delivered.max(1) as f64,
        cpu.as_secs_f64() * 1e3
    );
    println!(
        "  peak memory {:.2} KB per job (peak RSS {peak_kb} KB, baseline {baseline_kb} KB; {:.2} KB per job once added, before running)",
        (peak_kb - baseline_kb) as f64 / jobs as f64,
        (added_kb - baseline_kb) as f64 / jobs as f64
    );
}

async fn adds() {
    let scheduler = Scheduler::builder().build();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (scheduler, cancel) = (scheduler.clone(), cancel.clone());
        async move { scheduler.run(cancel).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let expressions =
        ["*/5 * * * *", "0 9 * * MON-FRI", "30 2 * * *", "0 0 L * *", "0 12 * * FRI#3", "15 */2 * * *"];
    let started = Instant::now();
    for i in 0..ADDS {
        let job = Job::builder(format!("cron-{i}"))
            .cron(expressions[i % expressions.len()])
            .handler(noop)
            .build()
            .unwrap();
        scheduler.add(job).unwrap();
    }
    let took = started.elapsed();
    cancel.cancel();
    run.await.unwrap();
    println!("adds: {ADDS} cron jobs added to a running scheduler in {:.3} s", took.as_secs_f64());
}

/// Lateness counts in 100 µs buckets up to 2 s, plus the exact maximum: constant memory,
/// so it does not weigh on the per-job memory figure.
struct Histogram {
    buckets: Vec<AtomicU64>,
    max: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self { buckets: (0..20_000).map(|_| AtomicU64::new(0)).collect(), max: AtomicU64::new(0) }
    }
}

impl Histogram {
    const BUCKET_US: u64 = 100;

    fn record(&self, micros: u64) {
        let bucket = ((micros / Self::BUCKET_US) as usize).min(self.buckets.len() - 1);
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.max.fetch_max(micros, Ordering::Relaxed);
    }

    fn reset(&self) {
        self.buckets.iter().for_each(|b| b.store(0, Ordering::SeqCst));
        self.max.store(0, Ordering::SeqCst);
    }

    /// The upper edge of the bucket holding the `p` quantile, in µs.
    fn percentile(&self, p: f64) -> u64 {
        let counts: Vec<u64> = self.buckets.iter().map(|b| b.load(Ordering::SeqCst)).collect();
        let rank = (counts.iter().sum::<u64>() as f64 * p).ceil() as u64;
        let mut seen = 0;
        for (i, count) in counts.iter().enumerate() {
            seen += count;
            if seen >= rank.max(1) {
                return (i as u64 + 1) * Self::BUCKET_US;
            }
        }
        0
    }
}

/// The number after `name` on the command line (`--jobs 1000`), if given.
fn option(name: &str) -> Option<u64> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == name)?;
    let value = args.get(at + 1).unwrap_or_else(|| panic!("{name} wants a number"));
    Some(value.parse().unwrap_or_else(|_| panic!("{name} wants a number, not {value:?}")))
}

fn until(at: Timestamp) -> Duration {
    Duration::try_from(Timestamp::now().duration_until(at)).unwrap_or_default()
}

/// User + system CPU time of the whole process.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // Fields after the command name (which is in parentheses): utime is the 14th field.
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 1000 / clock_ticks_per_second())
}

fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    ticks.max(1) as u64
}

/// Voluntary context switches summed over every thread of the process.
fn voluntary_switches() -> u64 {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("status")).ok())
        .filter_map(|status| status_field(&status, "voluntary_ctxt_switches:"))
        .sum()
}

fn status_field(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(field))?;
    line[field.len()..].split_whitespace().next()?.parse().ok()
}
