//! A job's run policies — `attempts`, `backoff`, `backoff_multiplier`, `backoff_max`,
//! `overlap`, `jitter`, `on_failure`, `on_interrupt`, the window `start` and `end`, and
//! the calendars of `exclude`, the labels of `on`, the run limit `max_runs`, `pause_after_failures` — and the file-wide `max_concurrent_runs` and `on_failure`.

use slotcron::{OnInterrupt, Overlap};
use toml::de::DeValue;

use super::Reader;
use super::table::Table;
use crate::command::{self, ShellCommand};
use crate::jobs_file::Policies;

impl Reader<'_> {
    /// The run policies of a `[[job]]` table, as given (problems are recorded).
    pub(super) fn policies(&mut self, table: &Table<'_, '_>) -> Policies {
        let attempts = self.positive(table, "attempts").map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        let backoff = self.duration(table, "backoff");
        let backoff_max = self.duration(table, "backoff_max");
        let backoff_multiplier = self.multiplier(table);
        let overlap =
            self.choice(table, "overlap", "an overlap policy", &Overlap::ALL.map(|o| (o.name(), o)));
        let jitter = self.duration(table, "jitter");
        let on_failure = self.hook(table);
        let on_interrupt = self.choice(
            table,
            "on_interrupt",
            "an on_interrupt choice",
            &OnInterrupt::ALL.map(|o| (o.name(), o)),
        );
        let (start, end) = (self.instant(table, "start"), self.instant(table, "end"));
        Policies {
            max_runs: self.positive(table, "max_runs"),
            pause_after_failures: self.positive(table, "pause_after_failures"),
            start,
            end,
            exclude: self.exclude(table),
            on: self.on(table),
            attempts,
            backoff,
            backoff_multiplier,
            backoff_max,
            overlap,
            jitter,
            on_failure,
            on_interrupt,
        }
    }

    /// An RFC 3339 instant with its offset (`start`, `end`), if given and valid.
    fn instant(&mut self, table: &Table<'_, '_>, key: &str) -> Option<jiff::Timestamp> {
        let text = self.string(table, key, "an RFC 3339 instant string like \"2027-01-01T00:00:00Z\"")?;
        match text.get_ref().parse() {
            Ok(instant) => Some(instant),
            Err(_) => {
                let reason = format!(
                    "{:?} is not an RFC 3339 instant with an offset (write e.g. 2027-01-01T00:00:00Z or 2027-01-01T09:00:00+01:00)",
                    text.get_ref()
                );
                self.problem(table, key, text.span(), reason);
                None
            }
        }
    }

    /// An integer of at least 1, if given and valid.
    pub(super) fn positive(&mut self, table: &Table<'_, '_>, key: &str) -> Option<u64> {
        let value = self.typed(table, key, "an integer", DeValue::as_integer)?;
        match u64::from_str_radix(value.get_ref().as_str(), value.get_ref().radix()) {
            Ok(n) if (1..=u64::from(u32::MAX)).contains(&n) => Some(n),
            _ => {
                let text = self.source.get(value.span()).unwrap_or_default();
                let reason = format!("{text} is out of range: write a number from 1 to {}", u32::MAX);
                self.problem(table, key, value.span(), reason);
                None
            }
        }
    }

    fn multiplier(&mut self, table: &Table<'_, '_>) -> Option<f64> {
        let value = table.get("backoff_multiplier")?;
        let text = self.source.get(value.span()).unwrap_or_default().trim().replace('_', "");
        let number = match value.get_ref() {
            DeValue::Integer(_) | DeValue::Float(_) => text.parse::<f64>().ok(),
            _ => None,
        };
        match number {
            Some(n) if (1.0..=100.0).contains(&n) => Some(n),
            Some(_) => {
                let reason =
                    format!("{text} is out of range: write a number from 1 (a fixed backoff) to 100");
                self.problem(table, "backoff_multiplier", value.span(), reason);
                None
            }
            None => {
                self.wrong_type(table, "backoff_multiplier", value, "a number like 2 or 1.5");
                None
            }
        }
    }

    /// One of the named `choices` (name, value) at `key`, if given and valid; `what` names
    /// the kind in problems ("an overlap policy").
    fn choice<T: Copy>(
        &mut self,
        table: &Table<'_, '_>,
        key: &str,
        what: &str,
        choices: &[(&str, T)],
    ) -> Option<T> {
        // Absent (most jobs): no problem text to prepare.
        table.get(key)?;
        let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
        let expected =
            format!("a string: {}", names.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", "));
        let value = self.string(table, key, &expected)?;
        let chosen = choices.iter().find(|(name, _)| **name == **value.get_ref()).map(|(_, v)| *v);
        if chosen.is_none() {
            let reason = format!("{:?} is not {what}: write {}", value.get_ref(), names.join(", "));
            self.problem(table, key, value.span(), reason);
        }
        chosen
    }

    /// An `on_failure` command, if given and valid.
    pub(super) fn hook(&mut self, table: &Table<'_, '_>) -> Option<ShellCommand> {
        let value = self.string(table, "on_failure", "a shell command string")?;
        let script = value.get_ref().trim();
        let checked = match script {
            "" => Err("must not be empty".to_owned()),
            script => command::check_no_nul(script, "a shell command"),
        };
        match checked {
            Ok(()) => Some(ShellCommand::new(script)),
            Err(reason) => {
                self.problem(table, "on_failure", value.span(), reason);
                None
            }
        }
    }
}
