//! A TCP forwarder on loopback between a daemon and its server, which a test can cut (a
//! partition: every connection closed, new ones refused) and heal. It forwards bytes and
//! knows nothing of any protocol.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Forwards connections made to [`Proxy::addr`] to `upstream` until dropped.
pub struct Proxy {
    addr: SocketAddr,
    cut: Arc<AtomicBool>,
    links: Arc<Mutex<Vec<TcpStream>>>,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    pub fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (cut, links, stop) =
            (Arc::new(AtomicBool::new(false)), Arc::default(), Arc::new(AtomicBool::new(false)));
        let proxy = Self { addr, cut: cut.clone(), links: Arc::clone(&links), stop: stop.clone() };
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) if !cut.load(Ordering::SeqCst) => forward(client, upstream, &links),
                    Ok((client, _)) => drop(client),
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        proxy
    }

    /// Where the daemon connects.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Cuts the link: every connection closed, new ones refused until [`Proxy::heal`].
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for link in self.links.lock().unwrap().drain(..) {
            let _ = link.shutdown(Shutdown::Both);
        }
    }

    pub fn heal(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.cut();
    }
}

/// Copies both ways between `client` and a new connection to `upstream`.
fn forward(client: TcpStream, upstream: SocketAddr, links: &Mutex<Vec<TcpStream>>) {
    let Ok(server) = TcpStream::connect(upstream) else { return };
    let (Ok(client_back), Ok(server_back)) = (client.try_clone(), server.try_clone()) else { return };
    if let (Ok(a), Ok(b)) = (client.try_clone(), server.try_clone()) {
        links.lock().unwrap().extend([a, b]);
    }
    std::thread::spawn(move || copy(client, server));
    std::thread::spawn(move || copy(server_back, client_back));
}

fn copy(mut from: TcpStream, mut to: TcpStream) {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) if to.write_all(&buffer[..n]).is_ok() => {}
            Ok(_) => break,
        }
    }
    let _ = to.shutdown(Shutdown::Both);
}
