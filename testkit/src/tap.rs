//! A TCP relay that records what passes through it, to show that two peers really met
//! before a test asserts what did not happen between them (e.g. that a master streamed
//! nothing to a slave it refused, not merely that the slave never reached it).

use std::sync::Arc;

use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// One side of a relayed connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The peer that connected to the tap.
    Client,
    /// The peer the tap connected to.
    Server,
}

/// What passed through one relayed connection (every byte: taps are for short exchanges).
#[derive(Debug, Clone, Default)]
pub struct Flow {
    /// Bytes the client sent.
    pub from_client: Vec<u8>,
    /// Bytes the server sent.
    pub from_server: Vec<u8>,
    /// The side that closed the connection (or failed) first, once one did; the tap then
    /// closes the other side too.
    pub closed_by: Option<Side>,
}

/// Relays every connection to `127.0.0.1:<its port>` to a target address, recording each
/// [`Flow`]. Dropping it stops accepting connections.
pub struct TcpTap {
    addr: String,
    flows: Arc<Mutex<Vec<Arc<Mutex<Flow>>>>>,
    accept: JoinHandle<()>,
}

impl TcpTap {
    /// Starts relaying to `target`.
    pub async fn start(target: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("the tap listens");
        let addr = listener
            .local_addr()
            .expect("the tap's address")
            .to_string();
        let flows: Arc<Mutex<Vec<Arc<Mutex<Flow>>>>> = Arc::default();
        let (target, recorded) = (target.to_owned(), flows.clone());
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let flow = Arc::new(Mutex::new(Flow::default()));
                recorded.lock().push(flow.clone());
                let target = target.clone();
                tokio::spawn(async move {
                    match TcpStream::connect(&target).await {
                        Ok(server) => relay(client, server, &flow).await,
                        Err(_) => flow.lock().closed_by = Some(Side::Server),
                    }
                });
            }
        });
        Self {
            addr,
            flows,
            accept,
        }
    }

    /// The address to connect to instead of the target.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Every connection so far, in the order they were accepted.
    pub fn flows(&self) -> Vec<Flow> {
        self.flows.lock().iter().map(|f| f.lock().clone()).collect()
    }

    /// The first connection that `side` closed, if any.
    pub fn closed_by(&self, side: Side) -> Option<Flow> {
        self.flows().into_iter().find(|f| f.closed_by == Some(side))
    }
}

impl Drop for TcpTap {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn relay(client: TcpStream, server: TcpStream, flow: &Mutex<Flow>) {
    let (mut client_rx, mut client_tx) = client.into_split();
    let (mut server_rx, mut server_tx) = server.into_split();
    let mut from_client = vec![0u8; 16 * 1024];
    let mut from_server = vec![0u8; 16 * 1024];
    let closed_by = loop {
        tokio::select! {
            read = client_rx.read(&mut from_client) => match read {
                Ok(n) if n > 0 => {
                    flow.lock().from_client.extend_from_slice(&from_client[..n]);
                    if server_tx.write_all(&from_client[..n]).await.is_err() {
                        break Side::Server;
                    }
                }
                _ => break Side::Client,
            },
            read = server_rx.read(&mut from_server) => match read {
                Ok(n) if n > 0 => {
                    flow.lock().from_server.extend_from_slice(&from_server[..n]);
                    if client_tx.write_all(&from_server[..n]).await.is_err() {
                        break Side::Client;
                    }
                }
                _ => break Side::Server,
            },
        }
    };
    flow.lock().closed_by = Some(closed_by);
}
