//! PUT_KV_CONFIG, GET_KV_CONFIG, DELETE_KV_CONFIG and GET_KVLIST_BY_NAMESPACE.

use std::sync::Arc;

use stellmq_remoting::net::{
    ProcessFuture, ProcessResult, ProcessorError, RequestContext, RequestProcessor,
};
use stellmq_remoting::protocol::body::{fastjson, KvTable};
use stellmq_remoting::protocol::headers::{
    CommandHeader, GetKvConfigResponseHeader, GetKvListByNamespaceRequestHeader,
    KvConfigKeyRequestHeader, PutKvConfigRequestHeader,
};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::{blocking, header};
use crate::kv::KvConfigManager;

pub struct KvConfigProcessor {
    kv: Arc<KvConfigManager>,
}

impl KvConfigProcessor {
    pub fn new(kv: Arc<KvConfigManager>) -> Self {
        Self { kv }
    }
}

async fn handle(kv: Arc<KvConfigManager>, request: RemotingCommand) -> ProcessResult {
    match request.request_code_typed() {
        Some(RequestCode::PUT_KV_CONFIG) => {
            let h: PutKvConfigRequestHeader = header(&request)?;
            tracing::info!(event = "KV_CONFIG_PUT", namespace = %h.namespace, key = %h.key, "KV config put");
            blocking(move || kv.put(&h.namespace, &h.key, &h.value)).await?;
            Ok(Some(request.success_to()))
        }
        Some(RequestCode::GET_KV_CONFIG) => {
            let h: KvConfigKeyRequestHeader = header(&request)?;
            match kv.get(&h.namespace, &h.key) {
                Some(value) => {
                    let fields = GetKvConfigResponseHeader { value: Some(value) }.to_ext_fields();
                    Ok(Some(request.success_to().with_ext_fields(fields)))
                }
                None => Err(ProcessorError::new(
                    ResponseCode::QUERY_NOT_FOUND,
                    format!("No config item, Namespace: {} Key: {}", h.namespace, h.key),
                )),
            }
        }
        Some(RequestCode::DELETE_KV_CONFIG) => {
            let h: KvConfigKeyRequestHeader = header(&request)?;
            tracing::info!(event = "KV_CONFIG_DELETED", namespace = %h.namespace, key = %h.key, "KV config deleted");
            blocking(move || kv.delete(&h.namespace, &h.key)).await?;
            Ok(Some(request.success_to()))
        }
        Some(RequestCode::GET_KVLIST_BY_NAMESPACE) => {
            let h: GetKvListByNamespaceRequestHeader = header(&request)?;
            match kv.namespace(&h.namespace) {
                Some(table) => Ok(Some(
                    request
                        .success_to()
                        .with_body(fastjson::encode(&KvTable { table })),
                )),
                None => Err(ProcessorError::new(
                    ResponseCode::QUERY_NOT_FOUND,
                    format!("No config item, Namespace: {}", h.namespace),
                )),
            }
        }
        _ => Ok(Some(request.not_supported_to())),
    }
}

impl RequestProcessor for KvConfigProcessor {
    fn process(&self, _ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        Box::pin(handle(self.kv.clone(), request))
    }
}
