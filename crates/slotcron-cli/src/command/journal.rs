//! The spawn journal: a line per command started, written by the started process itself,
//! between its fork and its exec — so a line is there if and only if the command was
//! started. A daemon killed after a run's start mark and before its command started
//! leaves a `running` record with no line ([`note_start`]): its next incarnation (same instance id, same
//! journal) knows the command never ran, and runs the trigger once
//! ([`slotcron::Leftover::NeverStarted`]) rather than recording it `interrupted`.
//!
//! The file opens with a header naming the instance and when it began; each incarnation
//! starts a new one. Lines are JSON: `["job","trigger","cause"]`. A run is judged by the
//! journal only when the header names its instance and the run's record started after the
//! header's time: anything older or foreign is unknown (recorded `interrupted`, as
//! without a journal). Past [`ROTATE_BYTES`] the file is renamed to `PATH.1` (still read
//! at the next start) and a new one begun.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde::{Deserialize, Serialize};
use slotcron::jiff::Timestamp;
use slotcron::{Cause, RunRecord};

/// The size past which the journal is rotated, in bytes.
pub const ROTATE_BYTES: u64 = 8 << 20;

/// What a journal file opens with.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Header {
    /// The instance id of the daemon that wrote it.
    instance: String,
    /// When it began (UTC): runs whose record started earlier are not in it.
    since: Timestamp,
}

/// A started command, as a journal line holds it: job, trigger, cause.
type Entry = (String, Timestamp, String);

/// The journal this daemon writes, once [`begin`] has opened it.
static CURRENT: OnceLock<Journal> = OnceLock::new();

/// An open journal.
struct Journal {
    path: PathBuf,
    instance: String,
    file: Mutex<Arc<File>>,
    /// Bytes armed since the file was begun (an estimate of its size: a spawn that fails
    /// before its child writes still counts).
    written: AtomicU64,
}

/// What the previous incarnation's journal says.
#[derive(Debug)]
pub struct Previous {
    path: PathBuf,
    header: Header,
    spawned: HashSet<Entry>,
}

impl Previous {
    /// Whether `record`'s command started: `None` when the journal cannot say (another
    /// instance's record, or one older than the journal).
    pub fn started(&self, record: &RunRecord) -> Option<bool> {
        if *record.instance != *self.header.instance || record.started < self.header.since {
            return None;
        }
        let entry = (record.job.to_string(), record.trigger, record.cause.as_str().to_owned());
        Some(self.spawned.contains(&entry))
    }

    /// The journal's path, for records and logs.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Reads the journal at `path` (and its rotated `PATH.1`) that the previous incarnation
/// left, then begins a new one there for `instance`, which every command this process
/// starts for a run writes to ([`note_start`]). Returns what the previous one says, or
/// why it cannot be trusted (none found, not a regular file, larger than
/// [`MAX_READ_BYTES`], a line that does not parse — one cut short is evidence of a start,
/// so nothing in that journal is trusted): runs are then recorded `interrupted`, never
/// run twice.
///
/// # Errors
/// The new journal cannot be written, or `path` is not a regular file (a FIFO or a
/// device would block or never end): the daemon then runs without one.
pub fn begin(path: &Path, instance: &str) -> io::Result<Result<Previous, String>> {
    let rotated = rotated(path);
    for path in [path, rotated.as_path()] {
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return Err(io::Error::other(format!("{} is not a regular file", path.display())));
        }
    }
    let previous = match (read(&rotated), read(path)) {
        (Ok(None), Ok(None)) => Err("none was found (a first start, or it was removed)".to_owned()),
        (Ok(None), Ok(Some(newer))) => Ok(newer),
        (Ok(Some(mut older)), Ok(Some(newer))) if older.0.instance == newer.0.instance => {
            older.1.extend(newer.1);
            Ok(older)
        }
        (Ok(Some(_)), Ok(Some(_))) => Err("its two files name different instances".to_owned()),
        (Ok(Some(_)), Ok(None)) => Err(format!("{} is missing beside its rotated file", path.display())),
        (Err(e), _) | (_, Err(e)) => Err(e),
    }
    .map(|(header, spawned)| Previous { path: path.to_owned(), header, spawned });
    match std::fs::remove_file(&rotated) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let file = create(path, instance)?;
    let journal = Journal {
        path: path.to_owned(),
        instance: instance.to_owned(),
        file: Mutex::new(Arc::new(file)),
        written: AtomicU64::new(0),
    };
    if CURRENT.set(journal).is_err() {
        return Err(io::Error::other("the spawn journal was begun twice"));
    }
    Ok(previous)
}

/// The shells (by file name) that run [`prefixed`] scripts: POSIX `sh` and its kin.
const POSIX_SHELLS: [&str; 7] = ["sh", "bash", "dash", "ash", "ksh", "mksh", "zsh"];

/// Makes the start of `script`, run by `command` (`shell -c`), for `job`'s `trigger`
/// (`cause`) leave its line in the journal before the script runs; returns the script
/// to run. A started process writes it itself, so that a line is there if and only if
/// the command started:
/// - a POSIX shell: the script is [`prefixed`] with the write (`printf … >> JOURNAL ||
///   exit 125; SCRIPT`), so the process is still spawned the cheap way (`posix_spawn`);
/// - a command `forked` anyway (one switching user): the child writes it between fork and
///   exec, through the journal's open file;
/// - any other shell: this process writes it just before the spawn — a line then means
///   "may have started", so a daemon killed in between leaves that run `interrupted`,
///   never run twice.
///
/// Without a journal, `script` as it is.
///
/// # Errors
/// This process could not write the line (the other shell's case): the command must not
/// start.
pub fn note_start<'s>(
    command: &mut tokio::process::Command,
    (shell, forked): (&str, bool),
    script: &'s str,
    (job, trigger, cause): (&str, Timestamp, Cause),
) -> io::Result<Cow<'s, str>> {
    let Some(journal) = CURRENT.get() else { return Ok(Cow::Borrowed(script)) };
    let mut line = serde_json::to_vec(&(job, trigger, cause.as_str())).map_err(io::Error::other)?;
    let file = journal.file_for(line.len() as u64 + 1);
    let posix = Path::new(shell)
        .file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|n| POSIX_SHELLS.contains(&n));
    // A path that is not UTF-8 cannot be written into the script as it is.
    if posix && !forked && journal.path.to_str().is_some() {
        return Ok(Cow::Owned(prefixed(&journal.path, &line, script)));
    }
    line.push(b'\n');
    if !forked {
        (&*file).write_all(&line)?;
        return Ok(Cow::Borrowed(script));
    }
    // SAFETY: the closure runs in the forked child, where only async-signal-safe calls
    // are allowed: write(2) of a buffer made before the fork, through a file descriptor
    // the parent keeps open (the `Arc` lives in the closure); it allocates nothing.
    unsafe {
        command.pre_exec(move || (&*file).write_all(&line));
    }
    Ok(Cow::Borrowed(script))
}

/// `script` after a POSIX shell command that appends `line` to the journal at `path`, or
/// exits with status 125 (the script not run) when it cannot — on the same line, so the
/// script's line numbers in the shell's messages do not change.
fn prefixed(path: &Path, line: &[u8], script: &str) -> String {
    let quote = |text: &str| format!("'{}'", text.replace('\'', r"'\''"));
    let line = quote(&String::from_utf8_lossy(line));
    let path = quote(&path.to_string_lossy());
    format!("printf '%s\\n' {line} >>{path} || exit 125; {script}")
}

impl Journal {
    /// The file to write `len` more bytes to, rotated first when past [`ROTATE_BYTES`].
    fn file_for(&self, len: u64) -> Arc<File> {
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if self.written.fetch_add(len, Ordering::Relaxed) >= ROTATE_BYTES {
            match std::fs::rename(&self.path, rotated(&self.path))
                .and_then(|()| create(&self.path, &self.instance))
            {
                Ok(new) => {
                    *file = Arc::new(new);
                    self.written.store(len, Ordering::Relaxed);
                }
                Err(e) => {
                    tracing::warn!(path = %self.path.display(), "the spawn journal was not rotated: {e}")
                }
            }
        }
        file.clone()
    }
}

/// `PATH.1`: where a rotated journal goes.
fn rotated(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".1");
    PathBuf::from(name)
}

/// Creates (or empties) the journal at `path`, with its header, open for appending.
fn create(path: &Path, instance: &str) -> io::Result<File> {
    let mut file = OpenOptions::new().create(true).write(true).truncate(true).open(path)?;
    let header = Header { instance: instance.to_owned(), since: Timestamp::now() };
    let mut line = serde_json::to_vec(&header).map_err(io::Error::other)?;
    line.push(b'\n');
    file.write_all(&line)?;
    drop(file);
    OpenOptions::new().append(true).open(path)
}

/// The most of a journal file read at start, in bytes: a rotated file and the current one
/// stay well below it.
pub const MAX_READ_BYTES: u64 = 4 * ROTATE_BYTES;

/// The header and entries of the journal file at `path`; `None` when there is none; why
/// it cannot be trusted when it is too large, or a line (the header too) does not parse.
fn read(path: &Path) -> Result<Option<(Header, HashSet<Entry>)>, String> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let size = file.metadata().map_err(|e| format!("{}: {e}", path.display()))?.len();
    if size > MAX_READ_BYTES {
        return Err(format!("{} holds {size} bytes, more than a journal ever does", path.display()));
    }
    let mut lines = BufReader::new(file).lines();
    let bad = |n: usize| format!("{}: line {n} is not a journal line", path.display());
    let header =
        lines.next().and_then(Result::ok).and_then(|line| serde_json::from_str::<Header>(&line).ok());
    let header = header.ok_or_else(|| bad(1))?;
    let mut spawned = HashSet::new();
    for (index, line) in lines.enumerate() {
        let entry = line.ok().and_then(|line| serde_json::from_str::<Entry>(&line).ok());
        spawned.insert(entry.ok_or_else(|| bad(index + 2))?);
    }
    Ok(Some((header, spawned)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test per process (nextest), as the journal is the process's own: the previous
    /// incarnation's lines are read back, and each way of noting a start leaves its line.
    #[tokio::test]
    async fn begin_reads_the_previous_journal_and_each_start_leaves_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db.spawned");
        let t: Timestamp = "2026-01-01T00:00:10Z".parse().unwrap();
        let previous = "{\"instance\":\"a\",\"since\":\"2026-01-01T00:00:00Z\"}\n[\"x\",\"2026-01-01T00:00:10Z\",\"scheduled\"]\n";
        std::fs::write(&path, previous).unwrap();
        let previous = begin(&path, "a").unwrap().expect("the previous incarnation's journal");
        assert!(begin(&path, "a").is_err(), "begun once per process");
        let mut record = RunRecord {
            job: "x".into(),
            trigger: t,
            instance: "a".into(),
            cause: Cause::Scheduled,
            attempts: 1,
            outcome: slotcron::Outcome::Running,
            fencing_token: None,
            started: t,
            duration: std::time::Duration::ZERO,
            error: None,
            process: None,
        };
        assert_eq!(previous.started(&record), Some(true));
        record.job = "y".into();
        assert_eq!(previous.started(&record), Some(false));
        let lines = || std::fs::read_to_string(&path).unwrap();
        assert!(lines().starts_with("{\"instance\":\"a\""), "a new journal: {}", lines());
        assert_eq!(lines().lines().count(), 1, "the previous lines are gone from it");

        let mut command = tokio::process::Command::new("/bin/sh");
        let script =
            note_start(&mut command, ("/bin/sh", false), "exit 0", ("posix", t, Cause::Scheduled)).unwrap();
        assert!(script.starts_with("printf "), "a POSIX shell writes it itself: {script}");
        assert_eq!(lines().lines().count(), 1, "not before the shell runs");
        let status = command.arg("-c").arg(&*script).status().await.unwrap();
        assert!(status.success());
        assert!(lines().contains("[\"posix\","), "{}", lines());

        let mut command = tokio::process::Command::new("/bin/true");
        note_start(&mut command, ("/bin/true", true), "", ("forked", t, Cause::Scheduled)).unwrap();
        assert!(!lines().contains("[\"forked\","), "not before the fork");
        assert!(command.status().await.unwrap().success());
        assert!(lines().contains("[\"forked\","), "{}", lines());

        let mut command = tokio::process::Command::new("/usr/bin/env");
        let script =
            note_start(&mut command, ("/usr/bin/env", false), "x", ("other", t, Cause::Scheduled)).unwrap();
        assert_eq!(script, "x", "another shell's script is left as it is");
        assert!(lines().contains("[\"other\","), "written by the daemon before the spawn: {}", lines());
    }

    #[test]
    fn a_journal_with_a_torn_line_a_device_or_a_huge_file_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        let header = "{\"instance\":\"a\",\"since\":\"2026-01-01T00:00:00Z\"}\n";
        std::fs::write(&path, format!("{header}[\"x\",\"2026-01-01T00:00:10Z\",\"sched")).unwrap();
        assert!(read(&path).unwrap_err().ends_with("line 2 is not a journal line"), "a torn line: a start");
        std::fs::write(&path, "garbage\n").unwrap();
        assert!(read(&path).unwrap_err().ends_with("line 1 is not a journal line"));
        let file = File::create(&path).unwrap();
        file.set_len(MAX_READ_BYTES + 1).unwrap();
        assert!(read(&path).unwrap_err().contains("more than a journal ever does"));
        let refused = begin(Path::new("/dev/zero"), "a").map(|_| ()).unwrap_err();
        assert_eq!(refused.to_string(), "/dev/zero is not a regular file");
    }

    #[test]
    fn a_prefixed_script_writes_its_line_then_runs_as_it_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("it's a journal");
        std::fs::write(&path, "").unwrap();
        let line = serde_json::to_vec(&("job 'x'", "2026-01-01T00:00:00Z", "scheduled")).unwrap();
        let script = "echo \"$0\"; no-such-command-here; exit 3";
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(prefixed(&path, &line, script))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "/bin/sh\n", "the script's $0");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("1: no-such-command-here"),
            "its line number in the shell's message: {stderr}"
        );
        let journal = std::fs::read_to_string(&path).unwrap();
        assert_eq!(journal, format!("{}\n", String::from_utf8_lossy(&line)));
        let missing = dir.path().join("no/such/dir");
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(prefixed(&missing, &line, "echo ran"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(125), "a line that cannot be written: the script does not run");
        assert!(out.stdout.is_empty());
    }

    #[test]
    fn a_header_of_another_instance_or_a_missing_file_says_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        assert_eq!(read(&path), Ok(None));
        std::fs::write(&path, "{\"instance\":\"b\",\"since\":\"2026-01-01T00:00:00Z\"}\n[\"x\",\"2026-01-01T00:00:10Z\",\"scheduled\"]\n").unwrap();
        let (header, spawned) = read(&path).unwrap().unwrap();
        let previous = Previous { path, header, spawned };
        let record = |instance: &str, started: &str| RunRecord {
            job: "x".into(),
            trigger: "2026-01-01T00:00:10Z".parse().unwrap(),
            instance: instance.into(),
            cause: Cause::Scheduled,
            attempts: 1,
            outcome: slotcron::Outcome::Running,
            fencing_token: None,
            started: started.parse().unwrap(),
            duration: std::time::Duration::ZERO,
            error: None,
            process: None,
        };
        assert_eq!(previous.started(&record("b", "2026-01-01T00:00:10Z")), Some(true));
        assert_eq!(previous.started(&record("a", "2026-01-01T00:00:10Z")), None, "another instance's");
        assert_eq!(previous.started(&record("b", "2025-12-31T23:59:59Z")), None, "older than the journal");
        let mut other = record("b", "2026-01-01T00:00:10Z");
        other.cause = Cause::Manual;
        assert_eq!(previous.started(&other), Some(false), "not in the journal: never started");
    }
}
