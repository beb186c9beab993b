//! A connection's writer task: drains the queue, coalesces frames into one socket write,
//! and closes the connection when the peer stops reading.

use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use super::super::deadline;
use super::Channel;
use crate::protocol::{frame, RemotingCommand};

/// Coalesce queued frames into one write up to this many bytes.
const COALESCE_BYTES: usize = 256 * 1024;

pub(super) async fn write_loop<W: AsyncWrite + Unpin>(
    channel: Channel,
    mut writer: W,
    mut rx: mpsc::UnboundedReceiver<(RemotingCommand, usize)>,
    stall_timeout: Duration,
) {
    let mut out = BytesMut::with_capacity(64 * 1024);
    loop {
        let (first, mut weight) = tokio::select! {
            biased;
            next = rx.recv() => match next {
                Some(item) => item,
                None => break,
            },
            _ = channel.inner.closed.cancelled() => {
                rx.close();
                if channel.inner.aborted.is_cancelled() {
                    break;
                }
                // Flush what was already queued (e.g. final responses), then stop.
                while let Ok((command, _)) = rx.try_recv() {
                    frame::encode(&command, &mut out);
                }
                if !out.is_empty() {
                    let _ = tokio::time::timeout(stall_timeout, async {
                        writer.write_all(&out).await?;
                        writer.flush().await
                    })
                    .await;
                }
                break;
            }
        };
        frame::encode(&first, &mut out);
        if rx.is_empty() && channel.more_frames_coming() {
            // Other requests of this connection are under way: let the tasks that are ready
            // run first, so what they queue goes out in this write. A write syscall costs
            // more than a poll (on loopback the sender also pays the receiver's side). A
            // lone request is written at once: yielding then only adds a park and a wake.
            tokio::task::yield_now().await;
        }
        while out.len() < COALESCE_BYTES {
            match rx.try_recv() {
                Ok((command, w)) => {
                    frame::encode(&command, &mut out);
                    weight += w;
                }
                Err(_) => break,
            }
        }
        channel
            .inner
            .queued_bytes
            .fetch_sub(weight, Ordering::AcqRel);
        channel.inner.drained.notify_waiters();
        let written = tokio::select! {
            r = write_with_progress(&mut writer, &out, stall_timeout) => r,
            _ = channel.inner.aborted.cancelled() => Err(WriteError::Aborted),
        };
        if let Err(reason) = written {
            tracing::debug!(peer = %channel.peer(), %reason, "write failed");
            if matches!(reason, WriteError::Stalled(_)) {
                tracing::warn!(peer = %channel.peer(), "peer stopped reading; closing the connection");
            }
            channel.close();
            break;
        }
        out.clear();
        channel.touch();
    }
    let _ = writer.shutdown().await;
}

/// Why a write to the socket ended the connection.
#[derive(Debug, thiserror::Error)]
enum WriteError {
    #[error("no progress for {0:?}: the peer stopped reading")]
    Stalled(Duration),
    #[error("the socket closed")]
    Closed,
    #[error("aborted")]
    Aborted,
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Writes all of `data` and flushes it, failing when one write makes no progress for
/// `stall_timeout`. (The flush is free on TCP; a TLS session may hold records back until it.)
async fn write_with_progress<W: AsyncWrite + Unpin>(
    writer: &mut W,
    mut data: &[u8],
    stall_timeout: Duration,
) -> Result<(), WriteError> {
    while !data.is_empty() {
        match deadline::within(stall_timeout, writer.write(data)).await {
            None => return Err(WriteError::Stalled(stall_timeout)),
            Some(Err(e)) => return Err(e.into()),
            Some(Ok(0)) => return Err(WriteError::Closed),
            Some(Ok(n)) => data = data.get(n..).unwrap_or_default(),
        }
    }
    match deadline::within(stall_timeout, writer.flush()).await {
        None => Err(WriteError::Stalled(stall_timeout)),
        Some(result) => Ok(result?),
    }
}
