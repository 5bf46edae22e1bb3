//! A `redis-server` of the test's own (from PATH) on a free port, as the Redis crate's
//! tests start theirs: no persistence, killed when dropped.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::PATIENCE;

/// What `redis-server` logs (lower-cased; the TCP and Unix socket lines differ in case)
/// once it listens on every address it was given.
const READY: &str = "ready to accept connections";

/// A running `redis-server`.
pub struct RedisServer {
    child: Child,
    port: u16,
}

impl RedisServer {
    /// Starts a server on a free port of 127.0.0.1, logging to `dir/redis.log`.
    pub fn start(dir: &Path) -> Self {
        Self::start_with(dir, &[])
    }

    /// [`RedisServer::start`] with more `redis-server` arguments (`--requirepass PW`...).
    pub fn start_with(dir: &Path, extra: &[&str]) -> Self {
        // A free port can be taken by another test before the server binds it: try again.
        // A PING alone is not enough: another test's server may hold the port this one
        // failed to bind, so wait for this server's own log to say it is ready.
        let log_path = dir.join("redis.log");
        for _ in 0..5 {
            let _ = std::fs::remove_file(&log_path);
            let port = free_port();
            let mut child = Command::new("redis-server")
                .args([
                    "--port",
                    &port.to_string(),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ])
                .args(extra)
                .arg("--dir")
                .arg(dir)
                .arg("--logfile")
                .arg(&log_path)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server must be on PATH to run these tests");
            let deadline = Instant::now() + PATIENCE;
            loop {
                if matches!(child.try_wait(), Ok(Some(_))) {
                    break; // the port was taken
                }
                let ready =
                    std::fs::read_to_string(&log_path).is_ok_and(|l| l.to_lowercase().contains(READY));
                if ready && answers_ping(port) {
                    return Self { child, port };
                }
                assert!(Instant::now() < deadline, "redis-server did not answer PING within {PATIENCE:?}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        panic!("redis-server did not start; its log:\n{log}");
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Every key the server holds, sorted.
    pub fn keys(&self) -> Vec<String> {
        let client = redis::Client::open(self.url()).expect("a valid URL");
        let mut connection = client.get_connection_with_timeout(PATIENCE).expect("connect to redis-server");
        let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut connection).expect("KEYS");
        keys.sort();
        keys
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether a server on `port` answers `PING` (the inline command): `+PONG`, or `-NOAUTH`
/// from a server that needs a password.
fn answers_ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let mut reply = [0; 7];
    stream.write_all(b"PING\r\n").is_ok()
        && stream.read_exact(&mut reply).is_ok()
        && (&reply == b"+PONG\r\n" || &reply == b"-NOAUTH")
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local address").port()
}
