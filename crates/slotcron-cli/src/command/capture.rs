//! A run's output kept in the state: the last [`MAX_OUTPUT_BYTES`] of what the command
//! wrote to standard output and error, interleaved line by line as they arrived.

use std::sync::{Arc, Mutex, OnceLock, Weak};

use slotcron::JobContext;
use slotcron::{MAX_OUTPUT_BYTES, OutputStore, RunOutput};

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

/// The end of a run's output, as it is written.
#[derive(Debug, Default)]
pub struct Tail {
    inner: Mutex<TailBytes>,
}

#[derive(Debug, Default)]
struct TailBytes {
    bytes: Vec<u8>,
    truncated: bool,
}

impl Tail {
    /// Appends `bytes` (and a newline if `ends_line`), dropping the oldest bytes beyond
    /// [`MAX_OUTPUT_BYTES`] (in steps, so appending stays cheap).
    pub fn push(&self, bytes: &[u8], ends_line: bool) {
        let mut tail = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        tail.bytes.extend_from_slice(bytes);
        if ends_line {
            tail.bytes.push(b'\n');
        }
        if tail.bytes.len() > 2 * MAX_OUTPUT_BYTES {
            tail.cut();
        }
    }

    /// Saves what was kept as the output of the run `ctx`, if the daemon keeps output
    /// and the command wrote any; a failure is logged.
    pub async fn save(self, ctx: &JobContext) {
        let Some(outputs) = OUTPUTS.get().and_then(Weak::upgrade) else { return };
        let mut tail = self.inner.into_inner().unwrap_or_else(|p| p.into_inner());
        if tail.bytes.is_empty() {
            return;
        }
        tail.cut();
        let output = RunOutput {
            job: ctx.job().into(),
            trigger: ctx.trigger(),
            instance: ctx.instance().into(),
            output: tail.bytes,
            truncated: tail.truncated,
        };
        if let Err(e) = outputs.save_output(&output).await {
            tracing::warn!(job = ctx.job(), trigger = %ctx.trigger(), "cannot keep the run's output: {e}");
        }
    }
}

impl TailBytes {
    /// Keeps the last [`MAX_OUTPUT_BYTES`].
    fn cut(&mut self) {
        if let Some(excess) = self.bytes.len().checked_sub(MAX_OUTPUT_BYTES).filter(|n| *n > 0) {
            self.bytes.drain(..excess);
            self.truncated = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_64_kib() {
        let tail = Tail::default();
        tail.push(b"first", true);
        let line = vec![b'x'; 1000];
        for _ in 0..200 {
            tail.push(&line, true);
        }
        tail.push(b"last", true);
        let mut kept = tail.inner.into_inner().unwrap();
        kept.cut();
        assert_eq!(kept.bytes.len(), MAX_OUTPUT_BYTES);
        assert!(kept.truncated);
        assert!(kept.bytes.ends_with(b"x\nlast\n"));
    }

    #[test]
    fn short_output_is_kept_whole() {
        let tail = Tail::default();
        tail.push(b"a", false);
        tail.push(b"b", true);
        let mut kept = tail.inner.into_inner().unwrap();
        kept.cut();
        assert_eq!((kept.bytes.as_slice(), kept.truncated), (&b"ab\n"[..], false));
    }
}
