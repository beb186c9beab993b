//! RocketMQ 5's `MessagingService`, one module per group of RPCs. Unary RPCs always succeed
//! at the gRPC level and carry RocketMQ's `Status` in their answer, as RocketMQ's proxy does;
//! only Telemetry ends with gRPC errors.

mod ack;
mod auth;
mod clients;
mod context;
mod lite;
pub mod message;
mod recall;
mod receive;
mod renew;
mod route;
mod send;
mod settings;
pub mod status;
mod telemetry;
mod transactions;

use std::pin::Pin;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use stellmq_client::ClientTlsConfig;
use stellmq_remoting::net::tls::TlsError;
use stellmq_remoting::protocol::message::Clock;
use stellmq_remoting::protocol::names;
use tokio_stream::Stream;
use tonic::{Request, Response};

pub use clients::Clients;
pub use context::Caller;
pub use renew::Renewals;
use status::Refusal;
pub use transactions::Transactions;

use crate::cluster::Cluster;
use crate::config::ProxyConfig;
use crate::pb::messaging_service_server::MessagingService;
use crate::pb::*;

/// A server stream of the service.
pub type AnswerStream<T> = Pin<Box<dyn Stream<Item = Result<T, tonic::Status>> + Send>>;

/// Everything the RPCs share.
pub struct Proxy {
    pub config: ProxyConfig,
    pub cluster: Cluster,
    pub clients: Arc<Clients>,
    pub transactions: Arc<Transactions>,
    pub renewals: Renewals,
    /// The clock of auto-renewals (tests move it forward instead of sleeping).
    pub clock: Arc<Clock>,
    /// The gRPC port as bound (what routes advertise).
    grpc_port: AtomicU16,
    stream_ids: AtomicU64,
    /// Woken when a producer registers, so brokers learn at once where its checks go.
    pub producers_changed: tokio::sync::Notify,
    /// Cancelled when the proxy stops: long-lived streams end.
    stopping: tokio_util::sync::CancellationToken,
    /// Keeps ACL 2.0 refusals from flooding the log.
    auth_refusals: stellmq_acl::refusal_log::RefusalLog,
    /// `rocketmq_rpc_latency` of the gRPC RPCs.
    pub latency: Arc<stellmq_metrics::GrpcLatency>,
}

impl Proxy {
    pub fn new(
        config: ProxyConfig,
        tls: &ClientTlsConfig,
        stopping: tokio_util::sync::CancellationToken,
    ) -> Result<Arc<Self>, TlsError> {
        let clients = Arc::new(Clients::new(
            config.max_client_num,
            Duration::from_millis(config.channel_expired_timeout),
        ));
        let transactions = Arc::new(Transactions::new(
            Duration::from_millis(config.transaction_data_expire_millis),
            config.transaction_data_max_num,
        ));
        let checks = telemetry::transaction_check_relay(clients.clone(), transactions.clone());
        let cluster = Cluster::new(&config, tls, checks)?;
        let clock = Arc::new(Clock::default());
        let renewals = Renewals::new(
            config.renew_max_num,
            Duration::from_millis(config.renew_ahead_time_millis),
            Duration::from_millis(config.renew_max_time_millis),
            clock.clone(),
        );
        Ok(Arc::new(Self {
            renewals,
            clock,
            grpc_port: AtomicU16::new(config.grpc_server_port),
            config,
            cluster,
            clients,
            transactions,
            stream_ids: AtomicU64::new(1),
            producers_changed: tokio::sync::Notify::new(),
            stopping,
            auth_refusals: Default::default(),
            latency: Arc::default(),
        }))
    }

    pub fn set_grpc_port(&self, port: u16) {
        self.grpc_port.store(port, Ordering::Relaxed);
    }

    fn grpc_port(&self) -> u16 {
        self.grpc_port.load(Ordering::Relaxed)
    }

    fn next_stream_id(&self) -> u64 {
        self.stream_ids.fetch_add(1, Ordering::Relaxed)
    }
}

/// The topic a resource names (in its namespace), checked as RocketMQ checks topic names.
fn topic_name(resource: Option<&Resource>) -> Result<String, Refusal> {
    let resource = resource.ok_or_else(|| Refusal::new(Code::IllegalTopic, "topic is required"))?;
    let name = qualified(resource);
    names::check_topic(&name).map_err(|e| Refusal::new(Code::IllegalTopic, e.to_string()))?;
    if is_system_topic(&name) {
        return Err(Refusal::new(
            Code::IllegalTopic,
            format!("topic {name} is a system topic"),
        ));
    }
    Ok(name)
}

/// RocketMQ's system topics (`TopicValidator.isSystemTopic`), which clients may not use.
fn is_system_topic(name: &str) -> bool {
    const SYSTEM: &[&str] = &[
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "BenchmarkTest",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRACE_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
    ];
    SYSTEM.contains(&name) || name.starts_with("rmq_sys_")
}

/// The consumer group a resource names (in its namespace), checked.
fn group_name(resource: Option<&Resource>) -> Result<String, Refusal> {
    let resource =
        resource.ok_or_else(|| Refusal::new(Code::IllegalConsumerGroup, "group is required"))?;
    let name = qualified(resource);
    names::check_group(&name)
        .map_err(|e| Refusal::new(Code::IllegalConsumerGroup, e.to_string()))?;
    Ok(name)
}

fn qualified(resource: &Resource) -> String {
    let namespace = Some(resource.resource_namespace.as_str()).filter(|n| !n.is_empty());
    stellmq_client::namespace::wrap(namespace, &resource.name)
}

/// The gRPC service over a shared [`Proxy`].
#[derive(Clone)]
pub struct Service(pub Arc<Proxy>);

/// Runs a unary RPC: the caller is read first (no client id: CLIENT_ID_REQUIRED), and a
/// refusal becomes the answer's status.
macro_rules! unary {
    ($self:ident, $request:ident, $answer:ty, $body:expr) => {{
        let started = std::time::Instant::now();
        let rpc = auth::rpc_name(&$request);
        let result: Result<$answer, Refusal> = async {
            let caller = Caller::of(&$request)?;
            let proxy = &$self.0;
            proxy.check_request(&$request).await?;
            $body(proxy, caller, $request.into_inner()).await
        }
        .await;
        let answer = result.unwrap_or_else(|refusal| <$answer>::refused(&refusal));
        $self.0.latency.observe(
            rpc,
            status::code_name(answer.status_code()),
            started.elapsed(),
        );
        Ok(Response::new(answer))
    }};
}

/// Answers that are only a status when refused.
trait Refused {
    fn refused(refusal: &Refusal) -> Self;
    /// The code of the answer's status (OK when it has none).
    fn status_code(&self) -> i32;
}

macro_rules! refused_by_status {
    ($($t:ty),*) => {$(
        impl Refused for $t {
            fn refused(refusal: &Refusal) -> Self {
                let mut answer = Self::default();
                answer.status = Some(refusal.status());
                answer
            }

            fn status_code(&self) -> i32 {
                self.status.as_ref().map_or(Code::Ok as i32, |s| s.code)
            }
        }
    )*};
}

refused_by_status!(
    QueryRouteResponse,
    HeartbeatResponse,
    SendMessageResponse,
    QueryAssignmentResponse,
    AckMessageResponse,
    ForwardMessageToDeadLetterQueueResponse,
    EndTransactionResponse,
    NotifyClientTerminationResponse,
    ChangeInvisibleDurationResponse,
    RecallMessageResponse,
    SyncLiteSubscriptionResponse,
    UpdateOffsetResponse,
    GetOffsetResponse,
    QueryOffsetResponse
);

fn not_implemented(what: &str) -> Refusal {
    Refusal::new(
        Code::NotImplemented,
        format!("{what} is not offered by this proxy"),
    )
}

#[tonic::async_trait]
impl MessagingService for Service {
    async fn query_route(
        &self,
        request: Request<QueryRouteRequest>,
    ) -> Result<Response<QueryRouteResponse>, tonic::Status> {
        unary!(self, request, QueryRouteResponse, route::query_route)
    }

    async fn heartbeat(
        &self,
        request: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, tonic::Status> {
        unary!(self, request, HeartbeatResponse, telemetry::heartbeat)
    }

    async fn send_message(
        &self,
        request: Request<SendMessageRequest>,
    ) -> Result<Response<SendMessageResponse>, tonic::Status> {
        unary!(self, request, SendMessageResponse, send::send_message)
    }

    async fn query_assignment(
        &self,
        request: Request<QueryAssignmentRequest>,
    ) -> Result<Response<QueryAssignmentResponse>, tonic::Status> {
        unary!(
            self,
            request,
            QueryAssignmentResponse,
            route::query_assignment
        )
    }

    type ReceiveMessageStream = AnswerStream<ReceiveMessageResponse>;

    async fn receive_message(
        &self,
        request: Request<ReceiveMessageRequest>,
    ) -> Result<Response<Self::ReceiveMessageStream>, tonic::Status> {
        Ok(Response::new(receive::receive_message(
            self.0.clone(),
            request,
        )))
    }

    async fn ack_message(
        &self,
        request: Request<AckMessageRequest>,
    ) -> Result<Response<AckMessageResponse>, tonic::Status> {
        unary!(self, request, AckMessageResponse, ack::ack_message)
    }

    async fn forward_message_to_dead_letter_queue(
        &self,
        request: Request<ForwardMessageToDeadLetterQueueRequest>,
    ) -> Result<Response<ForwardMessageToDeadLetterQueueResponse>, tonic::Status> {
        unary!(
            self,
            request,
            ForwardMessageToDeadLetterQueueResponse,
            ack::forward_to_dead_letter_queue
        )
    }

    type PullMessageStream = AnswerStream<PullMessageResponse>;

    async fn pull_message(
        &self,
        _request: Request<PullMessageRequest>,
    ) -> Result<Response<Self::PullMessageStream>, tonic::Status> {
        let answer = PullMessageResponse {
            content: Some(pull_message_response::Content::Status(
                not_implemented("PullMessage").status(),
            )),
        };
        Ok(Response::new(Box::pin(tokio_stream::once(Ok(answer)))))
    }

    async fn update_offset(
        &self,
        _request: Request<UpdateOffsetRequest>,
    ) -> Result<Response<UpdateOffsetResponse>, tonic::Status> {
        Ok(Response::new(UpdateOffsetResponse::refused(
            &not_implemented("UpdateOffset"),
        )))
    }

    async fn get_offset(
        &self,
        _request: Request<GetOffsetRequest>,
    ) -> Result<Response<GetOffsetResponse>, tonic::Status> {
        Ok(Response::new(GetOffsetResponse::refused(&not_implemented(
            "GetOffset",
        ))))
    }

    async fn query_offset(
        &self,
        _request: Request<QueryOffsetRequest>,
    ) -> Result<Response<QueryOffsetResponse>, tonic::Status> {
        Ok(Response::new(QueryOffsetResponse::refused(
            &not_implemented("QueryOffset"),
        )))
    }

    async fn end_transaction(
        &self,
        request: Request<EndTransactionRequest>,
    ) -> Result<Response<EndTransactionResponse>, tonic::Status> {
        unary!(self, request, EndTransactionResponse, send::end_transaction)
    }

    type TelemetryStream = AnswerStream<TelemetryCommand>;

    async fn telemetry(
        &self,
        request: Request<tonic::Streaming<TelemetryCommand>>,
    ) -> Result<Response<Self::TelemetryStream>, tonic::Status> {
        telemetry::telemetry(self.0.clone(), request).map(Response::new)
    }

    async fn notify_client_termination(
        &self,
        request: Request<NotifyClientTerminationRequest>,
    ) -> Result<Response<NotifyClientTerminationResponse>, tonic::Status> {
        unary!(
            self,
            request,
            NotifyClientTerminationResponse,
            telemetry::notify_client_termination
        )
    }

    async fn change_invisible_duration(
        &self,
        request: Request<ChangeInvisibleDurationRequest>,
    ) -> Result<Response<ChangeInvisibleDurationResponse>, tonic::Status> {
        unary!(
            self,
            request,
            ChangeInvisibleDurationResponse,
            ack::change_invisible_duration
        )
    }

    async fn recall_message(
        &self,
        request: Request<RecallMessageRequest>,
    ) -> Result<Response<RecallMessageResponse>, tonic::Status> {
        unary!(self, request, RecallMessageResponse, recall::recall_message)
    }

    async fn sync_lite_subscription(
        &self,
        request: Request<SyncLiteSubscriptionRequest>,
    ) -> Result<Response<SyncLiteSubscriptionResponse>, tonic::Status> {
        unary!(
            self,
            request,
            SyncLiteSubscriptionResponse,
            lite::sync_lite_subscription
        )
    }
}
