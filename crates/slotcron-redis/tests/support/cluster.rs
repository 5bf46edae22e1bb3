//! A Redis Cluster of the test's own: three masters (no replicas), each a
//! `redis-server --cluster-enabled yes` (from PATH) on free ports of 127.0.0.1 without
//! persistence, joined by `redis-cli --cluster create`, and killed when dropped.
//!
//! Self-contained (std and the `redis` crate only): the daemon's tests include this file
//! too (`#[path]`), so the two crates start clusters the same way.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a node may take to start, and the cluster to agree on its slots.
const PATIENCE: Duration = Duration::from_secs(30);

/// What `redis-server` logs (lower-cased) once it listens.
const READY: &str = "ready to accept connections";

/// The number of masters.
const MASTERS: usize = 3;

/// One node: its client port, the port it tells clients to use (another, when a proxy
/// stands in front of it), its cluster bus port, its directory (holding `nodes.conf`, so
/// that a restarted node rejoins with its slots) and its process.
struct Node {
    port: u16,
    announced_port: u16,
    bus_port: u16,
    dir: PathBuf,
    /// TLS only, with the certificates in this directory (`ca.crt`, `server.crt`,
    /// `server.key`, for 127.0.0.1).
    tls: Option<PathBuf>,
    child: Option<Child>,
}

impl Node {
    fn log_path(&self) -> PathBuf {
        self.dir.join("redis.log")
    }

    /// Starts the process; `false` if it exited (a port was taken).
    fn spawn(&mut self) -> bool {
        let _ = std::fs::remove_file(self.log_path());
        let mut command = Command::new("redis-server");
        command.args(["--bind", "127.0.0.1", "--daemonize", "no"]);
        match &self.tls {
            None => command.args(["--port", &self.port.to_string()]),
            Some(certificates) => command
                .args(["--port", "0", "--tls-port", &self.port.to_string(), "--tls-cluster", "yes"])
                .args(["--tls-auth-clients", "no"])
                .arg("--tls-cert-file")
                .arg(certificates.join("server.crt"))
                .arg("--tls-key-file")
                .arg(certificates.join("server.key"))
                .arg("--tls-ca-cert-file")
                .arg(certificates.join("ca.crt")),
        };
        command.args(["--save", "", "--appendonly", "no", "--cluster-enabled", "yes"]);
        command.args(["--cluster-port", &self.bus_port.to_string(), "--cluster-node-timeout", "2000"]);
        // A replica takes over however long ago it last heard from its master.
        command.args(["--cluster-config-file", "nodes.conf", "--cluster-replica-validity-factor", "0"]);
        if self.announced_port != self.port {
            command.args(["--cluster-announce-port", &self.announced_port.to_string()]);
            command.args(["--cluster-announce-bus-port", &self.bus_port.to_string()]);
        }
        command.arg("--dir").arg(&self.dir).arg("--logfile").arg(self.log_path());
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        self.child = Some(command.spawn().expect("redis-server must be on PATH to run these tests"));
        let deadline = Instant::now() + PATIENCE;
        while Instant::now() < deadline {
            if self.child.as_mut().is_some_and(|c| matches!(c.try_wait(), Ok(Some(_)))) {
                self.child = None;
                return false;
            }
            let ready =
                std::fs::read_to_string(self.log_path()).is_ok_and(|l| l.to_lowercase().contains(READY));
            if ready && self.query::<String>(&redis::cmd("PING")).is_ok_and(|p| p == "PONG") {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("cluster node on port {} did not start within {PATIENCE:?}", self.port);
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Runs one command on this node alone.
    fn query<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> redis::RedisResult<T> {
        let client = match &self.tls {
            None => redis::Client::open(format!("redis://127.0.0.1:{}", self.port))?,
            Some(certificates) => {
                let root_cert = std::fs::read(certificates.join("ca.crt"))?;
                let certificates = redis::TlsCertificates { client_tls: None, root_cert: Some(root_cert) };
                redis::Client::build_with_tls(format!("rediss://127.0.0.1:{}", self.port), certificates)?
            }
        };
        let mut connection = client.get_connection_with_timeout(Duration::from_secs(1))?;
        cmd.query(&mut connection)
    }
}

/// A running three-master cluster.
pub struct RedisCluster {
    dir: PathBuf,
    /// The masters first, then their replicas, if any.
    nodes: Vec<Node>,
    tls: bool,
}

impl RedisCluster {
    /// Starts three nodes and joins them into a cluster whose every slot is served.
    pub fn start() -> Self {
        Self::start_with(None, 0, |port| port)
    }

    /// As [`RedisCluster::start`], with a replica per master: a master that stops is
    /// replaced by its replica (failover) after the node timeout, 2 s.
    pub fn start_with_replicas() -> Self {
        Self::start_with(None, 1, |port| port)
    }

    /// As [`RedisCluster::start`], but each node tells clients to reach it on
    /// `announce(its port)`: the port of a proxy in front of it.
    pub fn start_announcing(announce: impl FnMut(u16) -> u16) -> Self {
        Self::start_with(None, 0, announce)
    }

    /// As [`RedisCluster::start`], over TLS only (clients and the cluster bus), with the
    /// certificates in `certificates` (`ca.crt`, and `server.crt` and `server.key` for
    /// 127.0.0.1).
    pub fn start_tls(certificates: &std::path::Path) -> Self {
        Self::start_with(Some(certificates.to_owned()), 0, |port| port)
    }

    fn start_with(tls: Option<PathBuf>, replicas: usize, mut announce: impl FnMut(u16) -> u16) -> Self {
        let dir = temp_dir();
        let mut nodes = Vec::new();
        for n in 0..MASTERS * (1 + replicas) {
            let node_dir = dir.join(format!("node-{n}"));
            std::fs::create_dir_all(&node_dir).expect("create a node directory");
            // A free port can be taken by another test before the node binds it: try again.
            let node = (0..5)
                .find_map(|_| {
                    let port = free_port();
                    let announced_port = announce(port);
                    let bus_port = free_port();
                    let mut node = Node {
                        port,
                        announced_port,
                        bus_port,
                        dir: node_dir.clone(),
                        tls: tls.clone(),
                        child: None,
                    };
                    node.spawn().then_some(node)
                })
                .unwrap_or_else(|| panic!("cluster node {n} did not start"));
            nodes.push(node);
        }
        let cluster = Self { dir, nodes, tls: tls.is_some() };
        let mut command = Command::new("redis-cli");
        if let Some(certificates) = &tls {
            command.arg("--tls").arg("--cacert").arg(certificates.join("ca.crt"));
        }
        // It waits until the nodes have met: bounded, in case they never do.
        let mut create = command
            .arg("--cluster")
            .arg("create")
            .args(cluster.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)))
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-cli must be on PATH to run these tests");
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(status) = create.try_wait().expect("wait for redis-cli") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = create.kill();
                let _ = create.wait();
                panic!("redis-cli --cluster create did not finish within {PATIENCE:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(status.success(), "redis-cli --cluster create failed: {status}");
        cluster.wait_until_ok();
        cluster
    }

    /// `redis+cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3`, with the ports the nodes
    /// announce.
    pub fn url(&self) -> String {
        let nodes: Vec<String> =
            self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.announced_port)).collect();
        let scheme = if self.tls { "rediss" } else { "redis" };
        format!("{scheme}+cluster://{}", nodes.join(","))
    }

    /// Waits until every node says the cluster is up (every slot served) and knows every
    /// other node.
    pub fn wait_until_ok(&self) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let ok = self.nodes.iter().all(|node| {
                node.query::<String>(redis::cmd("CLUSTER").arg("INFO")).is_ok_and(|info| {
                    info.contains("cluster_state:ok")
                        && info.contains(&format!("cluster_known_nodes:{}", self.nodes.len()))
                })
            });
            if ok {
                return;
            }
            assert!(Instant::now() < deadline, "the cluster did not come up within {PATIENCE:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The keys each node holds, sorted, node by node.
    pub fn keys_by_node(&self) -> Vec<Vec<String>> {
        self.nodes
            .iter()
            .map(|node| {
                let mut keys: Vec<String> = node.query(redis::cmd("KEYS").arg("*")).expect("KEYS");
                keys.sort();
                keys
            })
            .collect()
    }

    /// The index of the running node serving `key`'s slot.
    pub fn node_of(&self, key: &str) -> usize {
        let running = || self.nodes.iter().filter(|node| node.child.is_some());
        let slot: u16 = running()
            .next()
            .expect("a running node")
            .query(redis::cmd("CLUSTER").arg("KEYSLOT").arg(key))
            .expect("KEYSLOT");
        self.nodes
            .iter()
            .position(|node| {
                if node.child.is_none() {
                    return false;
                }
                // `CLUSTER NODES`: the line flagged `myself` lists this node's slot ranges
                // from its ninth field on.
                let nodes: String = node.query(redis::cmd("CLUSTER").arg("NODES")).expect("CLUSTER NODES");
                let myself = nodes.lines().find(|line| line.contains("myself")).unwrap_or_default().to_owned();
                myself.split(' ').skip(8).any(|range| {
                    let (from, to) = range.split_once('-').unwrap_or((range, range));
                    matches!((from.parse::<u16>(), to.parse::<u16>()), (Ok(from), Ok(to)) if (from..=to).contains(&slot))
                })
            })
            .unwrap_or_else(|| panic!("no node serves slot {slot} of {key:?}"))
    }

    /// The node id of node `index`.
    pub fn id(&self, index: usize) -> String {
        self.nodes[index].query(redis::cmd("CLUSTER").arg("MYID")).expect("CLUSTER MYID")
    }

    /// Moves the slot of `key` (which must hold no key) to node `to`, on every node: a
    /// client with the old slot map gets MOVED.
    pub fn move_slot_of(&self, key: &str, to: usize) {
        let slot: u16 = self.nodes[0].query(redis::cmd("CLUSTER").arg("KEYSLOT").arg(key)).expect("KEYSLOT");
        let id = self.id(to);
        // The new owner first, then the others (Redis Cluster specification, resharding).
        let order = std::iter::once(to).chain((0..self.nodes.len()).filter(|n| *n != to));
        for n in order {
            let _: () = self.nodes[n]
                .query(redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg("NODE").arg(&id))
                .expect("CLUSTER SETSLOT NODE");
        }
        let deadline = Instant::now() + PATIENCE;
        while self.node_of(key) != to {
            assert!(Instant::now() < deadline, "slot {slot} did not move");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Runs one command on node `index` alone (not through its proxy).
    pub fn query<T: redis::FromRedisValue>(&self, index: usize, cmd: &redis::Cmd) -> T {
        self.nodes[index].query(cmd).expect("a command on one node")
    }

    /// Kills node `index` (SIGKILL).
    pub fn stop_node(&mut self, index: usize) {
        self.nodes[index].stop();
    }

    /// Starts a stopped node again on its ports, with its `nodes.conf`: it rejoins
    /// serving its slots (empty: nothing was persisted).
    pub fn restart_node(&mut self, index: usize) {
        assert!(self.nodes[index].spawn(), "cluster node {index} did not restart");
        self.wait_until_ok();
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            node.stop();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A port nobody listens on right now.
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local address").port()
}

/// A new directory under the system's temporary directory.
fn temp_dir() -> PathBuf {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let name = format!(
        "slotcron-cluster-{}-{}-{nanos}",
        std::process::id(),
        SEQUENCE.fetch_add(1, Ordering::Relaxed)
    );
    let path = std::env::temp_dir().join(name);
    std::fs::create_dir_all(&path).expect("create a temporary directory");
    path
}
