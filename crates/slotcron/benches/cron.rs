//! Parse and `next_after` times of slotcron's cron evaluator, side by side with the
//! `croner` and `cron` crates in the same run. Targets (issue 3): `next_after` at most
//! 500 ns in UTC and 700 ns in a DST zone, parse at most 3 µs, for every expression.
//!
//! Run: `cargo bench -p slotcron --bench cron`; the figures go in BENCHMARKS.md.
//! Each `next_after` starts from the same instant, 2024-06-15T12:34:56Z.

use std::hint::black_box;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use criterion::{Criterion, criterion_group};
use croner::parser::{CronParser, Seconds};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use slotcron::{CronSchedule, Schedule};

/// An expression in slotcron's syntax, with its spelling for `cron` (seconds first,
/// Quartz day numbers; `None` where that crate lacks the syntax). croner reads
/// slotcron's spelling.
struct Case {
    label: &'static str,
    expr: &'static str,
    cron_crate: Option<&'static str>,
}

const CASES: &[Case] = &[
    Case { label: "every-15-min", expr: "*/15 * * * *", cron_crate: Some("0 */15 * * * *") },
    Case { label: "weekdays-0930", expr: "30 9 * * MON-FRI", cron_crate: Some("0 30 9 * * Mon-Fri") },
    Case { label: "leap-day", expr: "0 0 29 2 *", cron_crate: Some("0 0 0 29 2 *") },
    Case { label: "last-day-L", expr: "0 0 L * *", cron_crate: None },
    Case { label: "last-weekday-LW", expr: "0 0 LW * *", cron_crate: None },
    Case { label: "third-friday-#", expr: "0 12 * * FRI#3", cron_crate: None },
    Case { label: "last-friday-5L", expr: "0 12 * * 5L", cron_crate: None },
    Case { label: "fifth-monday-feb", expr: "0 0 * 2 MON#5", cron_crate: None },
    Case { label: "or-days", expr: "0 0 1-7 * 1", cron_crate: None },
    Case { label: "6f-every-10s", expr: "*/10 * * * * *", cron_crate: Some("*/10 * * * * *") },
    Case { label: "6f-10:15:30", expr: "30 15 10 * * *", cron_crate: Some("30 15 10 * * *") },
    Case { label: "hourly", expr: "0 * * * *", cron_crate: Some("0 0 * * * *") },
];

const FROM: &str = "2024-06-15T12:34:56Z";

fn croner_parser() -> CronParser {
    CronParser::builder().seconds(Seconds::Optional).build()
}

fn parse(c: &mut Criterion) {
    let croner = croner_parser();
    for case in CASES {
        let mut group = c.benchmark_group(format!("parse/{}", case.label));
        group.bench_function("slotcron", |b| b.iter(|| CronSchedule::parse(black_box(case.expr)).unwrap()));
        group.bench_function("croner", |b| b.iter(|| croner.parse(black_box(case.expr)).unwrap()));
        if let Some(expr) = case.cron_crate {
            group.bench_function("cron", |b| b.iter(|| cron::Schedule::from_str(black_box(expr)).unwrap()));
        }
        group.finish();
    }
}

fn next_after(c: &mut Criterion) {
    let croner = croner_parser();
    let from: Timestamp = FROM.parse().unwrap();
    let from_utc: DateTime<Utc> = FROM.parse().unwrap();
    for (zone_label, zone_name) in ZONES {
        let zone = TimeZone::get(zone_name).unwrap();
        let tz: Tz = zone_name.parse().unwrap();
        let from_tz = from_utc.with_timezone(&tz);
        for case in CASES {
            let mut group = c.benchmark_group(format!("next-{zone_label}/{}", case.label));
            let ours = CronSchedule::parse(case.expr).unwrap().with_time_zone(zone.clone());
            let first = ours.next_after(from).unwrap();
            group.bench_function("slotcron", |b| b.iter(|| ours.next_after(black_box(from)).unwrap()));
            let theirs = croner.parse(case.expr).unwrap();
            let their_first = theirs.find_next_occurrence(&from_tz, false).unwrap();
            assert_eq!(their_first.timestamp(), first.as_second(), "croner agrees on {}", case.expr);
            group.bench_function("croner", |b| {
                b.iter(|| theirs.find_next_occurrence(black_box(&from_tz), false).unwrap())
            });
            if let Some(expr) = case.cron_crate {
                let theirs = cron::Schedule::from_str(expr).unwrap();
                let their_first = theirs.after(&from_tz).next().unwrap();
                assert_eq!(their_first.timestamp(), first.as_second(), "cron agrees on {expr}");
                group
                    .bench_function("cron", |b| b.iter(|| theirs.after(black_box(&from_tz)).next().unwrap()));
            }
            group.finish();
        }
    }
}

const ZONES: [(&str, &str); 2] = [("UTC", "UTC"), ("New_York", "America/New_York")];

/// The mean of one benchmark from criterion's estimates, in nanoseconds.
fn mean_ns(group: &str, function: &str) -> Option<f64> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let dir = group.replace(['/', ':'], "_");
    let path = target.join("criterion").join(dir).join(function).join("new/estimates.json");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    json["mean"]["point_estimate"].as_f64()
}

fn cell(ns: Option<f64>, ours: Option<f64>) -> String {
    match (ns, ours) {
        (Some(ns), Some(ours)) => format!("{} ({:.1}×)", time(ns), ns / ours),
        _ => "n/a".into(),
    }
}

fn time(ns: f64) -> String {
    if ns >= 1000.0 { format!("{:.2} µs", ns / 1000.0) } else { format!("{ns:.0} ns") }
}

/// Prints the table for BENCHMARKS.md: slotcron's mean, and each peer's mean with its
/// ratio to slotcron's (above 1× means slotcron is faster).
fn summary() {
    println!("\n| expression | measure | slotcron | croner | cron |\n|---|---|---|---|---|");
    for case in CASES {
        let mut groups = vec![("parse".to_owned(), format!("parse/{}", case.label))];
        for (zone_label, _) in ZONES {
            groups.push((format!("next_after {zone_label}"), format!("next-{zone_label}/{}", case.label)));
        }
        for (measure, group) in groups {
            let ours = mean_ns(&group, "slotcron");
            let Some(ours_ns) = ours else { continue };
            let croner = cell(mean_ns(&group, "croner"), ours);
            let cron = cell(mean_ns(&group, "cron"), ours);
            println!("| `{}` | {measure} | {} | {croner} | {cron} |", case.expr, time(ours_ns));
        }
    }
}

criterion_group!(benches, parse, next_after);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    summary();
}
