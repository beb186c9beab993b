//! Route and topic-list queries from clients, brokers and tools, and a broker name's members
//! (GET_BROKER_MEMBER_GROUP).

use stellmq_remoting::net::{
    ProcessFuture, ProcessResult, ProcessorError, RequestContext, RequestProcessor,
};
use stellmq_remoting::protocol::body::{fastjson, GetBrokerMemberGroupResponseBody};
use stellmq_remoting::protocol::headers::{
    topic_pages, GetBrokerMemberGroupRequestHeader, GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
};
use stellmq_remoting::protocol::version::V4_9_4;
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::RouteTables;
use super::{header, topic_list_response};
use crate::kv::ORDER_TOPIC_CONFIG;

pub struct RouteQueryProcessor {
    tables: RouteTables,
}

impl RouteQueryProcessor {
    pub fn new(tables: RouteTables) -> Self {
        Self { tables }
    }

    fn route_info(&self, request: &RemotingCommand) -> ProcessResult {
        let h: GetRouteInfoRequestHeader = header(request)?;
        let Some(mut route) = self.tables.routes.topic_route(&h.topic) else {
            return Err(ProcessorError::new(
                ResponseCode::TOPIC_NOT_EXIST,
                format!(
                    "No topic route info in name server for the topic: {}\nSee http://rocketmq.apache.org/docs/faq/ for further details.",
                    h.topic
                ),
            ));
        };
        if self.tables.config.read().order_message_enable {
            route.order_topic_conf = self.tables.kv.get(ORDER_TOPIC_CONFIG, &h.topic);
        }
        // Clients from 4.9.4 on (or asking for it) get standard JSON; older ones, and Go
        // clients before 2.1.2, need fastjson's unquoted integer keys (protocol.md 3.0, 3.1).
        let standard = request.version >= V4_9_4 || h.accept_standard_json_only.unwrap_or(false);
        let body = if standard {
            for broker in &mut route.broker_datas {
                broker.enable_acting_master = Some(false);
            }
            fastjson::encode_standard(&route)
        } else {
            fastjson::encode(&route)
        };
        Ok(Some(request.success_to().with_body(body)))
    }
}

/// The largest page a name server answers.
const MAX_PAGE: usize = 10_000;

impl RouteQueryProcessor {
    /// Every topic, or one page of them when the request asks for pages.
    fn topic_list(&self, request: &RemotingCommand) -> RemotingCommand {
        let routes = &self.tables.routes;
        let Some(size) = request.ext_fields.get(topic_pages::MAX_TOPIC_NUM) else {
            return topic_list_response(request, routes.all_topics(), None);
        };
        let size = size.parse::<usize>().unwrap_or(MAX_PAGE).clamp(1, MAX_PAGE);
        let after = request
            .ext_fields
            .get(topic_pages::AFTER_TOPIC)
            .unwrap_or("");
        let (topics, more) = routes.topic_page(after, size);
        let mut response = topic_list_response(request, topics, None);
        if more {
            response.ext_fields.insert(topic_pages::MORE_TOPICS, "true");
        }
        response
    }
}

impl RequestProcessor for RouteQueryProcessor {
    fn process(&self, _ctx: RequestContext, request: RemotingCommand) -> ProcessFuture {
        let routes = &self.tables.routes;
        let result =
            match request.request_code_typed() {
                Some(RequestCode::GET_ROUTEINFO_BY_TOPIC) => self.route_info(&request),
                Some(RequestCode::GET_BROKER_CLUSTER_INFO) => Ok(Some(
                    request
                        .success_to()
                        .with_body(fastjson::encode(&routes.cluster_info())),
                )),
                Some(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER) => {
                    Ok(Some(self.topic_list(&request)))
                }
                Some(RequestCode::GET_TOPICS_BY_CLUSTER) => {
                    header::<GetTopicsByClusterRequestHeader>(&request).map(|h| {
                        Some(topic_list_response(
                            &request,
                            routes.topics_by_cluster(&h.cluster),
                            None,
                        ))
                    })
                }
                Some(RequestCode::GET_SYSTEM_TOPIC_LIST_FROM_NS) => {
                    let (topics, addr) = routes.system_topics();
                    Ok(Some(topic_list_response(&request, topics, addr)))
                }
                Some(RequestCode::GET_UNIT_TOPIC_LIST) => Ok(Some(topic_list_response(
                    &request,
                    routes.unit_topics(),
                    None,
                ))),
                Some(RequestCode::GET_HAS_UNIT_SUB_TOPIC_LIST) => Ok(Some(topic_list_response(
                    &request,
                    routes.has_unit_sub_topics(),
                    None,
                ))),
                Some(RequestCode::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST) => Ok(Some(
                    topic_list_response(&request, routes.has_unit_sub_ununit_topics(), None),
                )),
                Some(RequestCode::GET_BROKER_MEMBER_GROUP) => {
                    header::<GetBrokerMemberGroupRequestHeader>(&request).map(|h| {
                        let body = GetBrokerMemberGroupResponseBody {
                            broker_member_group: routes
                                .broker_member_group(&h.cluster_name, &h.broker_name),
                        };
                        Some(request.success_to().with_body(fastjson::encode(&body)))
                    })
                }
                _ => Ok(Some(request.not_supported_to())),
            };
        Box::pin(std::future::ready(result))
    }
}
