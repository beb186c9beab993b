//! The `/metrics` endpoint: HTTP/1.1 on its own port, bounded in every way a client
//! controls. At most [`ServerLimits::max_connections`] connections (more are closed at
//! once), headers of at most [`ServerLimits::max_header_bytes`] that must arrive within
//! [`ServerLimits::header_read_timeout`] (slowloris), a connection closed after
//! [`ServerLimits::connection_timeout`] whatever it does, and encoding on the blocking pool
//! so a scrape never holds a runtime worker.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::encoding::prometheus_text::CONTENT_TYPE as PROMETHEUS_TEXT;
use prometheus_client::registry::Registry;
use thiserror::Error;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Error)]
pub enum MetricsError {
    #[error("cannot bind the metrics endpoint on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid metrics exporter address: {0}")]
    Address(String),
}

/// What one client may make the endpoint hold.
#[derive(Debug, Clone, Copy)]
pub struct ServerLimits {
    pub max_connections: usize,
    /// Request line and headers (hyper's read buffer; at least 8 KiB).
    pub max_header_bytes: usize,
    pub header_read_timeout: Duration,
    pub connection_timeout: Duration,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_connections: 32,
            max_header_bytes: 16 * 1024,
            header_read_timeout: Duration::from_secs(5),
            connection_timeout: Duration::from_secs(30),
        }
    }
}

/// A running endpoint; stops when shut down or dropped.
pub struct MetricsServer {
    local_addr: SocketAddr,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `addr` and serves `registry` at `GET /metrics`.
    pub async fn start(
        addr: SocketAddr,
        registry: Arc<Registry>,
        limits: ServerLimits,
    ) -> Result<Self, MetricsError> {
        let bind_err = |source| MetricsError::Bind { addr, source };
        let listener = TcpListener::bind(addr).await.map_err(bind_err)?;
        let local_addr = listener.local_addr().map_err(bind_err)?;
        let stop = CancellationToken::new();
        let task = tokio::spawn(accept_loop(listener, registry, limits, stop.clone()));
        tracing::info!(event = "METRICS_STARTED", addr = %local_addr, "Prometheus endpoint serving /metrics");
        Ok(Self {
            local_addr,
            stop,
            task: Some(task),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting and closes every connection.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn accept_loop(
    listener: TcpListener,
    registry: Arc<Registry>,
    limits: ServerLimits,
    stop: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::debug!(error = %e, "metrics accept failed");
                // Out of descriptors and the like: do not spin.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::debug!("metrics endpoint at its connection limit; closing a connection");
            continue;
        };
        let (registry, stop) = (registry.clone(), stop.clone());
        tokio::spawn(async move {
            let _slot = slot;
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = serve(stream, registry, limits) => {}
            }
        });
    }
}

async fn serve(stream: TcpStream, registry: Arc<Registry>, limits: ServerLimits) {
    let service = service_fn(move |request| respond(request, registry.clone()));
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(limits.max_header_bytes.max(8192))
        .serve_connection(TokioIo::new(stream), service);
    match tokio::time::timeout(limits.connection_timeout, connection).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(error = %e, "metrics connection closed"),
        Err(_) => tracing::debug!("metrics connection open too long; closed"),
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *response.status_mut() = status;
    response
}

async fn respond(
    request: Request<Incoming>,
    registry: Arc<Registry>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if request.uri().path() != "/metrics" {
        return Ok(plain(StatusCode::NOT_FOUND, "not found; try /metrics\n"));
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return Ok(plain(StatusCode::METHOD_NOT_ALLOWED, "GET only\n"));
    }
    // Scrape-time collectors read the store's queues: off the runtime's workers.
    let encoded = tokio::task::spawn_blocking(move || crate::encode(&registry)).await;
    let Ok(Ok(text)) = encoded else {
        tracing::warn!("metrics encoding failed");
        return Ok(plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "encoding failed\n",
        ));
    };
    let mut response = Response::new(Full::new(Bytes::from(text)));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(PROMETHEUS_TEXT));
    Ok(response)
}
