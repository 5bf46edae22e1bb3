//! The `[history]` table: how much run history the daemon's ledger keeps.

use super::Reader;
use super::table::Table;

/// What `retention` may be written as to mean the default, besides a zero duration.
const DEFAULT_RETENTION: &str = "0";

impl Reader<'_> {
    /// The `[history]` table: `retention`, a duration (`"0"` or a zero duration: the
    /// default), and `per_job`, a count from 1.
    pub(super) fn history(&mut self, table: &Table<'_, '_>) {
        self.unknown_keys(table);
        let default = table
            .get("retention")
            .and_then(|value| value.get_ref().as_str())
            .is_some_and(|text| text.trim() == DEFAULT_RETENTION);
        if !default && let Some(retention) = self.duration(table, "retention") {
            self.parsed.history.retention = (!retention.is_zero()).then_some(retention);
        }
        if let Some(per_job) = self.positive(table, "per_job") {
            self.parsed.history.per_job = Some(per_job);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::tests::problems;
    use crate::jobs_file::{Format, History, parse};

    fn history(source: &str) -> History {
        parse(source, Format::Toml).unwrap_or_else(|problems| panic!("{problems:?}")).history
    }

    #[test]
    fn retention_and_per_job_reach_the_file() {
        let read = history("[history]\nretention = \"7d\"\nper_job = 1000\n");
        assert_eq!(read, History { retention: Some(Duration::from_secs(7 * 86_400)), per_job: Some(1000) });
        assert_eq!(history("[history]\nretention = \"0\"\n"), History::default());
        assert_eq!(history("[history]\nretention = \"0s\"\n"), History::default());
        assert_eq!(history(""), History::default());
        let retention = History::default().retention();
        assert_eq!(retention, slotcron::Retention::default());
    }

    #[test]
    fn bad_values_name_the_field_and_the_reason() {
        let listed = problems("[history]\nretention = \"a month\"\nper_job = 0\nkeep = 3\n");
        assert_eq!(listed.len(), 3, "{listed:?}");
        assert!(listed.iter().any(|p| p.starts_with("2: history.retention: ")), "{listed:?}");
        assert!(listed.iter().any(|p| p.starts_with("3: history.per_job: 0 is out of range")), "{listed:?}");
        assert!(listed.iter().any(|p| p.contains("history.keep")), "{listed:?}");
        let typed = problems("[history]\nretention = 30\n");
        assert_eq!(
            typed,
            ["2: history.retention: expected a duration string like \"90s\", found integer 30"]
        );
    }
}
