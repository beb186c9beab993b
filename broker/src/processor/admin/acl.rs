//! The plain-ACL admin requests (RocketMQ 4.x, codes 50-54): create or change an account,
//! delete one, replace the global white list, and read the ACL's versions and contents.
//! Only admin accounts get here (the ACL check in front of every processor); with
//! aclEnable off they are refused.

use std::sync::Arc;

use stellmq_acl::{AccessValidator, AccountConfig, AccountEdit, AclError, FileVersion};
use stellmq_remoting::net::{ProcessResult, ProcessorError};
use stellmq_remoting::protocol::body::{
    DataVersion, GetBrokerClusterAclConfigResponseBody, PlainAccessConfig,
};
use stellmq_remoting::protocol::headers::{
    CommandHeader, CreateAccessConfigRequestHeader, DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader, UpdateGlobalWhiteAddrsConfigRequestHeader,
};
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
        let code = ResponseCode::UPDATE_AND_CREATE_ACL_CONFIG_FAILED;
        let h = CreateAccessConfigRequestHeader::from_ext_fields(&request.ext_fields)
            .map_err(|e| ProcessorError::new(code, e.to_string()))?;
        let access_key = h.access_key.clone();
        let edit = AccountEdit {
            access_key: h.access_key,
            secret_key: h.secret_key.unwrap_or_default(),
            white_remote_address: h.white_remote_address,
            admin: h.admin.unwrap_or(false),
            default_topic_perm: h.default_topic_perm,
            default_group_perm: h.default_group_perm,
            topic_perms: split_list(h.topic_perms.as_deref()),
            group_perms: split_list(h.group_perms.as_deref()),
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
        let h = DeleteAccessConfigRequestHeader::from_ext_fields(&request.ext_fields)
            .map_err(|e| ProcessorError::new(code, e.to_string()))?;
        let access_key = h.access_key;
        let key = access_key.clone();
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
        let code = ResponseCode::UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED;
        let h = UpdateGlobalWhiteAddrsConfigRequestHeader::from_ext_fields(&request.ext_fields)
            .map_err(|e| ProcessorError::new(code, e.to_string()))?;
        let addresses = split_list(Some(&h.global_white_addrs)).unwrap_or_default();
        let file = h.acl_file_full_path;
        self.edit(code, move |acl| {
            acl.update_global_white(addresses, file.as_deref(), now_ms())
        })
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
        let all: std::collections::BTreeMap<String, DataVersion> = acl
            .versions()
            .into_iter()
            .map(|(path, v)| (path.display().to_string(), version_json(v)))
            .collect();
        let header = GetBrokerAclConfigResponseHeader {
            version: json_text(&version_json(acl.default_version())),
            all_acl_file_version: Some(json_text(&all)),
            broker_name: self.identity.broker_name.clone(),
            broker_addr: self.identity.broker_addr.clone(),
            cluster_name: self.identity.cluster_name.clone(),
        };
        let mut response = request.success_to();
        response.ext_fields = header.to_ext_fields();
        Ok(Some(response))
    }

    /// GET_BROKER_CLUSTER_ACL_CONFIG: every white address and account (secrets included:
    /// admin accounts only).
    pub fn config(&self, request: &RemotingCommand) -> ProcessResult {
        let acl = self.validator()?;
        let (white, accounts) = acl.all_config();
        let body = GetBrokerClusterAclConfigResponseBody {
            global_white_addrs: white,
            plain_access_configs: accounts.into_iter().map(plain_access_config).collect(),
        };
        let mut response = request.success_to();
        response.body = serde_json::to_vec(&body)
            .map_err(|e| ProcessorError::system(e.to_string()))?
            .into();
        Ok(Some(response))
    }
}

/// An account of the file as the wire body lists it.
fn plain_access_config(account: AccountConfig) -> PlainAccessConfig {
    let list = |items: Vec<String>| (!items.is_empty()).then_some(items);
    PlainAccessConfig {
        access_key: account.access_key,
        secret_key: account.secret_key,
        white_remote_address: account.white_remote_address,
        admin: account.admin,
        default_topic_perm: account.default_topic_perm,
        default_group_perm: account.default_group_perm,
        topic_perms: list(account.topic_perms),
        group_perms: list(account.group_perms),
    }
}

/// A value as JSON text for a header field (these values always serialise).
fn json_text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

#[cfg(test)]
mod tests;
