//! A run's output as the admin API answers it (`GET /api/v1/jobs/{name}/runs/{trigger}/output`)
//! and `slotcron logs` reads it.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use slotcron::{AttemptEnd, AttemptOutput, OutputChunk, RunOutput};
use utoipa::ToSchema;

use crate::peers::Unanswered;

/// `{"job", "trigger", "outputs"}`: what a run wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RunOutputs {
    /// The job's name.
    pub job: String,
    /// The run's trigger.
    #[schema(value_type = String, format = DateTime)]
    pub trigger: Timestamp,
    /// One per instance that ran the trigger, by instance.
    pub outputs: Vec<OutputView>,
    /// The live members that keep their own output and did not answer, each with why:
    /// their runs' output may be missing (`?scope=fleet`, the default).
    #[serde(default)]
    pub unanswered: Vec<Unanswered>,
}

/// What one instance's run wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OutputView {
    /// The instance that ran it.
    pub instance: String,
    /// The last attempt's output as text, both streams in the order read (bytes that
    /// are not UTF-8 replaced with U+FFFD), as before each attempt was kept.
    pub output: String,
    /// Whether the last attempt's earlier output was dropped (each attempt keeps its last
    /// 64 KiB).
    pub truncated: bool,
    /// Each attempt kept (those that wrote output or failed), by number.
    pub attempts: Vec<AttemptView>,
}

/// What one attempt wrote and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AttemptView {
    /// 1 for the first attempt, 2 for the first retry...; `null` when not known (output
    /// an older release kept: its run's last attempt).
    #[schema(required = true)]
    pub attempt: Option<u32>,
    /// When it started; `null` when not known.
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    pub started: Option<Timestamp>,
    /// How long it took, in milliseconds; `null` when not known.
    #[schema(required = true)]
    pub duration_ms: Option<u64>,
    /// How it ended, as text: `exit 3`, `killed by SIGTERM`, `failed: <error>` or
    /// `unknown`.
    pub status: String,
    /// The exit status, if it exited.
    #[schema(required = true)]
    pub exit_code: Option<i32>,
    /// The signal that killed it (e.g. `SIGTERM`), if one did.
    #[schema(required = true)]
    pub signal: Option<String>,
    /// Why it failed without an exit status (it could not be started), if it did.
    #[schema(required = true)]
    pub error: Option<String>,
    /// What it wrote, in the order read: each chunk one stream's, as text.
    pub chunks: Vec<ChunkView>,
    /// Whether its earlier output was dropped to keep its last 64 KiB.
    pub truncated: bool,
}

/// Text written to one stream, with no write to the other between.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChunkView {
    /// `stdout` or `stderr`.
    pub stream: String,
    /// The text (bytes that are not UTF-8 replaced with U+FFFD).
    pub text: String,
}

impl From<&OutputChunk> for ChunkView {
    fn from(chunk: &OutputChunk) -> Self {
        Self {
            stream: chunk.stream.as_str().to_owned(),
            text: String::from_utf8_lossy(&chunk.bytes).into_owned(),
        }
    }
}

impl From<&AttemptOutput> for AttemptView {
    fn from(a: &AttemptOutput) -> Self {
        let (exit_code, signal, error) = a.end.columns();
        Self {
            attempt: (a.attempt > 0).then_some(a.attempt),
            started: a.started,
            duration_ms: a.duration.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            status: match &a.end {
                AttemptEnd::Unknown => "unknown".to_owned(),
                end => end.to_string(),
            },
            exit_code,
            signal: signal.map(str::to_owned),
            error: error.map(str::to_owned),
            chunks: a.chunks.iter().map(ChunkView::from).collect(),
            truncated: a.truncated,
        }
    }
}

impl From<&RunOutput> for OutputView {
    fn from(o: &RunOutput) -> Self {
        let last = o.attempts.last();
        Self {
            instance: o.instance.to_string(),
            output: last.map(|a| String::from_utf8_lossy(&a.bytes()).into_owned()).unwrap_or_default(),
            truncated: last.is_some_and(|a| a.truncated),
            attempts: o.attempts.iter().map(AttemptView::from).collect(),
        }
    }
}

impl RunOutputs {
    /// The answer for `job` at `trigger`, from the outputs kept.
    pub fn new(job: String, trigger: Timestamp, outputs: &[RunOutput]) -> Self {
        Self { job, trigger, outputs: outputs.iter().map(OutputView::from).collect(), unanswered: Vec::new() }
    }
}
