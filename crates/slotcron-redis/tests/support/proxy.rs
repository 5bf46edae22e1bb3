//! A TCP forwarder between a coordinator and a real `redis-server` that can lose one
//! message on purpose, as a network can: the lost-reply tests need a claim whose script
//! ran on the server but whose reply never arrived. It forwards bytes and knows nothing
//! of the Redis protocol.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The next fault to inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forward everything.
    None,
    /// Swallow the next bytes from the server and close the connection.
    LoseNextReply,
    /// Swallow the next bytes from the client and close the connection.
    LoseNextRequest,
}

#[derive(Debug)]
struct State {
    fault: Fault,
    /// Close new connections at once.
    refuse: bool,
    /// How many messages were lost on purpose.
    lost: usize,
}

/// Forwards connections from a local port to `upstream`.
pub struct FaultProxy {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl FaultProxy {
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the proxy");
        let addr = listener.local_addr().expect("proxy address");
        let state = Arc::new(Mutex::new(State { fault: Fault::None, refuse: false, lost: 0 }));
        let shared = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if shared.lock().unwrap().refuse {
                    continue; // dropped: closed at once
                }
                let Ok(server) = TcpStream::connect(upstream).await else { continue };
                tokio::spawn(forward(client, server, shared.clone()));
            }
        });
        Self { addr, state, task }
    }

    /// The URL of the proxy.
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Arms the next fault.
    pub fn inject(&self, fault: Fault) {
        self.state.lock().unwrap().fault = fault;
    }

    /// From now on, close every new connection at once (`true`), or forward again.
    pub fn refuse(&self, refuse: bool) {
        self.state.lock().unwrap().refuse = refuse;
    }

    /// How many messages were lost on purpose so far.
    pub fn lost(&self) -> usize {
        self.state.lock().unwrap().lost
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Forwards both ways until either side closes or a fault drops the connection.
async fn forward(mut client: TcpStream, mut server: TcpStream, state: Arc<Mutex<State>>) {
    let (mut up, mut down) = ([0u8; 16 * 1024], [0u8; 16 * 1024]);
    let take = |fault: Fault| {
        let mut state = state.lock().unwrap();
        let hit = state.fault == fault;
        if hit {
            state.fault = Fault::None;
            state.lost += 1;
        }
        hit
    };
    loop {
        tokio::select! {
            read = client.read(&mut up) => {
                let n = match read { Ok(0) | Err(_) => return, Ok(n) => n };
                if take(Fault::LoseNextRequest) || server.write_all(&up[..n]).await.is_err() {
                    return;
                }
            }
            read = server.read(&mut down) => {
                let n = match read { Ok(0) | Err(_) => return, Ok(n) => n };
                if take(Fault::LoseNextReply) || client.write_all(&down[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}
