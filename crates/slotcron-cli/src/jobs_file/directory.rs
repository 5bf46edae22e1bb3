//! A directory of crontabs (`slotcron run /etc/cron.d/`): every regular file in it is a
//! crontab, read in name order (byte order), except those cron itself skips by name.
//!
//! Each job is named by its file: `FILE/NAME`, NAME being what the job would be named in
//! the file alone (its `# name:` comment, or the name derived from its line, see
//! [`super::job_name`]), so names are unique across the directory and stay the same when
//! other files change. A problem names its file and line.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::{Format, JobRef, JobsFile, Parsed, Pieces, Problem, Problems, parse_format, read, validate};

/// The files of a directory of crontabs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Directory {
    /// The crontabs read, in name order.
    pub files: Vec<PathBuf>,
    /// The entries left out, each with why.
    pub skipped: Vec<(PathBuf, &'static str)>,
}

/// Why cron leaves the directory entry `name` out, by its name alone; `None` for a
/// crontab. The rules are cronie's `not_a_crontab` (src/database.c): a name starting with
/// `.` or `#`, or ending in `~`, `.rpmsave`, `.rpmorig` or `.rpmnew`; and Debian cron's
/// (cron(8), after run-parts(8)), which reads only names of ASCII letters, digits, `_`
/// and `-`: so any name with a dot (`.dpkg-dist`, `.dpkg-old`, `.rpmnew`, `.bak`...)
/// is left out too.
pub fn skipped_because(name: &OsStr) -> Option<&'static str> {
    let name = name.as_encoded_bytes();
    if name.starts_with(b".") {
        Some("a hidden file (its name starts with a dot)")
    } else if name.starts_with(b"#") {
        Some("an editor's file (its name starts with #)")
    } else if name.ends_with(b"~") {
        Some("a backup file (its name ends in ~)")
    } else if name.contains(&b'.') {
        Some("a name with a dot (a package manager's .dpkg-*, .rpm* or a backup), as cron.d skips")
    } else {
        None
    }
}

/// The crontabs of `dir` and the entries skipped: by name ([`skipped_because`]), or for
/// not being a regular file (a directory, a broken link...; a link to a regular file is
/// read).
fn list(dir: &Path) -> std::io::Result<Directory> {
    let mut names =
        std::fs::read_dir(dir)?.map(|entry| entry.map(|e| e.file_name())).collect::<Result<Vec<_>, _>>()?;
    names.sort();
    let mut directory = Directory::default();
    for name in names {
        let path = dir.join(&name);
        if let Some(why) = skipped_because(&name) {
            directory.skipped.push((path, why));
        } else if std::fs::metadata(&path).is_ok_and(|meta| meta.is_file()) {
            directory.files.push(path);
        } else {
            directory.skipped.push((path, "not a regular file"));
        }
    }
    Ok(directory)
}

/// Loads every crontab of `dir` in `format` (a user or a system crontab), each job named
/// by its file.
///
/// # Errors
/// The directory cannot be read, or every problem of every crontab, each naming its file.
pub(super) fn load(dir: &Path, format: Format) -> Result<JobsFile, Problems> {
    let directory = list(dir)
        .map_err(|e| Problems::new(dir, vec![Problem::whole(format!("cannot read the directory: {e}"))]))?;
    let mut loaded = JobsFile {
        path: dir.to_owned(),
        format,
        jobs: Vec::new(),
        coordination: Default::default(),
        history: Default::default(),
        mails_from: None,
        directory: None,
        shutdown_timeout: None,
        max_concurrent_runs: None,
        local_zone: None,
        pieces: Pieces::default(),
    };
    let mut problems = Vec::new();
    for file in &directory.files {
        match load_crontab(file, format) {
            Ok(crontab) => {
                loaded.mails_from = loaded.mails_from.or(crontab.mails_from);
                loaded.local_zone = loaded.local_zone.or(crontab.local_zone);
                loaded.jobs.extend(crontab.jobs);
            }
            Err(list) => problems.extend(list.into_iter().map(|problem| problem.in_file(file))),
        }
    }
    if !problems.is_empty() {
        return Err(Problems::new(dir, problems));
    }
    loaded.directory = Some(directory);
    Ok(loaded)
}

/// One crontab of a directory, its jobs named by the file.
fn load_crontab(file: &Path, format: Format) -> Result<JobsFile, Vec<Problem>> {
    let source = read(file).map_err(|problem| vec![problem])?;
    let mut parsed = parse_format(&source, format, None);
    // The name is one `skipped_because` lets through: no `/`, not empty.
    let prefix = file.file_name().unwrap_or_default().to_string_lossy();
    parsed.name_by(&prefix);
    Ok(JobsFile::at(file, validate(parsed, format)?))
}

impl Parsed {
    /// Names every job `{prefix}/{name}`, in its problems too.
    fn name_by(&mut self, prefix: &str) {
        let named = |name: &str| format!("{prefix}/{name}");
        for (name, _) in &mut self.names {
            *name = named(name);
        }
        for draft in &mut self.drafts {
            draft.name = named(&draft.name);
        }
        for problem in &mut self.problems {
            if let Some(JobRef::Name(name)) = &mut problem.job {
                *name = named(name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cron_skips() {
        let skipped = [".placeholder", "#backup#", "backup~", "backup.dpkg-dist", "backup.rpmnew", "a.b"];
        for name in skipped {
            assert!(skipped_because(OsStr::new(name)).is_some(), "{name}");
        }
        for name in ["backup", "e2scrub_all", "php-5", "0hourly"] {
            assert_eq!(skipped_because(OsStr::new(name)), None, "{name}");
        }
    }
}
