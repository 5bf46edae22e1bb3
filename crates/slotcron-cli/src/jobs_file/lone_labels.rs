//! The labels of a daemon without a coordinator, against the jobs placed on labels (`on`):
//! alone, it is the only member that could run them.

use slotcron::Labels;

use super::JobsFile;

/// The labels (`--label`) of a daemon that runs without a coordinator (no Redis, no
/// PostgreSQL state); `None` with one, where other daemons may carry what it lacks.
#[derive(Debug, Clone)]
pub struct LoneLabels(Option<Labels>);

impl LoneLabels {
    /// `labels`, if the daemon runs without a coordinator.
    pub fn new(labels: &Labels, coordinated: bool) -> Self {
        Self((!coordinated).then(|| labels.clone()))
    }

    /// Refuses the jobs of `file` (enabled or not) placed on labels this daemon lacks: no
    /// other daemon could run them, and running them here would ignore their `on`.
    ///
    /// # Errors
    /// One line per refused job, all of them: the file, the job's line, the job, the `on`
    /// field, the labels it lacks and those the daemon carries.
    pub fn check(&self, file: &JobsFile) -> Result<(), String> {
        let Some(labels) = &self.0 else { return Ok(()) };
        let refused: Vec<String> = file
            .jobs
            .iter()
            .filter_map(|entry| {
                let reason = entry.job.placement().refused_alone(labels)?;
                Some(format!(
                    "{}:{}: job {:?}: on: {reason} (give this daemon --label, or a coordinator)",
                    file.path.display(),
                    entry.line,
                    entry.job.name(),
                ))
            })
            .collect();
        if refused.is_empty() { Ok(()) } else { Err(refused.join("\n")) }
    }
}
