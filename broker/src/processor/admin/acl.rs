//! The plain-ACL admin requests (RocketMQ 4.x, codes 50-54): create or change an account,
//! delete one, replace the global white list, and read the ACL's versions and contents.
//! Only admin accounts get here (the ACL check in front of every processor); with
//! aclEnable off they are refused.

use std::sync::Arc;

use serde_json::json;
use stellmq_acl::{AccessValidator, AccountEdit, AclError, FileVersion};
use stellmq_remoting::net::{ProcessResult, ProcessorError};
use stellmq_remoting::protocol::body::DataVersion;
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};

use crate::context::{now_ms, BrokerIdentity};

pub struct AclAdminProcessor {
    pub acl: Option<Arc<AccessValidator>>,
    pub identity: Arc<BrokerIdentity>,
}

/// RocketMQ's `UtilAll.split(text, ",")`: trimmed items, none for an absent or empty text.
fn split_list(text: Option<&str>) -> Option<Vec<String>> {
    let text = text?.trim();
    Some(
        text.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
    )
}

fn version_json(v: FileVersion) -> DataVersion {
    DataVersion {
        counter: v.counter,
        state_version: 0,
        timestamp: v.timestamp,
    }
}

fn failed(code: ResponseCode, e: AclError) -> ProcessorError {
    ProcessorError::new(code, e.to_string())
}

impl AclAdminProcessor {
    fn validator(&self) -> Result<Arc<AccessValidator>, ProcessorError> {
        self.acl.clone().ok_or_else(|| {
            ProcessorError::system("ACL is not enabled on this broker (aclEnable=false)")
        })
    }

    /// Runs a file edit on a blocking thread.
    async fn edit<T: Send + 'static>(
        &self,
        code: ResponseCode,
        change: impl FnOnce(&AccessValidator) -> Result<T, AclError> + Send + 'static,
    ) -> Result<T, ProcessorError> {
        let acl = self.validator()?;
        tokio::task::spawn_blocking(move || change(&acl))
            .await
            .map_err(|e| ProcessorError::system(e.to_string()))?
            .map_err(|e| failed(code, e))
    }

    /// UPDATE_AND_CREATE_ACL_CONFIG (CreateAccessConfigRequestHeader).
    pub async fn update(&self, request: &RemotingCommand) -> ProcessResult {
        let f = &request.ext_fields;
        let code = ResponseCode::UPDATE_AND_CREATE_ACL_CONFIG_FAILED;
        let Some(access_key) = f.get_non_empty("accessKey") else {
            return Err(ProcessorError::new(code, "the field accessKey is null"));
        };
        let edit = AccountEdit {
            access_key: access_key.to_owned(),
            secret_key: f.get("secretKey").unwrap_or("").to_owned(),
            white_remote_address: f.get("whiteRemoteAddress").map(str::to_owned),
            admin: f
                .get("admin")
                .is_some_and(|v| v.eq_ignore_ascii_case("true")),
            default_topic_perm: f.get("defaultTopicPerm").map(str::to_owned),
            default_group_perm: f.get("defaultGroupPerm").map(str::to_owned),
            topic_perms: split_list(f.get("topicPerms")),
            group_perms: split_list(f.get("groupPerms")),
        };
        self.edit(code, move |acl| acl.update_account(&edit, now_ms()))
            .await?;
        tracing::info!(
            event = "ACL_ACCOUNT_UPDATED",
            access_key,
            "ACL account created or changed"
        );
        Ok(Some(request.success_to()))
    }

    /// DELETE_ACL_CONFIG (DeleteAccessConfigRequestHeader).
    pub async fn delete(&self, request: &RemotingCommand) -> ProcessResult {
        let code = ResponseCode::DELETE_ACL_CONFIG_FAILED;
        let Some(access_key) = request.ext_fields.get_non_empty("accessKey") else {
            return Err(ProcessorError::new(code, "the field accessKey is null"));
        };
        let key = access_key.to_owned();
        let deleted = self
            .edit(code, move |acl| acl.delete_account(&key, now_ms()))
            .await?;
        if !deleted {
            return Err(ProcessorError::new(
                code,
                format!("The accessKey[{access_key}] corresponding to accessConfig has been deleted failed: no such account"),
            ));
        }
        tracing::info!(
            event = "ACL_ACCOUNT_DELETED",
            access_key,
            "ACL account deleted"
        );
        Ok(Some(request.success_to()))
    }

    /// UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (UpdateGlobalWhiteAddrsConfigRequestHeader).
    pub async fn update_global_white(&self, request: &RemotingCommand) -> ProcessResult {
        let f = &request.ext_fields;
        let addresses = split_list(f.get("globalWhiteAddrs")).unwrap_or_default();
        let file = f.get("aclFileFullPath").map(str::to_owned);
        self.edit(
            ResponseCode::UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED,
            move |acl| acl.update_global_white(addresses, file.as_deref(), now_ms()),
        )
        .await?;
        tracing::info!(
            event = "ACL_GLOBAL_WHITE_UPDATED",
            "ACL global white list replaced"
        );
        Ok(Some(request.success_to()))
    }

    /// GET_BROKER_CLUSTER_ACL_INFO (GetBrokerAclConfigResponseHeader).
    pub fn version(&self, request: &RemotingCommand) -> ProcessResult {
        let acl = self.validator()?;
        let all: serde_json::Map<String, serde_json::Value> = acl
            .versions()
            .into_iter()
            .map(|(path, v)| (path.display().to_string(), json!(version_json(v))))
            .collect();
        let mut response = request.success_to();
        let fields = &mut response.ext_fields;
        fields.insert("version", json_text(&version_json(acl.default_version())));
        fields.insert("allAclFileVersion", json_text(&all));
        fields.insert("brokerName", self.identity.broker_name.as_str());
        fields.insert("brokerAddr", self.identity.broker_addr.as_str());
        fields.insert("clusterName", self.identity.cluster_name.as_str());
        Ok(Some(response))
    }

    /// GET_BROKER_CLUSTER_ACL_CONFIG: every white address and account (secrets included:
    /// admin accounts only).
    pub fn config(&self, request: &RemotingCommand) -> ProcessResult {
        let acl = self.validator()?;
        let (white, accounts) = acl.all_config();
        let body = json!({ "globalWhiteAddrs": white, "plainAccessConfigs": accounts });
        let mut response = request.success_to();
        response.body = serde_json::to_vec(&body)
            .map_err(|e| ProcessorError::system(e.to_string()))?
            .into();
        Ok(Some(response))
    }
}

/// A value as JSON text for a header field (these values always serialise).
fn json_text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}
