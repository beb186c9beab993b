//! Route data: TopicRouteData, QueueData, BrokerData and ClusterInfo (protocol.md 3.1, 3.2),
//! and a broker name's members (GET_BROKER_MEMBER_GROUP).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::fastjson::IntKeyMap;

/// One broker group's queues of a topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueData {
    pub broker_name: String,
    pub read_queue_nums: i32,
    pub write_queue_nums: i32,
    pub perm: i32,
    #[serde(default, alias = "topicSynFlag")]
    pub topic_sys_flag: i32,
}

/// One broker group: its cluster and its addresses by broker id (0 = master).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerData {
    pub cluster: String,
    pub broker_name: String,
    pub broker_addrs: IntKeyMap<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_acting_master: Option<bool>,
}

impl BrokerData {
    /// The master's address (broker id 0), if registered.
    pub fn master_addr(&self) -> Option<&str> {
        self.broker_addrs.0.get(&0).map(String::as_str)
    }
}

/// Body of GET_ROUTEINFO_BY_TOPIC.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicRouteData {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_topic_conf: Option<String>,
    #[serde(default)]
    pub queue_datas: Vec<QueueData>,
    #[serde(default)]
    pub broker_datas: Vec<BrokerData>,
    #[serde(default)]
    pub filter_server_table: BTreeMap<String, Vec<String>>,
}

/// Body of GET_BROKER_CLUSTER_INFO.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterInfo {
    #[serde(default)]
    pub broker_addr_table: BTreeMap<String, BrokerData>,
    #[serde(default)]
    pub cluster_addr_table: BTreeMap<String, BTreeSet<String>>,
}

/// The brokers of one broker name (`BrokerMemberGroup`): addresses by broker id.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BrokerMemberGroup {
    pub cluster: String,
    pub broker_name: String,
    pub broker_addrs: IntKeyMap<String>,
}

/// Body of GET_BROKER_MEMBER_GROUP (901).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GetBrokerMemberGroupResponseBody {
    pub broker_member_group: BrokerMemberGroup,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::fastjson;

    fn sample() -> TopicRouteData {
        TopicRouteData {
            order_topic_conf: None,
            queue_datas: vec![QueueData {
                broker_name: "broker-a".into(),
                read_queue_nums: 4,
                write_queue_nums: 4,
                perm: 6,
                topic_sys_flag: 0,
            }],
            broker_datas: vec![BrokerData {
                cluster: "DefaultCluster".into(),
                broker_name: "broker-a".into(),
                broker_addrs: [
                    (0, "192.168.1.10:10911".to_string()),
                    (1, "192.168.1.11:10911".to_string()),
                ]
                .into_iter()
                .collect(),
                enable_acting_master: None,
            }],
            filter_server_table: BTreeMap::new(),
        }
    }

    /// The exact bytes protocol.md 3.1 shows for the fastjson and the standard form.
    #[test]
    fn route_golden_both_dialects() {
        let route = sample();
        assert_eq!(
            String::from_utf8(fastjson::encode(&route)).expect("utf8"),
            r#"{"brokerDatas":[{"brokerAddrs":{0:"192.168.1.10:10911",1:"192.168.1.11:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#
        );
        let mut standard = route.clone();
        standard.broker_datas[0].enable_acting_master = Some(false);
        assert_eq!(
            String::from_utf8(fastjson::encode_standard(&standard)).expect("utf8"),
            r#"{"brokerDatas":[{"brokerAddrs":{"0":"192.168.1.10:10911","1":"192.168.1.11:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#
        );
        let back: TopicRouteData = fastjson::decode(&fastjson::encode(&route)).expect("decodes");
        assert_eq!(back, route);
        let back: TopicRouteData =
            fastjson::decode(&fastjson::encode_standard(&route)).expect("decodes");
        assert_eq!(back, route);
    }
}
