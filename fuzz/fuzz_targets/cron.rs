//! Cron expressions from arbitrary bytes: parsing, explaining and a few `next_after`
//! calls must never panic or hang. The first 9 bytes pick a time zone and a start
//! instant between 1970 and 2200; the rest is the expression.
#![no_main]

use libfuzzer_sys::fuzz_target;
use slotcron::jiff::Timestamp;
use slotcron::jiff::tz::TimeZone;
use slotcron::{CronSchedule, Schedule};
use zones::ZONES;

#[path = "../../crates/slotcron/tests/cron_grammar/zones.rs"]
mod zones;

/// 1970-01-01 to 2200-01-01, in seconds.
const SPAN: u64 = 7_258_118_400;

fuzz_target!(|data: &[u8]| {
    let Some((control, expression)) = data.split_first_chunk::<9>() else { return };
    let Ok(expression) = std::str::from_utf8(expression) else { return };
    let schedule = match CronSchedule::parse(expression) {
        Ok(schedule) => schedule,
        Err(error) => {
            let _ = error.to_string();
            return;
        }
    };
    let _ = schedule.explain();
    let zone = TimeZone::get(ZONES[usize::from(control[0]) % ZONES.len()]).unwrap();
    let schedule = schedule.with_time_zone(zone);
    let seconds = u64::from_le_bytes(control[1..].try_into().unwrap()) % SPAN;
    let mut at = Timestamp::from_second(seconds as i64).unwrap();
    for _ in 0..3 {
        let Some(next) = schedule.next_after(at) else { break };
        assert!(next > at, "{expression:?}: {next} is not after {at}");
        at = next;
    }
});
