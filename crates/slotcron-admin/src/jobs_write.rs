//! `PUT` and `DELETE /api/v1/jobs/{name}`: changing the jobs kept in a shared state (the
//! daemon's `--jobs-from-state`), through a [`StateJobs`] handle that stores each change
//! with its record ([`DefinitionChange`], listed by [`crate::audit`]).
//!
//! The body of a `PUT` is one job's fields, those of a `[[job]]` table of the jobs file:
//! TOML (`Content-Type: application/toml`) or a JSON object (`application/json`). Its
//! `name`, if given, must be the path's. What reads it is the [`DefinitionReader`] the
//! server was given: the daemon's is the jobs file's own parser, with its messages. A
//! refused request stores nothing.

use std::sync::Arc;

use axum::Extension;
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use jiff::Timestamp;
use serde::Deserialize;
use slotcron::{DefinitionChange, JobDefinition, Store};
use utoipa::IntoParams;
use utoipa_axum::router::UtoipaMethodRouter;

use crate::access::TokenKind;
use crate::change_view::ChangeView;
use crate::error::ErrorBody;
use crate::jobs::JobPath;
use crate::steer;
use crate::{AdminState, ApiError, openapi};

/// The longest `note` accepted, in bytes.
pub const MAX_NOTE: usize = 1000;

/// The format of a `PUT` body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFormat {
    /// `Content-Type: application/toml`: the keys of a `[[job]]` table, without its header.
    Toml,
    /// `Content-Type: application/json`: a JSON object of the same keys.
    Json,
}

/// A `PUT` body: one job's fields.
#[derive(Debug, Clone, Copy)]
pub struct JobBody<'a> {
    /// How they are written.
    pub format: BodyFormat,
    /// The text, UTF-8.
    pub text: &'a str,
}

/// Reads a job's definition from a `PUT` body, with the rules of the jobs kept in the
/// state (the daemon's: the jobs file's parser and messages).
pub trait DefinitionReader: Send + Sync + 'static {
    /// The definition of the job `name` that `body` gives, to be stored beside the
    /// definitions `stored`.
    ///
    /// # Errors
    /// Every problem, each naming the job, the field and the reason: nothing is stored.
    fn read(&self, name: &str, body: JobBody<'_>, stored: &[JobDefinition]) -> Result<JobDefinition, String>;

    /// Whether `definition`, found in the state, is one of the jobs this API changes (not
    /// some other kind of definition the store holds).
    fn owns(&self, definition: &JobDefinition) -> bool;

    /// `definition` as the API shows it in the records of changes (the daemon's hides the
    /// values of its environment). Default: as it is.
    fn shown(&self, definition: JobDefinition) -> JobDefinition {
        definition
    }
}

/// The jobs kept in a shared state that the API changes: the store and the reader of
/// their definitions. What the handlers see of them.
#[derive(Clone)]
pub(crate) struct StateJobs {
    store: Arc<dyn Store>,
    reader: Arc<dyn DefinitionReader>,
}

/// Who makes a change, and why.
pub(crate) struct By {
    pub(crate) token: TokenKind,
    pub(crate) note: Option<String>,
}

impl StateJobs {
    /// The jobs of `store`, read by `reader`.
    pub(crate) fn new(store: Arc<dyn Store>, reader: Arc<dyn DefinitionReader>) -> Self {
        Self { store, reader }
    }

    /// The state's definitions: 503 if they cannot be read.
    async fn stored(&self) -> Result<Vec<JobDefinition>, ApiError> {
        self.store.load_definitions().await.map_err(|e| ApiError::unavailable(format!("the state: {e}")))
    }

    /// `change` as the API shows it ([`DefinitionReader::shown`]).
    fn shown(&self, change: DefinitionChange) -> DefinitionChange {
        let shown = |d: Option<JobDefinition>| d.map(|d| self.reader.shown(d));
        DefinitionChange { old: shown(change.old), new: shown(change.new), ..change }
    }

    /// Stores the change of `job` to `new` (`None`: deletes it): the change as kept and
    /// shown, or `None` if there was nothing to delete.
    async fn change(
        &self,
        job: &str,
        new: Option<JobDefinition>,
        by: By,
    ) -> Result<Option<DefinitionChange>, ApiError> {
        let change = DefinitionChange {
            job: job.to_owned(),
            at: Timestamp::now(),
            token: by.token.0.to_owned(),
            note: by.note,
            old: None,
            new,
        };
        let kept = self.store.change_definition(change).await;
        Ok(kept.map_err(|e| ApiError::unavailable(format!("the state: {e}")))?.map(|kept| self.shown(kept)))
    }

    /// Stores the definition `body` gives `name`.
    async fn put(&self, name: &str, body: JobBody<'_>, by: By) -> Result<DefinitionChange, ApiError> {
        let stored = self.stored().await?;
        if let Some(other) = stored.iter().find(|d| d.name == name && !self.reader.owns(d)) {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                format!(
                    "job {name:?}: the state holds a definition of another kind (handler {:?})",
                    other.handler
                ),
            ));
        }
        let definition = self.reader.read(name, body, &stored).map_err(ApiError::bad_request)?;
        if let Some(same) = stored.into_iter().find(|d| d.name == name && *d == definition) {
            // As `kubectl apply`: nothing to store, and no change to record.
            let (token, note) = (by.token.0.to_owned(), by.note);
            let unchanged = DefinitionChange {
                job: name.to_owned(),
                at: Timestamp::now(),
                token,
                note,
                old: Some(same.clone()),
                new: Some(same),
            };
            return Ok(self.shown(unchanged));
        }
        let change = self.change(name, Some(definition), by).await?;
        change.ok_or_else(|| ApiError::unavailable(format!("job {name:?}: the state kept no change")))
    }

    /// Deletes the definition of `name`: 404 if the state has none of its jobs.
    async fn delete(&self, name: &str, by: By) -> Result<DefinitionChange, ApiError> {
        let unknown = || ApiError::not_found(format!("the state has no job named {name:?}"));
        let stored = self.stored().await?;
        if !stored.iter().any(|d| d.name == name && self.reader.owns(d)) {
            return Err(unknown());
        }
        self.change(name, None, by).await?.ok_or_else(unknown)
    }

    /// The changes kept, newest first, at most `limit`: of `job`, or of every job.
    pub(crate) async fn changes(
        &self,
        job: Option<&str>,
        limit: usize,
    ) -> Result<Vec<DefinitionChange>, ApiError> {
        let changes = self.store.definition_changes(job, limit).await;
        let changes = changes.map_err(|e| ApiError::unavailable(format!("the state: {e}")))?;
        Ok(changes.into_iter().map(|change| self.shown(change)).collect())
    }
}

/// The handle of a server that changes jobs kept in a shared state: 409 for one that
/// does not.
pub(crate) fn state_jobs(state: &AdminState) -> Result<&StateJobs, ApiError> {
    state.state_jobs.as_ref().ok_or_else(|| {
        ApiError::new(
            StatusCode::CONFLICT,
            "this server keeps no jobs in a shared state: the jobs of a daemon started with \
             --jobs-from-state can be changed and their changes listed",
        )
    })
}

/// `?note=TEXT`: why a change is made, kept in its record.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct NoteParam {
    /// Why (at most 1,000 bytes), kept in the change's record.
    #[param(example = "moved to 03:00 (ticket OPS-12)")]
    note: Option<String>,
}

impl NoteParam {
    /// Who makes the change, with what token, and the note: 400 for a note too long.
    pub(crate) fn by(self, token: TokenKind) -> Result<By, ApiError> {
        match self.note {
            Some(note) if note.len() > MAX_NOTE => {
                Err(ApiError::bad_request(format!("note is {} bytes long; at most {MAX_NOTE}", note.len())))
            }
            note => Ok(By { token, note: note.filter(|n| !n.is_empty()) }),
        }
    }
}

/// The body as a [`JobBody`]: TOML or JSON by its `Content-Type` (415 otherwise), UTF-8.
fn job_body<'a>(headers: &HeaderMap, bytes: &'a Bytes) -> Result<JobBody<'a>, ApiError> {
    let (content_type, essence) = steer::content_type(headers);
    let format = match essence.to_ascii_lowercase().as_str() {
        "application/toml" => BodyFormat::Toml,
        "application/json" => BodyFormat::Json,
        _ => {
            return Err(steer::unsupported_media_type(
                "a PUT needs Content-Type: application/toml or application/json",
                content_type,
            ));
        }
    };
    let text = std::str::from_utf8(bytes)
        .map_err(|e| ApiError::bad_request(format!("the body is not UTF-8: {e}")))?;
    Ok(JobBody { format, text })
}

/// `PUT /api/v1/jobs/{name}[?note=TEXT]`: stores the job in the state, where every member
/// started with `--jobs-from-state` picks it up (within 2 s). 201 with the change's record
/// for a new job, 200 for a replaced one; 200 with `"change": "unchanged"` for the
/// definition the state holds already (nothing stored, no change recorded).
#[utoipa::path(
    put,
    path = "/jobs/{name}",
    operation_id = "put_job",
    tag = "state jobs",
    params(JobPath, NoteParam),
    request_body(
        description = "One job's fields, those of a `[[job]]` table of the jobs file, in TOML or as a JSON \
                       object; a `name` must be the path's",
        content(
            (Object = "application/json",
                example = json!({"cron": "0 3 * * *", "command": "pg_dump app > /var/backups/app.sql"})),
            (String = "application/toml", example = "cron = \"0 3 * * *\"\ncommand = \"pg_dump app\"\n"),
        ),
    ),
    responses(
        (status = 201, description = "The job is created in the state", body = ChangeView),
        (status = 200, description = "The job's definition is replaced, or was already the one given \
            (`unchanged`: nothing stored, no change recorded)", body = ChangeView),
        (status = 400, description = "The body or the note is not valid: each problem names the job, the field \
            and the reason; nothing is stored", body = ErrorBody),
        (status = 409, description = "The state holds another kind of definition under that name",
            body = ErrorBody),
        (status = 413, description = "The body is larger than 1 MiB", body = ErrorBody),
        (status = 415, description = "The Content-Type is neither application/toml nor application/json",
            body = ErrorBody),
    )
)]
pub(crate) async fn put(
    State(state): State<AdminState>,
    Path(JobPath { name }): Path<JobPath>,
    Query(note): Query<NoteParam>,
    Extension(token): Extension<TokenKind>,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<ChangeView>), ApiError> {
    let jobs = state_jobs(&state)?;
    let bytes = steer::read(bytes)?;
    let body = job_body(&headers, &bytes)?;
    let change = jobs.put(&name, body, note.by(token)?).await?;
    let status = if change.old.is_none() { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(ChangeView::from(change))))
}

/// `DELETE /api/v1/jobs/{name}[?note=TEXT]`: removes the job from the state (every member
/// stops scheduling it within 2 s); 200 with the change's record.
#[utoipa::path(
    delete,
    path = "/jobs/{name}",
    operation_id = "delete_job",
    tag = "state jobs",
    params(JobPath, NoteParam),
    responses(
        (status = 200, description = "The job is removed from the state", body = ChangeView),
        (status = 400, description = "The note is too long", body = ErrorBody),
        (status = 404, description = "The state has no job of that name", body = ErrorBody),
    )
)]
pub(crate) async fn delete(
    State(state): State<AdminState>,
    Path(JobPath { name }): Path<JobPath>,
    Query(note): Query<NoteParam>,
    Extension(token): Extension<TokenKind>,
) -> Result<Json<ChangeView>, ApiError> {
    let change = state_jobs(&state)?.delete(&name, note.by(token)?).await?;
    Ok(Json(ChangeView::from(change)))
}

/// A route over the state's jobs, documented to answer 409 on a server that keeps none
/// ([`state_jobs`]) and 503 when the state fails (nothing changed).
pub(crate) fn documented(routes: UtoipaMethodRouter<AdminState>) -> UtoipaMethodRouter<AdminState> {
    let (schemas, mut paths, method_router) = routes;
    openapi::each_operation(&mut paths, |operation| {
        openapi::answer(
            operation,
            StatusCode::CONFLICT,
            "The server keeps no jobs in a shared state (a daemon without --jobs-from-state)",
        );
        openapi::answer(operation, StatusCode::SERVICE_UNAVAILABLE, "The state failed; nothing changed");
    });
    (schemas, paths, method_router)
}
