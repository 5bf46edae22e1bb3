//! A `redis-server` of the test's own, and helpers shared by the Redis tests.
//!
//! Each test starts its own server (from PATH) on a free port or on a Unix socket in a
//! temporary directory, without persistence (`--save "" --appendonly no`), waits until
//! it answers PING, and kills it when dropped.

#![allow(dead_code)]

pub mod cluster;

use std::future::Future;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use slotcron::Coordinator;
use slotcron_redis::{RedisConfig, RedisCoordinator};

/// How long a server may take to answer its first PING.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// What `redis-server` logs (lower-cased; the TCP and Unix socket lines differ in case)
/// once it listens on every address it was given.
const READY: &str = "ready to accept connections";

/// Where a server listens.
#[derive(Debug, Clone)]
pub enum Listen {
    /// 127.0.0.1 on this port.
    Tcp(u16),
    /// This Unix socket.
    Unix(PathBuf),
    /// TLS on 127.0.0.1 on this port, with the certificates in tests/data/tls.
    Tls(u16),
}

/// A `redis-server` child process with its own temporary directory.
pub struct RedisServer {
    listen: Listen,
    extra: Vec<String>,
    dir: TempDir,
    child: Option<Child>,
}

impl RedisServer {
    /// A server on a free TCP port.
    pub fn tcp() -> Self {
        Self::start(|_| Listen::Tcp(free_port()), &[])
    }

    /// A server on a Unix socket in its temporary directory.
    pub fn unix() -> Self {
        Self::start(|dir| Listen::Unix(dir.join("redis.sock")), &[])
    }

    /// A TLS server on a free TCP port.
    pub fn tls() -> Self {
        Self::start(|_| Listen::Tls(free_port()), &[])
    }

    /// A server with extra `redis-server` arguments, e.g. `["--requirepass", "secret"]`.
    pub fn with_args(listen: impl Fn(&Path) -> Listen, extra: &[&str]) -> Self {
        Self::start(listen, extra)
    }

    fn start(listen: impl Fn(&Path) -> Listen, extra: &[&str]) -> Self {
        let dir = TempDir::new();
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        // A free port can be taken by another test before the server binds it: try again.
        let mut last_log = String::new();
        for _ in 0..5 {
            let mut server =
                Self { listen: listen(dir.path()), extra: extra.clone(), dir: dir.clone(), child: None };
            if server.spawn() {
                return server;
            }
            last_log = std::fs::read_to_string(server.log_path()).unwrap_or_default();
        }
        panic!("redis-server did not start; its log:\n{last_log}");
    }

    /// Starts the process and waits until its own log says it is ready and it answers
    /// PING; `false` if it exited. A PING alone is not enough: another test's server may
    /// hold the port this one failed to bind.
    fn spawn(&mut self) -> bool {
        let _ = std::fs::remove_file(self.log_path());
        let mut command = Command::new("redis-server");
        command.args(["--save", "", "--appendonly", "no", "--bind", "127.0.0.1", "--daemonize", "no"]);
        command.arg("--dir").arg(self.dir.path()).arg("--logfile").arg(self.log_path());
        match &self.listen {
            Listen::Tcp(port) => {
                command.args(["--port", &port.to_string()]);
            }
            Listen::Unix(path) => {
                command.args(["--port", "0", "--unixsocketperm", "700"]).arg("--unixsocket").arg(path);
            }
            Listen::Tls(port) => {
                let tls = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tls");
                command.args(["--port", "0", "--tls-port", &port.to_string(), "--tls-auth-clients", "no"]);
                command.arg("--tls-cert-file").arg(tls.join("server.crt"));
                command.arg("--tls-key-file").arg(tls.join("server.key"));
                command.arg("--tls-ca-cert-file").arg(tls.join("ca.crt"));
            }
        }
        command.args(&self.extra).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        let child = command.spawn().expect("redis-server must be on PATH to run these tests");
        self.child = Some(child);
        let deadline = Instant::now() + START_TIMEOUT;
        while Instant::now() < deadline {
            if self.child.as_mut().is_some_and(|c| matches!(c.try_wait(), Ok(Some(_)))) {
                self.child = None;
                return false;
            }
            if self.logged_ready() && self.answers_ping() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("redis-server did not answer PING within {START_TIMEOUT:?}");
    }

    fn logged_ready(&self) -> bool {
        std::fs::read_to_string(self.log_path()).is_ok_and(|log| log.to_lowercase().contains(READY))
    }

    fn answers_ping(&self) -> bool {
        let pong = self.admin_connection().and_then(|mut c| redis::cmd("PING").query::<String>(&mut c));
        matches!(pong.as_deref(), Ok("PONG"))
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("redis.log")
    }

    /// Where it listens.
    pub fn listen(&self) -> &Listen {
        &self.listen
    }

    /// The URL of database 0, without a password.
    pub fn url(&self) -> String {
        match &self.listen {
            Listen::Tcp(port) => format!("redis://127.0.0.1:{port}"),
            Listen::Unix(path) => format!("redis+unix://{}", path.display()),
            Listen::Tls(port) => format!("rediss://localhost:{port}"),
        }
    }

    /// A configuration for [`RedisServer::url`] (trusting the test CA for TLS).
    pub fn config(&self) -> RedisConfig {
        let config = RedisConfig::new(self.url());
        match self.listen {
            Listen::Tls(_) => config.tls_root_certificate(test_ca()),
            _ => config,
        }
    }

    /// A direct, synchronous connection for inspecting the server (with the password if
    /// the server requires one, as `--requirepass` among its extra arguments).
    pub fn admin_connection(&self) -> redis::RedisResult<redis::Connection> {
        let mut info = redis::IntoConnectionInfo::into_connection_info(self.url().as_str())?;
        if let Some(at) = self.extra.iter().position(|a| a == "--requirepass") {
            let password = self.extra[at + 1].clone();
            let settings = info.redis_settings().clone().set_password(password);
            info = info.set_redis_settings(settings);
        }
        let client = match self.listen {
            Listen::Tls(_) => {
                let certificates = redis::TlsCertificates { client_tls: None, root_cert: Some(test_ca()) };
                redis::Client::build_with_tls(info, certificates)?
            }
            _ => redis::Client::open(info)?,
        };
        client.get_connection_with_timeout(Duration::from_secs(1))
    }

    /// Kills the server (SIGKILL) and waits for it to exit.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts a stopped server again on the same address.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "restart a stopped server");
        if !self.spawn() {
            let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
            panic!("redis-server did not restart on {:?}; its log:\n{log}", self.listen);
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local address").port()
}

/// The test CA's certificate (PEM).
pub fn test_ca() -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tls/ca.crt")).expect("test CA")
}

/// How long the suite's coordinators wait for a reply. A loaded CI machine can take longer
/// than the 500 ms default to answer, and the suite checks exactly-once semantics, not
/// latency: a reply slower than the default must not read as an outage there.
pub const SUITE_RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);

/// A factory for the testkit: a new coordinator on `config`, with the namespace as key
/// prefix and [`SUITE_RESPONSE_TIMEOUT`].
pub fn factory(
    config: RedisConfig,
) -> impl Fn(String) -> std::pin::Pin<Box<dyn Future<Output = Arc<dyn Coordinator>>>> {
    move |namespace| {
        let config =
            config.clone().key_prefix(format!("{namespace}:")).response_timeout(SUITE_RESPONSE_TIMEOUT);
        Box::pin(async move {
            let coordinator = RedisCoordinator::connect(config).await.expect("connect to the test server");
            Arc::new(coordinator) as Arc<dyn Coordinator>
        })
    }
}

/// A temporary directory, removed (with its contents) when the last clone is dropped.
#[derive(Clone)]
pub struct TempDir(Arc<PathBuf>);

impl TempDir {
    pub fn new() -> Self {
        static SEQUENCE: AtomicU64 = AtomicU64::new(0);
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        let name = format!(
            "slotcron-redis-{}-{}-{nanos}",
            std::process::id(),
            SEQUENCE.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&path).expect("create a temporary directory");
        Self(Arc::new(path))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if Arc::strong_count(&self.0) == 1 {
            let _ = std::fs::remove_dir_all(&*self.0);
        }
    }
}
