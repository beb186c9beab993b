//! The admin API: name server and broker admin requests with typed results.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use stellmq_remoting::net::{ClientConfig, RemotingClient, RemotingError};
use stellmq_remoting::protocol::body::{
    fastjson, BrokerStatsData, ClusterInfo, ConsumeStats, ConsumeStatsList, ConsumerConnection,
    GroupList, KvTable, ProducerConnection, QueryConsumeQueueResponseBody, ResetOffsetBody,
    SubscriptionGroupConfig, TopicConfig, TopicConfigSerializeWrapper, TopicList, TopicRouteData,
    TopicStatsTable,
};
use stellmq_remoting::protocol::headers::*;
use stellmq_remoting::protocol::message::MessageRecord;
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};

use crate::error::ClientError;

const TIMEOUT: Duration = Duration::from_secs(5);

/// Talks to name servers (first that answers) and brokers (by address).
pub struct AdminClient {
    namesrv: Vec<String>,
    remoting: RemotingClient,
    timeout: Duration,
}

fn req<H: CommandHeader>(code: RequestCode, header: &H) -> RemotingCommand {
    RemotingCommand::request(code, header.to_ext_fields())
}

fn empty(code: RequestCode) -> RemotingCommand {
    RemotingCommand::request(code, ExtFields::new())
}

impl AdminClient {
    /// `namesrv` is RocketMQ's `ip:port;ip:port` list.
    pub fn new(namesrv: &str) -> Result<Self, ClientError> {
        let list = crate::namesrv::parse_list(namesrv);
        if list.is_empty() {
            return Err(ClientError::NoNameServer);
        }
        Ok(Self {
            namesrv: list,
            remoting: RemotingClient::new(ClientConfig::default()),
            timeout: TIMEOUT,
        })
    }

    pub fn name_servers(&self) -> &[String] {
        &self.namesrv
    }

    /// Sends to one address and requires SUCCESS.
    pub async fn call(
        &self,
        addr: &str,
        request: RemotingCommand,
    ) -> Result<RemotingCommand, ClientError> {
        Ok(self.remoting.invoke_ok(addr, request, self.timeout).await?)
    }

    /// Sends to one address, returning any response code.
    pub async fn call_any(
        &self,
        addr: &str,
        request: RemotingCommand,
    ) -> Result<RemotingCommand, ClientError> {
        Ok(self.remoting.invoke(addr, request, self.timeout).await?)
    }

    /// Sends to the name servers in turn until one answers (a remote error is an answer).
    async fn namesrv_call(&self, request: RemotingCommand) -> Result<RemotingCommand, ClientError> {
        crate::namesrv::ask_in_turn(
            &self.remoting,
            &self.namesrv,
            &request,
            self.timeout,
            |_| true,
        )
        .await
    }

    fn ensure_ok(addr: &str, response: RemotingCommand) -> Result<RemotingCommand, ClientError> {
        if response.code == ResponseCode::SUCCESS.as_i32() {
            Ok(response)
        } else {
            Err(ClientError::Remoting(RemotingError::Remote {
                addr: addr.to_owned(),
                code: response.code,
                remark: response.remark_str().to_owned(),
            }))
        }
    }

    pub async fn topic_route(&self, topic: &str) -> Result<TopicRouteData, ClientError> {
        let header = GetRouteInfoRequestHeader {
            topic: topic.to_owned(),
            accept_standard_json_only: None,
        };
        let response = self
            .namesrv_call(req(RequestCode::GET_ROUTEINFO_BY_TOPIC, &header))
            .await?;
        if response.code == ResponseCode::TOPIC_NOT_EXIST.as_i32() {
            return Err(ClientError::TopicNotExist(topic.to_owned()));
        }
        let response = Self::ensure_ok("name server", response)?;
        Ok(fastjson::decode(&response.body)?)
    }

    pub async fn cluster_info(&self) -> Result<ClusterInfo, ClientError> {
        let response = Self::ensure_ok(
            "name server",
            self.namesrv_call(empty(RequestCode::GET_BROKER_CLUSTER_INFO))
                .await?,
        )?;
        Ok(fastjson::decode(&response.body)?)
    }

    pub async fn topic_list(&self) -> Result<Vec<String>, ClientError> {
        let response = Self::ensure_ok(
            "name server",
            self.namesrv_call(empty(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER))
                .await?,
        )?;
        Ok(fastjson::decode::<TopicList>(&response.body)?.topic_list)
    }

    /// Master addresses of a cluster (or of every cluster).
    pub async fn master_addrs(
        &self,
        cluster: Option<&str>,
    ) -> Result<Vec<(String, String)>, ClientError> {
        let info = self.cluster_info().await?;
        let mut out = Vec::new();
        for (c, names) in &info.cluster_addr_table {
            if cluster.is_some_and(|want| want != c) {
                continue;
            }
            for name in names {
                if let Some(addr) = info
                    .broker_addr_table
                    .get(name)
                    .and_then(|b| b.master_addr())
                {
                    out.push((name.clone(), addr.to_owned()));
                }
            }
        }
        Ok(out)
    }

    pub async fn create_topic(
        &self,
        broker: &str,
        config: &TopicConfig,
    ) -> Result<(), ClientError> {
        let header = CreateTopicRequestHeader {
            topic: config.topic_name.clone(),
            default_topic: "TBW102".into(),
            read_queue_nums: config.read_queue_nums,
            write_queue_nums: config.write_queue_nums,
            perm: config.perm,
            topic_filter_type: config.topic_filter_type.clone(),
            topic_sys_flag: Some(config.topic_sys_flag),
            order: Some(config.order),
            attributes: None,
            force: None,
        };
        self.call(broker, req(RequestCode::UPDATE_AND_CREATE_TOPIC, &header))
            .await
            .map(|_| ())
    }

    pub async fn delete_topic_in_broker(
        &self,
        broker: &str,
        topic: &str,
    ) -> Result<(), ClientError> {
        let header = DeleteTopicRequestHeader {
            topic: topic.to_owned(),
        };
        self.call(broker, req(RequestCode::DELETE_TOPIC_IN_BROKER, &header))
            .await
            .map(|_| ())
    }

    /// Deletes the topic's routes in every name server.
    pub async fn delete_topic_in_namesrv(
        &self,
        topic: &str,
        cluster: Option<&str>,
    ) -> Result<(), ClientError> {
        let header = DeleteTopicFromNamesrvRequestHeader {
            topic: topic.to_owned(),
            cluster_name: cluster.map(str::to_owned),
        };
        for ns in &self.namesrv {
            self.call(ns, req(RequestCode::DELETE_TOPIC_IN_NAMESRV, &header))
                .await?;
        }
        Ok(())
    }

    pub async fn all_topic_config(
        &self,
        broker: &str,
    ) -> Result<TopicConfigSerializeWrapper, ClientError> {
        let response = self
            .call(broker, empty(RequestCode::GET_ALL_TOPIC_CONFIG))
            .await?;
        Ok(fastjson::decode(&response.body)?)
    }

    pub async fn topic_stats(
        &self,
        broker: &str,
        topic: &str,
    ) -> Result<TopicStatsTable, ClientError> {
        let header = GetTopicStatsInfoRequestHeader {
            topic: topic.to_owned(),
        };
        let response = self
            .call(broker, req(RequestCode::GET_TOPIC_STATS_INFO, &header))
            .await?;
        Ok(fastjson::decode(&response.body)?)
    }

    pub async fn broker_runtime_info(
        &self,
        broker: &str,
    ) -> Result<BTreeMap<String, String>, ClientError> {
        let response = self
            .call(broker, empty(RequestCode::GET_BROKER_RUNTIME_INFO))
            .await?;
        Ok(fastjson::decode::<KvTable>(&response.body)?.table)
    }

    pub async fn broker_config(&self, broker: &str) -> Result<String, ClientError> {
        let response = self
            .call(broker, empty(RequestCode::GET_BROKER_CONFIG))
            .await?;
        Ok(String::from_utf8_lossy(&response.body).into_owned())
    }

    pub async fn update_broker_config(
        &self,
        broker: &str,
        key: &str,
        value: &str,
    ) -> Result<(), ClientError> {
        let body = format!("{key}={value}\n");
        self.call(
            broker,
            empty(RequestCode::UPDATE_BROKER_CONFIG).with_body(body.into_bytes()),
        )
        .await
        .map(|_| ())
    }

    pub async fn create_group(
        &self,
        broker: &str,
        config: &SubscriptionGroupConfig,
    ) -> Result<(), ClientError> {
        let request = empty(RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
            .with_body(fastjson::encode(config));
        self.call(broker, request).await.map(|_| ())
    }

    pub async fn delete_group(&self, broker: &str, group: &str) -> Result<(), ClientError> {
        let header = DeleteSubscriptionGroupRequestHeader {
            group_name: group.to_owned(),
            remove_offset: Some(true),
            clean_offset: Some(true),
        };
        self.call(broker, req(RequestCode::DELETE_SUBSCRIPTIONGROUP, &header))
            .await
            .map(|_| ())
    }

    pub async fn consume_stats(
        &self,
        broker: &str,
        group: &str,
        topic: Option<&str>,
    ) -> Result<ConsumeStats, ClientError> {
        let header = GetConsumeStatsRequestHeader {
            consumer_group: group.to_owned(),
            topic: topic.map(str::to_owned),
        };
        let response = self
            .call(broker, req(RequestCode::GET_CONSUME_STATS, &header))
            .await?;
        Ok(fastjson::decode(&response.body)?)
    }

    /// Copies `src` group's offsets of `topic` to `dest` on `broker` (CLONE_GROUP_OFFSET).
    pub async fn clone_group_offset(
        &self,
        broker: &str,
        src: &str,
        dest: &str,
        topic: &str,
        offline: bool,
    ) -> Result<(), ClientError> {
        let header = CloneGroupOffsetRequestHeader {
            src_group: src.to_owned(),
            dest_group: dest.to_owned(),
            topic: Some(topic.to_owned()),
            offline: Some(offline),
        };
        self.call(broker, req(RequestCode::CLONE_GROUP_OFFSET, &header))
            .await
            .map(|_| ())
    }

    /// `count` ConsumeQueue entries of a queue from `index` (QUERY_CONSUME_QUEUE).
    pub async fn query_consume_queue(
        &self,
        broker: &str,
        mq: (&str, i32),
        index: i64,
        count: i32,
        group: Option<&str>,
    ) -> Result<QueryConsumeQueueResponseBody, ClientError> {
        let header = QueryConsumeQueueRequestHeader {
            topic: mq.0.to_owned(),
            queue_id: mq.1,
            index,
            count,
            consumer_group: group.map(str::to_owned),
        };
        let response = self
            .call(broker, req(RequestCode::QUERY_CONSUME_QUEUE, &header))
            .await?;
        Ok(fastjson::decode(&response.body)?)
    }

    /// Groups with offsets for `topic` on `broker` (QUERY_TOPIC_CONSUME_BY_WHO).
    pub async fn topic_consumed_by(
        &self,
        broker: &str,
        topic: &str,
    ) -> Result<Vec<String>, ClientError> {
        let header = QueryTopicConsumeByWhoRequestHeader {
            topic: topic.to_owned(),
        };
        let response = self
            .call(
                broker,
                req(RequestCode::QUERY_TOPIC_CONSUME_BY_WHO, &header),
            )
            .await?;
        Ok(fastjson::decode::<GroupList>(&response.body)?.group_list)
    }

    /// One traffic counter of `broker` (VIEW_BROKER_STATS_DATA): `name` such as
    /// TOPIC_PUT_NUMS with a topic, or GROUP_GET_NUMS with `topic@group`.
    pub async fn broker_stats(
        &self,
        broker: &str,
        name: &str,
        key: &str,
    ) -> Result<BrokerStatsData, ClientError> {
        let header = ViewBrokerStatsDataRequestHeader {
            stats_name: name.to_owned(),
            stats_key: key.to_owned(),
        };
        let response = self
            .call(broker, req(RequestCode::VIEW_BROKER_STATS_DATA, &header))
            .await?;
        Ok(fastjson::decode(&response.body)?)
    }

    pub async fn broker_consume_stats(
        &self,
        broker: &str,
    ) -> Result<ConsumeStatsList, ClientError> {
        let header = GetConsumeStatsInBrokerHeader {
            is_order: Some(false),
            timeout_millis: Some(5000),
        };
        let response = self
            .call(broker, req(RequestCode::GET_BROKER_CONSUME_STATS, &header))
            .await?;
        Ok(fastjson::decode(&response.body)?)
    }

    pub async fn consumer_connection(
        &self,
        broker: &str,
        group: &str,
    ) -> Result<ConsumerConnection, ClientError> {
        let header = GetConsumerConnectionListRequestHeader {
            consumer_group: group.to_owned(),
        };
        let response = self
            .call(
                broker,
                req(RequestCode::GET_CONSUMER_CONNECTION_LIST, &header),
            )
            .await?;
        Ok(fastjson::decode(&response.body)?)
    }

    pub async fn producer_connection(
        &self,
        broker: &str,
        group: &str,
    ) -> Result<ProducerConnection, ClientError> {
        let header = GetProducerConnectionListRequestHeader {
            producer_group: group.to_owned(),
        };
        let response = self
            .call(
                broker,
                req(RequestCode::GET_PRODUCER_CONNECTION_LIST, &header),
            )
            .await?;
        Ok(fastjson::decode(&response.body)?)
    }

    /// Messages indexed under the query's key on one broker (hash collisions are filtered by
    /// the caller, by KEYS or UNIQ_KEY).
    pub async fn query_message(
        &self,
        broker: &str,
        query: &QueryMessageRequestHeader,
    ) -> Result<Vec<MessageRecord>, ClientError> {
        let response = self
            .call_any(broker, req(RequestCode::QUERY_MESSAGE, query))
            .await?;
        if response.code == ResponseCode::QUERY_NOT_FOUND.as_i32() {
            return Ok(Vec::new());
        }
        let response = Self::ensure_ok(broker, response)?;
        Ok(MessageRecord::decode_all(response.body, false)?)
    }

    /// The message at a physical offset of a broker.
    pub async fn view_message(
        &self,
        broker: &str,
        offset: i64,
    ) -> Result<MessageRecord, ClientError> {
        let header = ViewMessageRequestHeader {
            offset,
            topic: None,
        };
        let response = self
            .call(broker, req(RequestCode::VIEW_MESSAGE_BY_ID, &header))
            .await?;
        let mut records = MessageRecord::decode_all(response.body, false)?;
        records
            .pop()
            .ok_or_else(|| ClientError::Invalid("empty VIEW_MESSAGE_BY_ID body".into()))
    }

    pub async fn max_offset(
        &self,
        broker: &str,
        topic: &str,
        queue_id: i32,
    ) -> Result<i64, ClientError> {
        let header = GetMaxOffsetRequestHeader {
            topic: topic.to_owned(),
            queue_id,
            committed: None,
        };
        self.offset_call(broker, req(RequestCode::GET_MAX_OFFSET, &header))
            .await
    }

    pub async fn min_offset(
        &self,
        broker: &str,
        topic: &str,
        queue_id: i32,
    ) -> Result<i64, ClientError> {
        let header = GetMinOffsetRequestHeader {
            topic: topic.to_owned(),
            queue_id,
        };
        self.offset_call(broker, req(RequestCode::GET_MIN_OFFSET, &header))
            .await
    }

    pub async fn search_offset(
        &self,
        broker: &str,
        topic: &str,
        queue_id: i32,
        timestamp: i64,
    ) -> Result<i64, ClientError> {
        let header = SearchOffsetRequestHeader {
            topic: topic.to_owned(),
            queue_id,
            timestamp,
            boundary_type: None,
        };
        self.offset_call(
            broker,
            req(RequestCode::SEARCH_OFFSET_BY_TIMESTAMP, &header),
        )
        .await
    }

    async fn offset_call(
        &self,
        broker: &str,
        request: RemotingCommand,
    ) -> Result<i64, ClientError> {
        let response = self.call(broker, request).await?;
        Ok(OffsetResponseHeader::from_ext_fields(&response.ext_fields)?.offset)
    }

    /// Pulls up to 32 messages of a queue (no subscription filtering, no offset commit); with
    /// `suspend_ms` > 0 the broker holds the pull until a message arrives (long polling).
    pub async fn pull(
        &self,
        broker: &str,
        group: &str,
        topic: &str,
        queue_id: i32,
        offset: i64,
        suspend_ms: i64,
    ) -> Result<(i32, i64, Vec<MessageRecord>), ClientError> {
        let header = PullMessageRequestHeader {
            consumer_group: group.to_owned(),
            topic: topic.to_owned(),
            queue_id,
            queue_offset: offset,
            max_msg_nums: 32,
            sys_flag: if suspend_ms > 0 { 0x2 | 0x4 } else { 0x4 },
            commit_offset: 0,
            suspend_timeout_millis: suspend_ms,
            subscription: Some("*".into()),
            sub_version: 0,
            expression_type: Some("TAG".into()),
            max_msg_bytes: None,
        };
        let response = self
            .remoting
            .invoke(
                broker,
                req(RequestCode::PULL_MESSAGE, &header),
                self.timeout + Duration::from_millis(suspend_ms.max(0) as u64),
            )
            .await?;
        let next = response
            .ext_fields
            .get("nextBeginOffset")
            .and_then(|v| v.parse().ok())
            .unwrap_or(offset);
        let records = if response.code == 0 {
            MessageRecord::decode_all(response.body, false)?
        } else {
            Vec::new()
        };
        Ok((response.code, next, records))
    }

    /// INVOKE_BROKER_TO_RESET_OFFSET on one broker.
    pub async fn reset_offset_by_time(
        &self,
        broker: &str,
        group: &str,
        topic: &str,
        timestamp: i64,
        force: bool,
    ) -> Result<Result<ResetOffsetBody, (i32, String)>, ClientError> {
        let header = ResetOffsetRequestHeader {
            topic: topic.to_owned(),
            group: group.to_owned(),
            timestamp,
            is_force: Some(force),
            queue_id: None,
            offset: None,
        };
        let response = self
            .call_any(
                broker,
                req(RequestCode::INVOKE_BROKER_TO_RESET_OFFSET, &header),
            )
            .await?;
        if response.code != 0 {
            return Ok(Err((response.code, response.remark_str().to_owned())));
        }
        Ok(Ok(fastjson::decode(&response.body)?))
    }

    pub async fn update_consumer_offset(
        &self,
        broker: &str,
        group: &str,
        topic: &str,
        queue_id: i32,
        offset: i64,
    ) -> Result<(), ClientError> {
        let header = UpdateConsumerOffsetRequestHeader {
            consumer_group: group.to_owned(),
            topic: topic.to_owned(),
            queue_id,
            commit_offset: offset,
        };
        self.call(broker, req(RequestCode::UPDATE_CONSUMER_OFFSET, &header))
            .await
            .map(|_| ())
    }

    /// Sends one message to a queue of a broker (SEND_MESSAGE_V2).
    pub async fn send(
        &self,
        broker: &str,
        topic: &str,
        queue_id: i32,
        body: Bytes,
        properties: String,
    ) -> Result<SendMessageResponseHeader, ClientError> {
        let header = SendMessageRequestHeader {
            producer_group: "TOOLS_PRODUCER".into(),
            topic: topic.to_owned(),
            default_topic: "TBW102".into(),
            default_topic_queue_nums: 4,
            queue_id,
            sys_flag: 0,
            born_timestamp: now_ms(),
            flag: 0,
            properties: Some(properties),
            reconsume_times: None,
            unit_mode: None,
            batch: None,
            max_reconsume_times: None,
            broker_name: None,
        };
        let v2: SendMessageRequestHeaderV2 = header.into();
        let response = self
            .call(
                broker,
                req(RequestCode::SEND_MESSAGE_V2, &v2).with_body(body),
            )
            .await?;
        Ok(SendMessageResponseHeader::from_ext_fields(
            &response.ext_fields,
        )?)
    }

    /// WIPE_WRITE_PERM_OF_BROKER on one name server; returns the topic count.
    pub async fn wipe_write_perm(
        &self,
        namesrv: &str,
        broker_name: &str,
    ) -> Result<i32, ClientError> {
        let header = BrokerNameRequestHeader {
            broker_name: broker_name.to_owned(),
        };
        let response = self
            .call(
                namesrv,
                req(RequestCode::WIPE_WRITE_PERM_OF_BROKER, &header),
            )
            .await?;
        Ok(response
            .ext_fields
            .get("wipeTopicCount")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0))
    }

    /// ADD_WRITE_PERM_OF_BROKER on one name server; returns the topic count.
    pub async fn add_write_perm(
        &self,
        namesrv: &str,
        broker_name: &str,
    ) -> Result<i32, ClientError> {
        let header = BrokerNameRequestHeader {
            broker_name: broker_name.to_owned(),
        };
        let response = self
            .call(namesrv, req(RequestCode::ADD_WRITE_PERM_OF_BROKER, &header))
            .await?;
        Ok(response
            .ext_fields
            .get("addTopicCount")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0))
    }

    pub async fn put_kv(&self, namespace: &str, key: &str, value: &str) -> Result<(), ClientError> {
        let header = PutKvConfigRequestHeader {
            namespace: namespace.to_owned(),
            key: key.to_owned(),
            value: value.to_owned(),
        };
        for ns in &self.namesrv {
            self.call(ns, req(RequestCode::PUT_KV_CONFIG, &header))
                .await?;
        }
        Ok(())
    }

    pub async fn get_kv(&self, namespace: &str, key: &str) -> Result<Option<String>, ClientError> {
        let header = KvConfigKeyRequestHeader {
            namespace: namespace.to_owned(),
            key: key.to_owned(),
        };
        let response = self
            .namesrv_call(req(RequestCode::GET_KV_CONFIG, &header))
            .await?;
        if response.code == ResponseCode::QUERY_NOT_FOUND.as_i32() {
            return Ok(None);
        }
        Ok(Self::ensure_ok("name server", response)?
            .ext_fields
            .get("value")
            .map(str::to_owned))
    }

    pub async fn delete_kv(&self, namespace: &str, key: &str) -> Result<(), ClientError> {
        let header = KvConfigKeyRequestHeader {
            namespace: namespace.to_owned(),
            key: key.to_owned(),
        };
        for ns in &self.namesrv {
            self.call(ns, req(RequestCode::DELETE_KV_CONFIG, &header))
                .await?;
        }
        Ok(())
    }

    pub async fn namesrv_config(&self, namesrv: &str) -> Result<String, ClientError> {
        let response = self
            .call(namesrv, empty(RequestCode::GET_NAMESRV_CONFIG))
            .await?;
        Ok(String::from_utf8_lossy(&response.body).into_owned())
    }

    pub async fn update_namesrv_config(
        &self,
        namesrv: &str,
        key: &str,
        value: &str,
    ) -> Result<(), ClientError> {
        let body = format!("{key}={value}\n");
        self.call(
            namesrv,
            empty(RequestCode::UPDATE_NAMESRV_CONFIG).with_body(body.into_bytes()),
        )
        .await
        .map(|_| ())
    }

    pub async fn shutdown(&self) {
        self.remoting.shutdown().await;
    }
}

pub use stellmq_remoting::protocol::message::now_ms;
