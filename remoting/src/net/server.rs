//! The remoting server: accept loop, processor registry, graceful shutdown.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::channel::{Channel, ChannelConfig, InboundHandler, SlowReader};
use super::processor::{Lane, RequestObserver, RequestProcessor, ServerSide};
use super::tls::{Accepted, ServerTls};
use crate::protocol::{RemotingCommand, RequestCode};

/// Server settings (RocketMQ's NettyServerConfig, where they exist).
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to bind; port 0 picks a free port.
    pub listen_addr: SocketAddr,
    /// Connections accepted at once; more are closed right after accept.
    pub max_connections: usize,
    /// `serverChannelMaxIdleTimeSeconds`.
    pub idle_timeout: Duration,
    /// `com.rocketmq.remoting.frameMaxLength`.
    pub max_frame_size: usize,
    /// How long shutdown waits for in-flight requests.
    pub shutdown_grace: Duration,
    /// Requests of one connection processed at once; beyond it that socket is not read.
    pub max_in_flight_per_connection: usize,
    /// Bytes queued for a connection before it counts as a slow reader and is closed.
    pub max_write_buffer_bytes: usize,
    /// A write to a connection that makes no progress for this long closes it.
    pub write_stall_timeout: Duration,
    /// TLS on this port (`permissive` or `enforcing`); `None` is plaintext only.
    pub tls: Option<ServerTls>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen_addr: SocketAddr::from(([0, 0, 0, 0], 0)),
            max_connections: 10_000,
            idle_timeout: Duration::from_secs(120),
            max_frame_size: crate::protocol::frame::DEFAULT_MAX_FRAME_SIZE,
            shutdown_grace: Duration::from_secs(10),
            max_in_flight_per_connection: 1024,
            max_write_buffer_bytes: 64 * 1024 * 1024,
            write_stall_timeout: Duration::from_secs(30),
            tls: None,
        }
    }
}

/// Told about connections as they open and close (the name server drops a broker whose
/// connection closes; the broker forgets a client's channel).
pub trait ConnectionListener: Send + Sync + 'static {
    fn on_connect(&self, _channel: &Channel) {}
    fn on_close(&self, _channel: &Channel) {}
}

struct Route {
    processor: Arc<dyn RequestProcessor>,
    lane: Arc<Lane>,
}

struct Registry {
    routes: HashMap<i32, Route>,
    default_route: Option<Route>,
    listeners: Vec<Arc<dyn ConnectionListener>>,
    observer: Option<Arc<dyn RequestObserver>>,
    tracker: TaskTracker,
    channels: Mutex<HashMap<u64, Channel>>,
}

impl Registry {
    /// Counts a new connection in and tells the connection listeners.
    fn admit(&self, channel: &Channel) {
        self.channels.lock().insert(channel.id(), channel.clone());
        for listener in &self.listeners {
            listener.on_connect(channel);
        }
    }
}

impl InboundHandler for Registry {
    fn on_request(&self, channel: Channel, request: RemotingCommand, received_at: Instant) {
        let route = self
            .routes
            .get(&request.code)
            .or(self.default_route.as_ref());
        match route {
            Some(route) => {
                let in_flight = channel.begin_request();
                route.lane.dispatch(
                    route.processor.clone(),
                    channel,
                    request,
                    received_at,
                    in_flight,
                    &ServerSide {
                        tracker: &self.tracker,
                        observer: self.observer.as_ref(),
                    },
                )
            }
            None => {
                tracing::debug!(code = request.code, peer = %channel.peer(), "request code not supported");
                if !request.is_oneway() {
                    channel.try_send(request.not_supported_to());
                }
            }
        }
    }

    fn on_close(&self, channel: &Channel) {
        self.channels.lock().remove(&channel.id());
        for listener in &self.listeners {
            listener.on_close(channel);
        }
    }
}

/// Builder: register processors, then [`RemotingServer::start`].
pub struct RemotingServer {
    config: ServerConfig,
    routes: HashMap<i32, Route>,
    /// Codes registered more than once: a wiring mistake that start refuses.
    duplicates: Vec<i32>,
    default_route: Option<Route>,
    listeners: Vec<Arc<dyn ConnectionListener>>,
    observer: Option<Arc<dyn RequestObserver>>,
}

impl RemotingServer {
    pub fn new(config: ServerConfig) -> Self {
        Self {
            config,
            routes: HashMap::new(),
            duplicates: Vec::new(),
            default_route: None,
            listeners: Vec::new(),
            observer: None,
        }
    }

    /// Serves `codes` with `processor` in `lane` (share a lane between registrations to share
    /// its bound).
    pub fn register(
        &mut self,
        codes: &[RequestCode],
        processor: Arc<dyn RequestProcessor>,
        lane: Arc<Lane>,
    ) -> &mut Self {
        for code in codes {
            let previous = self.routes.insert(
                code.as_i32(),
                Route {
                    processor: processor.clone(),
                    lane: lane.clone(),
                },
            );
            if previous.is_some() {
                self.duplicates.push(code.as_i32());
            }
        }
        self
    }

    /// Serves every code without a registration (instead of REQUEST_CODE_NOT_SUPPORTED).
    pub fn register_default(
        &mut self,
        processor: Arc<dyn RequestProcessor>,
        lane: Arc<Lane>,
    ) -> &mut Self {
        self.default_route = Some(Route { processor, lane });
        self
    }

    pub fn add_listener(&mut self, listener: Arc<dyn ConnectionListener>) -> &mut Self {
        self.listeners.push(listener);
        self
    }

    /// Tells `observer` about every answered request (metrics).
    pub fn set_observer(&mut self, observer: Arc<dyn RequestObserver>) -> &mut Self {
        self.observer = Some(observer);
        self
    }

    /// Binds and starts accepting.
    pub async fn start(self) -> std::io::Result<ServerHandle> {
        let listener = TcpListener::bind(self.config.listen_addr).await?;
        self.start_on(listener)
    }

    /// Starts accepting on an already bound listener (so callers can learn the port first).
    pub fn start_on(self, listener: TcpListener) -> std::io::Result<ServerHandle> {
        let local_addr = listener.local_addr()?;
        let mut starting = self.prepare()?;
        starting.tasks.push(tokio::spawn(accept_loop(
            listener,
            starting.registry.clone(),
            starting.config.clone(),
            starting.stop_accepting.clone(),
            starting.stop_reading.clone(),
        )));
        tracing::info!(addr = %local_addr, tls = ?starting.config.tls.as_ref().map(ServerTls::mode), "remoting server listening");
        Ok(starting.into_handle(local_addr))
    }

    /// Starts without a listener: connections come only from
    /// [`ServerHandle::connect_in_memory`]. For tests that drive the real processors without
    /// sockets, and for servers embedded in one process.
    pub fn start_detached(self) -> std::io::Result<ServerHandle> {
        let local_addr = self.config.listen_addr;
        Ok(self.prepare()?.into_handle(local_addr))
    }

    /// The checked request table, the stop tokens and the TLS reloader.
    fn prepare(self) -> std::io::Result<Starting> {
        if !self.duplicates.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "request codes registered more than once: {:?}",
                    self.duplicates
                ),
            ));
        }
        let registry = Arc::new(Registry {
            routes: self.routes,
            default_route: self.default_route,
            listeners: self.listeners,
            observer: self.observer,
            tracker: TaskTracker::new(),
            channels: Mutex::new(HashMap::new()),
        });
        let stop_accepting = CancellationToken::new();
        let mut tasks = Vec::new();
        if let Some(tls) = &self.config.tls {
            tasks.push(tls.spawn_reloader(stop_accepting.clone()));
        }
        Ok(Starting {
            registry,
            config: self.config,
            stop_accepting,
            stop_reading: CancellationToken::new(),
            tasks,
        })
    }
}

/// A server between its checked request table and its first connection.
struct Starting {
    registry: Arc<Registry>,
    config: ServerConfig,
    stop_accepting: CancellationToken,
    stop_reading: CancellationToken,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Starting {
    fn into_handle(self, local_addr: SocketAddr) -> ServerHandle {
        ServerHandle {
            local_addr,
            registry: self.registry,
            config: self.config,
            stop_accepting: self.stop_accepting,
            stop_reading: self.stop_reading,
            accept: Mutex::new(self.tasks),
        }
    }
}

/// How the server's connections read and write.
fn channel_config(config: &ServerConfig) -> ChannelConfig {
    ChannelConfig {
        idle_timeout: config.idle_timeout,
        max_frame_size: config.max_frame_size,
        max_in_flight_requests: config.max_in_flight_per_connection,
        max_write_buffer_bytes: config.max_write_buffer_bytes,
        write_stall_timeout: config.write_stall_timeout,
        // Responses are queued by shared lane workers: they must never wait on one peer.
        slow_reader: SlowReader::Disconnect,
    }
}

async fn accept_loop(
    listener: TcpListener,
    registry: Arc<Registry>,
    config: ServerConfig,
    stop_accepting: CancellationToken,
    stop_reading: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(config.max_connections));
    let channel_config = channel_config(&config);
    loop {
        let accepted = tokio::select! {
            _ = stop_accepting.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!(%peer, max = config.max_connections, "connection limit reached, closing new connection");
            drop(stream);
            continue;
        };
        let connection = Connection {
            registry: registry.clone(),
            config: channel_config.clone(),
            stop_reading: stop_reading.clone(),
            slot,
        };
        match &config.tls {
            None => connection.serve(Channel::spawn(
                stream,
                registry.clone(),
                channel_config.clone(),
                stop_reading.clone(),
            )),
            // Telling TLS from plaintext and the handshake wait on this peer alone.
            Some(tls) => {
                tokio::spawn(connection.accept(tls.clone(), stream, stop_accepting.clone()));
            }
        }
    }
}

/// An accepted connection holding its slot, on its way to becoming a [`Channel`].
struct Connection {
    registry: Arc<Registry>,
    config: ChannelConfig,
    stop_reading: CancellationToken,
    slot: OwnedSemaphorePermit,
}

impl Connection {
    /// Detects TLS, runs the handshake, then serves; a connection refused (plaintext on an
    /// enforcing port, a failed or slow handshake) is logged and closed.
    async fn accept(self, tls: ServerTls, stream: TcpStream, stop_accepting: CancellationToken) {
        let Ok(peer) = stream.peer_addr() else {
            return;
        };
        let local = stream.local_addr();
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(%peer, error = %e, "could not set TCP_NODELAY");
        }
        let accepted = tokio::select! {
            _ = stop_accepting.cancelled() => return,
            accepted = tls.accept(stream, self.config.idle_timeout) => accepted,
        };
        match (accepted, local) {
            (Ok(Accepted::Plain(stream)), _) => {
                let channel = Channel::spawn(
                    stream,
                    self.registry.clone(),
                    self.config.clone(),
                    self.stop_reading.clone(),
                );
                self.serve(channel)
            }
            (Ok(Accepted::Tls(stream)), Ok(local)) => {
                let channel = Channel::spawn_stream(
                    stream,
                    peer,
                    local,
                    self.registry.clone(),
                    self.config.clone(),
                    self.stop_reading.clone(),
                );
                self.serve(Ok(channel))
            }
            (Ok(Accepted::Tls(_)), Err(e)) => {
                tracing::debug!(%peer, error = %e, "could not set up connection")
            }
            (Err(reason), _) if reason.is_quiet() => {
                tracing::debug!(%peer, %reason, "connection closed")
            }
            (Err(reason), _) => tracing::warn!(%peer, %reason, "connection refused"),
        }
    }

    /// Registers the channel and holds the connection slot until it closes.
    fn serve(self, channel: std::io::Result<Channel>) {
        let channel = match channel {
            Ok(channel) => channel,
            Err(e) => {
                tracing::debug!(error = %e, "could not set up connection");
                return;
            }
        };
        self.registry.admit(&channel);
        let slot = self.slot;
        tokio::spawn(async move {
            channel.closed().await;
            drop(slot);
        });
    }
}

/// What an in-memory connection buffers each way (a socket's buffer, roughly).
const IN_MEMORY_PIPE_BYTES: usize = 256 * 1024;

/// A running server.
pub struct ServerHandle {
    local_addr: SocketAddr,
    registry: Arc<Registry>,
    stop_accepting: CancellationToken,
    config: ServerConfig,
    stop_reading: CancellationToken,
    accept: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl ServerHandle {
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Serves the same processors on a second listener too (RocketMQ's VIP channel on
    /// listenPort - 2); it stops with the server.
    pub fn also_accept(&self, listener: TcpListener) {
        if let Ok(addr) = listener.local_addr() {
            tracing::info!(%addr, "remoting server listening");
        }
        let accept = tokio::spawn(accept_loop(
            listener,
            self.registry.clone(),
            self.config.clone(),
            self.stop_accepting.clone(),
            self.stop_reading.clone(),
        ));
        self.accept.lock().push(accept);
    }

    /// A connection to this server over an in-memory pipe, served exactly as an accepted
    /// TCP connection is (lanes, limits, connection listeners) with `peer` as the client's
    /// address. Requests the server sends the client go to `handler`; the client's end is
    /// returned (use [`Channel::invoke`] on it).
    pub fn connect_in_memory(&self, peer: SocketAddr, handler: Arc<dyn InboundHandler>) -> Channel {
        let (client, server) = tokio::io::duplex(IN_MEMORY_PIPE_BYTES);
        let served = Channel::spawn_stream(
            server,
            peer,
            self.local_addr,
            self.registry.clone(),
            channel_config(&self.config),
            self.stop_reading.clone(),
        );
        self.registry.admit(&served);
        Channel::spawn_stream(
            client,
            self.local_addr,
            peer,
            handler,
            ChannelConfig::default(),
            CancellationToken::new(),
        )
    }

    /// Open connections.
    pub fn channels(&self) -> Vec<Channel> {
        self.registry.channels.lock().values().cloned().collect()
    }

    /// Stops accepting and reading, lets in-flight requests finish (up to the grace period)
    /// and write their responses, then closes every connection.
    pub async fn shutdown(&self) {
        self.stop_accepting.cancel();
        let accepts = std::mem::take(&mut *self.accept.lock());
        for accept in accepts {
            let _ = accept.await;
        }
        self.stop_reading.cancel();
        self.registry.tracker.close();
        if tokio::time::timeout(self.config.shutdown_grace, self.registry.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!(grace = ?self.config.shutdown_grace, "in-flight requests still running at shutdown");
        }
        for channel in self.channels() {
            channel.close();
        }
        tracing::info!(addr = %self.local_addr, "remoting server stopped");
    }
}
