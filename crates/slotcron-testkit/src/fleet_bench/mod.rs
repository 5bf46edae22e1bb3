//! A fleet under load, for the backends' `fleet` benchmarks: R replicas, each a
//! [`Scheduler`] on its own OS thread with its own tokio runtime and its own coordinator
//! connection, run `allow` jobs with no-op handlers on the system clock, every job due at
//! the same instants (interval schedules anchored at the Unix epoch), and the in-memory
//! ledger ([`MemoryLedger`](slotcron::MemoryLedger), timed).
//!
//! [`run`] measures one [`Load`] over a window of whole periods and returns a
//! [`Report`]: triggers delivered of those expected in the window, duplicates (a trigger
//! run more than once across the fleet), lateness from the scheduled instant to the
//! handler's start, the process's CPU time (all replicas, all threads) per delivered
//! fire, the coordinator calls the replicas made ([`Counted`], one round trip each in
//! the Redis and PostgreSQL coordinators unless a reply was lost) and what the backend's
//! own counter says (e.g. Redis `INFO commandstats`), both per expected trigger, and
//! where the bursts' lateness went ([`Report::stages`]: each coordinator call and ledger
//! write on their path, timed from the triggers' instant).
//!
//! CPU time comes from `/proc/self/stat` (Linux; `USER_HZ` ticks, 10 ms). Memory is the
//! replicas': the harness notes only the window's runs and records, in room it makes
//! (and touches) before it reads the baseline, and reads the peak before it adds them up.

mod counted;
mod ledger;
mod stages;

pub use counted::Counted;
pub use stages::{Stage, StageFigures};

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::LocalBoxFuture;
use jiff::{SignedDuration, Timestamp};
use slotcron::{
    CancellationToken, Coordinator, DEFAULT_MEMBERSHIP_TTL, Interval, Job, JobContext, RunObserver,
    RunRecord, Scheduler,
};

use ledger::Timed;
use stages::Stages;

/// What the fleet runs.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    /// Schedulers, one per OS thread.
    pub replicas: usize,
    /// Jobs per replica (the same on each): `job-0`, `job-1`, ...
    pub jobs: usize,
    /// Every job's interval (all due together).
    pub every: Duration,
    /// The measured window: triggers in `[start, start + window)` count.
    pub window: Duration,
    /// Where the window starts: at the first due instant after the replicas have added
    /// their jobs and started (`true`: the start-up, the joining of the fleet and its
    /// first bursts are measured), or once every replica sees the whole fleet and its
    /// view has settled (`false`: the steady state).
    pub from_start: bool,
    /// Whether the jobs' instants are spread over the period, a whole second apart (job
    /// `i` is due at second `i mod S` of each period of `S` whole seconds, as cron jobs
    /// spread over the minute are), rather than all due together.
    pub spread: bool,
    /// Whether each job is a six-field cron expression (`S * * * * *`, `S` = `i mod 60`)
    /// rather than an interval schedule: with `spread` and a period of 60 s, the same
    /// instants, as a million cron jobs spread over the minute have them.
    pub cron: bool,
}

impl Load {
    /// Triggers due in the window across the fleet (each once).
    pub fn expected(&self) -> u64 {
        let periods = (self.window.as_millis() / self.every.as_millis().max(1)) as u64;
        periods * self.jobs as u64
    }
}

/// What [`run`] measured.
#[derive(Debug, Clone)]
pub struct Report {
    /// Triggers due in the window.
    pub expected: u64,
    /// Triggers of the window run at least once.
    pub delivered: u64,
    /// Runs of the window beyond the first of their trigger.
    pub duplicates: u64,
    /// Lateness of the window's runs (handler start − scheduled instant), microseconds:
    /// p50, p99, max.
    pub lateness_us: (u64, u64, u64),
    /// Process CPU time (every replica, every thread) over the window per delivered fire.
    pub cpu_per_fire: Duration,
    /// Coordinator calls per expected trigger, as [`Counted`] counts them.
    pub calls_per_trigger: f64,
    /// The backend counter's growth over the window per expected trigger (`None`
    /// without a counter).
    pub backend_per_trigger: Option<f64>,
    /// The records of the window's triggers across the fleet, per outcome.
    pub outcomes: BTreeMap<&'static str, u64>,
    /// The process's peak resident memory over the run, less what it held before the
    /// replicas were built (the room for the harness's notes of the window included),
    /// per job held (jobs × replicas), in bytes; `None` where `/proc/self/status` cannot
    /// be read.
    pub memory_per_job: Option<u64>,
    /// Each instant of the window (Unix milliseconds, in order) with its runs' lateness
    /// p50, p99 and max (microseconds): where in the run the slow runs were.
    pub by_instant: Vec<(i64, (u64, u64, u64))>,
    /// The slowest replica's start, from its thread's start (its connection made): its
    /// jobs added, and its view holding the whole fleet (`None` if it did not within two
    /// membership TTLs of its run's start). The replicas start together, sharing the CPU.
    pub start: (Duration, Option<Duration>),
    /// Where the window's bursts spent their lateness: the coordinator calls on their
    /// path ([`Stage`]), then the handlers' start and the runs' end (their record made),
    /// each timed from the triggers' instant.
    pub stages: Vec<StageFigures>,
    /// The coordinator calls' and ledger writes' stages of each instant of the window,
    /// in the order of [`Report::by_instant`].
    pub stages_by_instant: Vec<Vec<StageFigures>>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (p50, p99, max) = self.lateness_us;
        let ms = |us: u64| us as f64 / 1e3;
        write!(
            f,
            "delivered {}/{} ({:.1} %), duplicates {}, lateness p50 {:.1} ms p99 {:.1} ms max {:.1} ms, \
             CPU {:.1} µs/fire, coordinator calls {:.4}/trigger",
            self.delivered,
            self.expected,
            self.delivered as f64 * 100.0 / self.expected.max(1) as f64,
            self.duplicates,
            ms(p50),
            ms(p99),
            ms(max),
            self.cpu_per_fire.as_secs_f64() * 1e6,
            self.calls_per_trigger,
        )?;
        if let Some(bytes) = self.memory_per_job {
            write!(f, ", memory {bytes} B/job")?;
        }
        let (added, joined) = self.start;
        write!(f, ", start {:.2} s (jobs added), ", added.as_secs_f64())?;
        match joined {
            Some(joined) => write!(f, "{:.2} s (fleet joined)", joined.as_secs_f64())?,
            None => write!(f, "fleet not joined")?,
        }
        if let Some(backend) = self.backend_per_trigger {
            write!(f, ", backend commands {backend:.3}/trigger")?;
        }
        write!(f, ", records {:?}", self.outcomes)
    }
}

/// Builds replica `index`'s coordinator, with a connection of its own, on the replica's
/// runtime.
pub trait Connect: Send + Sync {
    /// The coordinator of replica `index`; panics if it cannot connect.
    fn connect(&self, index: usize) -> LocalBoxFuture<'static, Arc<dyn Coordinator>>;
}

impl<F> Connect for F
where
    F: Fn(usize) -> LocalBoxFuture<'static, Arc<dyn Coordinator>> + Send + Sync,
{
    fn connect(&self, index: usize) -> LocalBoxFuture<'static, Arc<dyn Coordinator>> {
        self(index)
    }
}

/// One run: job index, trigger (ms since the epoch), lateness (µs).
type Run = (u32, i64, u64);

/// The measured window's triggers, `[start, end)` in ms since the epoch: empty until
/// the window is known. The harness notes only the runs and records of its triggers.
#[derive(Default)]
pub(crate) struct Window {
    start: AtomicI64,
    end: AtomicI64,
}

impl Window {
    fn set(&self, (start, end): (i64, i64)) {
        self.end.store(end, Ordering::SeqCst);
        self.start.store(start, Ordering::SeqCst);
    }

    fn contains(&self, trigger: i64) -> bool {
        (self.start.load(Ordering::Relaxed)..self.end.load(Ordering::Relaxed)).contains(&trigger)
    }
}

/// Room for `n` notes, touched: the pages are resident before the baseline is read, so
/// that the notes taken in them do not count as the replicas' memory.
fn room<T: Copy>(n: usize, filler: T) -> Mutex<Vec<T>> {
    let mut notes = Vec::with_capacity(n);
    notes.extend(std::iter::repeat_n(filler, n));
    notes.clear();
    Mutex::new(std::hint::black_box(notes))
}

/// The outcomes of one replica's records of the window's triggers.
struct Outcomes {
    window: Arc<Window>,
    seen: Mutex<Vec<&'static str>>,
}

impl RunObserver for Outcomes {
    fn run_ended(&self, record: &RunRecord) {
        if self.window.contains(record.trigger.as_millisecond()) {
            self.seen.lock().unwrap_or_else(|p| p.into_inner()).push(record.outcome.as_str());
        }
    }
}

/// Runs `load` and measures it. `backend` reads the backend's own command counter (if
/// any); it is read at the window's start and end, on the calling thread.
///
/// # Panics
/// A replica's thread panicked (e.g. its coordinator could not connect).
pub fn run(load: Load, connect: &dyn Connect, backend: Option<&dyn Fn() -> u64>) -> Report {
    let window = Arc::new(Window::default());
    // A replica may run every trigger of the window (room for more is made as needed).
    let expected = usize::try_from(load.expected()).unwrap_or(usize::MAX);
    let runs: Vec<Arc<Mutex<Vec<Run>>>> =
        (0..load.replicas).map(|_| Arc::new(room(expected, (u32::MAX, -1, u64::MAX)))).collect();
    let outcomes: Vec<Arc<Outcomes>> = (0..load.replicas)
        .map(|_| Arc::new(Outcomes { window: window.clone(), seen: room(expected, "") }))
        .collect();
    let before = memory_kib("VmRSS");
    let cancel = CancellationToken::new();
    let ready = Arc::new(Barrier::new(load.replicas + 1));
    let calls = Arc::new(AtomicU64::new(0));
    let converged = Arc::new(AtomicU64::new(0));
    let stages = Arc::new(Stages::new(window.clone()));
    let times = Arc::new(StartTimes::default());
    std::thread::scope(|scope| {
        for (index, (runs, outcomes)) in runs.iter().zip(&outcomes).enumerate() {
            let (cancel, ready, calls, runs) = (cancel.clone(), ready.clone(), calls.clone(), runs.clone());
            let (converged, window) = (converged.clone(), window.clone());
            let (outcomes, stages, times) = (outcomes.clone(), stages.clone(), times.clone());
            // Named for the replica, as its log lines say (`RUST_LOG` in the bench).
            let thread = std::thread::Builder::new().name(format!("replica-{index}"));
            let spawned = thread.spawn_scoped(scope, move || {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
                runtime.expect("a runtime").block_on(async move {
                    let began = Instant::now();
                    let inner = connect.connect(index).await;
                    let coordinator = Arc::new(Counted { inner, calls, stages: stages.clone() });
                    let mut builder = Scheduler::builder();
                    // `FLEET_CLAIM_AHEAD_MS`: the claim-ahead window (default the builder's).
                    if let Some(ms) = std::env::var("FLEET_CLAIM_AHEAD_MS").ok().and_then(|v| v.parse().ok())
                    {
                        builder = builder.claim_ahead(Duration::from_millis(ms));
                    }
                    let scheduler = builder
                        .coordinator(coordinator)
                        .ledger(Arc::new(Timed::new(stages)))
                        .instance(format!("replica-{index}"))
                        .observer(outcomes)
                        .build();
                    for job in 0..load.jobs {
                        let notes = (window.clone(), runs.clone());
                        scheduler.add(noop_job(job, load, notes)).expect("a new job");
                    }
                    StartTimes::note(&times.added_ms, began);
                    // Off the runtime's thread, whose tasks (connection drivers) must go on.
                    let _ = tokio::task::spawn_blocking(move || ready.wait()).await;
                    // Counts this replica once it sees the whole fleet (at the latest after
                    // two membership TTLs: a coordinator may keep no membership).
                    let watcher = scheduler.clone();
                    tokio::spawn(async move {
                        let patience = 2 * DEFAULT_MEMBERSHIP_TTL.as_millis() / 20;
                        for _ in 0..patience {
                            if watcher.members().is_some_and(|members| members.len() >= load.replicas) {
                                StartTimes::note(&times.joined_ms, began);
                                times.joined.fetch_add(1, Ordering::SeqCst);
                                break;
                            }
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                        converged.fetch_add(1, Ordering::SeqCst);
                    });
                    scheduler.run(cancel).await;
                });
            });
            spawned.expect("a replica's thread");
        }
        ready.wait();
        // Instants come every period, or (spread) every second: the window starts at one.
        let every_ms = if load.spread { 1000 } else { load.every.as_millis().max(1) as i64 };
        let start = if load.from_start {
            // The first due instant from now: the replicas have their jobs and start.
            (Timestamp::now().as_millisecond() / every_ms + 1) * every_ms
        } else {
            settle(load, &converged);
            // The second period boundary from now: the first due instant is behind it.
            (Timestamp::now().as_millisecond() / every_ms + 2) * every_ms
        };
        let end = start + load.window.as_millis() as i64;
        window.set((start, end));
        sleep_until(start - 50);
        let (cpu, counted, commands) = (cpu_time(), calls.load(Ordering::SeqCst), backend.map(|b| b()));
        sleep_until(end - 50);
        let cpu = cpu_time().saturating_sub(cpu);
        let counted = calls.load(Ordering::SeqCst) - counted;
        let commands = backend.zip(commands).map(|(b, before)| b().saturating_sub(before));
        // Late runs of the window's last triggers may still start.
        std::thread::sleep(load.every.min(Duration::from_secs(2)) + Duration::from_secs(1));
        cancel.cancel();
        let peak = memory_kib("VmHWM");
        let mut report = measure(load, &runs, (start, end), cpu, counted, commands);
        report.start = times.figures(load.replicas);
        let held = (load.jobs * load.replicas).max(1) as u64;
        report.memory_per_job =
            peak.zip(before).map(|(peak, before)| peak.saturating_sub(before) * 1024 / held);
        for outcomes in &outcomes {
            for &outcome in outcomes.seen.lock().unwrap_or_else(|p| p.into_inner()).iter() {
                *report.outcomes.entry(outcome).or_default() += 1;
            }
        }
        // The calls and writes, then the handlers' start.
        report.stages.splice(0..0, stages.figures(None));
        report.stages_by_instant =
            report.by_instant.iter().map(|&(instant, _)| stages.figures(Some(instant))).collect();
        report
    })
}

fn measure(
    load: Load,
    runs: &[Arc<Mutex<Vec<Run>>>],
    (start, end): (i64, i64),
    cpu: Duration,
    calls: u64,
    commands: Option<u64>,
) -> Report {
    let mut seen: HashMap<(u32, i64), u32> = HashMap::new();
    let mut lateness: Vec<u64> = Vec::new();
    let mut by_instant: BTreeMap<i64, Vec<u64>> = BTreeMap::new();
    for runs in runs {
        for &(job, trigger, late) in runs.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            if (start..end).contains(&trigger) {
                *seen.entry((job, trigger)).or_default() += 1;
                lateness.push(late);
                by_instant.entry(trigger).or_default().push(late);
            }
        }
    }
    let by_instant =
        by_instant.into_iter().map(|(instant, mut lateness)| (instant, percentiles(&mut lateness))).collect();
    let started = StageFigures::moment("handler start", lateness.iter().map(|&l| l as i64).collect());
    let (p50, p99, max) = percentiles(&mut lateness);
    let delivered = seen.len() as u64;
    let expected = load.expected();
    Report {
        expected,
        delivered,
        duplicates: seen.values().map(|&n| u64::from(n - 1)).sum(),
        lateness_us: (p50, p99, max),
        cpu_per_fire: cpu / u32::try_from(delivered.max(1)).unwrap_or(u32::MAX),
        calls_per_trigger: calls as f64 / expected.max(1) as f64,
        backend_per_trigger: commands.map(|c| c as f64 / expected.max(1) as f64),
        outcomes: BTreeMap::new(),
        memory_per_job: None,
        start: (Duration::ZERO, None),
        by_instant,
        stages: vec![started],
        stages_by_instant: Vec::new(),
    }
}

/// p50, p99 and max of `values` (sorted in place; 0 for none).
fn percentiles(values: &mut [u64]) -> (u64, u64, u64) {
    values.sort_unstable();
    let at = |p: f64| values.get(((values.len() as f64 * p).ceil() as usize).saturating_sub(1)).copied();
    (at(0.5).unwrap_or(0), at(0.99).unwrap_or(0), values.last().copied().unwrap_or(0))
}

/// The replicas' start ([`Report::start`]): the slowest one's, in ms from its thread's
/// start.
#[derive(Default)]
struct StartTimes {
    added_ms: AtomicU64,
    joined_ms: AtomicU64,
    /// Replicas whose view held the whole fleet.
    joined: AtomicU64,
}

impl StartTimes {
    fn note(slowest: &AtomicU64, began: Instant) {
        let ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
        slowest.fetch_max(ms, Ordering::SeqCst);
    }

    fn figures(&self, replicas: usize) -> (Duration, Option<Duration>) {
        let ms = |slowest: &AtomicU64| Duration::from_millis(slowest.load(Ordering::SeqCst));
        let all_joined = self.joined.load(Ordering::SeqCst) >= replicas as u64;
        (ms(&self.added_ms), all_joined.then(|| ms(&self.joined_ms)))
    }
}

/// Waits until every replica's membership view holds the whole fleet (a replica that
/// joins is seen by the others at their next heartbeat, and until then some triggers are
/// claimed by two owners, one of which loses) and has settled: each replica's next
/// heartbeat finds the view of the one before (claims ahead are made only then;
/// `engine/fleet/ahead.rs`).
fn settle(load: Load, converged: &AtomicU64) {
    while converged.load(Ordering::SeqCst) < load.replicas as u64 {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(DEFAULT_MEMBERSHIP_TTL / 3 + Duration::from_millis(500));
}

/// A memory figure of this process from `/proc/self/status` (`VmRSS`: resident now,
/// `VmHWM`: peak resident), in KiB; `None` elsewhere. The benchmarks' one reader of it.
pub fn memory_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))?;
    line.trim().strip_suffix("kB")?.trim().parse().ok()
}

/// Job `index`: every `load.every` (at its second of the period if `load.spread`), a
/// handler that notes its trigger and lateness if the trigger is in the window.
fn noop_job(index: usize, load: Load, (window, runs): (Arc<Window>, Arc<Mutex<Vec<Run>>>)) -> Job {
    let job = u32::try_from(index).expect("fewer than 2^32 jobs");
    let builder = Job::builder(format!("job-{index}"));
    let builder = match load.cron {
        true => builder.cron(&format!("{} * * * * *", index % 60)),
        false => builder.schedule(interval(index, load)),
    };
    builder
        .handler(move |ctx: JobContext| {
            let late = ctx.trigger().duration_until(Timestamp::now());
            let late = late.max(SignedDuration::ZERO).as_micros() as u64;
            let trigger = ctx.trigger().as_millisecond();
            if window.contains(trigger) {
                runs.lock().unwrap_or_else(|p| p.into_inner()).push((job, trigger, late));
            }
            std::future::ready(Ok::<(), std::io::Error>(()))
        })
        .build()
        .expect("a valid job")
}

/// Job `index`'s interval: `load.every`, at its second of the period if `load.spread`.
fn interval(index: usize, load: Load) -> Interval {
    let seconds = load.every.as_secs().max(1);
    let offset = if load.spread { index as u64 % seconds } else { 0 };
    let offset = SignedDuration::from_secs(i64::try_from(offset).unwrap_or(0));
    Interval::every(load.every).and_then(|every| every.with_offset(offset)).expect("a valid interval")
}

fn sleep_until(unix_ms: i64) {
    let wait = unix_ms - Timestamp::now().as_millisecond();
    if wait > 0 {
        std::thread::sleep(Duration::from_millis(wait as u64));
    }
}

/// The process's CPU time, user and system, from `/proc/self/stat` (zero elsewhere).
fn cpu_time() -> Duration {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return Duration::ZERO };
    // Fields after the command name (in parentheses): utime and stime are the 14th and
    // 15th fields, in USER_HZ (100 per second on Linux) ticks.
    let after = stat.rfind(')').map_or("", |i| &stat[i + 2..]);
    let fields: Vec<&str> = after.split(' ').collect();
    let tick = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    Duration::from_millis((tick(11) + tick(12)) * 10)
}
