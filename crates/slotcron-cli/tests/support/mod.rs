//! Running the built `slotcron` binary from tests.
//!
//! Every wait is bounded by [`PATIENCE`], so a broken daemon fails the test instead of
//! hanging it; no test asserts how long anything took.

#![allow(dead_code)]

pub mod http;
pub mod postgres;
pub mod proxy;
#[path = "../../../slotcron-redis/tests/support/cluster.rs"]
pub mod redis_cluster;
pub mod redis_server;

use std::fs::Permissions;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::Deserialize;
use slotcron::jiff::Timestamp;

/// The longest any wait may take before the test fails.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The binary under test, with none of the environment variables it reads.
pub fn slotcron() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_slotcron"));
    command
        .env_remove("RUST_LOG")
        .env_remove("SLOTCRON_REDIS_URL")
        .env_remove("SLOTCRON_ADMIN")
        .env_remove("SLOTCRON_ADMIN_URL")
        .env_remove("SLOTCRON_ADMIN_TOKEN")
        .env_remove("SLOTCRON_ADMIN_TOKEN_FILE")
        .env_remove("SLOTCRON_ADMIN_READ_TOKEN")
        .env_remove("SLOTCRON_ADMIN_READ_TOKEN_FILE");
    command
}

/// Runs `slotcron ARGS` to completion in `dir`.
pub fn run_in(dir: &Path, args: &[&str]) -> Output {
    slotcron().args(args).current_dir(dir).output().expect("the slotcron binary runs")
}

/// Runs `slotcron ARGS` to completion.
pub fn run(args: &[&str]) -> Output {
    slotcron().args(args).output().expect("the slotcron binary runs")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// An empty directory of this test's own.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("slotcron-cli").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `text` to `dir/name` and returns the path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A `slotcron run` daemon whose log lines (standard error) the test reads.
/// libfaketime, as Debian's `faketime` package installs it (`.ci/run` installs it).
pub fn libfaketime() -> PathBuf {
    let candidates = [
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
        "/usr/lib/faketime/libfaketime.so.1",
    ];
    let found = candidates.iter().map(PathBuf::from).find(|p| p.exists());
    found.expect("libfaketime is needed for these tests: apt-get install faketime")
}

pub struct Daemon {
    child: Child,
    lines: Receiver<String>,
    /// Every log line read so far.
    pub log: Vec<String>,
}

impl Daemon {
    /// Starts `slotcron run FILE` in `dir`.
    pub fn start(dir: &Path, file: &str) -> Self {
        Self::run(dir, &[file])
    }

    /// Starts `slotcron run ARGS` in `dir`.
    pub fn run(dir: &Path, args: &[&str]) -> Self {
        let mut command = slotcron();
        command.arg("run").args(args);
        Self::spawn(command, dir)
    }

    /// Starts `command` (a `slotcron run`) in `dir`.
    pub fn spawn(mut command: Command, dir: &Path) -> Self {
        let mut child = command
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the daemon starts");
        let stderr = child.stderr.take().unwrap();
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Self { child, lines, log: Vec::new() }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Reads log lines until one satisfies `wanted` and returns it.
    pub fn wait_for(&mut self, what: &str, wanted: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.log.push(line.clone());
                    if wanted(&line) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no log line {what} within {PATIENCE:?}:\n{}", self.log())
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the daemon closed its log before {what}:\n{}", self.log())
                }
            }
        }
    }

    /// Waits for the line saying where the admin API listens: the loopback `IP:PORT` that
    /// reaches it.
    pub fn admin_address(&mut self) -> String {
        let line = self.wait_for("for the admin API", |line| line.contains("admin API listening"));
        let port = line
            .split("address=")
            .nth(1)
            .and_then(|address| address.split_whitespace().next()?.rsplit_once(':'))
            .unwrap_or_else(|| panic!("no address=IP:PORT in {line:?}"))
            .1
            .to_owned();
        format!("127.0.0.1:{port}")
    }

    /// The next log line, if one is waiting (kept in [`Self::log`] too).
    pub fn try_line(&mut self) -> Result<String, std::sync::mpsc::TryRecvError> {
        let line = self.lines.try_recv()?;
        self.log.push(line.clone());
        Ok(line)
    }

    /// Sends `signal` to the daemon.
    pub fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.child.id() as i32), signal).unwrap();
    }

    /// Waits for the daemon to exit, reads the rest of its log, and returns its status.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "the daemon did not exit within {PATIENCE:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        // The reader thread ends at the end of the log.
        while let Ok(line) = self.lines.recv_timeout(PATIENCE) {
            self.log.push(line);
        }
        status
    }

    /// The log lines read so far that contain every one of `parts`.
    pub fn lines_with(&self, parts: &[&str]) -> Vec<&str> {
        self.log
            .iter()
            .map(String::as_str)
            .filter(|line| parts.iter().all(|part| line.contains(part)))
            .collect()
    }

    pub fn log(&self) -> String {
        self.log.join("\n")
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A child process killed (SIGKILL) when dropped, so a failing test leaves none behind.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Waits for `child` to exit; panics after [`PATIENCE`].
pub fn wait_exit(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "process {} did not exit within {PATIENCE:?}", child.id());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether the process `pid` has ended (gone, or a zombie waiting to be reaped).
pub fn has_ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesized command name.
        Ok(stat) => stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')),
        Err(_) => true,
    }
}

/// Waits until `done` holds, checking every 100 ms; panics after [`PATIENCE`] with `what`.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "not {what} within {PATIENCE:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One run as `slotcron history --json` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Run {
    pub job: String,
    #[serde(deserialize_with = "instant")]
    pub trigger: Timestamp,
    pub instance: String,
    pub outcome: String,
    pub cause: String,
    pub attempts: u32,
    pub fencing_token: Option<u64>,
    #[serde(deserialize_with = "instant")]
    pub started: Timestamp,
    /// `None` for a `running` or `interrupted` run.
    pub duration_ms: Option<u64>,
    pub error: Option<String>,
    pub pid: Option<u32>,
    pub host: Option<String>,
}

/// An RFC 3339 instant in JSON.
fn instant<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Timestamp, D::Error> {
    let text = String::deserialize(deserializer)?;
    text.parse().map_err(serde::de::Error::custom)
}

impl Run {
    /// Whether the record is final: not the `running` record of a run still going.
    pub fn finished(&self) -> bool {
        self.outcome != "running"
    }

    /// Whether the command ran (whatever its result), as opposed to a skipped or missed
    /// trigger.
    pub fn ran(&self) -> bool {
        ["succeeded", "failed", "timed-out", "aborted"].contains(&self.outcome.as_str())
    }
}

/// `slotcron history --json ARGS` in `dir` (with `--limit 1000000` unless ARGS set a
/// limit): the runs, oldest trigger first (the command prints newest first).
pub fn history(dir: &Path, args: &[&str]) -> Vec<Run> {
    let mut all = vec!["history", "--json"];
    if !args.contains(&"--limit") {
        all.extend(["--limit", "1000000"]);
    }
    all.extend_from_slice(args);
    let out = run_in(dir, &all);
    assert_eq!(out.status.code(), Some(0), "slotcron history failed: {}", stderr(&out));
    let mut runs: Vec<Run> = stdout(&out)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    runs.reverse();
    runs
}

/// Waits until the process whose pid is in `file` has ended; panics after [`PATIENCE`].
pub fn wait_until_ended(file: &Path) {
    let pid: u32 = std::fs::read_to_string(file).unwrap().trim().parse().unwrap();
    let deadline = Instant::now() + PATIENCE;
    while !has_ended(pid) {
        assert!(Instant::now() < deadline, "process {pid} still running after {PATIENCE:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `slotcron ARGS` in `dir` as a user who may read the files in `dir` but not write
/// them or create any there. As root (who may write anything): as `nobody`, through
/// `setpriv` (util-linux), with `dir` at mode 755 and its files at 644, root's, as a
/// daemon run by root leaves them. As anyone else: with the write permissions of `dir` and
/// its files taken away for the run.
pub fn run_as_reader(dir: &Path, args: &[&str]) -> Output {
    run_as_reader_writing(dir, &[], args)
}

/// [`run_as_reader`], except that the files of `dir` named in `writable` stay writable by
/// everyone (mode 666) for the run.
pub fn run_as_reader_writing(dir: &Path, writable: &[&str], args: &[&str]) -> Output {
    let files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|entry| entry.unwrap().path()).collect();
    let set = |dir_mode, file_mode| {
        std::fs::set_permissions(dir, Permissions::from_mode(dir_mode)).unwrap();
        for file in &files {
            let name = file.file_name().unwrap().to_str().unwrap();
            let mode = if writable.contains(&name) { 0o666 } else { file_mode };
            std::fs::set_permissions(file, Permissions::from_mode(mode)).unwrap();
        }
    };
    if std::fs::metadata(dir).unwrap().uid() == 0 {
        set(0o755, 0o644);
        let mut setpriv = Command::new("setpriv");
        setpriv.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_slotcron")]);
        setpriv.args(args).current_dir(dir).env_remove("RUST_LOG").env_remove("SLOTCRON_REDIS_URL");
        output_within_patience(setpriv)
    } else {
        set(0o555, 0o444);
        let mut command = slotcron();
        command.args(args).current_dir(dir);
        let out = output_within_patience(command);
        set(0o755, 0o644);
        out
    }
}

/// Runs `command` to completion and returns its output; after [`PATIENCE`] kills it and
/// panics (a daemon that should have refused to start, for one).
fn output_within_patience(mut command: Command) -> Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{command:?} does not start: {e}"));
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            pipe.read_to_end(&mut bytes).unwrap();
            bytes
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let mut child = KillOnDrop(child);
    let status = wait_exit(&mut child.0);
    Output { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() }
}
