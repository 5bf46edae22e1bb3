//! Splitting a big TOML jobs file into pieces that parse alone: each ends just before a
//! `[[job]]` header line, so that every job, with its sub-tables (`[job.env]`), lies in
//! one piece.

use std::ops::Range;

/// Files smaller than this are parsed whole; pieces are at least this long.
const PIECE: usize = 64 * 1024;

/// The pieces of `source`, in order, covering it; `None` when it should be parsed whole:
/// small, or holding a multi-line string (`"""`, `'''`), in which a line looking like a
/// header may be text. The first piece holds the top-level keys; a later one holding
/// anything but `[[job]]` tables is found out when parsed (see `Reader::piece`).
pub(super) fn split(source: &str) -> Option<Vec<Range<usize>>> {
    let holds = |quotes: &str| memchr::memmem::find(source.as_bytes(), quotes.as_bytes()).is_some();
    if source.len() < 2 * PIECE || holds("\"\"\"") || holds("'''") {
        return None;
    }
    let mut pieces = Vec::new();
    let (mut start, mut offset) = (0, 0);
    for line in source.split_inclusive('\n') {
        if offset - start >= PIECE && is_job_header(line) {
            pieces.push(start..offset);
            start = offset;
        }
        offset += line.len();
    }
    pieces.push(start..source.len());
    Some(pieces)
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
