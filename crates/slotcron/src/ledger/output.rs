//! Run output: what a run wrote (a shell command's standard output and error), kept
//! beside its record so it can be read after the log has scrolled away.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use jiff::Timestamp;

use super::LedgerError;

/// The most output kept per run, in bytes: the last 64 KiB.
pub const MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// What one run wrote, as one replica kept it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutput {
    /// The job's name.
    pub job: Arc<str>,
    /// The run's trigger (UTC).
    pub trigger: Timestamp,
    /// The instance that ran it.
    pub instance: Arc<str>,
    /// The last [`MAX_OUTPUT_BYTES`] of the output, as written (bytes that are not UTF-8
    /// are kept; readers replace them).
    pub output: Vec<u8>,
    /// Whether earlier output was dropped to keep within [`MAX_OUTPUT_BYTES`].
    pub truncated: bool,
}

/// Where run output is kept. A durable implementation drops a run's output when the
/// ledger prunes the run's record, so output is bounded by the history's retention.
#[async_trait]
pub trait OutputStore: Send + Sync + 'static {
    /// Keeps one run's output (replacing any kept for the same job, trigger and
    /// instance).
    ///
    /// # Errors
    /// The backend failed.
    async fn save_output(&self, output: &RunOutput) -> Result<(), LedgerError>;

    /// The output kept for a trigger of a job: one per instance that ran it (several for
    /// a job every replica runs), none if nothing is kept.
    ///
    /// # Errors
    /// The backend failed.
    async fn output(&self, job: &str, trigger: Timestamp) -> Result<Vec<RunOutput>, LedgerError>;
}

/// Run output in memory: the newest outputs, at most [`MemoryOutputs::DEFAULT_CAPACITY`]
/// runs unless [`MemoryOutputs::with_capacity`] says otherwise.
#[derive(Debug)]
pub struct MemoryOutputs {
    capacity: usize,
    outputs: Mutex<VecDeque<RunOutput>>,
}

impl MemoryOutputs {
    /// The number of runs kept by default: 1,000 (up to 64 MiB).
    pub const DEFAULT_CAPACITY: usize = 1000;

    /// Keeps the output of the newest `capacity` runs.
    pub fn with_capacity(capacity: usize) -> Self {
        Self { capacity, outputs: Mutex::new(VecDeque::new()) }
    }
}

impl Default for MemoryOutputs {
    fn default() -> Self {
        Self::with_capacity(Self::DEFAULT_CAPACITY)
    }
}

#[async_trait]
impl OutputStore for MemoryOutputs {
    async fn save_output(&self, output: &RunOutput) -> Result<(), LedgerError> {
        let mut outputs = self.outputs.lock().unwrap_or_else(|p| p.into_inner());
        outputs
            .retain(|o| (&o.job, o.trigger, &o.instance) != (&output.job, output.trigger, &output.instance));
        outputs.push_back(output.clone());
        while outputs.len() > self.capacity {
            outputs.pop_front();
        }
        Ok(())
    }

    async fn output(&self, job: &str, trigger: Timestamp) -> Result<Vec<RunOutput>, LedgerError> {
        let outputs = self.outputs.lock().unwrap_or_else(|p| p.into_inner());
        Ok(outputs.iter().filter(|o| &*o.job == job && o.trigger == trigger).cloned().collect())
    }
}
