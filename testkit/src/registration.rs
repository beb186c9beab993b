//! What a broker tells a name server about itself, built for name server tests without a
//! broker: REGISTER_BROKER and the requests that name the same broker.

use stellmq_remoting::protocol::body::{fastjson, DataVersion, RegisterBrokerBody, TopicConfig};
use stellmq_remoting::protocol::headers::{CommandHeader, RegisterBrokerRequestHeader};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};

use crate::raw::request;

/// One broker's registration: by default a master (broker id 0) with no topics and data
/// version 1; its HA address is `<addr>-ha`, and each topic has 4 read and 4 write queues
/// with permission 6.
///
/// ```
/// use stellmq_testkit::Registration;
/// let slave = Registration::new("C1", "broker-a", "127.0.1.2:10911").id(1).topics(&["T"]);
/// let request = slave.request();
/// assert_eq!(request.ext_fields.get("brokerId"), Some("1"));
/// ```
#[derive(Debug, Clone)]
pub struct Registration {
    cluster: String,
    name: String,
    addr: String,
    id: i64,
    topics: Vec<String>,
    version: i64,
}

impl Registration {
    /// Broker `name` of `cluster` at `addr`.
    pub fn new(cluster: &str, name: &str, addr: &str) -> Self {
        Self {
            cluster: cluster.to_owned(),
            name: name.to_owned(),
            addr: addr.to_owned(),
            id: 0,
            topics: Vec::new(),
            version: 1,
        }
    }

    /// The broker id (0 = master).
    pub fn id(mut self, id: i64) -> Self {
        self.id = id;
        self
    }

    /// The topics it serves.
    pub fn topics(mut self, topics: &[&str]) -> Self {
        self.topics = topics.iter().map(|t| (*t).to_owned()).collect();
        self
    }

    /// The counter of its topic configuration's data version.
    pub fn version(mut self, counter: i64) -> Self {
        self.version = counter;
        self
    }

    /// The data version it registers.
    pub fn data_version(&self) -> DataVersion {
        DataVersion {
            counter: self.version,
            state_version: 0,
            timestamp: 1,
        }
    }

    /// The registration body (its topic configurations).
    pub fn body(&self) -> RegisterBrokerBody {
        let mut body = RegisterBrokerBody::default();
        let wrapper = &mut body.topic_config_serialize_wrapper;
        wrapper.data_version = self.data_version();
        for topic in &self.topics {
            wrapper
                .topic_config_table
                .insert(topic.clone(), TopicConfig::with_queues(topic, 4, 4, 6));
        }
        body
    }

    /// REGISTER_BROKER with a JSON body and its CRC.
    pub fn request(&self) -> RemotingCommand {
        self.request_with(false)
    }

    /// REGISTER_BROKER with a zlib-compressed body (as Java brokers send it) and its CRC.
    pub fn compressed_request(&self) -> RemotingCommand {
        self.request_with(true)
    }

    fn request_with(&self, compressed: bool) -> RemotingCommand {
        let body = self.body();
        let bytes = if compressed {
            body.encode_compressed()
        } else {
            fastjson::encode(&body)
        };
        let header = RegisterBrokerRequestHeader {
            broker_name: self.name.clone(),
            broker_addr: self.addr.clone(),
            cluster_name: self.cluster.clone(),
            ha_server_addr: format!("{}-ha", self.addr),
            broker_id: self.id,
            compressed: Some(compressed),
            body_crc32: Some((crc32fast::hash(&bytes) & 0x7FFF_FFFF) as i32),
            heartbeat_timeout_millis: None,
            enable_acting_master: None,
        };
        RemotingCommand::request(RequestCode::REGISTER_BROKER, header.to_ext_fields())
            .with_body(bytes)
    }

    /// UNREGISTER_BROKER of this broker.
    pub fn unregister_request(&self) -> RemotingCommand {
        self.naming_request(RequestCode::UNREGISTER_BROKER)
    }

    /// QUERY_DATA_VERSION of this broker, asking whether `version` is the one registered.
    pub fn query_data_version_request(&self, version: &DataVersion) -> RemotingCommand {
        self.naming_request(RequestCode::QUERY_DATA_VERSION)
            .with_body(fastjson::encode(version))
    }

    fn naming_request(&self, code: RequestCode) -> RemotingCommand {
        let id = self.id.to_string();
        request(
            code,
            &[
                ("brokerName", &self.name),
                ("brokerAddr", &self.addr),
                ("clusterName", &self.cluster),
                ("brokerId", &id),
            ],
        )
    }
}
