//! A run's output kept in the state: for each attempt, the last [`MAX_OUTPUT_BYTES`] of
//! what the command wrote to standard output and error, the two told apart and in the
//! order their lines arrived, and how it ended.

use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use slotcron::jiff::Timestamp;
use slotcron::{
    AttemptEnd, AttemptOutput, JobContext, MAX_OUTPUT_BYTES, OutputStore, OutputStream, RunOutput,
};

/// Where the daemon keeps run output, while [`KeepingOutput`] lives; unset (`slotcron
/// check`, tests of the parser): output is only logged. Weak, so that the state closes
/// (and SQLite checkpoints its WAL) when the daemon lets go of it.
static OUTPUTS: OnceLock<Weak<dyn OutputStore>> = OnceLock::new();

/// Run output goes to the store it was given while this lives.
#[must_use]
pub struct KeepingOutput {
    _outputs: Arc<dyn OutputStore>,
}

/// Keeps the output of every later run in `outputs` (the daemon's state) until the
/// returned guard is dropped. Only the first call counts: one daemon has one state.
pub fn keep_output_in(outputs: Arc<dyn OutputStore>) -> KeepingOutput {
    let _ = OUTPUTS.set(Arc::downgrade(&outputs));
    KeepingOutput { _outputs: outputs }
}

/// What an attempt of a run writes, as it is written: both streams, in order.
#[derive(Debug)]
pub struct Tail {
    inner: Mutex<TailBytes>,
}

#[derive(Debug)]
struct TailBytes {
    kept: AttemptOutput,
    /// The bytes in `kept`.
    len: usize,
}

impl Tail {
    /// The output of attempt number `attempt`, starting now.
    pub fn new(attempt: u32) -> Self {
        let kept = AttemptOutput::new(attempt, Some(Timestamp::now()));
        Self { inner: Mutex::new(TailBytes { kept, len: 0 }) }
    }

    /// Appends `bytes` written to `stream` (and a newline if `ends_line`), dropping the
    /// oldest bytes beyond [`MAX_OUTPUT_BYTES`] (in steps, so appending stays cheap).
    pub fn push(&self, stream: OutputStream, bytes: &[u8], ends_line: bool) {
        let mut tail = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        tail.kept.push(stream, bytes);
        if ends_line {
            tail.kept.push(stream, b"\n");
        }
        tail.len += bytes.len() + usize::from(ends_line);
        if tail.len > 2 * MAX_OUTPUT_BYTES {
            tail.kept.bound();
            tail.len = MAX_OUTPUT_BYTES;
        }
    }

    /// Saves what was kept as the output of the attempt of the run `ctx`, with how it
    /// `ended` and how long it took, if the daemon keeps output and the attempt wrote
    /// any or failed; a failure to save is logged.
    pub async fn save(self, ctx: &JobContext, ended: AttemptEnd, took: Duration) {
        let Some(outputs) = OUTPUTS.get().and_then(Weak::upgrade) else { return };
        let mut kept = self.inner.into_inner().unwrap_or_else(|p| p.into_inner()).kept;
        if kept.is_empty() && ended == AttemptEnd::Exited(0) {
            return;
        }
        kept.bound();
        kept.end = ended;
        kept.duration = Some(took);
        let output = RunOutput {
            job: ctx.job().into(),
            trigger: ctx.trigger(),
            instance: ctx.instance().into(),
            attempts: vec![kept],
        };
        if let Err(e) = outputs.save_output(&output).await {
            tracing::warn!(job = ctx.job(), trigger = %ctx.trigger(), "cannot keep the run's output: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_64_kib_of_both_streams_in_order() {
        let tail = Tail::new(1);
        tail.push(OutputStream::Stdout, b"first", true);
        let line = vec![b'x'; 1000];
        for _ in 0..200 {
            tail.push(OutputStream::Stderr, &line, true);
        }
        tail.push(OutputStream::Stdout, b"last", true);
        let mut kept = tail.inner.into_inner().unwrap().kept;
        kept.bound();
        assert_eq!((kept.len(), kept.truncated), (MAX_OUTPUT_BYTES, true));
        let streams: Vec<_> = kept.chunks.iter().map(|c| c.stream).collect();
        assert_eq!(streams, [OutputStream::Stderr, OutputStream::Stdout]);
        assert!(kept.chunks[0].bytes.ends_with(b"x\n") && kept.chunks[1].bytes == b"last\n");
    }
}
