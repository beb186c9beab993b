//! Raw remoting requests, built and sent the way RocketMQ clients send them, for tests that
//! drive a broker or a name server below any client library.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_remoting::protocol::body::{
    fastjson, ConsumeFromWhere, ConsumeType, ConsumerData, HeartbeatData, KvTable, MessageModel,
    ProducerData, SubscriptionData, TopicRouteData,
};
use stellmq_remoting::protocol::headers::{
    CommandHeader, GetRouteInfoRequestHeader, PullMessageRequestHeader, SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
};
use stellmq_remoting::protocol::message::{pull_sys_flag, MessageRecord, Properties};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode};

use crate::registration::Registration;
use crate::wait::TIMEOUT;

/// A request with `fields` as its header.
pub fn request(code: RequestCode, fields: &[(&str, &str)]) -> RemotingCommand {
    RemotingCommand::request(
        code,
        fields.iter().map(|(k, v)| (*k, *v)).collect::<ExtFields>(),
    )
}

/// The header of a send to `queue_id` of `topic` by producer group `pg`, with `props` as the
/// message's properties (auto-creating the topic from `TBW102` with 4 queues).
pub fn send_header(topic: &str, queue_id: i32, props: &[(&str, &str)]) -> SendMessageRequestHeader {
    let p: Properties = props.iter().map(|(k, v)| (*k, *v)).collect();
    SendMessageRequestHeader {
        producer_group: "pg".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        flag: 0,
        properties: Some(p.encode()),
        reconsume_times: None,
        unit_mode: None,
        batch: None,
        max_reconsume_times: None,
        broker_name: None,
    }
}

/// SEND_MESSAGE_V2 (the short header names) of [`send_header`] with `body`.
pub fn send_request(
    topic: &str,
    queue_id: i32,
    body: &[u8],
    props: &[(&str, &str)],
) -> RemotingCommand {
    let v2: SendMessageRequestHeaderV2 = send_header(topic, queue_id, props).into();
    RemotingCommand::request(RequestCode::SEND_MESSAGE_V2, v2.to_ext_fields())
        .with_body(Bytes::copy_from_slice(body))
}

/// HEART_BEAT of client `client_id`: producer group `pg`, and consumer group `group`
/// subscribed to each `(topic, tag expression)` of `subs`.
pub fn heartbeat(
    client_id: &str,
    group: &str,
    subs: &[(&str, &str)],
    model: MessageModel,
) -> RemotingCommand {
    let data = HeartbeatData {
        client_id: client_id.into(),
        producer_data_set: vec![ProducerData {
            group_name: "pg".into(),
        }],
        consumer_data_set: vec![ConsumerData {
            group_name: group.into(),
            consume_type: ConsumeType::ConsumePassively,
            message_model: model,
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            subscription_data_set: subs
                .iter()
                .map(|(topic, expr)| SubscriptionData {
                    topic: (*topic).into(),
                    sub_string: (*expr).into(),
                    sub_version: 1,
                    ..Default::default()
                })
                .collect(),
            unit_mode: false,
        }],
    };
    RemotingCommand::request(RequestCode::HEART_BEAT, ExtFields::new())
        .with_body(fastjson::encode(&data))
}

/// A PULL_MESSAGE request: by default up to 32 messages from `offset`, no flags, no
/// subscription (the group's heartbeat one applies), answered at once, tag expressions.
#[derive(Debug, Clone)]
pub struct Pull(PullMessageRequestHeader);

impl Pull {
    pub fn new(group: &str, topic: &str, queue_id: i32, offset: i64) -> Self {
        Self(PullMessageRequestHeader {
            consumer_group: group.into(),
            topic: topic.into(),
            queue_id,
            queue_offset: offset,
            max_msg_nums: 32,
            sys_flag: 0,
            commit_offset: 0,
            suspend_timeout_millis: 0,
            subscription: None,
            sub_version: 0,
            expression_type: Some("TAG".into()),
            max_msg_bytes: None,
        })
    }

    /// Carries `expression` as the subscription (FLAG_SUBSCRIPTION).
    pub fn subscribe(mut self, expression: &str) -> Self {
        self.0.subscription = Some(expression.to_owned());
        self.0.sys_flag |= pull_sys_flag::SUBSCRIPTION;
        self
    }

    /// May be parked up to `millis` until a message arrives (FLAG_SUSPEND).
    pub fn suspend(mut self, millis: i64) -> Self {
        self.0.suspend_timeout_millis = millis;
        self.0.sys_flag |= pull_sys_flag::SUSPEND;
        self
    }

    /// Commits `offset` for the group (FLAG_COMMIT_OFFSET).
    pub fn commit(mut self, offset: i64) -> Self {
        self.0.commit_offset = offset;
        self.0.sys_flag |= pull_sys_flag::COMMIT_OFFSET;
        self
    }

    /// `TAG` (the default) or `SQL92`.
    pub fn expression_type(mut self, expression_type: &str) -> Self {
        self.0.expression_type = Some(expression_type.to_owned());
        self
    }

    pub fn sub_version(mut self, version: i64) -> Self {
        self.0.sub_version = version;
        self
    }

    pub fn header(&self) -> &PullMessageRequestHeader {
        &self.0
    }

    pub fn to_request(&self) -> RemotingCommand {
        RemotingCommand::request(RequestCode::PULL_MESSAGE, self.0.to_ext_fields())
    }
}

/// A remoting client aimed at one server (a broker or a name server); every call panics when
/// no answer comes within [`TIMEOUT`].
pub struct RawClient {
    client: RemotingClient,
    addr: String,
}

impl RawClient {
    pub fn new(addr: &str) -> Self {
        Self::with_config(addr, ClientConfig::default())
    }

    /// A client with `config` (e.g. TLS settings).
    pub fn with_config(addr: &str, config: ClientConfig) -> Self {
        Self {
            client: RemotingClient::new(config),
            addr: addr.to_owned(),
        }
    }

    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Aims later calls at `addr` (e.g. a restarted broker), on the same client.
    pub fn set_addr(&mut self, addr: &str) {
        addr.clone_into(&mut self.addr);
    }

    /// The remoting client, for requests to other servers or oneway requests.
    pub fn remoting(&self) -> &RemotingClient {
        &self.client
    }

    /// The answer to `request`, whatever its code.
    pub async fn call(&self, request: RemotingCommand) -> RemotingCommand {
        self.client
            .invoke(&self.addr, request, TIMEOUT)
            .await
            .unwrap_or_else(|e| panic!("{} answers: {e}", self.addr))
    }

    /// The answer to `request`, which must be a success.
    pub async fn call_ok(&self, request: RemotingCommand) -> RemotingCommand {
        let response = self.call(request).await;
        assert_eq!(
            response.code,
            0,
            "a successful answer: {}",
            response.remark_str()
        );
        response
    }

    /// Sends `body` to `queue_id` of `topic` ([`send_request`]).
    pub async fn send(
        &self,
        topic: &str,
        queue_id: i32,
        body: &str,
        props: &[(&str, &str)],
    ) -> RemotingCommand {
        self.call(send_request(topic, queue_id, body.as_bytes(), props))
            .await
    }

    /// Pulls, allowing for the time the pull may be parked.
    pub async fn pull(&self, pull: Pull) -> RemotingCommand {
        let parked = Duration::from_millis(pull.0.suspend_timeout_millis.max(0).unsigned_abs());
        self.client
            .invoke(&self.addr, pull.to_request(), parked + TIMEOUT)
            .await
            .unwrap_or_else(|e| panic!("{} answers the pull: {e}", self.addr))
    }

    /// Pulls `queue_id` of `topic` from offset 0 as `group` (long polls of 1 s, all tags)
    /// until `n` messages arrived or [`TIMEOUT`] passed; returns what arrived.
    pub async fn pull_until(
        &self,
        group: &str,
        topic: &str,
        queue_id: i32,
        n: usize,
    ) -> Vec<MessageRecord> {
        let deadline = Instant::now() + TIMEOUT;
        let mut got = Vec::new();
        let mut offset = 0;
        while got.len() < n && Instant::now() < deadline {
            let pull = Pull::new(group, topic, queue_id, offset)
                .subscribe("*")
                .suspend(1000);
            let r = self.pull(pull).await;
            if r.code == 0 {
                got.extend(MessageRecord::decode_all(r.body.clone(), true).expect("records"));
                offset = next_begin_offset(&r);
            } else {
                // Not there yet (e.g. not dispatched, or the topic not created yet).
                tokio::time::sleep(crate::wait::POLL_INTERVAL).await;
            }
        }
        got
    }

    /// Every message of `queue_id` of `topic` there is now, read as `group`.
    pub async fn pull_all(&self, group: &str, topic: &str, queue_id: i32) -> Vec<MessageRecord> {
        let mut got = Vec::new();
        let mut offset = 0;
        loop {
            let r = self
                .pull(Pull::new(group, topic, queue_id, offset).subscribe("*"))
                .await;
            if r.code != 0 {
                return got;
            }
            got.extend(MessageRecord::decode_all(r.body.clone(), true).expect("records"));
            offset = next_begin_offset(&r);
        }
    }

    /// GET_BROKER_RUNTIME_INFO: the broker's status table.
    pub async fn runtime_info(&self) -> BTreeMap<String, String> {
        let r = self
            .call_ok(request(RequestCode::GET_BROKER_RUNTIME_INFO, &[]))
            .await;
        let info: KvTable = fastjson::decode(&r.body).expect("a runtime info table");
        info.table
    }

    /// REGISTER_BROKER of `registration` to a name server, which must accept it.
    pub async fn register_broker(&self, registration: &Registration) -> RemotingCommand {
        self.call_ok(registration.request()).await
    }

    /// GET_ROUTEINFO_BY_TOPIC from a name server: the route, or the error code and remark.
    pub async fn route(&self, topic: &str) -> Result<TopicRouteData, (i32, String)> {
        let header = GetRouteInfoRequestHeader {
            topic: topic.into(),
            accept_standard_json_only: None,
        };
        let r = self
            .call(RemotingCommand::request(
                RequestCode::GET_ROUTEINFO_BY_TOPIC,
                header.to_ext_fields(),
            ))
            .await;
        if r.code == 0 {
            Ok(fastjson::decode(&r.body).expect("a route body"))
        } else {
            Err((r.code, r.remark_str().to_owned()))
        }
    }

    /// Closes its connections.
    pub async fn shutdown(self) {
        self.client.shutdown().await;
    }
}

/// `nextBeginOffset` of a pull response.
pub fn next_begin_offset(response: &RemotingCommand) -> i64 {
    response
        .ext_fields
        .get("nextBeginOffset")
        .and_then(|v| v.parse().ok())
        .expect("nextBeginOffset in the pull response")
}
