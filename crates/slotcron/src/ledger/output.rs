//! Run output: what each attempt of a run wrote (a shell command's standard output and
//! error, told apart and in the order read), how the attempt ended, kept beside the
//! run's record so it can be read after the log has scrolled away.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;

use super::LedgerError;

/// The most output kept per attempt of a run, in bytes: the last 64 KiB (both streams
/// together).
pub const MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// The stream an [`OutputChunk`] was written to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl OutputStream {
    /// `"stdout"` or `"stderr"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdout => "stdout",
            Self::Stderr => "stderr",
        }
    }
}

/// Bytes written to one stream, with no write to the other between them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputChunk {
    /// The stream they were written to.
    pub stream: OutputStream,
    /// The bytes, as written (bytes that are not UTF-8 are kept; readers replace them).
    pub bytes: Vec<u8>,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptEnd {
    /// Not known: the output was kept by a release that kept only the last attempt's
    /// output, without its end.
    Unknown,
    /// The command exited with this status (0: success).
    Exited(i32),
    /// The command was killed by this signal (its name, e.g. `"SIGTERM"`).
    Signalled(String),
    /// The attempt failed without an exit status (the command could not be started, or
    /// a library handler's error): the error's text.
    Failed(String),
}

impl std::fmt::Display for AttemptEnd {
    /// `exit 3`, `killed by SIGTERM`, `failed: <error>` or `unknown`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unknown => f.write_str("unknown"),
            Self::Exited(code) => write!(f, "exit {code}"),
            Self::Signalled(signal) => write!(f, "killed by {signal}"),
            Self::Failed(error) => write!(f, "failed: {error}"),
        }
    }
}

impl AttemptEnd {
    /// This end as the three nullable columns a durable store keeps (at most one set):
    /// the exit status, the signal's name, the error.
    pub fn columns(&self) -> (Option<i32>, Option<&str>, Option<&str>) {
        match self {
            Self::Unknown => (None, None, None),
            Self::Exited(code) => (Some(*code), None, None),
            Self::Signalled(signal) => (None, Some(signal), None),
            Self::Failed(error) => (None, None, Some(error)),
        }
    }

    /// The end [`AttemptEnd::columns`] wrote (the first column set; none: unknown).
    pub fn from_columns(exit: Option<i32>, signal: Option<String>, error: Option<String>) -> Self {
        match (exit, signal, error) {
            (Some(code), _, _) => Self::Exited(code),
            (None, Some(signal), _) => Self::Signalled(signal),
            (None, None, Some(error)) => Self::Failed(error),
            (None, None, None) => Self::Unknown,
        }
    }
}

/// What one attempt of a run wrote and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptOutput {
    /// The attempt's number: 1 for the first, 2 for the first retry... (a rerun of an
    /// interrupted run goes on from its attempts); 0 when not known (output kept by an
    /// older release: its run's last attempt).
    pub attempt: u32,
    /// When the attempt started (UTC); none when not known.
    pub started: Option<Timestamp>,
    /// How long it took; none when not known.
    pub duration: Option<Duration>,
    /// How it ended.
    pub end: AttemptEnd,
    /// The last [`MAX_OUTPUT_BYTES`] it wrote, in the order read.
    pub chunks: Vec<OutputChunk>,
    /// Whether earlier output was dropped to keep within [`MAX_OUTPUT_BYTES`].
    pub truncated: bool,
}

impl AttemptOutput {
    /// Attempt number `attempt`, started at `started`, that wrote nothing yet and whose
    /// end is not known yet.
    pub fn new(attempt: u32, started: Option<Timestamp>) -> Self {
        Self {
            attempt,
            started,
            duration: None,
            end: AttemptEnd::Unknown,
            chunks: Vec::new(),
            truncated: false,
        }
    }

    /// Output an older release kept (its run's last attempt, both streams as one): an
    /// attempt of unknown number, start and end, written to standard output.
    pub fn of_older_release(output: Vec<u8>, truncated: bool) -> Self {
        let chunks = if output.is_empty() {
            Vec::new()
        } else {
            vec![OutputChunk { stream: OutputStream::Stdout, bytes: output }]
        };
        Self { attempt: 0, started: None, duration: None, end: AttemptEnd::Unknown, chunks, truncated }
    }

    /// Appends `bytes` written to `stream` (to the last chunk if it is that stream's),
    /// keeping no more than it was (call [`AttemptOutput::bound`] to cut it down).
    pub fn push(&mut self, stream: OutputStream, bytes: &[u8]) {
        match self.chunks.last_mut() {
            Some(last) if last.stream == stream => last.bytes.extend_from_slice(bytes),
            _ => self.chunks.push(OutputChunk { stream, bytes: bytes.to_vec() }),
        }
    }

    /// The number of bytes kept, both streams together.
    pub fn len(&self) -> usize {
        self.chunks.iter().map(|c| c.bytes.len()).sum()
    }

    /// Whether no output is kept.
    pub fn is_empty(&self) -> bool {
        self.chunks.iter().all(|c| c.bytes.is_empty())
    }

    /// Keeps the last [`MAX_OUTPUT_BYTES`], marking the attempt truncated if it drops any.
    pub fn bound(&mut self) {
        let Some(mut excess) = self.len().checked_sub(MAX_OUTPUT_BYTES).filter(|n| *n > 0) else { return };
        self.truncated = true;
        let whole = self.chunks.iter().take_while(|c| {
            let dropped = c.bytes.len() <= excess;
            if dropped {
                excess -= c.bytes.len();
            }
            dropped
        });
        let whole = whole.count();
        self.chunks.drain(..whole);
        if let Some(first) = self.chunks.first_mut() {
            first.bytes.drain(..excess);
        }
    }

    /// All it wrote, both streams in the order read.
    pub fn bytes(&self) -> Vec<u8> {
        self.chunks.iter().flat_map(|c| c.bytes.iter().copied()).collect()
    }
}

/// What one run wrote, as one replica kept it: each attempt that wrote output or did not
/// succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutput {
    /// The job's name.
    pub job: Arc<str>,
    /// The run's trigger (UTC).
    pub trigger: Timestamp,
    /// The instance that ran it.
    pub instance: Arc<str>,
    /// Its attempts, by number.
    pub attempts: Vec<AttemptOutput>,
}

impl RunOutput {
    /// The outputs of `job` at `trigger` from a durable store's rows: `attempts`, each
    /// attempt with the instance that ran it, and `older`, the output an older release
    /// kept per instance (see [`AttemptOutput::of_older_release`]), read only for an
    /// instance with no attempt kept. By instance, each with its attempts by number.
    pub fn from_rows(
        job: &str,
        trigger: Timestamp,
        attempts: impl IntoIterator<Item = (String, AttemptOutput)>,
        older: impl IntoIterator<Item = (String, AttemptOutput)>,
    ) -> Vec<Self> {
        let mut by_instance: std::collections::BTreeMap<String, Vec<AttemptOutput>> = Default::default();
        for (instance, attempt) in attempts {
            by_instance.entry(instance).or_default().push(attempt);
        }
        for (instance, attempt) in older {
            by_instance.entry(instance).or_insert_with(|| vec![attempt]);
        }
        let job: Arc<str> = job.into();
        by_instance
            .into_iter()
            .map(|(instance, mut attempts)| {
                attempts.sort_by_key(|a| a.attempt);
                Self { job: job.clone(), trigger, instance: instance.into(), attempts }
            })
            .collect()
    }
}

/// The chunks of an attempt as one byte string, as the durable stores keep them: each
/// chunk is its stream's descriptor number as one byte (1 standard output, 2 standard
/// error), its length as 4 bytes (big-endian), then its bytes.
pub fn encode_chunks(chunks: &[OutputChunk]) -> Vec<u8> {
    let mut encoded = Vec::with_capacity(chunks.iter().map(|c| 5 + c.bytes.len()).sum());
    for chunk in chunks {
        encoded.push(match chunk.stream {
            OutputStream::Stdout => 1,
            OutputStream::Stderr => 2,
        });
        // A chunk is at most MAX_OUTPUT_BYTES long as kept; longer ones are cut at 4 GiB.
        let len = u32::try_from(chunk.bytes.len()).unwrap_or(u32::MAX);
        encoded.extend_from_slice(&len.to_be_bytes());
        encoded.extend_from_slice(&chunk.bytes[..len as usize]);
    }
    encoded
}

/// The chunks [`encode_chunks`] wrote.
///
/// # Errors
/// [`LedgerError::invalid_data`] naming the offset, when `encoded` is not such a string.
pub fn decode_chunks(mut encoded: &[u8]) -> Result<Vec<OutputChunk>, LedgerError> {
    let total = encoded.len();
    let mut chunks = Vec::new();
    while let Some((&tag, rest)) = encoded.split_first() {
        let at = total - encoded.len();
        let stream = match tag {
            1 => OutputStream::Stdout,
            2 => OutputStream::Stderr,
            _ => {
                return Err(LedgerError::invalid_data(format!(
                    "run output: unknown stream {tag} at byte {at}"
                )));
            }
        };
        let cut = || LedgerError::invalid_data(format!("run output: the chunk at byte {at} is cut short"));
        let (len, rest) = rest.split_first_chunk::<4>().ok_or_else(cut)?;
        let len = u32::from_be_bytes(*len) as usize;
        let (bytes, rest) = rest.split_at_checked(len).ok_or_else(cut)?;
        chunks.push(OutputChunk { stream, bytes: bytes.to_vec() });
        encoded = rest;
    }
    Ok(chunks)
}

/// Where run output is kept. A durable implementation drops a run's output when the
/// ledger prunes the run's record, so output is bounded by the history's retention.
#[async_trait]
pub trait OutputStore: Send + Sync + 'static {
    /// Keeps the attempts of `output` (each replacing any kept for the same job,
    /// trigger, instance and attempt number; the others kept stay).
    ///
    /// # Errors
    /// The backend failed.
    async fn save_output(&self, output: &RunOutput) -> Result<(), LedgerError>;

    /// The output kept for a trigger of a job: one per instance that ran it (several for
    /// a job every replica runs), by instance, each with its attempts by number; none if
    /// nothing is kept.
    ///
    /// # Errors
    /// The backend failed.
    async fn output(&self, job: &str, trigger: Timestamp) -> Result<Vec<RunOutput>, LedgerError>;
}

/// Run output in memory: the newest runs' outputs, at most
/// [`MemoryOutputs::DEFAULT_CAPACITY`] runs unless [`MemoryOutputs::with_capacity`] says
/// otherwise.
#[derive(Debug)]
pub struct MemoryOutputs {
    capacity: usize,
    outputs: Mutex<VecDeque<RunOutput>>,
}

impl MemoryOutputs {
    /// The number of runs kept by default: 1,000 (each attempt up to
    /// [`MAX_OUTPUT_BYTES`]).
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
        let key = (&output.job, output.trigger, &output.instance);
        let mut run = match outputs.iter().position(|o| (&o.job, o.trigger, &o.instance) == key) {
            Some(at) => outputs.remove(at).unwrap_or_else(|| output.clone()),
            None => RunOutput { attempts: Vec::new(), ..output.clone() },
        };
        for attempt in &output.attempts {
            run.attempts.retain(|a| a.attempt != attempt.attempt);
            run.attempts.push(attempt.clone());
        }
        run.attempts.sort_by_key(|a| a.attempt);
        outputs.push_back(run);
        while outputs.len() > self.capacity {
            outputs.pop_front();
        }
        Ok(())
    }

    async fn output(&self, job: &str, trigger: Timestamp) -> Result<Vec<RunOutput>, LedgerError> {
        let outputs = self.outputs.lock().unwrap_or_else(|p| p.into_inner());
        let mut found: Vec<RunOutput> =
            outputs.iter().filter(|o| &*o.job == job && o.trigger == trigger).cloned().collect();
        found.sort_by(|a, b| a.instance.cmp(&b.instance));
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(stream: OutputStream, bytes: &[u8]) -> OutputChunk {
        OutputChunk { stream, bytes: bytes.to_vec() }
    }

    #[test]
    fn chunks_round_trip_and_a_damaged_string_is_an_error_naming_the_offset() {
        let chunks = vec![
            chunk(OutputStream::Stdout, b"out\n"),
            chunk(OutputStream::Stderr, b"err \xff\n"),
            chunk(OutputStream::Stdout, b""),
        ];
        let encoded = encode_chunks(&chunks);
        assert_eq!(decode_chunks(&encoded).unwrap(), chunks);
        assert_eq!(decode_chunks(&[]).unwrap(), []);
        let cut = decode_chunks(&encoded[..encoded.len() - 6]).unwrap_err();
        assert_eq!(cut.to_string(), "ledger: run output: the chunk at byte 9 is cut short");
        let unknown = decode_chunks(&[7, 0, 0, 0, 0]).unwrap_err();
        assert_eq!(unknown.to_string(), "ledger: run output: unknown stream 7 at byte 0");
    }

    #[test]
    fn an_attempt_keeps_its_last_64_kib_across_streams_in_order() {
        let mut attempt = AttemptOutput::new(1, None);
        attempt.push(OutputStream::Stdout, b"first\n");
        attempt.push(OutputStream::Stderr, &vec![b'e'; MAX_OUTPUT_BYTES]);
        attempt.push(OutputStream::Stdout, b"last");
        attempt.push(OutputStream::Stdout, b"\n");
        attempt.bound();
        assert!(attempt.truncated);
        assert_eq!(attempt.len(), MAX_OUTPUT_BYTES);
        let streams: Vec<_> = attempt.chunks.iter().map(|c| (c.stream, c.bytes.len())).collect();
        assert_eq!(streams, [(OutputStream::Stderr, MAX_OUTPUT_BYTES - 5), (OutputStream::Stdout, 5)]);
    }

    #[test]
    fn short_output_is_kept_whole() {
        let mut attempt = AttemptOutput::of_older_release(b"a".to_vec(), false);
        attempt.push(OutputStream::Stdout, b"b\n");
        attempt.bound();
        assert_eq!((attempt.bytes(), attempt.truncated), (b"ab\n".to_vec(), false));
    }
}
