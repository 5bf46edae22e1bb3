//! A job's `on`: the labels a daemon must carry (`--label`) to run the job.

use super::Reader;
use super::table::Table;

impl Reader<'_> {
    /// A job's `on`, each label as written (checked when the job is built, which names
    /// the job, the field and the reason); empty if not given.
    pub(super) fn on(&mut self, table: &Table<'_, '_>) -> Vec<String> {
        let expected = "a list of labels like [\"region=eu\", \"gpu\"]";
        self.strings(table, "on", expected, "").into_iter().map(|(label, _)| label).collect()
    }
}
