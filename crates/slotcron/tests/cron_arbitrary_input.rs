//! Whatever the text, parsing returns a value or an error and never panics; whatever
//! it accepts, `explain` and `next_after` never panic and fire times strictly increase.
//! Inputs: arbitrary strings, strings of cron tokens, and valid expressions with a few
//! characters inserted, deleted or replaced. (`fuzz/` runs the same check under
//! libFuzzer, see the README.)

mod cron_grammar;

use cron_grammar::Dialect;
use jiff::Timestamp;
use jiff::tz::TimeZone;
use proptest::prelude::*;
use slotcron::{CronSchedule, Schedule};

const ZONES: [&str; 4] = ["UTC", "America/New_York", "Australia/Lord_Howe", "Pacific/Apia"];

/// Parses `text` and, if it is accepted, explains it and walks a few fire times.
fn exercise(text: &str, zone: usize, second: i64) -> Result<(), TestCaseError> {
    let schedule = match CronSchedule::parse(text) {
        Ok(schedule) => schedule,
        Err(error) => {
            prop_assert!(!error.to_string().is_empty());
            prop_assert!(error.span().end <= text.len());
            return Ok(());
        }
    };
    let _ = schedule.explain();
    let schedule = schedule.with_time_zone(TimeZone::get(ZONES[zone % ZONES.len()]).unwrap());
    let mut at = Timestamp::from_second(second).unwrap();
    for _ in 0..3 {
        let Some(next) = schedule.next_after(at) else { break };
        prop_assert!(next > at, "{text:?}: {next} is not after {at}");
        at = next;
    }
    Ok(())
}

/// Pieces cron expressions are made of, and some they are not.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        (0..100u32).prop_map(|n| n.to_string()),
        prop::sample::select(vec![
            "*", "?", "/", "-", ",", "#", "L", "W", "LW", "l", "w", "MON", "fri", "JAN", "dec", "SUN",
            "@every", "@daily", "@hourly", "@reboot", "1h", "5m", "30s", "0s", " ", "  ", "\t", "\u{e9}",
            "\u{3000}", "99999999",
        ])
        .prop_map(str::to_owned),
    ]
}

/// A valid expression with one to three characters inserted, deleted or replaced.
fn near_miss() -> impl Strategy<Value = String> {
    let edit = (
        any::<prop::sample::Index>(),
        0..3u8,
        prop::sample::select(vec!['*', '/', '-', ',', '#', 'L', 'W', '?', '0', '9', ' ', 'x']),
    );
    (cron_grammar::expr(Dialect::SLOTCRON), prop::collection::vec(edit, 1..=3)).prop_map(|(expr, edits)| {
        let mut chars: Vec<char> = expr.render().chars().collect();
        for (index, kind, c) in edits {
            let i = index.index(chars.len() + 1);
            match kind {
                0 => chars.insert(i, c),
                1 if i < chars.len() => drop(chars.remove(i)),
                _ if i < chars.len() => chars[i] = c,
                _ => chars.push(c),
            }
        }
        chars.into_iter().collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_strings(text in any::<String>(), zone in 0..4usize, second in 0..7_258_118_400i64) {
        exercise(&text, zone, second)?;
    }

    #[test]
    fn strings_of_cron_tokens(
        tokens in prop::collection::vec(token(), 0..9),
        zone in 0..4usize,
        second in 0..7_258_118_400i64,
    ) {
        exercise(&tokens.join(" "), zone, second)?;
        exercise(&tokens.concat(), zone, second)?;
    }

    #[test]
    fn near_misses_of_valid_expressions(text in near_miss(), zone in 0..4usize, second in 0..7_258_118_400i64) {
        exercise(&text, zone, second)?;
    }
}
