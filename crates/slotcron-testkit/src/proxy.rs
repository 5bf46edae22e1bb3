//! A TCP forwarder between a coordinator and its real server that loses messages on
//! purpose, as a network can: lost-reply tests need claims that the server made but whose
//! reply never arrived. It forwards bytes and knows nothing of any protocol.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, JoinHandle};

/// The next fault a [`FaultProxy`] injects; each happens once, on whichever connection
/// first carries a message in its direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forward everything.
    None,
    /// Swallow the next bytes from the server and close the connection.
    LoseNextReply,
    /// Swallow the next bytes from the client and close the connection.
    LoseNextRequest,
    /// Swallow the next bytes from the server and everything after, both ways, keeping
    /// the connection open until the client closes it: a reply that never comes.
    HoldNextReply,
}

#[derive(Debug)]
struct State {
    fault: Fault,
    /// Close new connections at once.
    refuse: bool,
    /// How many messages were lost on purpose.
    lost: usize,
    /// The connections being forwarded.
    links: Vec<AbortHandle>,
}

/// Forwards the connections made to a local port (127.0.0.1, [`Self::addr`]) to a server,
/// losing what it is told to. Dropping it stops it and closes every connection.
///
/// It runs on the tokio runtime that starts it.
#[derive(Debug)]
pub struct FaultProxy {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: JoinHandle<()>,
}

impl FaultProxy {
    /// Listens on a free port of 127.0.0.1 and forwards each connection to `upstream`
    /// (a connection that `upstream` refuses is closed). Panics if it cannot listen.
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the proxy");
        let addr = listener.local_addr().expect("proxy address");
        let state =
            Arc::new(Mutex::new(State { fault: Fault::None, refuse: false, lost: 0, links: Vec::new() }));
        let shared = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if shared.lock().unwrap().refuse {
                    continue; // dropped: closed at once
                }
                let Ok(server) = TcpStream::connect(upstream).await else { continue };
                let link = tokio::spawn(forward(client, server, shared.clone()));
                let mut state = shared.lock().unwrap();
                state.links.retain(|link| !link.is_finished());
                state.links.push(link.abort_handle());
            }
        });
        Self { addr, state, task }
    }

    /// The address clients connect to instead of the server's.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Arms the next fault.
    pub fn inject(&self, fault: Fault) {
        self.state.lock().unwrap().fault = fault;
    }

    /// From now on, close every new connection at once (`true`), or forward again.
    pub fn refuse(&self, refuse: bool) {
        self.state.lock().unwrap().refuse = refuse;
    }

    /// Closes every connection it forwards now, whatever is in flight (the server learns
    /// of it only when it next reads or writes).
    pub fn cut(&self) {
        for link in self.state.lock().unwrap().links.drain(..) {
            link.abort();
        }
    }

    /// How many messages were lost (or held back) on purpose so far.
    pub fn lost(&self) -> usize {
        self.state.lock().unwrap().lost
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
        self.cut();
    }
}

/// Forwards both ways until either side closes or a fault drops the connection.
async fn forward(mut client: TcpStream, mut server: TcpStream, state: Arc<Mutex<State>>) {
    let (mut up, mut down) = ([0u8; 16 * 1024], [0u8; 16 * 1024]);
    let take = |faults: &[Fault]| {
        let mut state = state.lock().unwrap();
        let hit = faults.contains(&state.fault).then_some(state.fault);
        if hit.is_some() {
            state.fault = Fault::None;
            state.lost += 1;
        }
        hit
    };
    loop {
        tokio::select! {
            read = client.read(&mut up) => {
                let n = match read { Ok(0) | Err(_) => return, Ok(n) => n };
                if take(&[Fault::LoseNextRequest]).is_some() || server.write_all(&up[..n]).await.is_err() {
                    return;
                }
            }
            read = server.read(&mut down) => {
                let n = match read { Ok(0) | Err(_) => return, Ok(n) => n };
                match take(&[Fault::LoseNextReply, Fault::HoldNextReply]) {
                    Some(Fault::HoldNextReply) => return hold(client, server).await,
                    Some(_) => return,
                    None if client.write_all(&down[..n]).await.is_err() => return,
                    None => {}
                }
            }
        }
    }
}

/// Reads and drops everything from both sides until the client closes.
async fn hold(mut client: TcpStream, mut server: TcpStream) {
    let (mut up, mut down) = ([0u8; 16 * 1024], [0u8; 16 * 1024]);
    let mut server_open = true;
    loop {
        tokio::select! {
            read = client.read(&mut up) => if matches!(read, Ok(0) | Err(_)) { return },
            read = server.read(&mut down), if server_open => server_open = matches!(read, Ok(n) if n > 0),
        }
    }
}
