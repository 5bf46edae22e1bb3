//! What a daemon without a coordinator cannot run: jobs placed on labels it lacks (`on`;
//! alone, it is the only member that could run them), and jobs with run limits only a
//! coordinator counts (`max_runs`, `pause_after_failures`).

use slotcron::Labels;

use super::{JobsFile, Problem, Problems};

/// Why a daemon without a coordinator refuses `max_runs` and `pause_after_failures`.
const COUNTED_ALONE: &str = "needs a coordinator to count across the fleet and restarts: \
    give --redis URL or a PostgreSQL --state";

/// The labels (`--label`) of a daemon that runs without a coordinator (no Redis, no
/// PostgreSQL state); `None` with one, where other daemons may carry what it lacks.
#[derive(Debug, Clone)]
pub struct LoneLabels(Option<Labels>);

impl LoneLabels {
    /// `labels`, if the daemon runs without a coordinator.
    pub fn new(labels: &Labels, coordinated: bool) -> Self {
        Self((!coordinated).then(|| labels.clone()))
    }

    /// Refuses the jobs of `file` (enabled or not) placed on labels this daemon lacks (no
    /// other daemon could run them, and running them here would ignore their `on`), and
    /// those with `max_runs` or `pause_after_failures`, which only a coordinator counts.
    /// `slotcron run` refuses them at start, `slotcron check` as `run` would.
    ///
    /// # Errors
    /// Every refusal: the field's line, the job, the field and the reason (for `on`, the
    /// labels it lacks and those the daemon carries).
    pub fn check(&self, file: &JobsFile) -> Result<(), Problems> {
        let Some(labels) = &self.0 else { return Ok(()) };
        let refused: Vec<Problem> =
            file.jobs
                .iter()
                .flat_map(|entry| {
                    let placed = entry.job.placement().refused_alone(labels).map(|reason| {
                        ("on", format!("{reason} (give this daemon --label, or a coordinator)"))
                    });
                    let counted = |set: bool, field| set.then_some((field, COUNTED_ALONE.to_owned()));
                    let limits = [
                        counted(entry.job.max_runs().is_some(), "max_runs"),
                        counted(entry.job.pause_after_failures().is_some(), "pause_after_failures"),
                    ];
                    [placed].into_iter().chain(limits).flatten().map(|(field, reason)| {
                        Problem::field(entry.line_of(field), Some(entry.job.name()), field, reason)
                    })
                })
                .collect();
        if refused.is_empty() { Ok(()) } else { Err(Problems::new(&file.path, refused)) }
    }
}
