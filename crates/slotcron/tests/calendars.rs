//! Exclusion calendars in the engine, on a manual clock and tokio's paused time: an
//! excluded instant is not a trigger at all — it does not run and nothing is recorded.

use std::sync::Arc;

use slotcron::jiff::civil::date;
use slotcron::jiff::tz::TimeZone;
use slotcron::{Calendar, Job, Outcome};
use slotcron_testkit::harness::{Harness, ok, ts};

#[tokio::test(start_paused = true)]
async fn a_daily_job_does_not_run_on_the_days_its_calendar_excludes_and_records_nothing_for_them() {
    let mut h = Harness::new("2026-12-23T12:00:00Z");
    let holidays = Calendar::new("holidays")
        .in_zone(TimeZone::get("Europe/Berlin").unwrap())
        .date(date(2026, 12, 25))
        .cron("* * * * 0,6")
        .unwrap();
    let berlin = TimeZone::get("Europe/Berlin").unwrap();
    let job = Job::builder("report").cron_in("0 9 * * *", berlin).exclude(Arc::new(holidays)).handler(ok);
    h.add(job.build().unwrap());
    h.start().await;
    h.advance_to(ts("2026-12-29T12:00:00Z")).await;
    h.stop().await;
    let triggers: Vec<String> = h.records("report").iter().map(|r| r.trigger.to_string()).collect();
    // 24th (Thursday), not the 25th (holiday), 26th/27th (weekend); 28th and 29th.
    assert_eq!(triggers, ["2026-12-24T08:00:00Z", "2026-12-28T08:00:00Z", "2026-12-29T08:00:00Z"]);
    assert!(h.records("report").iter().all(|r| r.outcome == Outcome::Succeeded), "{:?}", h.records("report"));
}

#[test]
fn run_on_start_does_not_go_with_a_calendar_and_says_so() {
    let calendar = Arc::new(Calendar::new("never").date(date(2026, 12, 25)));
    let job =
        Job::builder("tick").every(std::time::Duration::from_secs(10)).run_on_start(true).exclude(calendar);
    let error = job.handler(ok).build().unwrap_err().to_string();
    assert!(error.contains("run_on_start") && error.contains("cannot be combined with exclude"), "{error}");
}
