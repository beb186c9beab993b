//! DELETE_TOPIC_IN_NAMESRV, REGISTER_TOPIC_IN_NAMESRV, WIPE_WRITE_PERM_OF_BROKER and
//! ADD_WRITE_PERM_OF_BROKER.

use std::sync::Arc;

use stellmq_remoting::net::{
    ProcessFuture, ProcessResult, ProcessorError, RequestContext, RequestProcessor,
};
use stellmq_remoting::protocol::body::{fastjson, TopicRouteData};
use stellmq_remoting::protocol::headers::{
    AddWritePermOfBrokerResponseHeader, BrokerNameRequestHeader, CommandHeader,
    DeleteTopicFromNamesrvRequestHeader, RegisterTopicRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
};
use stellmq_remoting::protocol::names;
use stellmq_remoting::protocol::{RemotingCommand, RequestCode};

use super::header;
use crate::route::RouteInfoManager;

pub struct TopicAdminProcessor {
    routes: Arc<RouteInfoManager>,
}

impl TopicAdminProcessor {
    pub fn new(routes: Arc<RouteInfoManager>) -> Self {
        Self { routes }
    }

    fn delete_topic(&self, request: &RemotingCommand) -> ProcessResult {
        let h: DeleteTopicFromNamesrvRequestHeader = header(request)?;
        self.routes
            .delete_topic(&h.topic, h.cluster_name.as_deref());
        Ok(Some(request.success_to()))
    }

    /// REGISTER_TOPIC_IN_NAMESRV: the body's queue data become the topic's route on their
    /// brokers. As in RocketMQ the answer is SUCCESS even when nothing was registered (an
    /// empty route, or one naming a broker this name server does not know).
    fn register_topic(&self, request: &RemotingCommand) -> ProcessResult {
        let h: RegisterTopicRequestHeader = header(request)?;
        names::check_topic(&h.topic).map_err(|e| ProcessorError::system(e.to_string()))?;
        let route: TopicRouteData = fastjson::decode(&request.body)
            .map_err(|e| ProcessorError::system(format!("bad TopicRouteData body: {e}")))?;
        if !route.queue_datas.is_empty() {
            self.routes.register_topic(&h.topic, route.queue_datas);
        }
        Ok(Some(request.success_to()))
    }

    fn wipe_write_perm(&self, request: &RemotingCommand) -> ProcessResult {
        let h: BrokerNameRequestHeader = header(request)?;
        let wipe_topic_count = self.routes.wipe_write_perm(&h.broker_name);
        let fields = WipeWritePermOfBrokerResponseHeader { wipe_topic_count }.to_ext_fields();
        Ok(Some(request.success_to().with_ext_fields(fields)))
    }

    fn add_write_perm(&self, request: &RemotingCommand) -> ProcessResult {
        let h: BrokerNameRequestHeader = header(request)?;
        let add_topic_count = self.routes.add_write_perm(&h.broker_name);
        let fields = AddWritePermOfBrokerResponseHeader { add_topic_count }.to_ext_fields();
        Ok(Some(request.success_to().with_ext_fields(fields)))
    }
}

impl RequestProcessor for TopicAdminProcessor {
    fn process(&self, _ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        let result = match request.request_code_typed() {
            Some(RequestCode::DELETE_TOPIC_IN_NAMESRV) => self.delete_topic(&request),
            Some(RequestCode::REGISTER_TOPIC_IN_NAMESRV) => self.register_topic(&request),
            Some(RequestCode::WIPE_WRITE_PERM_OF_BROKER) => self.wipe_write_perm(&request),
            Some(RequestCode::ADD_WRITE_PERM_OF_BROKER) => self.add_write_perm(&request),
            _ => Ok(Some(request.not_supported_to())),
        };
        Box::pin(std::future::ready(result))
    }
}
