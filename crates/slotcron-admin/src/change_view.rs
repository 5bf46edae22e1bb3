//! One change of a job kept in the state ([`slotcron::DefinitionChange`]) as the admin API
//! shows it: in `PUT`/`DELETE /api/v1/jobs/{name}`'s answers ([`crate::jobs_write`]) and
//! in `GET /api/v1/audit`'s list ([`crate::audit`]).

use jiff::Timestamp;
use serde::Serialize;
use slotcron::{DefinitionChange, JobDefinition};
use utoipa::ToSchema;

/// One change of a job kept in the state, as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ChangeView {
    job: String,
    /// When it was made (UTC).
    #[schema(value_type = String, format = DateTime)]
    at: Timestamp,
    /// `created`, `changed` or `deleted`; in a `PUT`'s answer, also `unchanged` (the body
    /// gave the definition the state holds: nothing was stored, no change recorded).
    change: &'static str,
    /// The credential it was made with: `full` (the full token), `none` (a server
    /// without a token) or `state` (`slotcron jobs put` or `rm`, with access to the state
    /// itself).
    token: String,
    /// Why, as the `note` parameter said; `null`: none given.
    #[schema(required = true)]
    note: Option<String>,
    /// The definition before, as the state keeps it; `null` for a creation.
    #[schema(value_type = Option<Object>, required = true)]
    old: Option<JobDefinition>,
    /// The definition after; `null` for a deletion.
    #[schema(value_type = Option<Object>, required = true)]
    new: Option<JobDefinition>,
}

impl From<DefinitionChange> for ChangeView {
    fn from(change: DefinitionChange) -> Self {
        let kind = match (&change.old, &change.new) {
            (None, _) => "created",
            (Some(old), Some(new)) if old == new => "unchanged",
            (Some(_), Some(_)) => "changed",
            (Some(_), None) => "deleted",
        };
        Self {
            job: change.job,
            at: change.at,
            change: kind,
            token: change.token,
            note: change.note,
            old: change.old,
            new: change.new,
        }
    }
}
