//! UPDATE_BROKER_CONFIG and GET_BROKER_CONFIG: `key=value` properties bodies.

use std::sync::Arc;

use stellmq_config::{format_properties, parse_config_changes};
use stellmq_remoting::net::tls::TlsConfig;
use stellmq_remoting::net::{ProcessResult, ProcessorError};
use stellmq_remoting::protocol::headers::{CommandHeader, GetBrokerConfigResponseHeader};
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};
use stellmq_store::MessageStoreConfig;

use crate::config::{CONFIG_BLACK_LIST, SECRET_KEYS};
use crate::group::SubscriptionGroupManager;
use crate::settings::LiveConfig;
use crate::topic::TopicConfigManager;

pub struct ConfigAdminProcessor {
    pub broker: Arc<LiveConfig>,
    pub store: MessageStoreConfig,
    pub topics: Arc<TopicConfigManager>,
    pub groups: Arc<SubscriptionGroupManager>,
}

impl ConfigAdminProcessor {
    pub(crate) fn update(&self, request: &RemotingCommand) -> ProcessResult {
        let changes = parse_config_changes(&request.body)
            .map_err(|e| ProcessorError::system(e.to_string()))?;
        if let Some(key) = changes
            .keys()
            .find(|k| CONFIG_BLACK_LIST.contains(&k.as_str()))
        {
            return Err(ProcessorError::new(
                ResponseCode::NO_PERMISSION,
                format!("Can not update config in black list: {key}"),
            ));
        }
        let mut updated = self.broker.read().clone();
        for (key, value) in &changes {
            let known = updated
                .set(key, value)
                .map_err(|e| ProcessorError::system(e.to_string()))?;
            if !known {
                let store_key = MessageStoreConfig::KEYS.contains(&key.as_str());
                return Err(ProcessorError::system(if store_key {
                    format!(
                        "store key '{key}' cannot change at runtime; edit broker.conf and restart"
                    )
                } else if TlsConfig::is_tls_key(key) {
                    format!(
                        "TLS key '{key}' cannot change at runtime; edit broker.conf and restart \
                         (changed certificate files are reloaded by themselves)"
                    )
                } else {
                    format!("unknown config key '{key}'")
                }));
            }
        }
        let permission_changed = updated.broker_permission != self.broker.read().broker_permission;
        // Keys read where the change cannot reach by itself follow now.
        self.topics
            .set_auto_create(updated.auto_create_topic_enable);
        self.groups
            .set_auto_create(updated.auto_create_subscription_group);
        self.broker.replace(updated);
        tracing::info!(event = "BROKER_CONFIG_UPDATED", keys = ?changes.keys().collect::<Vec<_>>(), "broker config updated");
        if permission_changed {
            self.topics.changed_all();
        }
        Ok(Some(request.success_to()))
    }

    pub(crate) fn get(&self, request: &RemotingCommand) -> ProcessResult {
        let mut entries = self.broker.read().entries();
        entries.extend(self.store.entries());
        for (key, value) in &mut entries {
            if SECRET_KEYS.contains(key) && !value.is_empty() {
                *value = "******".to_owned();
            }
        }
        let version = serde_json::to_string(&self.topics.data_version()).unwrap_or_default();
        let fields = GetBrokerConfigResponseHeader { version }.to_ext_fields();
        Ok(Some(
            request
                .success_to()
                .with_ext_fields(fields)
                .with_body(format_properties(entries).into_bytes()),
        ))
    }
}

#[cfg(test)]
mod tests;
