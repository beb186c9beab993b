//! One remoting connection, symmetric for servers and clients.
//!
//! A reader task decodes frames: responses complete the pending request with the same opaque
//! (the table is per connection, since opaques are only unique per sender), requests go to the
//! [`InboundHandler`]. A writer task drains a bounded queue and coalesces frames into one
//! socket write. Any decode error, I/O error or idle timeout closes this connection only.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::error::RemotingError;
use crate::protocol::command::FLAG_ONEWAY;
use crate::protocol::{frame, RemotingCommand};

/// Frames queued for writing before senders wait.
const WRITE_QUEUE: usize = 4096;
/// Coalesce queued frames into one write up to this many bytes.
const COALESCE_BYTES: usize = 256 * 1024;

/// Receives requests (not responses) that arrive on a channel.
pub trait InboundHandler: Send + Sync + 'static {
    fn on_request(&self, channel: Channel, request: RemotingCommand, received_at: Instant);
    /// Called once when the channel closes, for whatever reason.
    fn on_close(&self, _channel: &Channel) {}
}

/// Settings of one connection.
#[derive(Debug, Clone)]
pub struct ChannelConfig {
    /// Close the connection after this long with neither reads nor writes.
    pub idle_timeout: Duration,
    pub max_frame_size: usize,
}

impl Default for ChannelConfig {
    fn default() -> Self {
        Self {
            idle_timeout: Duration::from_secs(120),
            max_frame_size: frame::DEFAULT_MAX_FRAME_SIZE,
        }
    }
}

static NEXT_CHANNEL_ID: AtomicU64 = AtomicU64::new(1);

type PendingTable = Mutex<HashMap<i32, oneshot::Sender<RemotingCommand>>>;

struct Inner {
    id: u64,
    peer: SocketAddr,
    local: SocketAddr,
    tx: mpsc::Sender<RemotingCommand>,
    pending: PendingTable,
    next_opaque: AtomicI32,
    /// Cancelled when the connection is closed.
    closed: CancellationToken,
    /// Cancelled to stop reading new requests (graceful shutdown) while writes drain.
    stop_reading: CancellationToken,
    epoch: Instant,
    last_activity_ms: AtomicU64,
}

/// A cheap-to-clone handle to one connection.
#[derive(Clone)]
pub struct Channel {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("id", &self.inner.id)
            .field("peer", &self.inner.peer)
            .finish()
    }
}

impl PartialEq for Channel {
    fn eq(&self, other: &Self) -> bool {
        self.inner.id == other.inner.id
    }
}

impl Eq for Channel {}

impl std::hash::Hash for Channel {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.inner.id.hash(state);
    }
}

impl Channel {
    /// Takes over a connected stream and starts its reader and writer tasks.
    pub fn spawn(
        stream: TcpStream,
        handler: Arc<dyn InboundHandler>,
        config: ChannelConfig,
        stop_reading: CancellationToken,
    ) -> std::io::Result<Channel> {
        let peer = stream.peer_addr()?;
        let local = stream.local_addr()?;
        // Small request/response frames: latency matters more than packet count.
        stream.set_nodelay(true)?;
        let (read_half, write_half) = stream.into_split();
        let (tx, rx) = mpsc::channel(WRITE_QUEUE);
        let channel = Channel {
            inner: Arc::new(Inner {
                id: NEXT_CHANNEL_ID.fetch_add(1, Ordering::Relaxed),
                peer,
                local,
                tx,
                pending: Mutex::new(HashMap::new()),
                next_opaque: AtomicI32::new(1),
                closed: CancellationToken::new(),
                stop_reading,
                epoch: Instant::now(),
                last_activity_ms: AtomicU64::new(0),
            }),
        };
        tokio::spawn(write_loop(channel.clone(), write_half, rx));
        tokio::spawn(read_loop(channel.clone(), read_half, handler, config));
        Ok(channel)
    }

    pub fn id(&self) -> u64 {
        self.inner.id
    }

    pub fn peer(&self) -> SocketAddr {
        self.inner.peer
    }

    pub fn local(&self) -> SocketAddr {
        self.inner.local
    }

    pub fn is_closed(&self) -> bool {
        self.inner.closed.is_cancelled()
    }

    /// Resolves when the channel has closed.
    pub async fn closed(&self) {
        self.inner.closed.cancelled().await
    }

    /// Closes the connection; pending requests fail with `ConnectionClosed`.
    pub fn close(&self) {
        self.inner.closed.cancel();
    }

    fn touch(&self) {
        let ms = self.inner.epoch.elapsed().as_millis() as u64;
        self.inner.last_activity_ms.store(ms, Ordering::Relaxed);
    }

    fn idle_for(&self) -> Duration {
        let last = self.inner.last_activity_ms.load(Ordering::Relaxed);
        self.inner
            .epoch
            .elapsed()
            .saturating_sub(Duration::from_millis(last))
    }

    fn closed_error(&self) -> RemotingError {
        RemotingError::ConnectionClosed {
            addr: self.inner.peer.to_string(),
        }
    }

    /// Queues a frame, waiting while the write queue is full.
    pub async fn send(&self, command: RemotingCommand) -> Result<(), RemotingError> {
        if self.is_closed() {
            return Err(self.closed_error());
        }
        self.inner
            .tx
            .send(command)
            .await
            .map_err(|_| self.closed_error())
    }

    /// Queues a frame without waiting; returns false if the queue is full or closed.
    pub fn try_send(&self, command: RemotingCommand) -> bool {
        !self.is_closed() && self.inner.tx.try_send(command).is_ok()
    }

    /// Sends a request and returns the pending response without waiting for it.
    pub async fn start_request(
        &self,
        mut request: RemotingCommand,
    ) -> Result<PendingResponse, RemotingError> {
        let opaque = self.inner.next_opaque.fetch_add(1, Ordering::Relaxed);
        request.opaque = opaque;
        request.flag &= !FLAG_ONEWAY;
        let (tx, rx) = oneshot::channel();
        self.inner.pending.lock().insert(opaque, tx);
        let pending = PendingResponse {
            channel: self.clone(),
            opaque,
            rx,
        };
        self.send(request).await?;
        Ok(pending)
    }

    /// Sends a request and waits up to `timeout` for its response.
    pub async fn invoke(
        &self,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, RemotingError> {
        let started = Instant::now();
        let pending = tokio::time::timeout(timeout, self.start_request(request))
            .await
            .map_err(|_| self.timeout_error(timeout))??;
        pending
            .wait(timeout.saturating_sub(started.elapsed()))
            .await
    }

    /// Sends a request that expects no response.
    pub async fn invoke_oneway(&self, mut request: RemotingCommand) -> Result<(), RemotingError> {
        request.opaque = self.inner.next_opaque.fetch_add(1, Ordering::Relaxed);
        request.flag |= FLAG_ONEWAY;
        self.send(request).await
    }

    fn timeout_error(&self, timeout: Duration) -> RemotingError {
        RemotingError::Timeout {
            addr: self.inner.peer.to_string(),
            timeout,
        }
    }

    fn complete(&self, response: RemotingCommand) {
        let waiter = self.inner.pending.lock().remove(&response.opaque);
        match waiter {
            Some(tx) => {
                let _ = tx.send(response);
            }
            None => tracing::debug!(
                opaque = response.opaque,
                peer = %self.inner.peer,
                "response without a pending request (timed out?)"
            ),
        }
    }

    /// Number of requests awaiting a response on this connection.
    pub fn pending_requests(&self) -> usize {
        self.inner.pending.lock().len()
    }
}

/// A request on the wire whose response has not been awaited yet.
pub struct PendingResponse {
    channel: Channel,
    opaque: i32,
    rx: oneshot::Receiver<RemotingCommand>,
}

impl PendingResponse {
    /// Waits up to `timeout` for the response.
    pub async fn wait(mut self, timeout: Duration) -> Result<RemotingCommand, RemotingError> {
        match tokio::time::timeout(timeout, &mut self.rx).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(_)) => Err(self.channel.closed_error()),
            Err(_) => Err(self.channel.timeout_error(timeout)),
        }
    }
}

impl Drop for PendingResponse {
    fn drop(&mut self) {
        // A response that never came (timeout, cancelled caller) must not leak its entry.
        self.channel.inner.pending.lock().remove(&self.opaque);
    }
}

async fn read_loop(
    channel: Channel,
    mut reader: OwnedReadHalf,
    handler: Arc<dyn InboundHandler>,
    config: ChannelConfig,
) {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let reason = loop {
        let idle_left = config.idle_timeout.saturating_sub(channel.idle_for());
        if idle_left.is_zero() {
            break "idle timeout";
        }
        tokio::select! {
            _ = channel.inner.closed.cancelled() => break "closed",
            _ = channel.inner.stop_reading.cancelled() => {
                // Graceful shutdown: stop taking requests; the owner closes us after draining.
                channel.inner.closed.cancelled().await;
                break "shutdown";
            }
            _ = tokio::time::sleep(idle_left) => continue,
            read = reader.read_buf(&mut buf) => match read {
                Ok(0) => break "peer closed",
                Ok(_) => {
                    channel.touch();
                    if let Err(e) = dispatch_frames(&channel, &mut buf, handler.as_ref(), config.max_frame_size) {
                        tracing::warn!(peer = %channel.peer(), error = %e, "closing connection after a bad frame");
                        break "bad frame";
                    }
                }
                Err(e) => {
                    tracing::debug!(peer = %channel.peer(), error = %e, "read failed");
                    break "read error";
                }
            },
        }
    };
    tracing::debug!(peer = %channel.peer(), reason, "connection closed");
    channel.close();
    // Fail every request still waiting on this connection.
    channel.inner.pending.lock().clear();
    handler.on_close(&channel);
}

fn dispatch_frames(
    channel: &Channel,
    buf: &mut BytesMut,
    handler: &dyn InboundHandler,
    max_frame_size: usize,
) -> Result<(), crate::protocol::FrameError> {
    while let Some(command) = frame::decode(buf, max_frame_size)? {
        if command.is_response() {
            channel.complete(command);
        } else {
            handler.on_request(channel.clone(), command, Instant::now());
        }
    }
    Ok(())
}

async fn write_loop(
    channel: Channel,
    mut writer: OwnedWriteHalf,
    mut rx: mpsc::Receiver<RemotingCommand>,
) {
    let mut out = BytesMut::with_capacity(64 * 1024);
    loop {
        let first = tokio::select! {
            biased;
            next = rx.recv() => match next {
                Some(command) => command,
                None => break,
            },
            _ = channel.inner.closed.cancelled() => {
                // Flush what was already queued (e.g. final responses), then stop.
                rx.close();
                while let Ok(command) = rx.try_recv() {
                    frame::encode(&command, &mut out);
                }
                if !out.is_empty() {
                    let _ = writer.write_all(&out).await;
                }
                break;
            }
        };
        frame::encode(&first, &mut out);
        while out.len() < COALESCE_BYTES {
            match rx.try_recv() {
                Ok(command) => frame::encode(&command, &mut out),
                Err(_) => break,
            }
        }
        if let Err(e) = writer.write_all(&out).await {
            tracing::debug!(peer = %channel.peer(), error = %e, "write failed");
            channel.close();
            break;
        }
        out.clear();
        channel.touch();
    }
    let _ = writer.shutdown().await;
}
