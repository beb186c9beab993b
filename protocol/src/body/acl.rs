//! Plain-ACL admin bodies (RocketMQ 4.x ACL 1.0): the accounts and white list of
//! GET_BROKER_CLUSTER_ACL_CONFIG (54), and the versions of GET_BROKER_CLUSTER_ACL_INFO (52)
//! as a client reads them from the response header.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::DataVersion;
use crate::error::BodyError;
use crate::headers::GetBrokerAclConfigResponseHeader;

/// `PlainAccessConfig`: one account as `updateAclConfig` sends it and
/// GET_BROKER_CLUSTER_ACL_CONFIG lists it. Absent fields are left out (fastjson leaves out
/// nulls); `admin` is a Java `boolean` and always written.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlainAccessConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub white_remote_address: Option<String>,
    #[serde(default)]
    pub admin: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_topic_perm: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_group_perm: Option<String>,
    /// `topic=PERM` items, e.g. `topicA=DENY`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_perms: Option<Vec<String>>,
    /// `group=PERM` items, e.g. `groupA=SUB`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_perms: Option<Vec<String>>,
}

/// `GetBrokerClusterAclConfigResponseBody` (RocketMQ's `AclConfig` on the client): every
/// global white address and every account of a broker's ACL files.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetBrokerClusterAclConfigResponseBody {
    #[serde(default)]
    pub global_white_addrs: Vec<String>,
    #[serde(default)]
    pub plain_access_configs: Vec<PlainAccessConfig>,
}

/// RocketMQ's client-side name for the same shape.
pub type AclConfig = GetBrokerClusterAclConfigResponseBody;

/// `ClusterAclVersionInfo`: a broker's ACL versions, as RocketMQ's client builds it from
/// the GET_BROKER_CLUSTER_ACL_INFO response header.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAclVersionInfo {
    pub broker_name: String,
    pub broker_addr: String,
    pub cluster_name: String,
    /// The default file's version (`version`; deprecated in RocketMQ).
    pub acl_config_data_version: DataVersion,
    /// Every ACL file's version by its path (`allAclFileVersion`).
    pub all_acl_config_data_version: BTreeMap<String, DataVersion>,
}

impl ClusterAclVersionInfo {
    /// Reads the JSON texts of the response header's `version` and `allAclFileVersion`.
    pub fn from_header(header: &GetBrokerAclConfigResponseHeader) -> Result<Self, BodyError> {
        let all = match header.all_acl_file_version.as_deref() {
            Some(text) => serde_json::from_str(text)?,
            None => BTreeMap::new(),
        };
        Ok(Self {
            broker_name: header.broker_name.clone(),
            broker_addr: header.broker_addr.clone(),
            cluster_name: header.cluster_name.clone(),
            acl_config_data_version: serde_json::from_str(&header.version)?,
            all_acl_config_data_version: all,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::fastjson;

    #[test]
    fn account_fields_have_java_names_and_nulls_are_left_out() {
        let account = PlainAccessConfig {
            access_key: Some("rocketmq2".into()),
            secret_key: Some("12345678".into()),
            white_remote_address: Some("192.168.0.*".into()),
            admin: true,
            default_topic_perm: Some("DENY".into()),
            default_group_perm: None,
            topic_perms: Some(vec!["topicA=PUB".into(), "topicB=PUB|SUB".into()]),
            group_perms: None,
        };
        let json: serde_json::Value =
            serde_json::from_slice(&fastjson::encode(&account)).expect("json");
        assert_eq!(
            json,
            serde_json::json!({
                "accessKey": "rocketmq2",
                "secretKey": "12345678",
                "whiteRemoteAddress": "192.168.0.*",
                "admin": true,
                "defaultTopicPerm": "DENY",
                "topicPerms": ["topicA=PUB", "topicB=PUB|SUB"],
            })
        );
    }

    #[test]
    fn cluster_acl_config_body_decodes_as_a_broker_sends_it() {
        let text = br#"{"globalWhiteAddrs":["10.10.103.*","192.168.0.*"],
            "plainAccessConfigs":[{"accessKey":"RocketMQ","secretKey":"12345678",
            "whiteRemoteAddress":null,"admin":false,"defaultTopicPerm":"DENY",
            "defaultGroupPerm":"SUB","topicPerms":["topicA=DENY"],"groupPerms":["groupA=DENY"]},
            {"accessKey":"rocketmq2","secretKey":"12345678","admin":true}]}"#;
        let body: GetBrokerClusterAclConfigResponseBody = fastjson::decode(text).expect("body");
        assert_eq!(body.global_white_addrs, ["10.10.103.*", "192.168.0.*"]);
        assert_eq!(body.plain_access_configs.len(), 2);
        let first = &body.plain_access_configs[0];
        assert_eq!(first.access_key.as_deref(), Some("RocketMQ"));
        assert_eq!(first.white_remote_address, None);
        assert_eq!(
            first.topic_perms.as_deref(),
            Some(&["topicA=DENY".to_owned()][..])
        );
        assert!(body.plain_access_configs[1].admin);
        assert_eq!(body.plain_access_configs[1].group_perms, None);
        let empty: AclConfig = fastjson::decode(b"{}").expect("empty body");
        assert!(empty.global_white_addrs.is_empty());
    }

    #[test]
    fn version_info_reads_the_headers_json_texts() {
        let header = GetBrokerAclConfigResponseHeader {
            version: r#"{"counter":3,"stateVersion":0,"timestamp":1700000000000}"#.into(),
            all_acl_file_version: Some(
                r#"{"/opt/rocketmq/conf/plain_acl.yml":{"counter":3,"timestamp":1700000000000},"/opt/rocketmq/conf/acl/b.yml":{"counter":1,"timestamp":5}}"#
                    .into(),
            ),
            broker_name: "broker-a".into(),
            broker_addr: "10.0.0.1:10911".into(),
            cluster_name: "DefaultCluster".into(),
        };
        let info = ClusterAclVersionInfo::from_header(&header).expect("info");
        assert_eq!(info.acl_config_data_version.counter, 3);
        assert_eq!(info.all_acl_config_data_version.len(), 2);
        assert_eq!(
            info.all_acl_config_data_version["/opt/rocketmq/conf/acl/b.yml"].timestamp,
            5
        );
        assert_eq!(info.broker_name, "broker-a");
        let broken = GetBrokerAclConfigResponseHeader {
            version: "not json".into(),
            ..header
        };
        assert!(ClusterAclVersionInfo::from_header(&broken).is_err());
    }
}
