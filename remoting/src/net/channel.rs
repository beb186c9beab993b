//! One remoting connection, symmetric for servers and clients.
//!
//! A reader task decodes frames: responses complete the pending request with the same opaque
//! (the table is per connection, since opaques are only unique per sender), requests go to the
//! [`InboundHandler`]. A writer task drains a queue and coalesces frames into one socket
//! write. Any decode error, I/O error or idle timeout closes this connection only.
//!
//! Limits, so that one peer can never hold what others need:
//! * The write queue is bounded in bytes ([`ChannelConfig::max_write_buffer_bytes`]). What
//!   happens when it is full is the [`SlowReader`] policy: a server disconnects the peer that
//!   does not read its responses (a shared worker never waits on one client), a client waits.
//!   A write that makes no progress for [`ChannelConfig::write_stall_timeout`] also closes.
//! * At most [`ChannelConfig::max_in_flight_requests`] requests of a connection are being
//!   processed at once; beyond that the reader stops reading that socket until one finishes,
//!   so TCP pushes back on that peer alone.
//! * The read buffer grows with the bytes that actually arrive, never from a length prefix.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio_util::sync::CancellationToken;

use super::deadline;
use super::error::RemotingError;
use super::pending::{PendingTable, Reply};
use crate::protocol::command::FLAG_ONEWAY;
use crate::protocol::{frame, RemotingCommand};

mod read;
mod write;
use read::read_loop;
use write::write_loop;

/// Bytes counted for a queued frame besides its body and header fields.
const FRAME_OVERHEAD: usize = 256;

/// Receives requests (not responses) that arrive on a channel.
pub trait InboundHandler: Send + Sync + 'static {
    fn on_request(&self, channel: Channel, request: RemotingCommand, received_at: Instant);
    /// Called once when the channel closes, for whatever reason.
    fn on_close(&self, _channel: &Channel) {}
}

/// What a full write queue means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlowReader {
    /// Close the connection: the peer does not read what it asked for (servers).
    Disconnect,
    /// Wait until the writer drained some of it (clients sending requests).
    Wait,
}

/// Settings of one connection.
#[derive(Debug, Clone)]
pub struct ChannelConfig {
    /// Close the connection after this long with neither reads nor writes.
    pub idle_timeout: Duration,
    pub max_frame_size: usize,
    /// Requests of this connection being processed at once before reading pauses.
    pub max_in_flight_requests: usize,
    /// Bytes queued for writing (estimated) before the [`SlowReader`] policy applies. One
    /// frame is always accepted into an empty queue, however large.
    pub max_write_buffer_bytes: usize,
    /// A socket write that makes no progress for this long closes the connection.
    pub write_stall_timeout: Duration,
    pub slow_reader: SlowReader,
}

impl Default for ChannelConfig {
    fn default() -> Self {
        Self {
            idle_timeout: Duration::from_secs(120),
            max_frame_size: frame::DEFAULT_MAX_FRAME_SIZE,
            max_in_flight_requests: 1024,
            max_write_buffer_bytes: 64 * 1024 * 1024,
            write_stall_timeout: Duration::from_secs(30),
            slow_reader: SlowReader::Wait,
        }
    }
}

/// Estimated memory of a queued frame.
fn frame_weight(command: &RemotingCommand) -> usize {
    let fields: usize = command
        .ext_fields
        .iter()
        .map(|(k, v)| k.len() + v.len() + 32)
        .sum();
    FRAME_OVERHEAD + command.body_len() + fields + command.remark.as_ref().map_or(0, String::len)
}

static NEXT_CHANNEL_ID: AtomicU64 = AtomicU64::new(1);

struct Inner {
    id: u64,
    peer: SocketAddr,
    local: SocketAddr,
    tx: mpsc::UnboundedSender<(RemotingCommand, usize)>,
    /// Estimated bytes queued for the writer.
    queued_bytes: AtomicUsize,
    /// Signalled whenever the writer took frames off the queue.
    drained: Notify,
    /// Requests read from this connection and not yet answered (or handed off).
    in_flight: AtomicUsize,
    /// Signalled whenever one of them finishes.
    request_done: Notify,
    max_write_buffer_bytes: usize,
    slow_reader: SlowReader,
    pending: PendingTable,
    next_opaque: AtomicI32,
    /// Cancelled when the connection is closed.
    closed: CancellationToken,
    /// Cancelled when closing must not flush what is queued (the peer does not read).
    aborted: CancellationToken,
    /// Cancelled to stop reading new requests (graceful shutdown) while writes drain.
    stop_reading: CancellationToken,
    epoch: Instant,
    last_activity_ms: AtomicU64,
    /// When the peer last sent a byte (ms since `epoch`).
    last_read_ms: AtomicU64,
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
    /// Takes over a connected TCP stream and starts its reader and writer tasks.
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
        // The halves of a TCP stream need no lock between reader and writer.
        let (read_half, write_half) = stream.into_split();
        Ok(Self::start(
            read_half,
            write_half,
            (peer, local),
            handler,
            config,
            stop_reading,
        ))
    }

    /// Takes over any other connected byte stream (a TLS session over TCP) between `peer`
    /// and `local`; its reader and writer share it through a lock.
    pub fn spawn_stream<S>(
        stream: S,
        peer: SocketAddr,
        local: SocketAddr,
        handler: Arc<dyn InboundHandler>,
        config: ChannelConfig,
        stop_reading: CancellationToken,
    ) -> Channel
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (read_half, write_half) = tokio::io::split(stream);
        Self::start(
            read_half,
            write_half,
            (peer, local),
            handler,
            config,
            stop_reading,
        )
    }

    fn start<R, W>(
        read_half: R,
        write_half: W,
        (peer, local): (SocketAddr, SocketAddr),
        handler: Arc<dyn InboundHandler>,
        config: ChannelConfig,
        stop_reading: CancellationToken,
    ) -> Channel
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (tx, rx) = mpsc::unbounded_channel();
        let channel = Channel {
            inner: Arc::new(Inner {
                id: NEXT_CHANNEL_ID.fetch_add(1, Ordering::Relaxed),
                peer,
                local,
                tx,
                queued_bytes: AtomicUsize::new(0),
                drained: Notify::new(),
                in_flight: AtomicUsize::new(0),
                request_done: Notify::new(),
                max_write_buffer_bytes: config.max_write_buffer_bytes.max(1),
                slow_reader: config.slow_reader,
                pending: PendingTable::new(),
                next_opaque: AtomicI32::new(1),
                closed: CancellationToken::new(),
                aborted: CancellationToken::new(),
                stop_reading,
                epoch: Instant::now(),
                last_activity_ms: AtomicU64::new(0),
                last_read_ms: AtomicU64::new(0),
            }),
        };
        tokio::spawn(write_loop(
            channel.clone(),
            write_half,
            rx,
            config.write_stall_timeout,
        ));
        tokio::spawn(read_loop(channel.clone(), read_half, handler, config));
        channel
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

    /// Something arrived from the peer.
    fn touch_read(&self) {
        let ms = self.inner.epoch.elapsed().as_millis() as u64;
        self.inner.last_activity_ms.store(ms, Ordering::Relaxed);
        self.inner.last_read_ms.store(ms, Ordering::Relaxed);
    }

    /// How long the peer has sent nothing (since the connection opened, if it never did).
    pub fn silent_for(&self) -> Duration {
        let last = self.inner.last_read_ms.load(Ordering::Relaxed);
        self.inner
            .epoch
            .elapsed()
            .saturating_sub(Duration::from_millis(last))
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

    /// Queues a frame. When the write queue is full, a [`SlowReader::Wait`] channel waits for
    /// the writer to drain it; a [`SlowReader::Disconnect`] one closes the connection and
    /// fails at once, so a caller never waits on a peer that does not read.
    pub async fn send(&self, command: RemotingCommand) -> Result<(), RemotingError> {
        let weight = frame_weight(&command);
        loop {
            if self.is_closed() {
                return Err(self.closed_error());
            }
            let drained = self.inner.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if self.has_room_for(weight) {
                break;
            }
            if self.inner.slow_reader == SlowReader::Disconnect {
                self.disconnect_slow_reader();
                return Err(self.closed_error());
            }
            tokio::select! {
                _ = drained => {}
                _ = self.inner.closed.cancelled() => {}
            }
        }
        self.enqueue(command, weight)
    }

    /// Queues a frame without waiting; false if the queue is full (a
    /// [`SlowReader::Disconnect`] channel then closes) or the channel closed.
    pub fn try_send(&self, command: RemotingCommand) -> bool {
        let weight = frame_weight(&command);
        if self.is_closed() {
            return false;
        }
        if !self.has_room_for(weight) {
            if self.inner.slow_reader == SlowReader::Disconnect {
                self.disconnect_slow_reader();
            }
            return false;
        }
        self.enqueue(command, weight).is_ok()
    }

    fn has_room_for(&self, weight: usize) -> bool {
        let queued = self.inner.queued_bytes.load(Ordering::Acquire);
        queued == 0 || queued + weight <= self.inner.max_write_buffer_bytes
    }

    fn enqueue(&self, command: RemotingCommand, weight: usize) -> Result<(), RemotingError> {
        self.inner.queued_bytes.fetch_add(weight, Ordering::AcqRel);
        self.inner.tx.send((command, weight)).map_err(|_| {
            self.inner.queued_bytes.fetch_sub(weight, Ordering::AcqRel);
            self.closed_error()
        })
    }

    fn disconnect_slow_reader(&self) {
        tracing::warn!(
            peer = %self.inner.peer,
            queued_bytes = self.inner.queued_bytes.load(Ordering::Acquire),
            "peer does not read its responses; closing the connection"
        );
        self.abort();
    }

    /// Closes the connection at once, dropping what is queued for writing.
    pub fn abort(&self) {
        self.inner.aborted.cancel();
        self.close();
    }

    /// Bytes waiting to be written (estimated).
    pub fn queued_bytes(&self) -> usize {
        self.inner.queued_bytes.load(Ordering::Acquire)
    }

    /// Counts a request read from this connection as in flight until the guard drops.
    pub fn begin_request(&self) -> InFlight {
        self.inner.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight {
            channel: self.clone(),
        }
    }

    /// Requests of this connection being processed.
    pub fn in_flight_requests(&self) -> usize {
        self.inner.in_flight.load(Ordering::Acquire)
    }

    /// Sends a request and returns the pending response without waiting for it.
    pub async fn start_request(
        &self,
        request: RemotingCommand,
    ) -> Result<PendingResponse, RemotingError> {
        self.start_request_until(request, None).await
    }

    /// Sends a request; with a deadline, the connection's sweeper answers the pending
    /// response with a timeout once it passes, so waiting for it needs no timer.
    async fn start_request_until(
        &self,
        mut request: RemotingCommand,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<PendingResponse, RemotingError> {
        let opaque = self.inner.next_opaque.fetch_add(1, Ordering::Relaxed);
        request.opaque = opaque;
        request.flag &= !FLAG_ONEWAY;
        if deadline.is_some() && self.inner.pending.claim_sweeper() {
            let channel = self.clone();
            tokio::spawn(async move {
                let inner = &channel.inner;
                inner.pending.sweep(&inner.closed).await
            });
        }
        let rx = self.inner.pending.insert(opaque, deadline);
        let pending = PendingResponse {
            channel: self.clone(),
            opaque,
            rx,
            expires: deadline.is_some(),
            settled: false,
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
        self.invoke_until(request, tokio::time::Instant::now() + timeout, timeout)
            .await
    }

    /// [`Self::invoke`] with the time limit as a deadline (`timeout` is what a timeout
    /// error reports).
    pub async fn invoke_until(
        &self,
        request: RemotingCommand,
        deadline: tokio::time::Instant,
        timeout: Duration,
    ) -> Result<RemotingCommand, RemotingError> {
        let pending = deadline::until(deadline, self.start_request_until(request, Some(deadline)))
            .await
            .ok_or_else(|| self.timeout_error(timeout))??;
        pending.wait_until(deadline, timeout).await
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
        let opaque = response.opaque;
        if !self.inner.pending.complete(response) {
            tracing::debug!(
                opaque,
                peer = %self.inner.peer,
                "response without a pending request (timed out?)"
            );
        }
    }

    /// Whether more frames are likely to be queued soon: other requests of ours await
    /// their responses, or other requests of the peer are being processed.
    fn more_frames_coming(&self) -> bool {
        self.in_flight_requests() > 1 || self.pending_requests() > 1
    }

    /// Number of requests awaiting a response on this connection.
    pub fn pending_requests(&self) -> usize {
        self.inner.pending.len()
    }
}

/// One request of a connection in flight; dropping it lets the reader go on.
pub struct InFlight {
    channel: Channel,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.channel.inner.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.channel.inner.request_done.notify_one();
    }
}

/// A request on the wire whose response has not been awaited yet.
pub struct PendingResponse {
    channel: Channel,
    opaque: i32,
    rx: oneshot::Receiver<Reply>,
    /// The connection's sweeper times this request out (it was sent with a deadline).
    expires: bool,
    /// The table no longer holds this request.
    settled: bool,
}

impl PendingResponse {
    /// Waits up to `timeout` for the response.
    pub async fn wait(self, timeout: Duration) -> Result<RemotingCommand, RemotingError> {
        self.wait_until(tokio::time::Instant::now() + timeout, timeout)
            .await
    }

    /// Waits until `deadline` for the response (`timeout` is what a timeout error reports).
    pub async fn wait_until(
        mut self,
        deadline: tokio::time::Instant,
        timeout: Duration,
    ) -> Result<RemotingCommand, RemotingError> {
        let reply = if self.expires {
            // Answered None by the sweeper at the deadline the request was sent with.
            Some((&mut self.rx).await)
        } else {
            deadline::until(deadline, &mut self.rx).await
        };
        // Any reply (response, expiry or close) means the table let go of the request.
        self.settled = reply.is_some();
        match reply {
            Some(Ok(Some(response))) => Ok(response),
            Some(Ok(None)) | None => Err(self.channel.timeout_error(timeout)),
            Some(Err(_)) => Err(self.channel.closed_error()),
        }
    }
}

impl Drop for PendingResponse {
    fn drop(&mut self) {
        // A response that never came (timeout, cancelled caller) must not leak its entry.
        if !self.settled {
            self.channel.inner.pending.forget(self.opaque);
        }
    }
}
