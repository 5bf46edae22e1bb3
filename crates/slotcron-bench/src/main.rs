//! The fleet benchmark as a command: R replicas of a scheduler, each on its own OS thread
//! with its own tokio runtime and its own connection, against one Redis (or a Redis
//! Cluster) or PostgreSQL,
//! N `allow` jobs with no-op handlers due together every P, the in-memory ledger
//! (`slotcron_testkit::fleet_bench`). One line of figures: triggers delivered of those
//! due, duplicates, lateness p50/p99/max, CPU per fire, coordinator round trips (and, on
//! Redis, server commands) per trigger, peak memory per job, and the records by outcome.
//!
//! ```sh
//! cargo run --release -p slotcron-bench -- --jobs 10000 --period 1s --replicas 3 \
//!     --backend redis://127.0.0.1:6379
//! ```
//!
//! `--spread` spreads the jobs' instants over the period a second apart (a million cron
//! jobs over the minute: `--jobs 1000000 --period 60s --window 60s --spread`). On Redis
//! a second line gives the server's memory per job at the end of the run (`INFO
//! memory`), `--timeline` a line per instant, and `--stages` a line per stage of the
//! bursts (claims, ledger records, start marks, handlers' start), timed from their
//! instant.
//!
//! The window counts from the first instant after the replicas have added their jobs:
//! their start, their joining of the fleet and their first bursts are measured.
//! `--settled` starts it once every replica sees the whole fleet instead (the steady
//! state, as BENCHMARKS.md's rows before 2026-12-06 measured). Redis keys go under
//! `slotcron-bench:{pid}:` and a PostgreSQL schema `slotcron_bench_{pid}`; both are
//! removed at the end. The server should be otherwise idle: Redis' `INFO commandstats`
//! counts every client's commands.
//!
//! The library's log goes to standard error when `RUST_LOG` asks for it (the
//! `tracing-subscriber` `EnvFilter` syntax: `RUST_LOG=slotcron=info`); nothing is logged
//! without it.

mod backend;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use jiff::SignedDuration;
use slotcron_testkit::fleet_bench::{self, Load};

use backend::Backend;

/// The fleet benchmark: R replicas, N jobs every P, one line of figures.
#[derive(Debug, Parser)]
#[command(version, about, after_help = FIGURES)]
struct Args {
    /// Jobs on each replica (the same N on every one), each due every PERIOD.
    #[arg(long, default_value_t = 10_000, value_parser = at_least_one)]
    jobs: usize,
    /// The jobs' interval: all are due together at each multiple of it since the Unix
    /// epoch ("1s", "10s", "500ms").
    #[arg(long, default_value = "1s", value_parser = duration)]
    period: Duration,
    /// Replicas, each a scheduler on its own thread with its own connection.
    #[arg(long, default_value_t = 3, value_parser = at_least_one)]
    replicas: usize,
    /// How long the measured window lasts: the triggers due in it count.
    #[arg(long, default_value = "20s", value_parser = duration)]
    window: Duration,
    /// The coordinator: a Redis URL (`redis://…`), a Redis Cluster's
    /// (`redis+cluster://host:port,host:port,…`: the command counts and memory are summed
    /// over its nodes) or a PostgreSQL URL (`postgres://…`).
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    backend: String,
    /// Start the window once every replica sees the whole fleet (the steady state)
    /// rather than at the first instant after the replicas start.
    #[arg(long)]
    settled: bool,
    /// Spread the jobs' instants over the period, a whole second apart: job i is due at
    /// second i mod S of each period of S seconds (cron jobs spread over the minute with
    /// `--period 60s`), so that jobs/S come due each second. PERIOD must then be whole
    /// seconds, and WINDOW a multiple of it.
    #[arg(long)]
    spread: bool,
    /// Make each job a six-field cron expression, `S * * * * *` (S = i mod 60), rather
    /// than an interval of PERIOD: the same instants as `--spread --period 60s`, which it
    /// needs, kept as cron schedules are.
    #[arg(long)]
    cron: bool,
    /// Also print each instant of the window with its runs' lateness p50, p99 and max,
    /// one line each, after the figures: where in the run the late runs were.
    #[arg(long)]
    timeline: bool,
    /// Also print where the window's bursts spent their lateness, one line per stage:
    /// when, after the triggers' instant, the coordinator calls (claims, start marks)
    /// and the ledger writes (`running` records, end records) on their path were sent
    /// and answered, and when the handlers started (p50 / p99 over the triggers). With
    /// `--timeline`, each instant's too.
    #[arg(long)]
    stages: bool,
}

/// What each figure of the line means, for `--help`.
const FIGURES: &str = "The line's figures:
  delivered      triggers of the window run at least once, of those due in it
  duplicates     runs beyond the first of their trigger (must be 0)
  lateness       handler start minus the trigger's scheduled instant: p50, p99, max
  CPU µs/fire    the process's CPU time (all replicas and threads) over the window, per run
  coordinator calls/trigger
                 calls to the coordinator's interface per trigger due
  memory B/job   peak resident memory of the process less what it held before the
                 replicas were built, per job held (jobs × replicas): a replica's memory
                 per job
  start          the slowest replica's start, from its thread's start (connection made):
                 its jobs added, then its view of the membership holding the whole fleet
                 (the replicas start together, sharing the CPU)
  backend commands/trigger
                 Redis only: the server's command count (INFO commandstats) per trigger
  records        the window's records across the fleet, by outcome";

/// A count of at least one.
fn at_least_one(text: &str) -> Result<usize, String> {
    let n: usize = text.parse().map_err(|e| format!("{text:?} is not a count: {e}"))?;
    if n == 0 { Err("must be at least 1".into()) } else { Ok(n) }
}

/// A positive duration in the friendly format ("1s", "500ms", "2m").
fn duration(text: &str) -> Result<Duration, String> {
    let parsed: SignedDuration =
        text.parse().map_err(|e| format!("{text:?} is not a duration like \"1s\": {e}"))?;
    Duration::try_from(parsed)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{text:?}: must be longer than zero"))
}

fn main() -> ExitCode {
    let args = Args::parse();
    if std::env::var_os(tracing_subscriber::EnvFilter::DEFAULT_ENV).is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .with_thread_names(true)
            .init();
    }
    if args.window < args.period {
        eprintln!("slotcron-bench: --window must be at least one --period, or no trigger is due in it");
        return ExitCode::from(2);
    }
    let whole = |d: Duration| d.subsec_nanos() == 0;
    if args.spread
        && !(whole(args.period) && whole(args.window) && args.window.as_secs() % args.period.as_secs() == 0)
    {
        eprintln!(
            "slotcron-bench: with --spread, --period must be whole seconds and --window a whole multiple \
             of it; got --period {:?} and --window {:?}",
            args.period, args.window
        );
        return ExitCode::from(2);
    }
    if args.cron && !(args.spread && args.period == Duration::from_secs(60)) {
        eprintln!("slotcron-bench: --cron needs --spread and --period 60s (its jobs fire once a minute)");
        return ExitCode::from(2);
    }
    let backend = match Backend::new(&args.backend) {
        Ok(backend) => backend,
        Err(e) => {
            eprintln!("slotcron-bench: --backend: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = backend.check() {
        let reason = slotcron::error_chain(e.as_ref());
        eprintln!("slotcron-bench: --backend: cannot connect to {}: {reason}", backend.name());
        return ExitCode::from(2);
    }
    let load = Load {
        replicas: args.replicas,
        jobs: args.jobs,
        every: args.period,
        window: args.window,
        from_start: !args.settled,
        spread: args.spread,
        cron: args.cron,
    };
    let counter = backend.counter();
    let memory_before = backend.used_memory();
    let report = fleet_bench::run(load, &|index| backend.connect(index), counter.as_ref().map(|c| c as _));
    let backend_per_job = memory_before
        .zip(backend.used_memory())
        .map(|(before, after)| after.saturating_sub(before) / args.jobs.max(1) as u64);
    // Before the figures are printed: a reader that stops early (`| head`) must not
    // leave the run's keys or schema behind.
    let cleaned = backend.clean_up();
    print(&args, backend.name(), &report, backend_per_job);
    if let Err(e) = cleaned {
        eprintln!("slotcron-bench: cleaning up: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Prints the run's line of figures, the backend's memory per job (`backend_per_job`,
/// bytes), and the timeline and stages if asked for.
fn print(args: &Args, backend: &str, report: &fleet_bench::Report, backend_per_job: Option<u64>) {
    println!(
        "{backend}, {} replicas, {} {}jobs every {:?} for {:?}{}: {report}",
        args.replicas,
        args.jobs,
        if args.cron { "cron " } else { "" },
        args.period,
        args.window,
        match (args.settled, args.spread) {
            (true, false) => " (settled)",
            (false, false) => " (from the start)",
            (true, true) => " (spread, settled)",
            (false, true) => " (spread, from the start)",
        },
    );
    if let Some(per_job) = backend_per_job {
        println!("  {backend} memory at the end of the run: {per_job} B per job");
    }
    if args.timeline {
        for ((instant, (p50, p99, max)), stages) in report.by_instant.iter().zip(&report.stages_by_instant) {
            let at = jiff::Timestamp::from_millisecond(*instant)
                .map_or_else(|_| instant.to_string(), |t| t.to_string());
            let ms = |us: u64| us as f64 / 1e3;
            println!("  {at}: p50 {:.1} ms p99 {:.1} ms max {:.1} ms", ms(*p50), ms(*p99), ms(*max));
            for stage in stages.iter().filter(|_| args.stages) {
                println!("    {stage}");
            }
        }
    }
    if args.stages {
        println!("  stages, after the instant (p50 / p99 over the triggers):");
        for stage in &report.stages {
            println!("    {stage}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_at_least_one() {
        assert_eq!(at_least_one("3"), Ok(3));
        assert_eq!(at_least_one("0").unwrap_err(), "must be at least 1");
        assert!(at_least_one("three").unwrap_err().contains("not a count"));
    }

    #[test]
    fn periods_are_friendly_durations_above_zero() {
        assert_eq!(duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(duration("0s").unwrap_err().contains("longer than zero"));
        assert!(duration("-1s").unwrap_err().contains("longer than zero"));
        assert!(duration("soon").unwrap_err().contains("not a duration"));
    }

    #[test]
    fn a_backend_that_cannot_be_reached_is_an_error_before_the_replicas_start() {
        assert!(Backend::new("redis://127.0.0.1:1").unwrap().check().is_err());
        assert!(Backend::new("postgres://postgres@127.0.0.1:1/test").unwrap().check().is_err());
    }

    #[test]
    fn a_backend_is_redis_or_postgres_by_its_scheme() {
        assert_eq!(Backend::new("redis://127.0.0.1:6379").unwrap().name(), "redis");
        assert_eq!(Backend::new("postgres://postgres@127.0.0.1/test").unwrap().name(), "postgres");
        assert!(Backend::new("mysql://x").is_err());
        assert!(Backend::new("127.0.0.1:6379").is_err());
    }
}
