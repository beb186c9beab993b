//! Request processors, one module per area; each gets only the state it needs.

mod broker_registration;
mod config_admin;
mod kv_config;
mod route_query;
mod topic_admin;

pub use broker_registration::BrokerRegistrationProcessor;
pub use config_admin::ConfigAdminProcessor;
pub use kv_config::KvConfigProcessor;
pub use route_query::RouteQueryProcessor;
pub use topic_admin::TopicAdminProcessor;

use stellmq_remoting::net::ProcessorError;
use stellmq_remoting::protocol::body::fastjson;
use stellmq_remoting::protocol::body::TopicList;
use stellmq_remoting::protocol::headers::CommandHeader;
use stellmq_remoting::protocol::RemotingCommand;

/// The tables that route registrations and route queries both read.
#[derive(Clone)]
pub struct RouteTables {
    pub routes: std::sync::Arc<crate::route::RouteInfoManager>,
    pub kv: std::sync::Arc<crate::kv::KvConfigManager>,
    pub config: std::sync::Arc<parking_lot::RwLock<crate::config::NamesrvConfig>>,
}

/// Reads the typed header of `request`; a bad header is a SYSTEM_ERROR naming the field.
fn header<H: CommandHeader>(request: &RemotingCommand) -> Result<H, ProcessorError> {
    Ok(H::from_ext_fields(&request.ext_fields)?)
}

/// A success response carrying a TopicList body.
fn topic_list_response(
    request: &RemotingCommand,
    topics: Vec<String>,
    broker_addr: Option<String>,
) -> RemotingCommand {
    let body = TopicList {
        topic_list: topics,
        broker_addr,
    };
    request.success_to().with_body(fastjson::encode(&body))
}

/// Runs blocking file I/O off the async runtime.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> Result<T, ProcessorError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ProcessorError::system(format!("background task failed: {e}")))?
        .map_err(|e| ProcessorError::system(format!("cannot persist: {e}")))
}
