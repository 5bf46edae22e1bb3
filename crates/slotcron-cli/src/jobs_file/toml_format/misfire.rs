//! The misfire policy of a job: `misfire`, and the `misfire_cap` of `run_all`.

use slotcron::Misfire;
use toml::de::DeValue;

use super::Reader;
use super::table::Table;

impl Reader<'_> {
    /// The misfire policy from `misfire` and `misfire_cap`, if given and valid (problems
    /// are recorded).
    pub(super) fn misfire(&mut self, table: &Table<'_, '_>) -> Option<Misfire> {
        let expected = "a string: \"skip\", \"run_once\" or \"run_all\"";
        let policy = self.string(table, "misfire", expected).and_then(|policy| match *policy.get_ref() {
            "skip" => Some(Misfire::Skip),
            "run_once" => Some(Misfire::RunOnce),
            "run_all" => Some(Misfire::RunAll { cap: Misfire::DEFAULT_CAP }),
            other => {
                let reason = format!("{other:?} is not a misfire policy: write skip, run_once or run_all");
                self.problem(table, "misfire", policy.span(), reason);
                None
            }
        });
        if table.get("misfire_cap").is_none() {
            return policy;
        }
        let cap = self.typed(table, "misfire_cap", "an integer", DeValue::as_integer)?;
        match policy {
            Some(Misfire::RunAll { .. }) => {
                match u32::from_str_radix(cap.get_ref().as_str(), cap.get_ref().radix()) {
                    Ok(cap) => Some(Misfire::RunAll { cap }),
                    Err(_) => {
                        let text = self.source.get(cap.span()).unwrap_or_default();
                        let reason = format!("{text} is out of range: write a number from 1 to {}", u32::MAX);
                        self.problem(table, "misfire_cap", cap.span(), reason);
                        None
                    }
                }
            }
            // An invalid policy is reported on its own line.
            None if table.get("misfire").is_some() => None,
            _ => {
                self.problem(table, "misfire_cap", cap.span(), "applies to misfire = \"run_all\" only");
                None
            }
        }
    }
}
