//! Admin API benchmark: pages of `GET /api/v1/jobs` (the status page's first screen, by
//! name and by next fire, and the largest page) and `GET /metrics` with 20,000 jobs.
//!
//! Run with `cargo bench -p slotcron-admin --bench api`. The scheduler runs 20,000
//! jobs every second for 3 s (so every job has its counters, histograms and gauges in
//! the Prometheus recorder), then each is replaced by an hourly cron job (nothing fires
//! while measuring), and each endpoint is requested 50 times through the router
//! in-process (no TCP): latency p50 / p99 / max and the answer's size.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use slotcron::{CancellationToken, Job, JobContext, Scheduler};
use slotcron_admin::Admin;
use tower::ServiceExt;

const JOBS: usize = 20_000;
const REQUESTS: usize = 50;

async fn noop(_ctx: JobContext) -> Result<(), std::io::Error> {
    Ok(())
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(bench());
}

async fn bench() {
    // The daemon's recorder.
    let handle = slotcron_admin::PrometheusMetrics::install().unwrap();
    let scheduler = Scheduler::builder().build();
    for i in 0..JOBS {
        let job =
            Job::builder(format!("job-{i:05}")).every(Duration::from_secs(1)).handler(noop).build().unwrap();
        scheduler.add(job).unwrap();
    }
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (scheduler, cancel) = (scheduler.clone(), cancel.clone());
        async move { scheduler.run(cancel).await }
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    for i in 0..JOBS {
        let job = Job::builder(format!("job-{i:05}")).cron("0 * * * *").handler(noop).build().unwrap();
        scheduler.replace(job);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let router = Admin::new(scheduler.clone()).metrics(move || handle.render()).router();
    println!("admin API, {JOBS} jobs, {REQUESTS} requests each, in-process:");
    for path in
        ["/api/v1/jobs?limit=100", "/api/v1/jobs?limit=100&sort=next", "/api/v1/jobs?limit=1000", "/metrics"]
    {
        let mut took = Vec::with_capacity(REQUESTS);
        let mut size = 0;
        for _ in 0..REQUESTS {
            let started = Instant::now();
            let request = Request::get(path).body(Body::empty()).unwrap();
            let response = router.clone().oneshot(request).await.unwrap();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            took.push(started.elapsed());
            size = body.len();
        }
        took.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "  GET {path}: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; {:.1} MB",
            ms(took[REQUESTS / 2]),
            ms(took[REQUESTS * 99 / 100]),
            ms(took[REQUESTS - 1]),
            size as f64 / 1e6
        );
    }
    cancel.cancel();
    run.await.unwrap();
}
