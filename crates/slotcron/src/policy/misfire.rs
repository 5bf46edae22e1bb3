//! The misfire policy: what happens to triggers noticed after their grace window.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What happens to triggers noticed later than the job's grace window: after downtime,
/// a pause, or overload.
///
/// As data (job definitions): `{"policy": "skip"}`, `{"policy": "run_once"}`,
/// `{"policy": "run_all", "cap": 3}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "snake_case")]
pub enum Misfire {
    /// Drop the missed triggers (recorded as missed) and wait for the next one, as host
    /// cron does. The default for recurring jobs.
    Skip,
    /// Coalesce the missed triggers into one run, recorded with the newest missed
    /// trigger. The default for one-shots, so an `at` already past at start-up fires.
    RunOnce,
    /// Run every missed trigger, oldest first, but at most the newest `cap` of them
    /// (Kubernetes CronJob counts up to 100).
    RunAll {
        /// The most catch-up runs per misfire.
        cap: u32,
    },
}

impl Misfire {
    /// The default cap of [`Misfire::RunAll`], as in Kubernetes CronJob.
    pub const DEFAULT_CAP: u32 = 100;

    /// The default grace window: a trigger noticed more than this after its instant is a
    /// misfire.
    pub const DEFAULT_GRACE: Duration = Duration::from_secs(1);

    /// The name used in configuration files: `skip`, `run_once`, `run_all`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Skip => "skip",
            Self::RunOnce => "run_once",
            Self::RunAll { .. } => "run_all",
        }
    }
}
