//! What is wrong with a jobs file: every problem, with its line, job and field.

use std::fmt;
use std::path::{Path, PathBuf};

/// One problem in a jobs file or crontab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The crontab it is in, within a directory of crontabs; `None`: the file
    /// [`Problems::file`] names.
    pub file: Option<PathBuf>,
    /// The line (from 1) the problem is on; `None` for the file as a whole.
    pub line: Option<usize>,
    /// The job, when there is one.
    pub job: Option<JobRef>,
    /// The field at fault (`cron`, `timezone`, `schedule`...), when there is one.
    pub field: Option<String>,
    /// Why it is rejected.
    pub reason: String,
}

impl Problem {
    /// A problem with a field of a job.
    pub fn field(line: usize, job: Option<&str>, field: &str, reason: impl Into<String>) -> Self {
        Self {
            file: None,
            line: Some(line),
            job: job.map(|name| JobRef::Name(name.to_owned())),
            field: Some(field.to_owned()),
            reason: reason.into(),
        }
    }

    /// A problem with a line that is not a job's field (a syntax error).
    pub fn line(line: usize, reason: impl Into<String>) -> Self {
        Self { file: None, line: Some(line), job: None, field: None, reason: reason.into() }
    }

    /// A problem with the file as a whole (it cannot be read).
    pub fn whole(reason: impl Into<String>) -> Self {
        Self { file: None, line: None, job: None, field: None, reason: reason.into() }
    }

    /// This problem, of the job at `number` among the `[[job]]` tables of its file, if
    /// its name is not known ([`JobRef::Number`]).
    pub fn of_job_number(self, number: Option<usize>) -> Self {
        match (self.job, number) {
            (None, Some(number)) => Self { job: Some(JobRef::Number(number)), ..self },
            (job, _) => Self { job, ..self },
        }
    }

    /// This problem, in the crontab `file` of a directory.
    pub fn in_file(self, file: &Path) -> Self {
        Self { file: Some(file.to_owned()), ..self }
    }
}

/// How a problem names its job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobRef {
    /// By its name: `job "backup"`.
    Name(String),
    /// By its place among the `[[job]]` tables of its file (from 1), when its name is not
    /// known (missing, or not a string): `job #3`.
    Number(usize),
}

impl fmt::Display for JobRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(name) => write!(f, "job {name:?}"),
            Self::Number(number) => write!(f, "job #{number}"),
        }
    }
}

/// The problem without its file and line: `job "NAME": FIELD: REASON`.
impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(job) = &self.job {
            write!(f, "{job}: ")?;
        }
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        f.write_str(&self.reason)
    }
}

/// Every problem found in one file, or in the crontabs of one directory; its `Display`
/// writes one problem per line as `FILE:LINE: job "NAME": FIELD: REASON`.
#[derive(Debug, Clone)]
pub struct Problems {
    /// The file (or directory) they are in.
    pub file: PathBuf,
    /// The problems, in the order of the file.
    pub list: Vec<Problem>,
}

impl Problems {
    /// The problems of `file`, sorted by file (within a directory), then line.
    pub fn new(file: &Path, mut list: Vec<Problem>) -> Self {
        list.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
        Self { file: file.to_owned(), list }
    }
}

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for problem in &self.list {
            write!(f, "{}", problem.file.as_deref().unwrap_or(&self.file).display())?;
            if let Some(line) = problem.line {
                write!(f, ":{line}")?;
            }
            writeln!(f, ": {problem}")?;
        }
        let n = self.list.len();
        write!(f, "{n} problem{} in {}", if n == 1 { "" } else { "s" }, self.file.display())
    }
}

/// Where each line of a source starts, to turn byte offsets into line numbers in
/// O(log lines): built once per file, as problems and jobs name lines throughout.
#[derive(Debug)]
pub struct LineIndex {
    /// The byte offset of each `\n` in the source, in order.
    newlines: Vec<usize>,
}

impl LineIndex {
    /// Indexes the lines of `source`.
    pub fn new(source: &str) -> Self {
        Self { newlines: memchr::memchr_iter(b'\n', source.as_bytes()).collect() }
    }

    /// The line (from 1) of byte `offset`; an offset past the end is on the last line.
    pub fn line_of(&self, offset: usize) -> usize {
        self.newlines.partition_point(|&newline| newline < offset) + 1
    }
}

#[cfg(test)]
mod tests {
    use super::LineIndex;

    #[test]
    fn counts_the_newlines_before_the_offset() {
        let source = "a\nbc\n\nd";
        let index = LineIndex::new(source);
        let lines: Vec<usize> = (0..=source.len() + 2).map(|offset| index.line_of(offset)).collect();
        // a \n b c \n \n d (end) (past the end)
        assert_eq!(lines, [1, 1, 2, 2, 2, 3, 4, 4, 4, 4]);
        assert_eq!(LineIndex::new("").line_of(0), 1);
    }
}
