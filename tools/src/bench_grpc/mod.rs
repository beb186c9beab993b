//! `mqbench grpc-producer` and `mqbench grpc-consumer`: the producer and consumer benchmarks
//! through mqproxy, as a RocketMQ 5 client talks to it (apache.rocketmq.v2.MessagingService
//! over gRPC), with the remoting benchmarks' report lines.
//!
//! The workers share a few HTTP/2 connections (`--connections`, one tonic `Channel` each,
//! dialled round-robin over `--endpoints`); worker `i` uses connection `i % connections`.

mod consumer;
mod producer;

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use stellmq_grpc_api::pb::messaging_service_client::MessagingServiceClient;
use stellmq_grpc_api::pb::{Address, AddressScheme, Code, Endpoints, Resource, Status};
use tonic::transport::{Channel, Endpoint};

pub use consumer::{run as run_consumer, GrpcConsumerArgs};
pub use producer::{run as run_producer, GrpcProducerArgs};

/// The generated client on one of the shared connections.
pub type Client = MessagingServiceClient<Channel>;

/// Why a gRPC benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum GrpcBenchError {
    #[error("{0}")]
    Invalid(String),
    #[error("cannot connect to the proxy at {endpoint}: {reason}")]
    Connect { endpoint: String, reason: String },
    #[error("{what}: gRPC error {}: {}", .status.code(), .status.message())]
    Rpc {
        what: &'static str,
        status: Box<tonic::Status>,
    },
    #[error("{what}: refused with {code}: {message}")]
    Refused {
        what: &'static str,
        code: String,
        message: String,
    },
}

impl GrpcBenchError {
    pub fn rpc(what: &'static str, status: tonic::Status) -> Self {
        Self::Rpc {
            what,
            status: Box::new(status),
        }
    }
}

/// Where the proxy is and how many connections to open to it.
#[derive(clap::Args, Debug, Clone)]
pub struct ConnectionArgs {
    /// The proxy's gRPC endpoints, `host:port`, `;`- or `,`-separated (as RocketMQ 5 clients
    /// take them).
    #[arg(long = "endpoints", default_value = "127.0.0.1:8081")]
    pub endpoints: String,
    /// HTTP/2 connections shared by the workers.
    #[arg(long = "connections", default_value_t = 4)]
    pub connections: usize,
}

impl ConnectionArgs {
    /// The endpoints as `host:port` strings (an `http://` prefix is dropped).
    pub fn endpoint_list(&self) -> Result<Vec<String>, String> {
        let list: Vec<String> = self
            .endpoints
            .split([';', ','])
            .map(|e| e.trim().trim_start_matches("http://").to_owned())
            .filter(|e| !e.is_empty())
            .collect();
        if list.is_empty() {
            return Err("--endpoints names no proxy".into());
        }
        if let Some(bad) = list.iter().find(|e| host_port(e).is_none()) {
            return Err(format!("--endpoints: '{bad}' is not host:port"));
        }
        Ok(list)
    }
}

/// `host:port` split, the port checked.
fn host_port(endpoint: &str) -> Option<(&str, u16)> {
    let (host, port) = endpoint.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return None;
    }
    Some((host, port.parse().ok()?))
}

/// The shared connections and the client id every request carries.
pub struct Connections {
    channels: Vec<Channel>,
    client_id: String,
    first: String,
}

impl Connections {
    /// Dials `--connections` connections over the endpoints, round-robin.
    pub async fn open(args: &ConnectionArgs) -> Result<Self, GrpcBenchError> {
        let endpoints = args.endpoint_list().map_err(GrpcBenchError::Invalid)?;
        let mut channels = Vec::new();
        for i in 0..args.connections.max(1) {
            let endpoint = &endpoints[i % endpoints.len()];
            let connect = |e: tonic::transport::Error| GrpcBenchError::Connect {
                endpoint: endpoint.clone(),
                reason: error_chain(&e),
            };
            let channel = Endpoint::from_shared(format!("http://{endpoint}"))
                .map_err(connect)?
                .tcp_nodelay(true)
                .connect_timeout(Duration::from_secs(5))
                .connect()
                .await
                .map_err(connect)?;
            channels.push(channel);
        }
        Ok(Self {
            channels,
            client_id: client_id(),
            first: endpoints[0].clone(),
        })
    }

    /// A client on worker `worker`'s connection.
    pub fn client(&self, worker: usize) -> Client {
        MessagingServiceClient::new(self.channels[worker % self.channels.len()].clone())
    }

    /// `message` with the client id header and a deadline.
    pub fn request<T>(&self, message: T, timeout: Duration) -> tonic::Request<T> {
        let mut request = self.request_without_deadline(message);
        request.set_timeout(timeout);
        request
    }

    /// `message` with the client id header (for a stream that lasts the whole run).
    pub fn request_without_deadline<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        if let Ok(id) = self.client_id.parse() {
            request.metadata_mut().insert("x-mq-client-id", id);
        }
        request
    }

    /// The first endpoint, as QueryRoute wants it.
    pub fn endpoints(&self) -> Option<Endpoints> {
        let (host, port) = host_port(&self.first)?;
        let scheme = if host.parse::<std::net::IpAddr>().is_ok() {
            AddressScheme::IPv4
        } else {
            AddressScheme::DomainName
        };
        Some(Endpoints {
            scheme: scheme as i32,
            addresses: vec![Address {
                host: host.to_owned(),
                port: i32::from(port),
            }],
        })
    }
}

/// An error and its causes, `: `-separated (tonic's own text is only "transport error").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut cause = e.source();
    while let Some(c) = cause {
        let part = c.to_string();
        if parts.last() != Some(&part) {
            parts.push(part);
        }
        cause = c.source();
    }
    parts.join(": ")
}

/// RocketMQ 5's client id shape: `host@pid@index@random`.
fn client_id() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "mqbench".into());
    let host: String = host
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        .collect();
    format!(
        "{host}@{}@0@{:08x}",
        std::process::id(),
        rand::random::<u32>()
    )
}

/// A named resource (topic, group) in the default namespace.
pub fn resource(name: &str) -> Option<Resource> {
    Some(Resource {
        resource_namespace: String::new(),
        name: name.into(),
    })
}

/// Whether a RocketMQ 5 status says OK; else its code's name and message.
pub fn check(status: Option<&Status>) -> Result<(), (String, String)> {
    let Some(status) = status else {
        return Err(("no status".into(), String::new()));
    };
    match Code::try_from(status.code) {
        Ok(Code::Ok) => Ok(()),
        Ok(code) => Err((code.as_str_name().to_owned(), status.message.clone())),
        Err(_) => Err((format!("code {}", status.code), status.message.clone())),
    }
}

/// Milliseconds since the epoch of a protobuf timestamp.
pub fn timestamp_ms(t: &prost_types::Timestamp) -> i64 {
    t.seconds * 1000 + i64::from(t.nanos) / 1_000_000
}

/// Now, as a protobuf timestamp.
pub fn now_timestamp() -> prost_types::Timestamp {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    prost_types::Timestamp {
        seconds: since.as_secs() as i64,
        nanos: since.subsec_nanos() as i32,
    }
}

/// Message ids as RocketMQ 5 clients make them: 34 hex digits, version `01`, a 6-byte host
/// id (random here, where the Java client puts a MAC address), the pid's low 16 bits, the
/// seconds since 2021-01-01 and a per-process sequence number.
pub struct MessageIds {
    prefix: String,
    sequence: AtomicU32,
}

/// 2021-01-01T00:00:00Z in seconds since the epoch (RocketMQ 5's id epoch).
const ID_EPOCH_SECS: u64 = 1_609_459_200;

impl Default for MessageIds {
    fn default() -> Self {
        let host: [u8; 6] = rand::random();
        let mut prefix = String::from("01");
        for b in host {
            prefix.push_str(&format!("{b:02X}"));
        }
        prefix.push_str(&format!("{:04X}", std::process::id() & 0xFFFF));
        Self {
            prefix,
            sequence: AtomicU32::new(0),
        }
    }
}

impl MessageIds {
    pub fn next_id(&self) -> String {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs().saturating_sub(ID_EPOCH_SECS)) as u32;
        let seq = self.sequence.fetch_add(1, Ordering::Relaxed);
        format!("{}{secs:08X}{seq:08X}", self.prefix)
    }
}

/// Prints the first of a kind of failure to stderr (the counters show how many followed).
pub struct FirstFailure(std::sync::atomic::AtomicBool);

impl FirstFailure {
    pub const fn new() -> Self {
        Self(std::sync::atomic::AtomicBool::new(false))
    }

    pub fn report(&self, what: impl FnOnce() -> String) {
        if !self.0.swap(true, Ordering::Relaxed) {
            eprintln!("mqbench: {} (later failures are only counted)", what());
        }
    }
}

impl Default for FirstFailure {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_ids_are_rocketmq_5_shaped() {
        let ids = MessageIds::default();
        let (a, b) = (ids.next_id(), ids.next_id());
        assert_eq!(a.len(), 34, "{a}");
        assert!(a.starts_with("01"), "{a}");
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert_ne!(a, b);
        assert_eq!(a[..18], b[..18], "same host id and pid");
        assert!(
            a.ends_with("00000000") && b.ends_with("00000001"),
            "{a} {b}"
        );
    }

    #[test]
    fn endpoints_are_host_port_lists() {
        let args = |e: &str| ConnectionArgs {
            endpoints: e.into(),
            connections: 2,
        };
        assert_eq!(
            args("127.0.0.1:8081; http://proxy:9000,").endpoint_list(),
            Ok(vec!["127.0.0.1:8081".to_owned(), "proxy:9000".to_owned()])
        );
        assert!(args(" ; ").endpoint_list().is_err());
        assert!(args("127.0.0.1").endpoint_list().is_err());
        assert!(args("host:http").endpoint_list().is_err());
        assert_eq!(host_port("[::1]:8081"), Some(("::1", 8081)));
    }

    #[test]
    fn statuses_and_timestamps() {
        let ok = Status {
            code: Code::Ok as i32,
            message: "OK".into(),
        };
        assert_eq!(check(Some(&ok)), Ok(()));
        let missing = Status {
            code: Code::TopicNotFound as i32,
            message: "no route".into(),
        };
        assert_eq!(
            check(Some(&missing)),
            Err(("TOPIC_NOT_FOUND".into(), "no route".into()))
        );
        assert!(check(None).is_err());
        let t = prost_types::Timestamp {
            seconds: 12,
            nanos: 345_000_000,
        };
        assert_eq!(timestamp_ms(&t), 12_345);
        assert!(timestamp_ms(&now_timestamp()) > 1_700_000_000_000);
    }
}
