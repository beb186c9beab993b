//! A broker without sockets, for tests of request processing: the real state, request table
//! and processors over a store in a temporary directory, served on in-memory connections
//! exactly as on accepted TCP connections (lanes, limits, the ACL and name checks). Of the
//! background services only the topic and group file writers run (requests wait for them);
//! registration, long-poll checks, revive and the rest do not: a test drives what it needs.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use stellmq_remoting::net::{Channel, InboundHandler, RemotingServer, ServerConfig, ServerHandle};
use stellmq_remoting::protocol::headers::{
    CommandHeader, PullMessageRequestHeader, SendMessageRequestHeader,
};
use stellmq_remoting::protocol::message::pull_sys_flag;
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};
use tokio::sync::mpsc;

use crate::config::BrokerStartConfig;
use crate::persist;
use crate::server::{restore_pop, ClientChannelWatcher};
use crate::state::{BrokerState, Endpoints};

/// The address the fixture's broker claims (nothing listens there).
const BROKER_ADDR: &str = "127.0.0.1:10911";
/// How long [`Fixture::call`] waits for an answer.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// Requests the broker sent a client and the client did not read yet (beyond: dropped).
const SERVER_REQUESTS_KEPT: usize = 1024;

/// One broker served in memory.
pub(crate) struct Fixture {
    pub state: BrokerState,
    server: ServerHandle,
    client: Client,
    _dir: tempfile::TempDir,
}

/// A client connection and what the broker asked it (GET_CONSUMER_RUNNING_INFO,
/// NOTIFY_CONSUMER_IDS_CHANGED, ...).
pub(crate) struct Client {
    pub channel: Channel,
    pub asked: mpsc::Receiver<RemotingCommand>,
}

/// Keeps what the broker sends a client as requests; answers none of them.
struct KeepRequests(mpsc::Sender<RemotingCommand>);

impl InboundHandler for KeepRequests {
    fn on_request(&self, _channel: Channel, request: RemotingCommand, _received_at: Instant) {
        let _ = self.0.try_send(request);
    }
}

/// Answers what the broker asks a client with its function, and keeps each question.
struct Answering<F> {
    keep: mpsc::Sender<RemotingCommand>,
    answer: F,
}

impl<F> InboundHandler for Answering<F>
where
    F: Fn(&RemotingCommand) -> RemotingCommand + Send + Sync + 'static,
{
    fn on_request(&self, channel: Channel, request: RemotingCommand, _received_at: Instant) {
        channel.try_send((self.answer)(&request));
        let _ = self.keep.try_send(request);
    }
}

/// A master named `broker-fixture` with [`BrokerStartConfig::small`]'s small files and no
/// name server, storing under `root`.
pub(crate) fn small_master(root: &std::path::Path) -> BrokerStartConfig {
    let mut c = BrokerStartConfig::small(root);
    c.broker.namesrv_addr = String::new();
    c.broker.broker_name = "broker-fixture".into();
    c
}

impl Fixture {
    /// A master with [`small_master`]'s configuration.
    pub async fn start() -> Fixture {
        Self::start_with(|_| {}).await
    }

    /// A master with [`small_master`]'s configuration changed by `tweak`.
    pub async fn start_with(tweak: impl FnOnce(&mut BrokerStartConfig)) -> Fixture {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut config = small_master(dir.path());
        tweak(&mut config);
        config.normalize().expect("a valid test configuration");
        let addr: SocketAddr = BROKER_ADDR.parse().expect("an address");
        let state = BrokerState::open(config, &mut Endpoints::detached(addr))
            .await
            .expect("the broker opens");
        if state.is_master() && !state.identity.role.controller_mode() {
            restore_pop(&state).await.expect("POP restored");
        }
        let bc = state.config.read().clone();
        let mut server = RemotingServer::new(ServerConfig {
            listen_addr: addr,
            ..Default::default()
        });
        crate::routes::register(&mut server, &state);
        server.add_listener(Arc::new(ClientChannelWatcher {
            consumers: state.consumers.clone(),
            producers: state.producers.clone(),
            notify: bc.notify_consumer_ids_changed_enable,
        }));
        let server = server.start_detached().expect("the request table is valid");
        let stop = state.stop.clone();
        tokio::spawn(persist::run_writer(state.topics.clone(), stop.clone()));
        tokio::spawn(persist::run_writer(state.groups.clone(), stop));
        state.writer.append_prologue().await;
        let client = connect(&server, 1);
        Fixture {
            state,
            server,
            client,
            _dir: dir,
        }
    }

    /// A slave (`brokerId` 1) with [`small_master`]'s configuration changed by `tweak`; no
    /// master is configured, so it replicates nothing.
    pub async fn start_slave_with(tweak: impl FnOnce(&mut BrokerStartConfig)) -> Fixture {
        Self::start_with(|c| {
            c.broker.broker_id = 1;
            c.broker.broker_role = crate::config::BrokerRole::Slave;
            tweak(c);
        })
        .await
    }

    /// Sends `request` on the fixture's connection and waits for the answer.
    pub async fn call(&self, request: RemotingCommand) -> RemotingCommand {
        self.client
            .channel
            .invoke(request, CALL_TIMEOUT)
            .await
            .expect("the broker answers")
    }

    /// Another client connection, from `127.0.0.1:<port>`.
    pub fn connect(&self, port: u16) -> Client {
        connect(&self.server, port)
    }

    /// A client connection from `127.0.0.1:<port>` that answers what the broker asks it
    /// (GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY, ...) with `answer`.
    pub fn connect_answering(
        &self,
        port: u16,
        answer: impl Fn(&RemotingCommand) -> RemotingCommand + Send + Sync + 'static,
    ) -> Client {
        connect_with(&self.server, port, |keep| {
            Arc::new(Answering { keep, answer })
        })
    }

    /// Moves the broker's clock forward (POP invisible times and revive, long-poll
    /// deadlines of pulls and POPs).
    pub fn advance(&self, by: Duration) {
        self.state.consumption.clock.advance(by);
    }

    /// One pass of the revive service; the messages it put back, once they are consumable.
    pub async fn revive(&self) -> usize {
        let revived = crate::processor::pop::revive::revive_now(&self.state.consumption.pop).await;
        self.dispatched().await;
        revived
    }

    /// Waits until every message in the CommitLog is in its ConsumeQueue and index.
    pub async fn dispatched(&self) {
        let store = self.state.store.clone();
        tokio::task::spawn_blocking(move || store.wait_dispatched(CALL_TIMEOUT))
            .await
            .expect("the wait ran");
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.state.stop.cancel();
        self.state.metadata.close();
        self.state.store.shutdown();
    }
}

fn connect(server: &ServerHandle, port: u16) -> Client {
    connect_with(server, port, |keep| Arc::new(KeepRequests(keep)))
}

/// A connection from `127.0.0.1:<port>` whose handler (built around the sender of what the
/// broker asks) sees the broker's requests.
fn connect_with(
    server: &ServerHandle,
    port: u16,
    handler: impl FnOnce(mpsc::Sender<RemotingCommand>) -> Arc<dyn InboundHandler>,
) -> Client {
    let (keep, asked) = mpsc::channel(SERVER_REQUESTS_KEPT);
    let peer = SocketAddr::from(([127, 0, 0, 1], port));
    Client {
        channel: server.connect_in_memory(peer, handler(keep)),
        asked,
    }
}

/// SEND_MESSAGE of `body` to queue `queue_id` of `topic`, with `properties` (RocketMQ's
/// name/value encoding).
pub(crate) fn send_request(
    topic: &str,
    queue_id: i32,
    body: &[u8],
    properties: &str,
) -> RemotingCommand {
    let header = SendMessageRequestHeader {
        producer_group: "fixture_producer".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id,
        sys_flag: 0,
        born_timestamp: 0,
        flag: 0,
        properties: Some(properties.into()),
        ..Default::default()
    };
    RemotingCommand::request(RequestCode::SEND_MESSAGE, header.to_ext_fields())
        .with_body(body.to_vec())
}

/// PULL_MESSAGE of up to 32 messages of `topic`'s queue `queue_id` from `offset` with
/// subscription `*` for `group`; it may wait up to `suspend_ms` for a message (0: answer at
/// once).
pub(crate) fn pull_request(
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    suspend_ms: i64,
) -> RemotingCommand {
    let mut sys_flag = pull_sys_flag::SUBSCRIPTION;
    if suspend_ms > 0 {
        sys_flag |= pull_sys_flag::SUSPEND;
    }
    let header = PullMessageRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: 32,
        sys_flag,
        commit_offset: 0,
        suspend_timeout_millis: suspend_ms,
        subscription: Some("*".into()),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        ..Default::default()
    };
    RemotingCommand::request(RequestCode::PULL_MESSAGE, header.to_ext_fields())
}

/// Waits (up to 10 s, checking every 5 ms) until `done`; panics naming `what` otherwise.
pub(crate) async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + CALL_TIMEOUT;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Panics with the remark unless `response` is SUCCESS.
pub(crate) fn assert_success(response: &RemotingCommand) {
    assert_eq!(
        response.code,
        stellmq_remoting::protocol::ResponseCode::SUCCESS.as_i32(),
        "refused: {:?}",
        response.remark
    );
}

/// HEART_BEAT of consumer `client_id` of clustering `group`, subscribed to all of `topic`.
pub(crate) fn heartbeat(client_id: &str, group: &str, topic: &str) -> RemotingCommand {
    use stellmq_remoting::protocol::body::{
        fastjson, ConsumerData, HeartbeatData, SubscriptionData,
    };
    let data = HeartbeatData {
        client_id: client_id.into(),
        producer_data_set: Vec::new(),
        consumer_data_set: vec![ConsumerData {
            group_name: group.into(),
            subscription_data_set: vec![SubscriptionData {
                topic: topic.into(),
                sub_string: "*".into(),
                ..Default::default()
            }],
            ..Default::default()
        }],
    };
    RemotingCommand::request(
        RequestCode::HEART_BEAT,
        stellmq_remoting::protocol::ExtFields::default(),
    )
    .with_body(fastjson::encode(&data))
}

/// A request of `code` with `fields` as its header (names as RocketMQ spells them).
pub(crate) fn request(code: RequestCode, fields: &[(&str, &str)]) -> RemotingCommand {
    RemotingCommand::request(code, fields.iter().copied().collect())
}
