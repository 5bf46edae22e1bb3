//! The changes made to the stored job definitions, kept beside them as their audit
//! trail ([`Store::change_definition`](super::Store::change_definition)).

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::JobDefinition;

/// How many changes of one job's definition a store keeps: the newest 100 (older ones
/// are removed as new ones are recorded).
pub const DEFINITION_CHANGES_KEPT: usize = 100;

/// One change of a stored job definition: a creation (`old` absent), a replacement, or a
/// deletion (`new` absent), who made it and why.
///
/// Stored as JSON by the SQL stores; the field names are part of that format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DefinitionChange {
    /// The job's name.
    pub job: String,
    /// When it was made (UTC), on the clock of whoever made it.
    pub at: Timestamp,
    /// The kind of credential it was made with, as its maker names it (the admin API
    /// writes `full` for its full token, `none` for a server without a token; `slotcron
    /// jobs put` and `rm` write `state`).
    pub token: String,
    /// Why, as its maker wrote it; `None`: no note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The definition replaced or deleted; `None` when the change created the job.
    /// [`Store::change_definition`](super::Store::change_definition) fills it in.
    pub old: Option<JobDefinition>,
    /// The definition stored; `None` when the change deleted the job.
    pub new: Option<JobDefinition>,
}

impl DefinitionChange {
    /// The change as a store keeps it: `old` set to the definition it replaced, if any.
    /// `None` when it changes nothing: the deletion of a job without a definition.
    pub fn replacing(self, old: Option<JobDefinition>) -> Option<Self> {
        (old.is_some() || self.new.is_some()).then_some(Self { old, ..self })
    }
}
