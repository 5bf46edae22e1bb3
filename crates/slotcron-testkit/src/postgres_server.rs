//! [`PostgresServer`]: a PostgreSQL server of a test's own.

use std::fs::File;
use std::os::unix::fs::{PermissionsExt, chown};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::{Gid, Pid, Uid, User, geteuid};

/// How long the server may take to start or stop; past it the test fails (start) or the
/// server is killed (stop).
const PATIENCE: Duration = Duration::from_secs(60);

/// What the server logs once it accepts connections.
const READY: &str = "database system is ready to accept connections";

/// A PostgreSQL server of a test's own: `initdb` into a temporary directory, then
/// `postgres` on a free port of 127.0.0.1 (no Unix socket), trusting every local login as
/// `postgres`, with whatever files and settings the test gives it (a certificate and key
/// for `ssl = on`, say). It is stopped (a fast shutdown) and its directory removed when
/// the value is dropped.
///
/// `initdb` is found on `PATH`, else in the newest `/usr/lib/postgresql/N/bin` (Debian's
/// layout, where it is not on `PATH`); `postgres` is the one beside it. Both refuse to run
/// as root: as root, they run as the `postgres` user (which Debian's package makes), and
/// the directory is given to that user.
#[derive(Debug)]
pub struct PostgresServer {
    child: Child,
    port: u16,
    /// Holds the data directory and the log; removed on drop, after the server stopped.
    dir: tempfile::TempDir,
}

impl PostgresServer {
    /// Initialises a cluster, writes `files` (name and contents) into its data directory,
    /// readable by the server's user alone (mode 0600, as a key file must be), appends
    /// `settings` (`postgresql.conf` lines, e.g. `ssl = on`; a relative file name in them
    /// is the data directory's) and starts the server.
    ///
    /// # Panics
    /// When `initdb` cannot be found (naming where it was looked for) or fails, or the
    /// server does not start within a minute (with its log).
    pub fn start(files: &[(&str, &[u8])], settings: &[&str]) -> Self {
        let user = ServerUser::find();
        let dir =
            tempfile::Builder::new().prefix("slotcron-postgres-").tempdir().expect("a temporary directory");
        user.give(dir.path());
        let data = dir.path().join("data");
        let bin = bin_dir();
        let mut initdb = user.command(&bin.join("initdb"), dir.path());
        initdb.arg("-D").arg(&data).args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale"]);
        let output = initdb.arg("--no-sync").output().expect("run initdb");
        assert!(
            output.status.success(),
            "initdb failed ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        for (name, contents) in files {
            let path = data.join(name);
            std::fs::write(&path, contents).expect("write a file into the data directory");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod 0600");
            user.give(&path);
        }
        let mut conf = std::fs::read_to_string(data.join("postgresql.conf")).expect("read postgresql.conf");
        conf.push_str("\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\nfsync = off\n");
        conf.push_str("max_connections = 30\n");
        for setting in settings {
            conf.push_str(setting);
            conf.push('\n');
        }
        std::fs::write(data.join("postgresql.conf"), conf).expect("write postgresql.conf");
        let (child, port) = Self::listen(&user, &bin.join("postgres"), dir.path(), &data);
        Self { child, port, dir }
    }

    /// Starts `postgres` on a free port, trying another when the one chosen was taken in
    /// between, and waits for its log to say it is ready.
    fn listen(user: &ServerUser, postgres: &Path, dir: &Path, data: &Path) -> (Child, u16) {
        let log_path = dir.join("postgres.log");
        for _ in 0..5 {
            let port = free_port();
            let log = File::create(&log_path).expect("create the server's log");
            let mut command = user.command(postgres, dir);
            command.arg("-D").arg(data).arg("-p").arg(port.to_string());
            let mut child = command.stdout(Stdio::null()).stderr(log).spawn().expect("run postgres");
            let deadline = Instant::now() + PATIENCE;
            loop {
                if matches!(child.try_wait(), Ok(Some(_))) {
                    break; // the port was taken, or the settings are wrong: see the log
                }
                if std::fs::read_to_string(&log_path).is_ok_and(|log| log.contains(READY)) {
                    return (child, port);
                }
                assert!(Instant::now() < deadline, "postgres did not start within {PATIENCE:?}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        panic!("postgres did not start; its log:\n{log}");
    }

    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// What the server logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("postgres.log")).unwrap_or_default()
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        // SIGINT: a fast shutdown, which ends the server's other processes and frees its
        // shared memory; a server still up after PATIENCE is killed.
        let pid = i32::try_from(self.child.id()).map(Pid::from_raw);
        if let Ok(pid) = pid {
            let _ = kill(pid, Signal::SIGINT);
        }
        let deadline = Instant::now() + PATIENCE;
        while matches!(self.child.try_wait(), Ok(None)) {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Who runs the server: this process's user, or `postgres` when this one is root.
enum ServerUser {
    Current,
    Other { uid: Uid, gid: Gid },
}

impl ServerUser {
    fn find() -> Self {
        if !geteuid().is_root() {
            return Self::Current;
        }
        match User::from_name("postgres") {
            Ok(Some(user)) => Self::Other { uid: user.uid, gid: user.gid },
            other => panic!(
                "initdb refuses to run as root, and there is no `postgres` user to run it as ({other:?}): \
                 install PostgreSQL's server package (Debian: apt-get install postgresql), or run the tests \
                 as another user"
            ),
        }
    }

    /// A command for `program` that runs as this user, in `dir`.
    fn command(&self, program: &Path, dir: &Path) -> Command {
        let mut command = Command::new(program);
        command.current_dir(dir).stdin(Stdio::null());
        if let Self::Other { uid, gid } = self {
            command.uid(uid.as_raw()).gid(gid.as_raw());
        }
        command
    }

    /// Makes `path` this user's.
    fn give(&self, path: &Path) {
        if let Self::Other { uid, gid } = self {
            chown(path, Some(uid.as_raw()), Some(gid.as_raw())).expect("chown to the server's user");
        }
    }
}

/// The directory of the server's binaries: that of `initdb` (symbolic links followed),
/// found on `PATH`, else in the newest `/usr/lib/postgresql/N/bin`.
fn bin_dir() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("initdb"))
        .find(|candidate| candidate.is_file());
    let debian = || {
        let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| Some((entry.file_name().to_str()?.parse().ok()?, entry.path())))
            .collect();
        versions.sort();
        versions.into_iter().rev().map(|(_, dir)| dir.join("bin/initdb")).find(|path| path.is_file())
    };
    let initdb = on_path.or_else(debian).unwrap_or_else(|| {
        panic!(
            "initdb is neither on PATH nor in /usr/lib/postgresql/N/bin: these tests start a PostgreSQL \
             server of their own; install PostgreSQL's server package (Debian: apt-get install postgresql), \
             as .ci/run does"
        )
    });
    let initdb = initdb.canonicalize().unwrap_or(initdb);
    initdb.parent().expect("initdb is in a directory").to_owned()
}

/// A port nobody listens on right now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local address").port()
}
