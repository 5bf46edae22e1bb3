//! A library user's service with four jobs — an interval that also runs at start-up, a
//! cron expression in a time zone, a one-shot `at` and a one-shot `after` — stopped by
//! Ctrl-C.
//!
//! ```text
//! cargo run -p slotcron --example service
//! ```

use std::time::Duration;

use slotcron::jiff::Timestamp;
use slotcron::jiff::tz::TimeZone;
use slotcron::{BoxError, CancellationToken, Job, JobContext, Scheduler};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    // The engine logs one line per run (job, trigger, instance, outcome, duration_ms) through `tracing`.
    tracing_subscriber::fmt().init();

    // No coordinator configured: single-replica mode, every trigger runs here.
    let scheduler = Scheduler::builder().build();

    // Every 5 s on the clock (aligned to the Unix epoch, so every replica computes the
    // same triggers), and once at start-up.
    scheduler.add(
        Job::builder("refresh-cache")
            .every(Duration::from_secs(5))
            .run_on_start(true)
            .handler(refresh_cache)
            .build()?,
    )?;

    // A cron expression on the wall clock of a zone: every minute, Berlin time. The
    // run is cancelled after 10 s; the handler watches its cancellation token.
    scheduler.add(
        Job::builder("minute-report")
            .cron_in("* * * * *", TimeZone::get("Europe/Berlin")?)
            .timeout(Duration::from_secs(10))
            .handler(minute_report)
            .build()?,
    )?;

    // Once at an absolute instant (one already past fires at start-up).
    let at = Timestamp::now() + Duration::from_secs(12);
    scheduler.add(
        Job::builder("send-reminder")
            .at(at)
            .handler(|ctx: JobContext| async move {
                println!("reminder due at {} sent (idempotency key {})", ctx.trigger(), ctx.trigger_key());
                Ok::<_, BoxError>(())
            })
            .build()?,
    )?;

    // Once, 3 s after the scheduler starts.
    scheduler.add(
        Job::builder("warm-up")
            .after(Duration::from_secs(3))
            .handler(|ctx: JobContext| async move {
                println!("{}: warmed up", ctx.job());
                Ok::<_, BoxError>(())
            })
            .build()?,
    )?;

    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        match tokio::signal::ctrl_c().await {
            Ok(()) => stop.cancel(),
            Err(e) => eprintln!("cannot listen for Ctrl-C: {e}"),
        }
    });
    println!("service running; press Ctrl-C to stop");
    // Returns once `cancel` fires and the running handlers have stopped.
    scheduler.run(cancel).await;
    // Close database and Redis connections here, after the jobs, never before.
    println!("service stopped");
    Ok(())
}

async fn refresh_cache(ctx: JobContext) -> Result<(), BoxError> {
    println!("{}: refreshing for the slot starting {}", ctx.job(), ctx.trigger());
    Ok(())
}

async fn minute_report(ctx: JobContext) -> Result<(), BoxError> {
    let work = tokio::time::sleep(Duration::from_millis(500));
    tokio::select! {
        () = work => {
            println!("{}: report for {} written", ctx.job(), ctx.trigger());
            Ok(())
        }
        () = ctx.cancellation_token().cancelled() => Err("cancelled before the report was written".into()),
    }
}
