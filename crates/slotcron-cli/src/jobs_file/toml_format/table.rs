//! Reading the keys of a TOML table: the keys each table may hold, typed getters that
//! record a problem for a value of the wrong type, and unknown keys with the nearest
//! known one.

use std::ops::Range;
use std::time::Duration;

use slotcron::parse_duration;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::Reader;
use crate::jobs_file::Problem;

pub(super) const TOP_LEVEL_KEYS: &[&str] = &[
    "timezone",
    "env",
    "working_dir",
    "shutdown_timeout",
    "max_concurrent_runs",
    "on_failure",
    "coordination",
    "admin",
    "history",
    "calendar",
    "job",
];
pub(super) const CALENDAR_KEYS: &[&str] = &["name", "dates", "ranges", "cron", "timezone"];
pub(super) const COORDINATION_KEYS: &[&str] =
    &["redis", "prefix", "slack", "takeover_delay", "membership_ttl", "shared_work"];
pub(super) const ADMIN_KEYS: &[&str] = &["listen"];
pub(super) const HISTORY_KEYS: &[&str] = &["retention", "per_job"];
pub(super) const JOB_KEYS: &[&str] = &[
    "name",
    "every",
    "at_time",
    "cron",
    "at",
    "after",
    "run_after",
    "command",
    "timeout",
    "run_on_start",
    "on_every_replica",
    "timezone",
    "misfire",
    "misfire_cap",
    "grace",
    "env",
    "working_dir",
    "attempts",
    "backoff",
    "backoff_multiplier",
    "backoff_max",
    "overlap",
    "jitter",
    "on_failure",
    "on_interrupt",
    "enabled",
    "start",
    "end",
    "exclude",
    "on",
    "max_runs",
    "pause_after_failures",
];

/// What each kind of value is expected to look like, in type problems.
pub(super) const DURATION: &str = "a duration string like \"90s\"";
const BOOLEAN: &str = "true or false";
pub(super) const ZONE: &str = "a time zone name string like \"Europe/Berlin\"";

/// A TOML table being read, and how problems name it and its keys.
#[derive(Clone, Copy)]
pub(super) struct Table<'t, 'i> {
    pub(super) entries: &'t DeTable<'i>,
    /// The line of its header, for keys that are missing.
    pub(super) line: usize,
    /// The job it defines, once its name is known.
    pub(super) job: Option<&'t str>,
    /// The place of the job it defines among the file's `[[job]]` tables (from 1), which
    /// names the job in problems while its name is not known.
    pub(super) number: Option<usize>,
    /// What problems prefix its keys with: `coordination.` for `[coordination]`.
    pub(super) prefix: &'static str,
    /// The keys it may hold.
    pub(super) known: &'static [&'static str],
    /// What it is called in problems: "a `[[job]]` table"...
    pub(super) what: &'static str,
}

impl<'t, 'i> Table<'t, 'i> {
    pub(super) fn get(&self, key: &str) -> Option<&'t Spanned<DeValue<'i>>> {
        self.entries.iter().find(|(k, _)| k.get_ref() == key).map(|(_, value)| value)
    }
}

impl Reader<'_> {
    /// Records a problem with `key` of `table`, on the line of `span`.
    pub(super) fn problem(
        &mut self,
        table: &Table<'_, '_>,
        key: &str,
        span: Range<usize>,
        reason: impl Into<String>,
    ) {
        let line = self.line(span);
        let field = format!("{}{key}", table.prefix);
        self.parsed
            .problems
            .push(Problem::field(line, table.job, &field, reason).of_job_number(table.number));
    }

    /// Records a problem for `key` missing from `table`, on the line of its header, unless
    /// an unknown key of the table is a likely typo of it (`comand`): the problem
    /// [`Self::unknown_keys`] records for that one says "did you mean `key`?".
    pub(super) fn missing(&mut self, table: &Table<'_, '_>, key: &str, reason: &str) {
        let misspelt = table.entries.iter().any(|(written, _)| {
            let written: &str = written.get_ref();
            !table.known.contains(&written) && nearest(written, table.known) == Some(key)
        });
        if misspelt {
            return;
        }
        let field = format!("{}{key}", table.prefix);
        let problem = Problem::field(table.line, table.job, &field, format!("missing: {reason}"));
        self.parsed.problems.push(problem.of_job_number(table.number));
    }

    /// Records a problem for every key of `table` it may not hold, suggesting the known
    /// key nearest to a likely typo.
    pub(super) fn unknown_keys(&mut self, table: &Table<'_, '_>) {
        for (key, _) in table.entries.iter() {
            let key_name: &str = key.get_ref();
            if table.known.contains(&key_name) {
                continue;
            }
            // A near key is the likely fix: the whole list (a job takes 32) only without one.
            let reason = match nearest(key_name, table.known) {
                Some(near) => format!("unknown key; did you mean {near}?"),
                None => format!("unknown key; {} takes {}", table.what, table.known.join(", ")),
            };
            self.problem(table, key_name, key.span(), reason);
        }
    }

    /// The value of `key` in `table` if `extract` accepts it; a problem saying what was
    /// `expected` otherwise. `None` also when absent.
    pub(super) fn typed<'t, 'i, T>(
        &mut self,
        table: &Table<'t, 'i>,
        key: &str,
        expected: &str,
        extract: impl FnOnce(&'t DeValue<'i>) -> Option<T>,
    ) -> Option<Spanned<T>> {
        let value = table.get(key)?;
        let extracted = extract(value.get_ref());
        if extracted.is_none() {
            self.wrong_type(table, key, value, expected);
        }
        extracted.map(|extracted| Spanned::new(value.span(), extracted))
    }

    /// Records that `value`, of `key`, is not what was `expected`.
    pub(super) fn wrong_type(
        &mut self,
        table: &Table<'_, '_>,
        key: &str,
        value: &Spanned<DeValue<'_>>,
        expected: &str,
    ) {
        let reason = format!("expected {expected}, found {}", self.shown(value));
        self.problem(table, key, value.span(), reason);
    }

    pub(super) fn string<'t>(
        &mut self,
        table: &Table<'t, '_>,
        key: &str,
        expected: &str,
    ) -> Option<Spanned<&'t str>> {
        self.typed(table, key, expected, DeValue::as_str)
    }

    pub(super) fn bool(&mut self, table: &Table<'_, '_>, key: &str) -> Option<Spanned<bool>> {
        self.typed(table, key, BOOLEAN, DeValue::as_bool)
    }

    /// The duration of `key`, if given and valid; a problem if invalid.
    pub(super) fn duration(&mut self, table: &Table<'_, '_>, key: &str) -> Option<Duration> {
        let text = self.string(table, key, DURATION)?;
        parse_duration(text.get_ref()).map_err(|e| self.problem(table, key, text.span(), e.to_string())).ok()
    }

    /// A value as type problems show it: its type, and its text if it is short.
    pub(super) fn shown(&self, value: &Spanned<DeValue<'_>>) -> String {
        let kind = value.get_ref().type_str();
        match value.get_ref() {
            DeValue::Table(_) => "a table".into(),
            DeValue::Array(_) => "an array".into(),
            _ => match self.source.get(value.span()).map(str::trim) {
                Some(text) if text.len() <= 60 && !text.contains('\n') => format!("{kind} {text}"),
                _ => kind.into(),
            },
        }
    }
}

/// The known key nearest to `key`, if close enough to be a typo (at most two edits,
/// swaps counting as one, and fewer than the key's length; case aside, as all keys are
/// lower case).
fn nearest(key: &str, known: &[&'static str]) -> Option<&'static str> {
    let key = key.to_lowercase();
    // Other schedulers' names for a key (Kubernetes CronJob, Quartz, Nomad, dkron,
    // systemd timers), which no spelling distance finds.
    let alias = OTHER_NAMES.iter().find(|(other, _)| *other == key).map(|(_, ours)| *ours);
    if let Some(ours) = alias.filter(|ours| known.contains(ours)) {
        return Some(ours);
    }
    known
        .iter()
        .map(|candidate| (strsim::damerau_levenshtein(&key, candidate), *candidate))
        .filter(|(distance, _)| *distance <= 2 && *distance < key.chars().count())
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Keys as other schedulers name them, and ours.
const OTHER_NAMES: [(&str, &str); 12] = [
    ("schedule", "cron"),
    ("retries", "attempts"),
    ("retry", "attempts"),
    ("max_retries", "attempts"),
    ("interval", "every"),
    ("cmd", "command"),
    ("run", "command"),
    ("tz", "timezone"),
    ("time_zone", "timezone"),
    ("concurrency_policy", "overlap"),
    ("starting_deadline", "grace"),
    ("suspend", "enabled"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_schedulers_names_get_ours() {
        assert_eq!(nearest("retries", JOB_KEYS), Some("attempts"));
        assert_eq!(nearest("schedule", JOB_KEYS), Some("cron"));
        assert_eq!(nearest("TZ", JOB_KEYS), Some("timezone"));
        // Only a key the table takes.
        assert_eq!(nearest("retries", TOP_LEVEL_KEYS), None);
    }

    #[test]
    fn likely_typos_get_the_nearest_key() {
        assert_eq!(nearest("comand", JOB_KEYS), Some("command"));
        assert_eq!(nearest("timezon", JOB_KEYS), Some("timezone"));
        assert_eq!(nearest("ta", JOB_KEYS), Some("at"));
        assert_eq!(nearest("colour", JOB_KEYS), None);
        assert_eq!(nearest("shell", JOB_KEYS), None);
        assert_eq!(nearest("EVERY", JOB_KEYS), Some("every"));
        assert_eq!(nearest("Comand", JOB_KEYS), Some("command"));
    }
}
