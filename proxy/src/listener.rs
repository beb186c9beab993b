//! The gRPC port's connections: plaintext HTTP/2 and TLS (with ALPN `h2`) on one port, told
//! apart by the first byte as the remoting ports do (`tls.server.mode`: disabled,
//! permissive, enforcing). Each connection is sorted in a task of its own, so a silent or
//! slow client never holds up the next one.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use stellmq_remoting::net::tls::{Accepted, ServerTls};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::transport::server::{Connected, TcpConnectInfo};

/// How long a new connection may stay silent before its first byte.
const FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections sorted but not yet taken by the server.
const BACKLOG: usize = 128;

/// One accepted connection.
pub enum Conn {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Conn {
    fn tcp(&self) -> &TcpStream {
        match self {
            Conn::Plain(s) => s,
            Conn::Tls(s) => s.get_ref().0,
        }
    }
}

/// The connections of `listener`, sorted into plaintext and TLS by `tls` (none: plaintext
/// only), until `stop`.
pub fn incoming(
    listener: TcpListener,
    tls: Option<ServerTls>,
    stop: CancellationToken,
) -> ReceiverStream<io::Result<Conn>> {
    let (tx, rx) = mpsc::channel(BACKLOG);
    tokio::spawn(async move {
        loop {
            let (stream, peer) = tokio::select! {
                _ = stop.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        tracing::warn!(error = %e, "accepting a gRPC connection failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
            };
            let _ = stream.set_nodelay(true);
            let Some(tls) = tls.clone() else {
                if tx.send(Ok(Conn::Plain(stream))).await.is_err() {
                    return;
                }
                continue;
            };
            let tx = tx.clone();
            tokio::spawn(async move {
                match tls.accept(stream, FIRST_BYTE_TIMEOUT).await {
                    Ok(Accepted::Plain(s)) => {
                        let _ = tx.send(Ok(Conn::Plain(s))).await;
                    }
                    Ok(Accepted::Tls(s)) => {
                        let _ = tx.send(Ok(Conn::Tls(s))).await;
                    }
                    Err(refused) if refused.is_quiet() => {
                        tracing::debug!(%peer, reason = %refused, "gRPC connection closed before a request");
                    }
                    Err(refused) => {
                        tracing::warn!(%peer, reason = %refused, "gRPC connection refused");
                    }
                }
            });
        }
    });
    ReceiverStream::new(rx)
}

impl Connected for Conn {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        let tcp = self.tcp();
        TcpConnectInfo {
            local_addr: tcp.local_addr().ok(),
            remote_addr: tcp.peer_addr().ok(),
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Conn::Plain(s) => s.is_write_vectored(),
            Conn::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_flush(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
