//! One proxy port per broker name, relaying each connection byte for byte to that broker's
//! master (the latest master a route named). Connections are bounded; a relay ends when
//! either side closes or the proxy stops.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::io::copy_bidirectional;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Relayed connections at once, over every broker port.
const MAX_CONNECTIONS: usize = 10_000;
/// Broker names given a port; names registered beyond it get none (a route naming them
/// is answered with an error) rather than the proxy binding without bound.
const MAX_BROKER_PORTS: usize = 1_024;

struct BrokerPort {
    port: u16,
    /// Where new connections go: the master the latest route named.
    master: Arc<Mutex<String>>,
}

pub struct Relays {
    bind: String,
    ports: tokio::sync::Mutex<HashMap<String, BrokerPort>>,
    connections: Arc<Semaphore>,
    stop: CancellationToken,
}

impl Relays {
    pub fn new(bind: String, stop: CancellationToken) -> Self {
        Self {
            bind,
            ports: tokio::sync::Mutex::new(HashMap::new()),
            connections: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
            stop,
        }
    }

    /// The port of `broker` (bound the first time), whose connections now go to `master`.
    pub async fn port_for(&self, broker: &str, master: &str) -> std::io::Result<u16> {
        let mut ports = self.ports.lock().await;
        if let Some(known) = ports.get(broker) {
            let mut current = known.master.lock();
            if *current != master {
                tracing::info!(broker, from = %current, to = master, "relay follows the new master");
                master.clone_into(&mut current);
            }
            return Ok(known.port);
        }
        if ports.len() >= MAX_BROKER_PORTS {
            return Err(std::io::Error::other(format!(
                "the proxy relays at most {MAX_BROKER_PORTS} broker names"
            )));
        }
        let listener = TcpListener::bind(format!("{}:0", self.bind)).await?;
        let port = listener.local_addr()?.port();
        let target = Arc::new(Mutex::new(master.to_owned()));
        tokio::spawn(accept_loop(
            listener,
            broker.to_owned(),
            target.clone(),
            self.connections.clone(),
            self.stop.clone(),
        ));
        tracing::info!(broker, port, master, "relay port opened");
        ports.insert(
            broker.to_owned(),
            BrokerPort {
                port,
                master: target,
            },
        );
        Ok(port)
    }

    pub fn stop(&self) {
        self.stop.cancel();
    }
}

async fn accept_loop(
    listener: TcpListener,
    broker: String,
    master: Arc<Mutex<String>>,
    connections: Arc<Semaphore>,
    stop: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let (client, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(%broker, error = %e, "relay accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            tracing::warn!(%broker, %peer, "relay connection refused: too many relayed connections");
            continue;
        };
        let target = master.lock().clone();
        let stop = stop.clone();
        let broker = broker.clone();
        tokio::spawn(async move {
            let _permit = permit;
            if let Err(e) = relay(client, &target, &stop).await {
                tracing::debug!(%broker, %peer, %target, error = %e, "relay ended");
            }
        });
    }
}

async fn relay(
    mut client: TcpStream,
    target: &str,
    stop: &CancellationToken,
) -> std::io::Result<()> {
    let mut upstream = TcpStream::connect(target).await?;
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    tokio::select! {
        _ = stop.cancelled() => Ok(()),
        copied = copy_bidirectional(&mut client, &mut upstream) => copied.map(drop),
    }
}
