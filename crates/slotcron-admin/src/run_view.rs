//! A run record as the admin API shows it ([`RunView`]): in a job's page of runs, and as
//! another member answers it for a page merged across the fleet.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use slotcron::RunRecord;
use utoipa::ToSchema;

/// A run and the trigger it fired, run by the replica named by `instance`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub(crate) struct RunView {
    job: String,
    #[schema(value_type = String, format = DateTime)]
    pub trigger: Timestamp,
    pub instance: String,
    pub outcome: String,
    /// `scheduled`, `catch-up`, `manual`, `backfill`, `start-up`...
    cause: String,
    /// How many times the run was started (attempts): 0 for a trigger skipped or missed.
    #[serde(default)]
    attempts: u32,
    #[schema(required = true)]
    fencing_token: Option<u64>,
    #[schema(value_type = String, format = DateTime)]
    pub started: Timestamp,
    /// How long the run took; `null` while it is `running` (its `started` tells since
    /// when) and for an `interrupted` one, which never ended.
    #[schema(required = true)]
    duration_ms: Option<u128>,
    #[schema(required = true)]
    error: Option<String>,
}

impl RunView {
    /// What tells one record from another: its trigger, instance and start.
    pub fn identity(&self) -> (Timestamp, String, Timestamp) {
        (self.trigger, self.instance.clone(), self.started)
    }
}

impl From<RunRecord> for RunView {
    fn from(r: RunRecord) -> Self {
        Self {
            job: r.job.to_string(),
            trigger: r.trigger,
            instance: r.instance.to_string(),
            outcome: r.outcome.to_string(),
            cause: r.cause.to_string(),
            attempts: r.attempts,
            fencing_token: r.fencing_token,
            started: r.started,
            duration_ms: r.ended_duration().map(|d| d.as_millis()),
            error: r.error,
        }
    }
}
