//! NameServer request headers (protocol.md 2.8).

use super::command_header;

/// StellMQ's paging of GET_ALL_TOPIC_LIST_FROM_NAMESERVER (protocol.md): the page's size
/// (a request without it gets every topic, as from RocketMQ), the topic the page starts
/// after, and the answer's "more follow".
pub mod topic_pages {
    pub const MAX_TOPIC_NUM: &str = "stellmqMaxTopicNum";
    pub const AFTER_TOPIC: &str = "stellmqAfterTopic";
    pub const MORE_TOPICS: &str = "stellmqMoreTopics";
}

command_header! {
    /// REGISTER_BROKER (103).
    pub struct RegisterBrokerRequestHeader {
        required broker_name: String = "brokerName",
        required broker_addr: String = "brokerAddr",
        required cluster_name: String = "clusterName",
        required ha_server_addr: String = "haServerAddr",
        required broker_id: i64 = "brokerId",
        optional compressed: bool = "compressed",
        /// CRC32 & 0x7FFFFFFF of the body; 0 or absent = do not check.
        optional body_crc32: i32 = "bodyCrc32",
        optional heartbeat_timeout_millis: i64 = "heartbeatTimeoutMillis",
        optional enable_acting_master: bool = "enableActingMaster",
    }
}

command_header! {
    /// Response to REGISTER_BROKER; both set only for a slave whose master is registered.
    pub struct RegisterBrokerResponseHeader {
        optional ha_server_addr: String = "haServerAddr",
        optional master_addr: String = "masterAddr",
    }
}

command_header! {
    /// UNREGISTER_BROKER (104).
    pub struct UnregisterBrokerRequestHeader {
        required broker_name: String = "brokerName",
        required broker_addr: String = "brokerAddr",
        required cluster_name: String = "clusterName",
        required broker_id: i64 = "brokerId",
    }
}

command_header! {
    /// QUERY_DATA_VERSION (322); the body is the broker's DataVersion.
    pub struct QueryDataVersionRequestHeader {
        required broker_name: String = "brokerName",
        required broker_addr: String = "brokerAddr",
        required cluster_name: String = "clusterName",
        required broker_id: i64 = "brokerId",
    }
}

command_header! {
    /// Response to QUERY_DATA_VERSION.
    pub struct QueryDataVersionResponseHeader {
        required changed: bool = "changed",
    }
}

command_header! {
    /// BROKER_HEARTBEAT (904, 5.x).
    pub struct BrokerHeartbeatRequestHeader {
        required cluster_name: String = "clusterName",
        required broker_addr: String = "brokerAddr",
        required broker_name: String = "brokerName",
        optional broker_id: i64 = "brokerId",
        optional epoch: i32 = "epoch",
        optional max_offset: i64 = "maxOffset",
        optional confirm_offset: i64 = "confirmOffset",
        optional heartbeat_timeout_mills: i64 = "heartbeatTimeoutMills",
        optional election_priority: i32 = "electionPriority",
    }
}

command_header! {
    /// GET_ROUTEINFO_BY_TOPIC (105).
    pub struct GetRouteInfoRequestHeader {
        required topic: String = "topic",
        optional accept_standard_json_only: bool = "acceptStandardJsonOnly",
    }
}

command_header! {
    /// WIPE_WRITE_PERM_OF_BROKER (205) and ADD_WRITE_PERM_OF_BROKER (327).
    pub struct BrokerNameRequestHeader {
        required broker_name: String = "brokerName",
    }
}

command_header! {
    /// Response to WIPE_WRITE_PERM_OF_BROKER.
    pub struct WipeWritePermOfBrokerResponseHeader {
        required wipe_topic_count: i32 = "wipeTopicCount",
    }
}

command_header! {
    /// Response to ADD_WRITE_PERM_OF_BROKER.
    pub struct AddWritePermOfBrokerResponseHeader {
        required add_topic_count: i32 = "addTopicCount",
    }
}

command_header! {
    /// DELETE_TOPIC_IN_NAMESRV (216).
    pub struct DeleteTopicFromNamesrvRequestHeader {
        required topic: String = "topic",
        optional cluster_name: String = "clusterName",
    }
}

command_header! {
    /// PUT_KV_CONFIG (100).
    pub struct PutKvConfigRequestHeader {
        required namespace: String = "namespace",
        required key: String = "key",
        required value: String = "value",
    }
}

command_header! {
    /// GET_KV_CONFIG (101) and DELETE_KV_CONFIG (102).
    pub struct KvConfigKeyRequestHeader {
        required namespace: String = "namespace",
        required key: String = "key",
    }
}

command_header! {
    /// Response to GET_KV_CONFIG.
    pub struct GetKvConfigResponseHeader {
        optional value: String = "value",
    }
}

command_header! {
    /// GET_KVLIST_BY_NAMESPACE (219).
    pub struct GetKvListByNamespaceRequestHeader {
        required namespace: String = "namespace",
    }
}

command_header! {
    /// GET_TOPICS_BY_CLUSTER (224).
    pub struct GetTopicsByClusterRequestHeader {
        required cluster: String = "cluster",
    }
}

command_header! {
    /// REGISTER_TOPIC_IN_NAMESRV (217, 5.x); the body is a TopicRouteData.
    pub struct RegisterTopicRequestHeader {
        required topic: String = "topic",
    }
}

command_header! {
    /// GET_BROKER_MEMBER_GROUP (901, 5.x).
    pub struct GetBrokerMemberGroupRequestHeader {
        required cluster_name: String = "clusterName",
        required broker_name: String = "brokerName",
    }
}
