//! The remoting client: one reusable connection per address.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use super::channel::{Channel, ChannelConfig, InboundHandler, PendingResponse, SlowReader};
use super::deadline;
use super::error::RemotingError;
use super::tls::ClientTls;
use crate::protocol::signature::{self, SessionCredentials};
use crate::protocol::{RemotingCommand, ResponseCode};

/// Client settings (RocketMQ's NettyClientConfig defaults).
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub connect_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_frame_size: usize,
    /// Plain-ACL credentials: when set, every request this client sends (sync, async and
    /// oneway) is signed as its last step before the wire, as RocketMQ's `AclClientRPCHook`
    /// signs. Responses to server-to-client requests are not signed (RocketMQ's are not).
    pub credentials: Option<SessionCredentials>,
    /// TLS on every connection (`tls.enable`); `None` is plaintext.
    pub tls: Option<ClientTls>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(3),
            idle_timeout: Duration::from_secs(120),
            max_frame_size: crate::protocol::frame::DEFAULT_MAX_FRAME_SIZE,
            credentials: None,
            tls: None,
        }
    }
}

/// Server-to-client requests nobody registered for are answered REQUEST_CODE_NOT_SUPPORTED.
struct NotSupported;

impl InboundHandler for NotSupported {
    fn on_request(&self, channel: Channel, request: RemotingCommand, _received_at: Instant) {
        if !request.is_oneway() {
            channel.try_send(request.not_supported_to());
        }
    }
}

type Slot = Arc<tokio::sync::Mutex<Option<Channel>>>;

/// Connections by `ip:port`, created on first use and replaced after they fail.
pub struct RemotingClient {
    config: ClientConfig,
    handler: Arc<dyn InboundHandler>,
    /// One slot per address; its async lock serialises connecting to that address only.
    channels: parking_lot::Mutex<HashMap<String, Slot>>,
    /// The last connection made to each address, for the common case of a request on a
    /// live connection (one read lock, no connect slot).
    open: parking_lot::RwLock<HashMap<String, Channel>>,
    shutdown: CancellationToken,
}

impl RemotingClient {
    pub fn new(config: ClientConfig) -> Self {
        Self::with_handler(config, Arc::new(NotSupported))
    }

    /// A client whose connections hand server-to-client requests to `handler`.
    pub fn with_handler(config: ClientConfig, handler: Arc<dyn InboundHandler>) -> Self {
        Self {
            config,
            handler,
            channels: parking_lot::Mutex::new(HashMap::new()),
            open: parking_lot::RwLock::new(HashMap::new()),
            shutdown: CancellationToken::new(),
        }
    }

    /// The live connection to `addr`, connecting if there is none. Requests sent on the
    /// channel itself bypass this client's signing; send through [`Self::invoke`],
    /// [`Self::start_request`] or [`Self::invoke_oneway`] instead.
    pub async fn channel(&self, addr: &str) -> Result<Channel, RemotingError> {
        match self.connected(addr) {
            Some(channel) => Ok(channel),
            // Boxed: connecting (TLS handshake included) makes a future of kilobytes, which
            // every request's future would otherwise carry inline for a path taken once.
            None => Box::pin(self.open_channel(addr)).await,
        }
    }

    /// Connects to `addr` unless a concurrent caller just did; one connect per address at a time.
    async fn open_channel(&self, addr: &str) -> Result<Channel, RemotingError> {
        let slot = self
            .channels
            .lock()
            .entry(addr.to_owned())
            .or_default()
            .clone();
        let mut current = slot.lock().await;
        if let Some(channel) = current.as_ref().filter(|c| !c.is_closed()) {
            return Ok(channel.clone());
        }
        let channel = self.connect(addr).await?;
        *current = Some(channel.clone());
        self.open.write().insert(addr.to_owned(), channel.clone());
        Ok(channel)
    }

    /// The open connection to `addr`, if there is one.
    fn connected(&self, addr: &str) -> Option<Channel> {
        self.open
            .read()
            .get(addr)
            .filter(|c| !c.is_closed())
            .cloned()
    }

    /// The one step every outbound request passes last: signing, when credentials are set.
    fn seal(&self, mut request: RemotingCommand) -> RemotingCommand {
        if let Some(credentials) = &self.config.credentials {
            signature::sign(&mut request, credentials);
        }
        request
    }

    /// Connects, and with TLS runs the handshake, within the connect timeout.
    async fn connect(&self, addr: &str) -> Result<Channel, RemotingError> {
        let timeout = self.config.connect_timeout;
        let timed_out = || RemotingError::ConnectTimeout {
            addr: addr.to_owned(),
            timeout,
        };
        let failed = |source| RemotingError::Connect {
            addr: addr.to_owned(),
            source,
        };
        let started = Instant::now();
        let stream = tokio::time::timeout(timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| timed_out())?
            .map_err(failed)?;
        let config = ChannelConfig {
            idle_timeout: self.config.idle_timeout,
            max_frame_size: self.config.max_frame_size,
            slow_reader: SlowReader::Wait,
            ..ChannelConfig::default()
        };
        let Some(tls) = &self.config.tls else {
            return Channel::spawn(
                stream,
                self.handler.clone(),
                config,
                self.shutdown.child_token(),
            )
            .map_err(failed);
        };
        let peer = stream.peer_addr().map_err(failed)?;
        let local = stream.local_addr().map_err(failed)?;
        stream.set_nodelay(true).map_err(failed)?;
        let handshake = tls.connect(addr, stream);
        let stream = tokio::time::timeout(timeout.saturating_sub(started.elapsed()), handshake)
            .await
            .map_err(|_| timed_out())?
            .map_err(|source| RemotingError::TlsHandshake {
                addr: addr.to_owned(),
                source,
            })?;
        Ok(Channel::spawn_stream(
            stream,
            peer,
            local,
            self.handler.clone(),
            config,
            self.shutdown.child_token(),
        ))
    }

    /// Sends `request` to `addr` and waits up to `timeout` (connecting included).
    pub async fn invoke(
        &self,
        addr: &str,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, RemotingError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let request = self.seal(request);
        let channel = deadline::until(deadline, self.channel(addr))
            .await
            .ok_or_else(|| RemotingError::Timeout {
                addr: addr.to_owned(),
                timeout,
            })??;
        let result = channel.invoke_until(request, deadline, timeout).await;
        match &result {
            // The next call reconnects.
            Err(RemotingError::ConnectionClosed { .. }) => channel.close(),
            // A peer that sent nothing for the whole wait is gone (a cut network leaves the
            // socket open): the next call dials again instead of waiting on it too. A slow
            // answer on a connection that carries others is no reason to close it.
            Err(RemotingError::Timeout { .. }) if channel.silent_for() >= timeout => {
                tracing::info!(%addr, silent_ms = channel.silent_for().as_millis() as u64, "closing a connection that answered nothing within the timeout");
                channel.close();
            }
            _ => {}
        }
        result
    }

    /// Like [`Self::invoke`], but a response code other than SUCCESS becomes
    /// [`RemotingError::Remote`].
    pub async fn invoke_ok(
        &self,
        addr: &str,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, RemotingError> {
        let response = self.invoke(addr, request, timeout).await?;
        if response.code == ResponseCode::SUCCESS.as_i32() {
            Ok(response)
        } else {
            Err(RemotingError::Remote {
                addr: addr.to_owned(),
                code: response.code,
                remark: response.remark_str().to_owned(),
            })
        }
    }

    /// Writes `request` now and returns its response as a future to await later.
    pub async fn start_request(
        &self,
        addr: &str,
        request: RemotingCommand,
    ) -> Result<PendingResponse, RemotingError> {
        let request = self.seal(request);
        self.channel(addr).await?.start_request(request).await
    }

    /// Sends a oneway request.
    pub async fn invoke_oneway(
        &self,
        addr: &str,
        request: RemotingCommand,
    ) -> Result<(), RemotingError> {
        let request = self.seal(request);
        self.channel(addr).await?.invoke_oneway(request).await
    }

    /// Closes the connection to `addr`, if any.
    pub async fn close_channel(&self, addr: &str) {
        self.open.write().remove(addr);
        let slot = self.channels.lock().remove(addr);
        if let Some(slot) = slot {
            if let Some(channel) = slot.lock().await.take() {
                channel.close();
            }
        }
    }

    /// Closes every connection.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        self.open.write().clear();
        let slots: Vec<Slot> = self.channels.lock().drain().map(|(_, s)| s).collect();
        for slot in slots {
            if let Some(channel) = slot.lock().await.take() {
                channel.close();
            }
        }
    }
}
