//! A command's output in the log: one line per output line, marked `stdout: ` or
//! `stderr: `, with the job's name, its control characters escaped and long lines split
//! into numbered parts.

use std::borrow::Cow;
use std::fmt::Write;
use std::time::Duration;

use super::mail::Collected;
use slotcron::{CancellationToken, OutputStream};

use super::capture::Tail;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};

/// Longer output lines are logged in parts of at most this many bytes.
const MAX_PART: usize = 16 * 1024;

/// How long a stream is still read after the command's shell exited: the output already
/// in the pipe is read in far less, and a background process the command started keeps
/// the pipe open for as long as it runs.
const DRAIN: Duration = Duration::from_millis(250);

/// Logs each line of the output stream `name` of the job `job`, until the stream ends
/// or, once `exited` fires (the command's shell exited), for at most [`DRAIN`] more; a
/// line cut short there is logged as it is. Each line (or part) is also appended, as
/// written, to `tail`, and added to `mail`, if given. Returns the last non-blank line,
/// escaped.
pub async fn log_lines(
    stream: Option<impl AsyncRead + Unpin>,
    job: &str,
    name: OutputStream,
    exited: &CancellationToken,
    tail: Option<&Tail>,
    mail: Option<&Collected>,
) -> Option<String> {
    let mut reader = BufReader::new(stream?);
    let mut log = StreamLog { job, stream: name, part: 0, last: None, tail, mail };
    let mut buf = Vec::new();
    let drained = async {
        exited.cancelled().await;
        tokio::time::sleep(DRAIN).await;
    };
    tokio::select! {
        read = read_lines(&mut reader, &mut buf, &mut log) => {
            if let Err(e) = read {
                tracing::warn!(job, stream = name.as_str(), "cannot read the command's output: {e}");
            }
        }
        () = drained => {}
    }
    if !buf.is_empty() {
        log.piece(&buf, true);
    }
    log.last
}

/// Reads `reader` to its end, logging each line, in parts of at most [`MAX_PART`] bytes.
/// `buf` holds what is read of the line being read (the caller logs it if this is
/// cancelled).
async fn read_lines(
    reader: &mut (impl AsyncBufRead + Unpin),
    buf: &mut Vec<u8>,
    log: &mut StreamLog<'_>,
) -> std::io::Result<()> {
    loop {
        // `buf` may start with the end of a character cut by the previous part.
        let room = (MAX_PART - buf.len()) as u64;
        if (&mut *reader).take(room).read_until(b'\n', buf).await? == 0 {
            return Ok(());
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
        } else if buf.len() < MAX_PART {
            // The end of the stream, without a final newline.
            continue;
        } else {
            // A full part: the line goes on unless a newline or the end follows.
            match reader.fill_buf().await?.first() {
                None => {}
                Some(b'\n') => reader.consume(1),
                Some(_) => {
                    let cut = complete_utf8_len(buf);
                    log.piece(&buf[..cut], false);
                    buf.drain(..cut);
                    continue;
                }
            }
        }
        log.piece(buf, true);
        buf.clear();
    }
}

/// Where one output stream's lines go.
struct StreamLog<'a> {
    job: &'a str,
    stream: OutputStream,
    /// The number of the last part logged of the line being read; 0 if none was.
    part: u32,
    /// The last non-blank line (or part) logged.
    last: Option<String>,
    /// The attempt's output as it is kept, if it is.
    tail: Option<&'a Tail>,
    /// Where the lines are collected for a mail, if anywhere.
    mail: Option<&'a Collected>,
}

impl StreamLog<'_> {
    /// Logs `bytes`, the rest of a line if `ends_line` (less a final `\r`), else a part of
    /// it. The parts of a split line carry `part=1`, `part=2`..., the last one included.
    fn piece(&mut self, bytes: &[u8], ends_line: bool) {
        let bytes = if ends_line { bytes.strip_suffix(b"\r").unwrap_or(bytes) } else { bytes };
        if let Some(tail) = self.tail {
            tail.push(self.stream, bytes, ends_line);
        }
        let text = String::from_utf8_lossy(bytes);
        let text = escape(&text);
        let (job, stream) = (self.job, self.stream.as_str());
        // The stream starts the message too, so that the two read apart at a glance.
        if ends_line && self.part == 0 {
            tracing::info!(job, stream, "{stream}: {text}");
        } else {
            self.part += 1;
            tracing::info!(job, stream, part = self.part, "{stream}: {text}");
        }
        if ends_line {
            self.part = 0;
        }
        if let Some(mail) = self.mail {
            mail.line(&text);
        }
        if !text.trim().is_empty() {
            self.last = Some(text.into_owned());
        }
    }
}

/// `text` with its control characters other than tab escaped, C0 and DEL as `\x1b`, C1 as
/// `\u{9b}`: a command's output can neither start what looks like another log line (`\r`,
/// vertical tab...) nor send escape sequences to the terminal showing the log.
fn escape(text: &str) -> Cow<'_, str> {
    let escaped = |c: char| c.is_control() && c != '\t';
    if !text.contains(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        let code = u32::from(c);
        // Writing to a String cannot fail.
        let _ = match c {
            c if !escaped(c) => out.write_char(c),
            _ if code < 0x80 => write!(out, "\\x{code:02x}"),
            _ => write!(out, "\\u{{{code:x}}}"),
        };
    }
    Cow::Owned(out)
}

/// How much of the full part `part` to log: all of it, unless it ends inside a UTF-8
/// character, whose bytes then start the next part.
fn complete_utf8_len(part: &[u8]) -> usize {
    let tail = part.utf8_chunks().last().map_or(0, |chunk| chunk.invalid().len());
    let start = part.len() - tail;
    match std::str::from_utf8(&part[start..]) {
        // Not invalid, only cut short.
        Err(e) if e.error_len().is_none() => start,
        _ => part.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_other_than_tab_are_escaped() {
        assert_eq!(escape("plain\ttext, é ✓"), "plain\ttext, é ✓");
        assert_eq!(
            escape("\x1b[31mred\r2026-01-01T00:00:00Z  INFO forged\x0b\x00\x7f"),
            "\\x1b[31mred\\x0d2026-01-01T00:00:00Z  INFO forged\\x0b\\x00\\x7f"
        );
        assert_eq!(escape("c1 \u{9b}2J"), "c1 \\u{9b}2J");
    }

    #[test]
    fn a_part_does_not_end_inside_a_character() {
        assert_eq!(complete_utf8_len(b"abc"), 3);
        assert_eq!(complete_utf8_len("aé".as_bytes()), 3);
        assert_eq!(complete_utf8_len(&"aé".as_bytes()[..2]), 1);
        assert_eq!(complete_utf8_len(&"a✓".as_bytes()[..3]), 1);
        // Invalid bytes are logged as they are (replaced), not carried over.
        assert_eq!(complete_utf8_len(b"a\xff"), 2);
    }
}
