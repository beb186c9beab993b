//! ACL 2.0 at the proxy, as RocketMQ 5's proxy authorizes its data plane: a gRPC request
//! is authenticated by its `authorization` metadata (`MQv2-HMAC-SHA1 Credential=<user>,
//! SignedHeaders=x-mq-date-time, Signature=<hex HMAC-SHA1 of x-mq-date-time>`) against the
//! cluster's users, then authorized per RPC and resource against the user's policies
//! (sends Pub on the topic, receives and acks Sub on the group and the topic, routes Pub or
//! Sub). A refusal answers UNAUTHORIZED with RocketMQ's text and reaches no broker.

use std::net::IpAddr;

use stellmq_acl::auth::{authorize, Action, Need, Resource, UserStatus};
use stellmq_remoting::protocol::signature::verify_grpc;
use tonic::metadata::MetadataMap;

use super::status::Refusal;
use super::{qualified, Proxy};
use crate::pb::*;

/// What an RPC's request needs, by its full message name (the name authorization white
/// lists use).
pub trait RpcNeeds {
    const RPC: &'static str;
    fn needs(&self) -> Result<Vec<Need>, String> {
        Ok(Vec::new())
    }
}

/// An RPC's method name (`SendMessage`), from its request's message name.
pub fn rpc_name<T: RpcNeeds>(_: &tonic::Request<T>) -> &'static str {
    let name = T::RPC.strip_prefix("apache.rocketmq.v2.").unwrap_or(T::RPC);
    name.strip_suffix("Request").unwrap_or(name)
}

fn topic(resource: Option<&crate::pb::Resource>, actions: &[Action]) -> Result<Need, String> {
    match resource.filter(|r| !r.name.trim().is_empty()) {
        Some(r) => {
            let name = qualified(r);
            let resource = if name.starts_with("%RETRY%") {
                Resource::group(&name)
            } else {
                Resource::topic(&name)
            };
            Ok(Need::new(resource, actions))
        }
        None => Err("topic is null.".to_owned()),
    }
}

fn group(resource: Option<&crate::pb::Resource>) -> Result<Need, String> {
    match resource.filter(|r| !r.name.trim().is_empty()) {
        Some(r) => Ok(Need::new(Resource::group(&qualified(r)), &[Action::Sub])),
        None => Err("group is null.".to_owned()),
    }
}

macro_rules! rpc {
    ($t:ty, $name:literal) => {
        impl RpcNeeds for $t {
            const RPC: &'static str = concat!("apache.rocketmq.v2.", $name);
        }
    };
    ($t:ty, $name:literal, |$r:ident| $needs:expr) => {
        impl RpcNeeds for $t {
            const RPC: &'static str = concat!("apache.rocketmq.v2.", $name);
            fn needs(&self) -> Result<Vec<Need>, String> {
                let $r = self;
                $needs
            }
        }
    };
}

rpc!(QueryRouteRequest, "QueryRouteRequest", |r| Ok(vec![topic(
    r.topic.as_ref(),
    &[Action::Pub, Action::Sub]
)?]));
rpc!(HeartbeatRequest, "HeartbeatRequest", |r| {
    let consumer = matches!(
        ClientType::try_from(r.client_type),
        Ok(ClientType::PushConsumer
            | ClientType::SimpleConsumer
            | ClientType::PullConsumer
            | ClientType::LitePushConsumer
            | ClientType::LiteSimpleConsumer)
    );
    Ok(if consumer {
        vec![group(r.group.as_ref())?]
    } else {
        Vec::new()
    })
});
rpc!(SendMessageRequest, "SendMessageRequest", |r| {
    let first = r.messages.first().ok_or("message is null.")?;
    Ok(vec![topic(first.topic.as_ref(), &[Action::Pub])?])
});
rpc!(QueryAssignmentRequest, "QueryAssignmentRequest", |r| Ok(
    vec![
        group(r.group.as_ref())?,
        topic(r.topic.as_ref(), &[Action::Sub])?
    ]
));
rpc!(ReceiveMessageRequest, "ReceiveMessageRequest", |r| {
    let queue = r.message_queue.as_ref().ok_or("messageQueue is null.")?;
    Ok(vec![
        group(r.group.as_ref())?,
        topic(queue.topic.as_ref(), &[Action::Sub])?,
    ])
});
rpc!(AckMessageRequest, "AckMessageRequest", |r| Ok(vec![
    group(r.group.as_ref())?,
    topic(r.topic.as_ref(), &[Action::Sub])?
]));
rpc!(
    ForwardMessageToDeadLetterQueueRequest,
    "ForwardMessageToDeadLetterQueueRequest",
    |r| Ok(vec![
        group(r.group.as_ref())?,
        topic(r.topic.as_ref(), &[Action::Sub])?
    ])
);
rpc!(EndTransactionRequest, "EndTransactionRequest", |r| Ok(
    vec![topic(r.topic.as_ref(), &[Action::Pub])?]
));
rpc!(
    NotifyClientTerminationRequest,
    "NotifyClientTerminationRequest",
    |r| Ok(
        match r.group.as_ref().filter(|g| !g.name.trim().is_empty()) {
            Some(g) => vec![group(Some(g))?],
            None => Vec::new(),
        }
    )
);
rpc!(
    ChangeInvisibleDurationRequest,
    "ChangeInvisibleDurationRequest",
    |r| Ok(vec![group(r.group.as_ref())?])
);
rpc!(RecallMessageRequest, "RecallMessageRequest", |r| Ok(vec![
    topic(r.topic.as_ref(), &[Action::Pub])?
]));
rpc!(
    SyncLiteSubscriptionRequest,
    "SyncLiteSubscriptionRequest",
    |r| Ok(vec![
        group(r.group.as_ref())?,
        topic(r.topic.as_ref(), &[Action::Sub])?
    ])
);
rpc!(TelemetryCommand, "TelemetryCommand");

/// What a Settings command of the telemetry stream needs: Pub on each published topic, or
/// Sub on the group and each subscribed topic.
pub fn settings_needs(settings: &Settings) -> Result<Vec<Need>, String> {
    use settings::PubSub;
    match &settings.pub_sub {
        Some(PubSub::Publishing(p)) => p
            .topics
            .iter()
            .map(|t| topic(Some(t), &[Action::Pub]))
            .collect(),
        Some(PubSub::Subscription(s)) => {
            let mut needs = vec![group(s.group.as_ref())?];
            for entry in &s.subscriptions {
                needs.push(topic(entry.topic.as_ref(), &[Action::Sub])?);
            }
            Ok(needs)
        }
        None => Err("settings command doesn't have publishing or subscription.".to_owned()),
    }
}

/// The user name of a request's `authorization` metadata and its signature, or why not.
fn credential(metadata: &MetadataMap) -> Result<(String, String, String), String> {
    let text = |name: &str| {
        metadata
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let Some(authorization) = text("authorization") else {
        return Err("username cannot be null.".to_owned());
    };
    let Some(date_time) = text("x-mq-date-time") else {
        return Err("datetime is null.".to_owned());
    };
    let Some((_, pairs)) = authorization.split_once(' ') else {
        return Err("authentication header is incorrect.".to_owned());
    };
    let (mut user, mut signature) = (None, None);
    for pair in pairs.split(',') {
        let Some((key, value)) = pair.trim().split_once('=') else {
            return Err(
                "authentication keyValues length is incorrect, actual length=1.".to_owned(),
            );
        };
        match key.trim() {
            "Credential" => user = value.split('/').next().map(str::to_owned),
            "Signature" => signature = Some(value.trim().to_owned()),
            _ => {}
        }
    }
    match (user.filter(|u| !u.is_empty()), signature) {
        (Some(user), Some(signature)) => Ok((user, signature, date_time)),
        (None, _) => Err("username cannot be null.".to_owned()),
        (Some(_), None) => Err("check signature failed.".to_owned()),
    }
}

fn unauthorized(message: String) -> Refusal {
    Refusal::new(Code::Unauthorized, message)
}

impl Proxy {
    pub(super) fn auth_on(&self) -> bool {
        self.config.authentication_enabled || self.config.authorization_enabled
    }

    /// Authenticates the caller of `metadata` and authorizes `needs` for RPC `rpc`.
    pub(super) async fn check_auth(
        &self,
        rpc: &str,
        metadata: &MetadataMap,
        peer: Option<IpAddr>,
        needs: impl FnOnce() -> Result<Vec<Need>, String>,
    ) -> Result<(), Refusal> {
        if !self.auth_on() {
            return Ok(());
        }
        let listed = |list: &str| list.split(',').any(|c| c.trim() == rpc);
        let authenticate =
            self.config.authentication_enabled && !listed(&self.config.authentication_whitelist);
        let authorize_it =
            self.config.authorization_enabled && !listed(&self.config.authorization_whitelist);
        if !authenticate && !authorize_it {
            return Ok(());
        }
        let (username, signature, date_time) = credential(metadata).map_err(unauthorized)?;
        let subject = self
            .cluster
            .auth_subject(&username)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "[AUTH] users cannot be read from the cluster");
                unauthorized(
                    "Authentication failed. Please verify the credentials and try again."
                        .to_owned(),
                )
            })?
            .ok_or_else(|| unauthorized(format!("User:{username} is not found.")))?;
        if subject.user.user_status == UserStatus::Disable {
            return Err(unauthorized(format!("User:{username} is disabled.")));
        }
        if authenticate && !verify_grpc(&subject.user.password, &date_time, &signature) {
            return Err(unauthorized("check signature failed.".to_owned()));
        }
        if authorize_it {
            let needs = needs().map_err(unauthorized)?;
            authorize(&subject.user, subject.acl.as_ref(), &needs, peer).map_err(unauthorized)?;
        }
        Ok(())
    }

    /// [`Self::check_auth`] for a unary or server-streaming request.
    pub(super) async fn check_request<T: RpcNeeds>(
        &self,
        request: &tonic::Request<T>,
    ) -> Result<(), Refusal> {
        let peer = request.remote_addr().map(|a| a.ip());
        let message = request.get_ref();
        self.check_auth(T::RPC, request.metadata(), peer, || message.needs())
            .await
            .inspect_err(|r| self.log_refusal(T::RPC, peer, r))
    }

    /// Logs a refusal, within a few lines a second.
    pub(super) fn log_refusal(&self, rpc: &str, peer: Option<IpAddr>, refusal: &Refusal) {
        if let Some(unlogged) = self.auth_refusals.admit() {
            tracing::warn!(rpc, ?peer, reason = %refusal.message, unlogged, "[AUTH] gRPC request refused by ACL 2.0");
        }
    }

    /// The metadata a stream's later checks need, kept only when checks are on.
    pub(super) fn auth_metadata<T>(&self, request: &tonic::Request<T>) -> Option<MetadataMap> {
        self.auth_on().then(|| request.metadata().clone())
    }
}
