//! Telemetry (the client's settings in, the proxy's settings and transaction checks out),
//! Heartbeat and NotifyClientTermination.

use std::sync::Arc;

use stellmq_remoting::protocol::message::property;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Streaming};

use super::clients::{Clients, CommandSender};
use super::message::to_grpc;
use super::settings;
use super::status::{ok, Refusal};
use super::transactions::Transactions;
use super::{group_name, topic_name, AnswerStream, Caller, Proxy};
use crate::cluster::{HalfMessage, TransactionCheck, TransactionChecks};
use crate::pb::{
    settings::PubSub, telemetry_command::Command, ClientType, Code, HeartbeatRequest,
    HeartbeatResponse, NotifyClientTerminationRequest, NotifyClientTerminationResponse,
    RecoverOrphanedTransactionCommand, Resource, Settings, TelemetryCommand,
};

/// Commands waiting to be written to one client's stream.
const STREAM_BUFFER: usize = 64;

pub fn telemetry(
    proxy: Arc<Proxy>,
    request: Request<Streaming<TelemetryCommand>>,
) -> Result<AnswerStream<TelemetryCommand>, tonic::Status> {
    let caller = Caller::of(&request).map_err(|r| tonic::Status::invalid_argument(r.message))?;
    let metadata = proxy.auth_metadata(&request);
    let peer = request.remote_addr().map(|a| a.ip());
    let mut inbound = request.into_inner();
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    let stream_id = proxy.next_stream_id();
    tokio::spawn(async move {
        loop {
            let command = tokio::select! {
                _ = proxy.stopping.cancelled() => break,
                next = inbound.message() => match next {
                    Ok(Some(command)) => command,
                    _ => break,
                },
            };
            if let Some(Command::Settings(settings)) = command.command {
                if let Some(metadata) = &metadata {
                    let rpc = <TelemetryCommand as super::auth::RpcNeeds>::RPC;
                    let needs = || super::auth::settings_needs(&settings);
                    if let Err(refusal) = proxy.check_auth(rpc, metadata, peer, needs).await {
                        proxy.log_refusal(rpc, peer, &refusal);
                        let refused = TelemetryCommand {
                            status: Some(refusal.status()),
                            command: None,
                        };
                        let _ = tx.send(Ok(refused)).await;
                        break;
                    }
                }
                if let Err(e) = on_settings(&proxy, &caller, stream_id, &tx, settings).await {
                    let _ = tx.send(Err(e)).await;
                    break;
                }
            }
            // Thread stack traces and message verification results answer requests the
            // proxy never makes; nothing to do.
        }
        proxy.clients.stream_closed(&caller.client_id, stream_id);
    });
    Ok(Box::pin(ReceiverStream::new(rx)))
}

/// Records a client's settings and answers with the proxy's.
async fn on_settings(
    proxy: &Proxy,
    caller: &Caller,
    stream_id: u64,
    tx: &CommandSender,
    client: Settings,
) -> Result<(), tonic::Status> {
    let invalid = |r: Refusal| tonic::Status::invalid_argument(r.message);
    let group_config = match &client.pub_sub {
        Some(PubSub::Publishing(publishing)) => {
            for topic in &publishing.topics {
                topic_name(Some(topic)).map_err(invalid)?;
            }
            None
        }
        Some(PubSub::Subscription(subscription)) => {
            let group = group_name(subscription.group.as_ref()).map_err(invalid)?;
            let first_topic = subscription
                .subscriptions
                .iter()
                .find_map(|s| topic_name(s.topic.as_ref()).ok());
            match first_topic {
                Some(topic) => proxy
                    .cluster
                    .group_config(&topic, &group)
                    .await
                    .ok()
                    .flatten(),
                None => None,
            }
        }
        None => {
            return Err(tonic::Status::invalid_argument(
                "there is no publishing or subscription data in settings",
            ))
        }
    };
    let answer = settings::answer(&client, &proxy.config, group_config.as_ref());
    proxy
        .clients
        .put(&caller.client_id, answer.clone(), stream_id, tx.clone())
        .map_err(|r| tonic::Status::resource_exhausted(r.message))?;
    if matches!(answer.pub_sub, Some(PubSub::Publishing(_))) {
        proxy.producers_changed.notify_one();
    }
    let reply = TelemetryCommand {
        status: Some(ok()),
        command: Some(Command::Settings(answer)),
    };
    tx.send(Ok(reply))
        .await
        .map_err(|_| tonic::Status::cancelled("the client left"))
}

pub async fn heartbeat(
    proxy: &Proxy,
    caller: Caller,
    request: HeartbeatRequest,
) -> Result<HeartbeatResponse, Refusal> {
    let settings = known_settings(proxy, &caller)?;
    match ClientType::try_from(settings.client_type.unwrap_or_default()) {
        Ok(ClientType::Producer) => {}
        Ok(
            ClientType::PushConsumer
            | ClientType::SimpleConsumer
            | ClientType::LitePushConsumer
            | ClientType::LiteSimpleConsumer,
        ) => {
            group_name(request.group.as_ref())?;
        }
        _ => {
            return Err(Refusal::new(
                Code::UnrecognizedClientType,
                "unrecognized client type",
            ))
        }
    }
    Ok(HeartbeatResponse { status: Some(ok()) })
}

pub async fn notify_client_termination(
    proxy: &Proxy,
    caller: Caller,
    _request: NotifyClientTerminationRequest,
) -> Result<NotifyClientTerminationResponse, Refusal> {
    let settings = known_settings(proxy, &caller)?;
    super::lite::forget_client(proxy, &caller, &settings).await;
    proxy.clients.remove(&caller.client_id);
    proxy
        .renewals
        .release_client(&proxy.cluster, &caller.client_id)
        .await;
    Ok(NotifyClientTerminationResponse { status: Some(ok()) })
}

fn known_settings(proxy: &Proxy, caller: &Caller) -> Result<Settings, Refusal> {
    proxy.clients.settings(&caller.client_id).ok_or_else(|| {
        Refusal::new(
            Code::UnrecognizedClientType,
            "cannot find client settings for this client (send them on Telemetry first)",
        )
    })
}

/// Where brokers' transaction checks go: to a producer of the half's topic, on its
/// Telemetry stream, after the half is remembered for the EndTransaction that answers.
pub fn transaction_check_relay(
    clients: Arc<Clients>,
    transactions: Arc<Transactions>,
) -> TransactionChecks {
    Arc::new(move |check: TransactionCheck| {
        let record = &check.half;
        let topic = record
            .properties
            .get(property::PGROUP)
            .or_else(|| record.properties.get(property::REAL_TOPIC))
            .unwrap_or(&record.topic)
            .to_owned();
        let Some(producer) = clients.producer_of(&topic) else {
            tracing::debug!(%topic, "transaction check with no producer of the topic connected");
            return;
        };
        let msg_id = record
            .properties
            .get(property::UNIQ_KEY)
            .map(str::to_owned)
            .or_else(|| check.header.msg_id.clone())
            .unwrap_or_default();
        let transaction_id = check
            .header
            .transaction_id
            .clone()
            .unwrap_or_else(|| msg_id.clone());
        transactions.remember(HalfMessage {
            broker_addr: check.broker_addr.clone(),
            topic: topic.clone(),
            msg_id,
            transaction_id: transaction_id.clone(),
            commit_log_offset: check.header.commit_log_offset,
            tran_state_table_offset: check.header.tran_state_table_offset,
        });
        let mut shown = record.clone();
        shown.topic = topic.clone();
        let resource = Resource {
            resource_namespace: String::new(),
            name: topic,
        };
        let command = TelemetryCommand {
            status: None,
            command: Some(Command::RecoverOrphanedTransactionCommand(
                RecoverOrphanedTransactionCommand {
                    message: Some(to_grpc(&shown, resource, None, 0)),
                    transaction_id,
                },
            )),
        };
        if producer.try_send(Ok(command)).is_err() {
            tracing::debug!("a producer's stream is full or closed; the broker checks again later");
        }
    })
}
