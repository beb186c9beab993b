//! GET_NAMESRV_CONFIG and UPDATE_NAMESRV_CONFIG: `key=value` properties bodies.

use std::sync::Arc;

use parking_lot::RwLock;
use stellmq_config::{format_properties, parse_config_changes, write_atomically};
use stellmq_remoting::net::{
    ProcessFuture, ProcessResult, ProcessorError, RequestContext, RequestProcessor,
};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::blocking;
use crate::config::NamesrvConfig;

pub struct ConfigAdminProcessor {
    config: Arc<RwLock<NamesrvConfig>>,
}

impl ConfigAdminProcessor {
    pub fn new(config: Arc<RwLock<NamesrvConfig>>) -> Self {
        Self { config }
    }
}

async fn update(config: Arc<RwLock<NamesrvConfig>>, request: RemotingCommand) -> ProcessResult {
    let changes =
        parse_config_changes(&request.body).map_err(|e| ProcessorError::system(e.to_string()))?;
    let updated = {
        let current = config.read();
        if let Some(key) = changes.keys().find(|k| current.is_blacklisted(k)) {
            return Err(ProcessorError::new(
                ResponseCode::NO_PERMISSION,
                format!("Can not update config in black list: {key}"),
            ));
        }
        let mut updated = current.clone();
        updated
            .apply(&changes)
            .map_err(|e| ProcessorError::system(e.to_string()))?;
        updated
    };
    let path = updated.config_store_path.clone();
    let text = format_properties(updated.entries());
    *config.write() = updated;
    tracing::info!(event = "NAMESRV_CONFIG_UPDATED", keys = ?changes.keys().collect::<Vec<_>>(), "name server config updated");
    blocking(move || write_atomically(&path, text.as_bytes())).await?;
    Ok(Some(request.success_to()))
}

impl RequestProcessor for ConfigAdminProcessor {
    fn process(&self, _ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        match request.request_code_typed() {
            Some(RequestCode::GET_NAMESRV_CONFIG) => {
                let config = self.config.read();
                let shown = config.entries().into_iter().map(|(key, value)| {
                    let secret = crate::config::SECRET_KEYS.contains(&key) && !value.is_empty();
                    (key, if secret { "******".to_owned() } else { value })
                });
                let text = format_properties(shown);
                Box::pin(std::future::ready(Ok(Some(
                    request.success_to().with_body(text.into_bytes()),
                ))))
            }
            Some(RequestCode::UPDATE_NAMESRV_CONFIG) => {
                Box::pin(update(self.config.clone(), request))
            }
            _ => Box::pin(std::future::ready(Ok(Some(request.not_supported_to())))),
        }
    }
}
