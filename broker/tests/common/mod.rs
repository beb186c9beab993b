//! In-process name server and broker on loopback, and a raw remoting client to drive them
//! the way RocketMQ clients do.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use bytes::Bytes;
use stellmq_broker::{BrokerHandle, BrokerStartConfig};
use stellmq_namesrv::{NamesrvConfig, NamesrvHandle};
use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_remoting::protocol::body::{
    fastjson, ConsumeFromWhere, ConsumeType, ConsumerData, HeartbeatData, MessageModel,
    ProducerData, SubscriptionData,
};
use stellmq_remoting::protocol::headers::{
    CommandHeader, PullMessageRequestHeader, SendMessageRequestHeader, SendMessageRequestHeaderV2,
};
use stellmq_remoting::protocol::message::{MessageRecord, Properties};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode};

pub const T: Duration = Duration::from_secs(10);

/// A name server on an ephemeral loopback port keeping its files in `dir`; returns it and
/// its address.
pub async fn start_namesrv(dir: &std::path::Path) -> (NamesrvHandle, String) {
    let namesrv = stellmq_namesrv::start(NamesrvConfig {
        listen_port: 0,
        bind_address: "127.0.0.1".into(),
        kv_config_path: dir.join("kv.json"),
        config_store_path: dir.join("namesrv.properties"),
        ..Default::default()
    })
    .await
    .expect("name server");
    let addr = namesrv.local_addr().to_string();
    (namesrv, addr)
}

pub struct Stack {
    pub namesrv: Option<NamesrvHandle>,
    pub broker: Option<BrokerHandle>,
    pub ns_addr: String,
    pub addr: String,
    pub client: RemotingClient,
    pub dir: tempfile::TempDir,
}

pub fn broker_config(dir: &std::path::Path, ns_addr: &str) -> BrokerStartConfig {
    let mut c = BrokerStartConfig::default();
    c.broker.listen_port = 0;
    c.broker.bind_address = "127.0.0.1".into();
    c.broker.broker_ip1 = "127.0.0.1".into();
    c.broker.namesrv_addr = ns_addr.to_owned();
    c.broker.broker_name = "broker-a".into();
    c.store.store_path_root_dir = dir.join("store");
    c.store.mapped_file_size_commit_log = 8 * 1024 * 1024;
    c.store.mapped_file_size_consume_queue = 20 * 1000;
    c.store.max_message_size = 1024 * 1024;
    c.store.max_hash_slot_num = 1000;
    c.store.max_index_num = 4000;
    c.store.disk_space_warning_level_ratio = 100;
    c.store.disk_max_used_space_ratio = 100;
    c.store.disk_space_clean_forcibly_ratio = 100;
    c.store.message_delay_level = "1s 1s 1s 2s".into();
    c
}

impl Stack {
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(tweak: impl FnOnce(&mut BrokerStartConfig)) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let (namesrv, ns_addr) = start_namesrv(dir.path()).await;
        let mut config = broker_config(dir.path(), &ns_addr);
        tweak(&mut config);
        let broker = stellmq_broker::start(config).await.expect("broker");
        let addr = broker.broker_addr().to_owned();
        Self {
            namesrv: Some(namesrv),
            broker: Some(broker),
            ns_addr,
            addr,
            client: RemotingClient::new(ClientConfig::default()),
            dir,
        }
    }

    /// Restarts the broker on the same store (a new port).
    pub async fn restart_broker(&mut self, tweak: impl FnOnce(&mut BrokerStartConfig)) {
        if let Some(b) = self.broker.take() {
            b.shutdown().await;
        }
        let mut config = broker_config(self.dir.path(), &self.ns_addr);
        tweak(&mut config);
        let broker = stellmq_broker::start(config)
            .await
            .expect("broker restarts");
        self.addr = broker.broker_addr().to_owned();
        self.broker = Some(broker);
    }

    pub fn broker(&self) -> &BrokerHandle {
        self.broker.as_ref().expect("broker running")
    }

    pub async fn stop(mut self) {
        if let Some(b) = self.broker.take() {
            b.shutdown().await;
        }
        if let Some(n) = self.namesrv.take() {
            n.shutdown().await;
        }
    }

    pub async fn call(&self, request: RemotingCommand) -> RemotingCommand {
        self.client
            .invoke(&self.addr, request, T)
            .await
            .expect("broker answers")
    }

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

    #[allow(clippy::too_many_arguments)] // mirrors the pull header fields tests vary
    pub async fn pull(
        &self,
        group: &str,
        topic: &str,
        queue_id: i32,
        offset: i64,
        sys_flag: i32,
        sub: Option<&str>,
        suspend_ms: i64,
    ) -> RemotingCommand {
        let header = PullMessageRequestHeader {
            consumer_group: group.into(),
            topic: topic.into(),
            queue_id,
            queue_offset: offset,
            max_msg_nums: 32,
            sys_flag,
            commit_offset: 0,
            suspend_timeout_millis: suspend_ms,
            subscription: sub.map(str::to_owned),
            sub_version: 0,
            expression_type: Some("TAG".into()),
            max_msg_bytes: None,
        };
        let request = RemotingCommand::request(RequestCode::PULL_MESSAGE, header.to_ext_fields());
        self.client
            .invoke(
                &self.addr,
                request,
                Duration::from_millis(suspend_ms.max(0) as u64) + T,
            )
            .await
            .expect("pull answered")
    }

    /// Pulls until `n` messages of the queue arrive (or the deadline passes).
    pub async fn pull_until(
        &self,
        group: &str,
        topic: &str,
        queue_id: i32,
        n: usize,
    ) -> Vec<MessageRecord> {
        let deadline = Instant::now() + T;
        let mut got = Vec::new();
        let mut offset = 0;
        while got.len() < n && Instant::now() < deadline {
            let r = self
                .pull(group, topic, queue_id, offset, 0x2 | 0x4, Some("*"), 1000)
                .await;
            if r.code == 0 {
                let records = MessageRecord::decode_all(r.body.clone(), true).expect("records");
                offset = r
                    .ext_fields
                    .get("nextBeginOffset")
                    .and_then(|v| v.parse().ok())
                    .expect("next offset");
                got.extend(records);
            } else {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        got
    }
}

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

pub fn request(code: RequestCode, fields: &[(&str, &str)]) -> RemotingCommand {
    RemotingCommand::request(
        code,
        fields.iter().map(|(k, v)| (*k, *v)).collect::<ExtFields>(),
    )
}

pub async fn eventually<F: std::future::Future<Output = bool>>(
    what: &str,
    mut check: impl FnMut() -> F,
) {
    let deadline = Instant::now() + T;
    while Instant::now() < deadline {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for: {what}");
}

/// Starts the `mqbroker` binary with `-c conf -n ns_addr` and returns the process and the
/// address from its boot line.
pub async fn spawn_mqbroker(
    conf: &std::path::Path,
    ns_addr: &str,
) -> (std::process::Child, String) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_mqbroker"));
    command.arg("-c").arg(conf).args(["-n", ns_addr]);
    spawn_broker_command(command).await
}

/// Runs a command that ends up exec'ing `mqbroker`, and waits for its boot line.
pub async fn spawn_broker_command(
    mut command: std::process::Command,
) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawns");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let addr = tokio::task::spawn_blocking(move || loop {
        let line = rx.recv_timeout(Duration::from_secs(30)).expect("boot line");
        if let Some(rest) = line.split("The broker[").nth(1) {
            break rest.split(']').next().expect("address").to_owned();
        }
    })
    .await
    .expect("join");
    (child, addr)
}
