//! gRPC attacks on mqproxy: every RPC of `apache.rocketmq.v2.MessagingService` with a
//! request whose text fields are plausible or hostile, its protobuf bytes sometimes
//! mutated, and now and then a gRPC frame that lies about its length or compression, over
//! HTTP/2 connections of their own.

use std::time::Duration;

use bytes::Bytes;
use prost::Message as _;
use stellmq_proxy::pb;
use tokio::net::TcpStream;

use super::vocabulary;
use crate::mutate::{Mutator, Rng};

/// The RPCs, by path.
const SERVICE: &str = "/apache.rocketmq.v2.MessagingService/";

/// One gRPC call to make: the method and the bytes of its request body (gRPC framing
/// included).
pub struct Call {
    pub method: &'static str,
    pub body: Bytes,
    /// Sends the client id header (a proxy refuses most calls without it).
    pub with_client_id: bool,
}

pub struct GrpcGenerator {
    rng: Rng,
    mutator: Mutator<'static>,
    client_id: String,
}

const PROTO_TOKENS: &[&[u8]] = &[b"\x0a", b"\x12", b"\x1a", b"\x08", b"\xff\xff\xff\xff\x0f"];

impl GrpcGenerator {
    pub fn new(seed: u64) -> Self {
        Self {
            rng: Rng::new(seed),
            mutator: Mutator::new(seed ^ 0x6A7C, PROTO_TOKENS, 64 * 1024),
            client_id: format!("netfuzz-{seed}"),
        }
    }

    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// The next call.
    pub fn next_call(&mut self) -> Call {
        let (method, proto) = self.request();
        let proto = if self.rng.one_in(4) {
            self.mutator.mutate(&proto, &[])
        } else {
            proto
        };
        let (compressed, length) = match self.rng.below(30) {
            0 => (1u8, proto.len() as u32),
            1 => (0, proto.len() as u32 + 1 + self.rng.below(1000) as u32),
            2 => (0, u32::MAX),
            _ => (0, proto.len() as u32),
        };
        let mut body = Vec::with_capacity(5 + proto.len());
        body.push(compressed);
        body.extend_from_slice(&length.to_be_bytes());
        body.extend_from_slice(&proto);
        Call {
            method,
            body: body.into(),
            with_client_id: !self.rng.one_in(20),
        }
    }

    /// A text field's value: plausible (`plain`) most of the time.
    fn text(&mut self, plain: &str) -> String {
        if self.rng.one_in(6) {
            vocabulary::hostile(&mut self.rng)
        } else {
            plain.to_owned()
        }
    }

    fn resource(&mut self, name: &str) -> Option<pb::Resource> {
        Some(pb::Resource {
            resource_namespace: self.text(""),
            name: self.text(name),
        })
    }

    fn queue(&mut self) -> Option<pb::MessageQueue> {
        Some(pb::MessageQueue {
            topic: self.resource(vocabulary::TOPIC),
            id: self.number(4) as i32,
            broker: Some(pb::Broker {
                name: self.text("broker-a"),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    /// Below `n` mostly, an edge value now and then.
    fn number(&mut self, n: usize) -> i64 {
        match self.rng.below(10) {
            0 => [-1, i64::from(i32::MAX), i64::MIN, i64::MAX][self.rng.below(4)],
            _ => self.rng.below(n) as i64,
        }
    }

    fn duration(&mut self, millis: i64) -> Option<prost_types::Duration> {
        let millis = if self.rng.one_in(8) {
            self.number(10)
        } else {
            millis
        };
        Some(prost_types::Duration {
            seconds: millis / 1000,
            nanos: ((millis % 1000) * 1_000_000) as i32,
        })
    }

    fn filter(&mut self) -> Option<pb::FilterExpression> {
        Some(pb::FilterExpression {
            r#type: self.rng.below(3) as i32,
            expression: self.text("*"),
        })
    }

    fn message(&mut self) -> pb::Message {
        let mut user_properties = std::collections::HashMap::new();
        user_properties.insert(self.text("k"), self.text("v"));
        pb::Message {
            topic: self.resource(vocabulary::TOPIC),
            user_properties,
            system_properties: Some(pb::SystemProperties {
                tag: Some(self.text("TagA")),
                keys: vec![self.text("key")],
                message_id: self.text("0100000000000000000000000A"),
                message_type: self.rng.below(6) as i32,
                body_encoding: self.rng.below(3) as i32,
                born_host: self.text("127.0.0.1"),
                message_group: self.rng.one_in(4).then(|| self.text("group-1")),
                delivery_timestamp: self.rng.one_in(4).then(|| prost_types::Timestamp {
                    seconds: self.number(2_000_000_000),
                    nanos: 0,
                }),
                ..Default::default()
            }),
            body: b"net fuzz body".to_vec(),
        }
    }

    /// A request of a random RPC, encoded.
    fn request(&mut self) -> (&'static str, Vec<u8>) {
        let group = vocabulary::GROUP;
        let topic = vocabulary::TOPIC;
        match self.rng.below(14) {
            0 => (
                "QueryRoute",
                pb::QueryRouteRequest {
                    topic: self.resource(topic),
                    endpoints: None,
                }
                .encode_to_vec(),
            ),
            1 => (
                "Heartbeat",
                pb::HeartbeatRequest {
                    group: self.resource(group),
                    client_type: self.rng.below(6) as i32,
                }
                .encode_to_vec(),
            ),
            2 => {
                let messages = (0..1 + self.rng.below(3)).map(|_| self.message()).collect();
                (
                    "SendMessage",
                    pb::SendMessageRequest { messages }.encode_to_vec(),
                )
            }
            3 => (
                "QueryAssignment",
                pb::QueryAssignmentRequest {
                    topic: self.resource(topic),
                    group: self.resource(group),
                    endpoints: None,
                }
                .encode_to_vec(),
            ),
            4 => (
                "ReceiveMessage",
                pb::ReceiveMessageRequest {
                    group: self.resource(group),
                    message_queue: self.queue(),
                    filter_expression: self.filter(),
                    batch_size: self.number(32) as i32,
                    invisible_duration: self.duration(30_000),
                    auto_renew: self.rng.one_in(2),
                    long_polling_timeout: self.duration(200),
                    attempt_id: None,
                }
                .encode_to_vec(),
            ),
            5 => (
                "AckMessage",
                pb::AckMessageRequest {
                    group: self.resource(group),
                    topic: self.resource(topic),
                    entries: vec![pb::AckMessageEntry {
                        message_id: self.text("0100000000000000000000000A"),
                        receipt_handle: self.text("0 1 2 3 0 broker-a 0 1"),
                        lite_topic: None,
                    }],
                }
                .encode_to_vec(),
            ),
            6 => (
                "ChangeInvisibleDuration",
                pb::ChangeInvisibleDurationRequest {
                    group: self.resource(group),
                    topic: self.resource(topic),
                    receipt_handle: self.text("0 1 2 3 0 broker-a 0 1"),
                    invisible_duration: self.duration(10_000),
                    message_id: self.text("0100000000000000000000000A"),
                    ..Default::default()
                }
                .encode_to_vec(),
            ),
            7 => (
                "EndTransaction",
                pb::EndTransactionRequest {
                    topic: self.resource(topic),
                    message_id: self.text("0100000000000000000000000A"),
                    transaction_id: self.text("7F0000010000000000000000"),
                    resolution: self.rng.below(3) as i32,
                    source: self.rng.below(3) as i32,
                    trace_context: String::new(),
                }
                .encode_to_vec(),
            ),
            8 => (
                "ForwardMessageToDeadLetterQueue",
                pb::ForwardMessageToDeadLetterQueueRequest {
                    group: self.resource(group),
                    topic: self.resource(topic),
                    receipt_handle: self.text("0 1 2 3 0 broker-a 0 1"),
                    message_id: self.text("0100000000000000000000000A"),
                    delivery_attempt: self.number(20) as i32,
                    max_delivery_attempts: self.number(20) as i32,
                    lite_topic: None,
                }
                .encode_to_vec(),
            ),
            9 => (
                "NotifyClientTermination",
                pb::NotifyClientTerminationRequest {
                    group: self.resource(group),
                }
                .encode_to_vec(),
            ),
            10 => (
                "UpdateOffset",
                pb::UpdateOffsetRequest {
                    group: self.resource(group),
                    message_queue: self.queue(),
                    offset: self.number(100),
                }
                .encode_to_vec(),
            ),
            11 => (
                "QueryOffset",
                pb::QueryOffsetRequest {
                    message_queue: self.queue(),
                    query_offset_policy: self.rng.below(3) as i32,
                    timestamp: None,
                }
                .encode_to_vec(),
            ),
            12 => (
                "RecallMessage",
                pb::RecallMessageRequest {
                    topic: self.resource(topic),
                    recall_handle: self.text("x"),
                }
                .encode_to_vec(),
            ),
            _ => (
                "Telemetry",
                pb::TelemetryCommand {
                    status: None,
                    command: Some(pb::telemetry_command::Command::Settings(pb::Settings {
                        client_type: Some(self.rng.below(6) as i32),
                        request_timeout: self.duration(3000),
                        pub_sub: Some(pb::settings::PubSub::Publishing(pb::Publishing {
                            topics: vec![pb::Resource {
                                resource_namespace: String::new(),
                                name: self.text(topic),
                            }],
                            max_body_size: self.number(4 << 20) as i32,
                            validate_message_type: false,
                        })),
                        ..Default::default()
                    })),
                }
                .encode_to_vec(),
            ),
        }
    }
}

/// What became of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// The call ended with this `grpc-status` (HTTP status other than 200: -1).
    Status(i32),
    /// The connection was reset or closed.
    Reset,
    /// Nothing within the timeout.
    Unanswered,
}

/// An HTTP/2 connection to the proxy.
pub struct Connection {
    sender: h2::client::SendRequest<Bytes>,
}

impl Connection {
    pub async fn open(addr: &str) -> Result<Self, String> {
        let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let (sender, connection) = h2::client::handshake(tcp)
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Self { sender })
    }

    /// Makes `call` as client `client_id`, within `timeout`.
    pub async fn call(&mut self, call: &Call, client_id: &str, timeout: Duration) -> CallOutcome {
        let exchange = async {
            let mut request = http::Request::builder()
                .method("POST")
                .uri(format!("http://proxy{SERVICE}{}", call.method))
                .header("content-type", "application/grpc")
                .header("te", "trailers")
                .header("x-mq-language", "JAVA")
                .header("x-mq-protocol", "v2")
                .header("x-mq-client-version", "5.0.7");
            if call.with_client_id {
                request = request.header("x-mq-client-id", client_id);
            }
            let request = request.body(()).map_err(|_| ())?;
            let sender = self.sender.clone();
            let mut sender = sender.ready().await.map_err(|_| ())?;
            let (response, mut stream) = sender.send_request(request, false).map_err(|_| ())?;
            stream.send_data(call.body.clone(), true).map_err(|_| ())?;
            let response = response.await.map_err(|_| ())?;
            let status_of = |headers: &http::HeaderMap| {
                headers
                    .get("grpc-status")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<i32>().ok())
            };
            if response.status() != http::StatusCode::OK {
                return Ok(-1);
            }
            if let Some(status) = status_of(response.headers()) {
                return Ok(status);
            }
            let mut body = response.into_body();
            while let Some(chunk) = body.data().await {
                let chunk = chunk.map_err(|_| ())?;
                let _ = body.flow_control().release_capacity(chunk.len());
            }
            let trailers = body.trailers().await.map_err(|_| ())?;
            Ok::<_, ()>(trailers.as_ref().and_then(status_of).unwrap_or(-1))
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(Ok(status)) => CallOutcome::Status(status),
            Ok(Err(())) => CallOutcome::Reset,
            Err(_) => CallOutcome::Unanswered,
        }
    }
}

/// A QueryRoute of `topic`, well formed: what the health check asks.
pub fn query_route(topic: &str) -> Call {
    let proto = pb::QueryRouteRequest {
        topic: Some(pb::Resource {
            resource_namespace: String::new(),
            name: topic.to_owned(),
        }),
        endpoints: None,
    }
    .encode_to_vec();
    let mut body = vec![0u8];
    body.extend_from_slice(&(proto.len() as u32).to_be_bytes());
    body.extend_from_slice(&proto);
    Call {
        method: "QueryRoute",
        body: body.into(),
        with_client_id: true,
    }
}
