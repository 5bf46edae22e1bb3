//! Splitting a big TOML jobs file into pieces that parse alone: each ends just before a
//! `[[job]]` header line, so that every job, with its sub-tables (`[job.env]`), lies in
//! one piece.
//!
//! Where a piece ends is chosen by the text at the header (a hash of it) once the piece
//! is [`MIN_PIECE`] long, as content-defined chunking does (rsync, restic), not by the
//! offset alone: a job that grows or shrinks moves the ends of its own piece at most, and
//! the pieces after it end where they did, so that a reload takes their jobs again
//! ([`super::reuse`]).

use std::ops::Range;

use xxhash_rust::xxh3::xxh3_64;

/// Files smaller than twice this are parsed whole; a piece is this long on average.
const PIECE: usize = 64 * 1024;

/// The shortest a piece is before its end is looked for.
const MIN_PIECE: usize = PIECE / 2;

/// The longest a piece grows before it ends at the next header whatever the text there.
const MAX_PIECE: usize = 2 * PIECE;

/// How much of the text at a header its hash covers (the header and the job's first
/// lines, which tell jobs apart).
const HASHED: usize = 64;

/// The pieces of `source`, in order, covering it; `None` when it should be parsed whole:
/// small, or holding a multi-line string (`"""`, `'''`), in which a line looking like a
/// header may be text. The first piece holds the top-level keys; a later one holding
/// anything but `[[job]]` tables is found out when parsed (see `Reader::piece`).
///
/// A piece at least [`MIN_PIECE`] long ends before a header whose hash, modulo
/// `PIECE - MIN_PIECE`, is below the length of the job before it: each byte of jobs past
/// the minimum ends the piece with the same chance, so pieces are [`PIECE`] long on
/// average whatever the jobs' length.
pub(super) fn split(source: &str) -> Option<Vec<Range<usize>>> {
    let holds = |quotes: &str| memchr::memmem::find(source.as_bytes(), quotes.as_bytes()).is_some();
    if source.len() < 2 * PIECE || holds("\"\"\"") || holds("'''") {
        return None;
    }
    let mut pieces = Vec::new();
    let (mut start, mut offset, mut header) = (0, 0, 0);
    for line in source.split_inclusive('\n') {
        if is_job_header(line) {
            let long = offset - start;
            if long >= MAX_PIECE || (long >= MIN_PIECE && ends_before(source, offset, offset - header)) {
                pieces.push(start..offset);
                start = offset;
            }
            header = offset;
        }
        offset += line.len();
    }
    pieces.push(start..source.len());
    Some(pieces)
}

/// Whether a piece ends before the header at `at`, the job before it `job` bytes long.
fn ends_before(source: &str, at: usize, job: usize) -> bool {
    let text = &source.as_bytes()[at..source.len().min(at + HASHED)];
    let chance = u64::try_from(PIECE - MIN_PIECE).unwrap_or(u64::MAX);
    xxh3_64(text) % chance < u64::try_from(job).unwrap_or(u64::MAX)
}

/// Whether `line` is a `[[job]]` header (spaces allowed inside the brackets, a comment
/// after them).
fn is_job_header(line: &str) -> bool {
    let Some(rest) = line.trim_start().strip_prefix("[[") else { return false };
    let Some((name, after)) = rest.split_once("]]") else { return false };
    let after = after.trim();
    name.trim() == "job" && (after.is_empty() || after.starts_with('#'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_end_before_job_headers_and_cover_the_file() {
        let job = "[[job]]\nname = \"x\"\nevery = \"1m\"\ncommand = \"true\"\n[job.env]\nA = \"1\"\n";
        let source = format!("timezone = \"UTC\"\n{}", job.repeat(3 * PIECE / job.len()));
        let pieces = split(&source).expect("big enough");
        assert!(pieces.len() >= 2, "{}", pieces.len());
        assert_eq!(pieces[0].start, 0);
        assert_eq!(pieces.last().unwrap().end, source.len());
        for pair in pieces.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
            assert!(source[pair[1].clone()].starts_with("[[job]]\n"));
        }
        assert!(split(&format!("{source}x = '''\n[[job]]\n'''\n")).is_none());
        assert!(split(job).is_none());
    }

    #[test]
    fn job_headers_as_toml_writes_them() {
        assert!(is_job_header("[[job]]\n"));
        assert!(is_job_header("  [[ job ]]  # backups\n"));
        assert!(!is_job_header("[job]\n"));
        assert!(!is_job_header("[[jobs]]\n"));
        assert!(!is_job_header("x = \"[[job]]\"\n"));
    }
}
