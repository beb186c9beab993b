//! RocketMQ 5 controller bodies: `SyncStateSet`, `ElectMasterResponseBody`,
//! `BrokerReplicasInfo`, `EpochEntry` and `EpochEntryCache`, with Java's field names.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::route::BrokerMemberGroup;

/// The replicas of a broker set that are in sync with its master, and the set's epoch.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SyncStateSet {
    pub sync_state_set: BTreeSet<i64>,
    pub sync_state_set_epoch: i32,
}

/// Body of CONTROLLER_ELECT_MASTER's response and of NOTIFY_BROKER_ROLE_CHANGED.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ElectMasterResponseBody {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broker_member_group: Option<BrokerMemberGroup>,
    pub sync_state_set: BTreeSet<i64>,
}

/// One replica of a broker set as CONTROLLER_GET_SYNC_STATE_DATA reports it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReplicaIdentity {
    pub broker_name: String,
    pub broker_id: i64,
    pub broker_address: String,
    pub alive: bool,
}

/// A broker set's master, epochs and replicas in and out of the SyncStateSet.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReplicasInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub master_broker_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub master_address: Option<String>,
    pub master_epoch: i32,
    pub sync_state_set_epoch: i32,
    pub in_sync_replicas: Vec<ReplicaIdentity>,
    pub not_in_sync_replicas: Vec<ReplicaIdentity>,
}

/// Body of CONTROLLER_GET_SYNC_STATE_DATA's response (the request body is a JSON array of
/// broker names).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BrokerReplicasInfo {
    pub replicas_info_table: BTreeMap<String, ReplicasInfo>,
}

/// One master term in a broker's epoch file: from `startOffset` to `endOffset` (Java's
/// `Long.MAX_VALUE` for the open last entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EpochEntry {
    pub epoch: i32,
    pub start_offset: i64,
    pub end_offset: i64,
}

impl Default for EpochEntry {
    fn default() -> Self {
        Self {
            epoch: 0,
            start_offset: 0,
            end_offset: i64::MAX,
        }
    }
}

/// Body of GET_BROKER_EPOCH_CACHE's response (a broker's epoch history).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EpochEntryCache {
    pub cluster_name: String,
    pub broker_name: String,
    pub broker_id: i64,
    pub epoch_list: Vec<EpochEntry>,
    pub max_offset: i64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::fastjson::{decode, encode};

    #[test]
    fn sync_state_set_has_java_names() {
        let set = SyncStateSet {
            sync_state_set: [1, 2].into_iter().collect(),
            sync_state_set_epoch: 3,
        };
        let text = String::from_utf8(encode(&set)).expect("utf8");
        assert_eq!(text, r#"{"syncStateSet":[1,2],"syncStateSetEpoch":3}"#);
        assert_eq!(
            decode::<SyncStateSet>(text.as_bytes()).expect("decodes"),
            set
        );
    }

    #[test]
    fn elect_body_reads_fastjson_member_group() {
        let text = r#"{"brokerMemberGroup":{"brokerAddrs":{1:"127.0.0.1:10911",2:"127.0.0.1:10921"},"brokerName":"b","cluster":"c"},"syncStateSet":[1]}"#;
        let body: ElectMasterResponseBody = decode(text.as_bytes()).expect("decodes");
        let group = body.broker_member_group.expect("group");
        assert_eq!(
            group.broker_addrs.0.get(&2).map(String::as_str),
            Some("127.0.0.1:10921")
        );
        assert_eq!(body.sync_state_set, [1].into_iter().collect());
    }

    #[test]
    fn replicas_info_round_trips() {
        let mut info = BrokerReplicasInfo::default();
        info.replicas_info_table.insert(
            "b".into(),
            ReplicasInfo {
                master_broker_id: Some(1),
                master_address: Some("a:1".into()),
                master_epoch: 1,
                sync_state_set_epoch: 2,
                in_sync_replicas: vec![ReplicaIdentity {
                    broker_name: "b".into(),
                    broker_id: 1,
                    broker_address: "a:1".into(),
                    alive: true,
                }],
                not_in_sync_replicas: vec![],
            },
        );
        let bytes = encode(&info);
        assert!(String::from_utf8_lossy(&bytes).contains("\"inSyncReplicas\""));
        assert_eq!(decode::<BrokerReplicasInfo>(&bytes).expect("decodes"), info);
    }

    #[test]
    fn epoch_entry_defaults_to_open_end() {
        let e: EpochEntry = decode(br#"{"epoch":2,"startOffset":100}"#).expect("decodes");
        assert_eq!(e.end_offset, i64::MAX);
    }
}
