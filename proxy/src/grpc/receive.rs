//! ReceiveMessage: one POP from a broker (long polling), streamed back as RocketMQ's proxy
//! streams it: a status, the messages, then the delivery timestamp.

use std::sync::Arc;
use std::time::Duration;

use stellmq_remoting::protocol::message::now_ms;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Request;

use super::ack::receipt_handle;
use super::message::{duration_ms, ms_timestamp, to_grpc};
use super::settings::max_delivery_attempts;
use super::status::{ok, status, Refusal};
use super::{group_name, topic_name, AnswerStream, Caller, Proxy};
use crate::cluster::{PopOutcome, PopRequest, Popped};
use crate::pb::{
    receive_message_response::Content, settings::PubSub, ClientType, Code, FilterType,
    ReceiveMessageRequest, ReceiveMessageResponse, Resource,
};

/// What a receive waits for beyond its polling time (the broker's answer on its way back).
const ANSWER_MARGIN: Duration = Duration::from_secs(2);
/// A client's request timeout when its settings do not say.
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(3);
/// Invisible time given back to messages a client could not be sent.
const NACK_INVISIBLE_MS: i64 = 1_000;

pub fn receive_message(
    proxy: Arc<Proxy>,
    request: Request<ReceiveMessageRequest>,
) -> AnswerStream<ReceiveMessageResponse> {
    let caller = Caller::of(&request);
    let metadata = proxy.auth_metadata(&request);
    let peer = request.remote_addr().map(|a| a.ip());
    let request = request.into_inner();
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let caller = match caller {
            Ok(caller) => caller,
            Err(refusal) => return finish(&tx, refusal.status()).await,
        };
        if let Some(metadata) = &metadata {
            let rpc = <ReceiveMessageRequest as super::auth::RpcNeeds>::RPC;
            let needs = || super::auth::RpcNeeds::needs(&request);
            if let Err(refusal) = proxy.check_auth(rpc, metadata, peer, needs).await {
                proxy.log_refusal(rpc, peer, &refusal);
                return finish(&tx, refusal.status()).await;
            }
        }
        let started = std::time::Instant::now();
        let observe = |code: i32| {
            let name = super::status::code_name(code);
            proxy
                .latency
                .observe("ReceiveMessage", name, started.elapsed());
        };
        match receive(&proxy, &caller, &request).await {
            Ok(Received::Messages(topic, group, popped)) => {
                observe(Code::Ok as i32);
                let renew = request.auto_renew
                    && proxy.config.enable_proxy_auto_renew
                    && popped.iter().all(|p| p.lite_topic.is_none());
                let qualified_topic = super::qualified(&topic);
                let messages = popped
                    .iter()
                    .map(|p| {
                        let handle = receipt_handle(p);
                        if renew {
                            proxy.renewals.track(
                                &caller.client_id,
                                &group,
                                &qualified_topic,
                                &handle,
                            );
                        }
                        to_grpc(&p.record, topic.clone(), Some(handle), p.reconsume_times)
                    })
                    .collect();
                deliver(&tx, messages, &proxy, &group, &topic, popped).await;
            }
            Ok(Received::Nothing(head)) => {
                observe(head.code);
                finish(&tx, head).await
            }
            Err(refusal) => {
                observe(refusal.code as i32);
                finish(&tx, refusal.status()).await
            }
        }
    });
    Box::pin(ReceiverStream::new(rx))
}

enum Received {
    /// The topic as the client named it, the group, and the messages.
    Messages(Resource, String, Vec<Popped>),
    Nothing(crate::pb::Status),
}

async fn receive(
    proxy: &Proxy,
    caller: &Caller,
    request: &ReceiveMessageRequest,
) -> Result<Received, Refusal> {
    let group = group_name(request.group.as_ref())?;
    let queue = request
        .message_queue
        .as_ref()
        .ok_or_else(|| Refusal::new(Code::BadRequest, "message_queue is required"))?;
    let topic = topic_name(queue.topic.as_ref())?;
    let settings = proxy
        .clients
        .settings(&caller.client_id)
        .unwrap_or_default();
    let poll_time = polling_time(proxy, caller, request, &settings)?;
    let invisible_time = invisible_time(proxy, request)?;
    let (expression_type, expression) = filter(request);
    let fifo = match &settings.pub_sub {
        Some(PubSub::Subscription(s)) => s.fifo.unwrap_or(false),
        _ => false,
    };
    let pop = PopRequest {
        group: group.clone(),
        topic: topic.clone(),
        broker_name: queue.broker.as_ref().map(|b| b.name.clone()),
        max_messages: request
            .batch_size
            .clamp(1, proxy.config.grpc_client_consumer_max_batch_size.max(1)),
        invisible_time_ms: invisible_time,
        poll_time_ms: poll_time.as_millis() as i64,
        expression_type,
        expression,
        fifo,
        attempt_id: request.attempt_id.clone(),
        timeout: poll_time + ANSWER_MARGIN,
    };
    let outcome = if is_lite_consumer(&settings) {
        // Each lite topic is served in order; the broker counts the deliveries.
        proxy.cluster.pop_lite(&pop, &caller.client_id).await?
    } else {
        proxy.cluster.pop(&pop).await?
    };
    let popped = match outcome {
        PopOutcome::Found(popped) => popped,
        PopOutcome::NoNewMessage => {
            return Ok(Received::Nothing(status(
                Code::MessageNotFound,
                "no new message",
            )))
        }
        PopOutcome::PollingFull => {
            return Ok(Received::Nothing(status(
                Code::TooManyRequests,
                "polling full",
            )))
        }
    };
    let max_attempts = max_delivery_attempts(&settings);
    let mut kept = Vec::with_capacity(popped.len());
    for p in popped {
        if p.reconsume_times >= max_attempts && !fifo {
            dead_letter(proxy, &group, &topic, &p).await;
        } else {
            kept.push(p);
        }
    }
    if kept.is_empty() {
        return Ok(Received::Nothing(status(
            Code::MessageNotFound,
            "no match message",
        )));
    }
    let resource = queue.topic.clone().unwrap_or_default();
    Ok(Received::Messages(resource, group, kept))
}

/// A LiteSimpleConsumer or LitePushConsumer (RocketMQ 5.5): it receives its lite topics.
pub(super) fn is_lite_consumer(settings: &crate::pb::Settings) -> bool {
    settings.client_type == Some(ClientType::LiteSimpleConsumer as i32)
        || settings.client_type == Some(ClientType::LitePushConsumer as i32)
}

/// RocketMQ's rule: the client's long-polling timeout, else what its deadline leaves after
/// half a request timeout; within the configured bounds and the deadline.
fn polling_time(
    proxy: &Proxy,
    caller: &Caller,
    request: &ReceiveMessageRequest,
    settings: &crate::pb::Settings,
) -> Result<Duration, Refusal> {
    let min = Duration::from_millis(
        proxy
            .config
            .grpc_client_consumer_min_long_polling_timeout_millis,
    );
    let max = Duration::from_millis(
        proxy
            .config
            .grpc_client_consumer_max_long_polling_timeout_millis,
    );
    let request_timeout = settings
        .request_timeout
        .as_ref()
        .map(|d| Duration::from_millis(duration_ms(d).max(0) as u64))
        .unwrap_or(DEFAULT_REQUEST_TIMEOUT);
    let wanted = match &request.long_polling_timeout {
        Some(d) => Duration::from_millis(duration_ms(d).max(0) as u64),
        None => caller
            .deadline
            .unwrap_or(max)
            .saturating_sub(request_timeout / 2),
    };
    let mut poll = wanted.clamp(min, max.max(min));
    if let Some(deadline) = caller.deadline {
        if poll > deadline {
            if deadline >= min {
                poll = deadline;
            } else {
                return Err(Refusal::new(
                    Code::IllegalPollingTime,
                    "The deadline time remaining is not enough for polling, please check network condition",
                ));
            }
        }
    }
    Ok(poll)
}

fn invisible_time(proxy: &Proxy, request: &ReceiveMessageRequest) -> Result<i64, Refusal> {
    if request.auto_renew && proxy.config.enable_proxy_auto_renew {
        return Ok(proxy.config.default_invisible_time_mills as i64);
    }
    let asked = request
        .invisible_duration
        .as_ref()
        .map(duration_ms)
        .unwrap_or(proxy.config.default_invisible_time_mills as i64);
    let (min, max) = (
        proxy.config.min_invisible_time_mills_for_recv as i64,
        proxy.config.max_invisible_time_mills as i64,
    );
    if asked < min || asked > max {
        return Err(Refusal::new(
            Code::IllegalInvisibleTime,
            format!("the invisible time must be within {min} and {max} ms, not {asked}"),
        ));
    }
    Ok(asked)
}

/// The broker's expression type and expression of a receive (`*` when none).
fn filter(request: &ReceiveMessageRequest) -> (String, String) {
    let Some(f) = &request.filter_expression else {
        return ("TAG".into(), "*".into());
    };
    let kind = if f.r#type == FilterType::Sql as i32 {
        "SQL92"
    } else {
        "TAG"
    };
    let expression = if f.expression.trim().is_empty() {
        "*".to_owned()
    } else {
        f.expression.clone()
    };
    (kind.to_owned(), expression)
}

/// A message delivered as often as the group allows goes to the group's DLQ.
async fn dead_letter(proxy: &Proxy, group: &str, topic: &str, p: &Popped) {
    let id = to_grpc(&p.record, Resource::default(), None, 0)
        .system_properties
        .map(|s| s.message_id)
        .unwrap_or_default();
    let sent = proxy
        .cluster
        .send_to_dead_letter_queue(
            group,
            topic,
            &p.extra_info,
            p.record.head.physical_offset,
            &id,
        )
        .await;
    match sent {
        Ok(()) => {
            if let Err(e) = proxy
                .cluster
                .ack(group, topic, &p.extra_info, p.lite_topic.as_deref())
                .await
            {
                tracing::warn!(%group, %topic, error = %e, "ack after moving a message to the DLQ failed");
            }
        }
        Err(e) => tracing::warn!(%group, %topic, error = %e, "moving a message to the DLQ failed"),
    }
}

/// Streams the status and the messages; messages the client can no longer be sent become
/// visible again at once.
async fn deliver(
    tx: &Answers,
    messages: Vec<crate::pb::Message>,
    proxy: &Proxy,
    group: &str,
    topic: &Resource,
    popped: Vec<Popped>,
) {
    let mut sent = tx.send(Ok(content(Content::Status(ok())))).await.is_ok();
    for (message, p) in messages.into_iter().zip(popped) {
        if sent {
            sent = tx
                .send(Ok(content(Content::Message(message))))
                .await
                .is_ok();
        }
        if !sent {
            let topic = super::qualified(topic);
            if let Err(e) = proxy
                .cluster
                .change_invisible_time(
                    group,
                    &topic,
                    &p.extra_info,
                    NACK_INVISIBLE_MS,
                    p.lite_topic.as_deref(),
                )
                .await
            {
                tracing::debug!(error = %e, "a message the client left could not be released");
            }
        }
    }
    send_delivery_timestamp(tx).await;
}

type Answers = mpsc::Sender<Result<ReceiveMessageResponse, tonic::Status>>;

/// A receive without messages: its status, then the delivery timestamp.
async fn finish(tx: &Answers, head: crate::pb::Status) {
    let _ = tx.send(Ok(content(Content::Status(head)))).await;
    send_delivery_timestamp(tx).await;
}

/// The last answer of every receive.
async fn send_delivery_timestamp(tx: &Answers) {
    let _ = tx
        .send(Ok(content(Content::DeliveryTimestamp(ms_timestamp(
            now_ms(),
        )))))
        .await;
}

fn content(content: Content) -> ReceiveMessageResponse {
    ReceiveMessageResponse {
        content: Some(content),
    }
}
