//! Plain-ACL admin request and response headers (RocketMQ 4.x ACL 1.0, codes 50-54).

use super::command_header;
use crate::body::PlainAccessConfig;

command_header! {
    /// UPDATE_AND_CREATE_ACL_CONFIG (50): create or change one account.
    pub struct CreateAccessConfigRequestHeader {
        required access_key: String = "accessKey",
        optional secret_key: String = "secretKey",
        optional white_remote_address: String = "whiteRemoteAddress",
        /// A Java `boolean`: RocketMQ's clients always send it.
        optional admin: bool = "admin",
        optional default_topic_perm: String = "defaultTopicPerm",
        optional default_group_perm: String = "defaultGroupPerm",
        /// `topicA=DENY,topicD=SUB`.
        optional topic_perms: String = "topicPerms",
        /// `groupA=DENY,groupD=SUB`.
        optional group_perms: String = "groupPerms",
    }
}

command_header! {
    /// DELETE_ACL_CONFIG (51): delete one account.
    pub struct DeleteAccessConfigRequestHeader {
        required access_key: String = "accessKey",
    }
}

command_header! {
    /// UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53): replace the global white list.
    pub struct UpdateGlobalWhiteAddrsConfigRequestHeader {
        /// Comma-separated address patterns, e.g. `10.10.103.*,192.168.0.*`.
        required global_white_addrs: String = "globalWhiteAddrs",
        /// The ACL file to change; absent: the default file (RocketMQ's clients then leave
        /// the field out).
        optional acl_file_full_path: String = "aclFileFullPath",
    }
}

command_header! {
    /// GET_BROKER_CLUSTER_ACL_INFO (52) response.
    pub struct GetBrokerAclConfigResponseHeader {
        /// The default file's `DataVersion`, as JSON text.
        required version: String = "version",
        /// Every ACL file's `DataVersion` by path, as JSON text.
        optional all_acl_file_version: String = "allAclFileVersion",
        required broker_name: String = "brokerName",
        required broker_addr: String = "brokerAddr",
        required cluster_name: String = "clusterName",
    }
}

impl From<&PlainAccessConfig> for CreateAccessConfigRequestHeader {
    /// As RocketMQ's `createPlainAccessConfig`: the permission lists joined with `,`.
    fn from(account: &PlainAccessConfig) -> Self {
        Self {
            access_key: account.access_key.clone().unwrap_or_default(),
            secret_key: account.secret_key.clone(),
            white_remote_address: account.white_remote_address.clone(),
            admin: Some(account.admin),
            default_topic_perm: account.default_topic_perm.clone(),
            default_group_perm: account.default_group_perm.clone(),
            topic_perms: account.topic_perms.as_ref().map(|l| l.join(",")),
            group_perms: account.group_perms.as_ref().map(|l| l.join(",")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::headers::CommandHeader;
    use crate::ExtFields;

    fn keys(fields: &ExtFields) -> Vec<&str> {
        fields.iter().map(|(k, _)| k).collect()
    }

    #[test]
    fn create_header_has_java_field_names() {
        let account = PlainAccessConfig {
            access_key: Some("rocketmq2".into()),
            secret_key: Some("12345678".into()),
            white_remote_address: Some("192.168.1.*".into()),
            admin: false,
            default_topic_perm: Some("DENY".into()),
            default_group_perm: Some("SUB".into()),
            topic_perms: Some(vec!["topicA=DENY".into(), "topicB=PUB|SUB".into()]),
            group_perms: Some(vec!["groupA=SUB".into()]),
        };
        let header = CreateAccessConfigRequestHeader::from(&account);
        let fields = header.to_ext_fields();
        let mut names = keys(&fields);
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "accessKey",
                "admin",
                "defaultGroupPerm",
                "defaultTopicPerm",
                "groupPerms",
                "secretKey",
                "topicPerms",
                "whiteRemoteAddress"
            ]
        );
        assert_eq!(fields.get("admin"), Some("false"));
        assert_eq!(fields.get("topicPerms"), Some("topicA=DENY,topicB=PUB|SUB"));
        assert_eq!(fields.get("groupPerms"), Some("groupA=SUB"));
        assert_eq!(
            CreateAccessConfigRequestHeader::from_ext_fields(&fields),
            Ok(header)
        );
    }

    #[test]
    fn create_header_leaves_out_what_is_not_given() {
        let account = PlainAccessConfig {
            access_key: Some("ak".into()),
            ..PlainAccessConfig::default()
        };
        let fields = CreateAccessConfigRequestHeader::from(&account).to_ext_fields();
        let mut names = keys(&fields);
        names.sort_unstable();
        assert_eq!(names, ["accessKey", "admin"]);
        let missing = CreateAccessConfigRequestHeader::from_ext_fields(&ExtFields::new());
        assert!(missing.is_err(), "accessKey is required");
    }

    #[test]
    fn delete_and_white_list_headers_have_java_field_names() {
        let fields = DeleteAccessConfigRequestHeader {
            access_key: "ak".into(),
        }
        .to_ext_fields();
        assert_eq!(keys(&fields), ["accessKey"]);

        let header = UpdateGlobalWhiteAddrsConfigRequestHeader {
            global_white_addrs: "10.10.103.*,192.168.0.*".into(),
            acl_file_full_path: Some("/opt/rocketmq/conf/plain_acl.yml".into()),
        };
        let fields = header.to_ext_fields();
        assert_eq!(keys(&fields), ["aclFileFullPath", "globalWhiteAddrs"]);
        assert_eq!(
            UpdateGlobalWhiteAddrsConfigRequestHeader::from_ext_fields(&fields),
            Ok(header)
        );
        let without_path = UpdateGlobalWhiteAddrsConfigRequestHeader {
            global_white_addrs: "*".into(),
            acl_file_full_path: None,
        }
        .to_ext_fields();
        assert_eq!(keys(&without_path), ["globalWhiteAddrs"]);
    }

    #[test]
    fn version_response_header_has_java_field_names() {
        let fields: ExtFields = [
            ("version", r#"{"counter":1,"timestamp":2}"#),
            ("allAclFileVersion", "{}"),
            ("brokerName", "broker-a"),
            ("brokerAddr", "127.0.0.1:10911"),
            ("clusterName", "DefaultCluster"),
        ]
        .into_iter()
        .collect();
        let header = GetBrokerAclConfigResponseHeader::from_ext_fields(&fields).expect("header");
        assert_eq!(header.broker_name, "broker-a");
        assert_eq!(header.to_ext_fields(), fields);
    }
}
