//! A connection's reader task: decodes frames, completes responses, hands requests on, and
//! stops reading while the peer has as many requests in flight as it may.

use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::{Channel, ChannelConfig, InboundHandler};
use crate::protocol::frame;

/// The read buffer grows by this much when it runs out of room.
const READ_CHUNK: usize = 64 * 1024;

pub(super) async fn read_loop<R: AsyncRead + Unpin>(
    channel: Channel,
    mut reader: R,
    handler: Arc<dyn InboundHandler>,
    config: ChannelConfig,
) {
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let max_in_flight = config.max_in_flight_requests.max(1);
    // One idle timer for the connection's life, moved on when it fires early (re-arming one
    // per read cost a timer registration and two clock reads on every read).
    let idle = tokio::time::sleep(config.idle_timeout);
    tokio::pin!(idle);
    let reason = loop {
        // Too many of this peer's requests in flight: stop reading (and decoding what is
        // buffered) until one finishes; only this connection waits.
        if channel.in_flight_requests() >= max_in_flight {
            let done = channel.inner.request_done.notified();
            tokio::pin!(done);
            done.as_mut().enable();
            if channel.in_flight_requests() >= max_in_flight {
                tokio::select! {
                    _ = channel.inner.closed.cancelled() => break "closed",
                    _ = done => {}
                    // Requests in flight: not idle.
                    _ = &mut idle => idle.as_mut().reset(tokio::time::Instant::now() + config.idle_timeout),
                }
                continue;
            }
        }
        match dispatch_frames(&channel, &mut buf, handler.as_ref(), &config) {
            // Complete frames may be left in the buffer: dispatch them before reading more.
            Ok(Dispatched::StoppedAtLimit) => continue,
            Ok(Dispatched::All) => {}
            Err(e) => {
                tracing::warn!(peer = %channel.peer(), error = %e, "closing connection after a bad frame");
                break "bad frame";
            }
        }
        if buf.capacity() - buf.len() < READ_CHUNK / 8 {
            buf.reserve(READ_CHUNK);
        }
        tokio::select! {
            _ = channel.inner.closed.cancelled() => break "closed",
            _ = channel.inner.stop_reading.cancelled() => {
                // Graceful shutdown: stop taking requests; the owner closes us after draining.
                channel.inner.closed.cancelled().await;
                break "shutdown";
            }
            _ = &mut idle => {
                let idle_left = config.idle_timeout.saturating_sub(channel.idle_for());
                if idle_left.is_zero() {
                    break "idle timeout";
                }
                idle.as_mut().reset(tokio::time::Instant::now() + idle_left);
            }
            read = reader.read_buf(&mut buf) => match read {
                Ok(0) => break "peer closed",
                Ok(_) => channel.touch_read(),
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
    channel.inner.pending.fail_all();
    handler.on_close(&channel);
}

enum Dispatched {
    /// Every complete frame in the buffer was handed on.
    All,
    /// The connection reached its in-flight limit first.
    StoppedAtLimit,
}

/// Decodes and hands on the complete frames in `buf`, stopping early when the connection
/// has as many requests in flight as it may.
fn dispatch_frames(
    channel: &Channel,
    buf: &mut BytesMut,
    handler: &dyn InboundHandler,
    config: &ChannelConfig,
) -> Result<Dispatched, crate::protocol::FrameError> {
    // The frames of one read arrived together: one clock read for all of them.
    let received_at = Instant::now();
    loop {
        if channel.in_flight_requests() >= config.max_in_flight_requests.max(1) {
            return Ok(Dispatched::StoppedAtLimit);
        }
        let Some(command) = frame::decode(buf, config.max_frame_size)? else {
            return Ok(Dispatched::All);
        };
        if command.is_response() {
            channel.complete(command);
        } else {
            handler.on_request(channel.clone(), command, received_at);
        }
    }
}
