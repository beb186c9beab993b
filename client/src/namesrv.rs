//! The name servers: RocketMQ's `ip:port;ip:port` list, asking them in turn, and the topic
//! route lookup that producers, consumers and the admin client share.

use std::time::Duration;

use stellmq_remoting::net::RemotingClient;
use stellmq_remoting::protocol::body::{fastjson, TopicRouteData};
use stellmq_remoting::protocol::headers::GetRouteInfoRequestHeader;
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use crate::error::ClientError;
use crate::request::{refusal, request};

/// The name servers of a producer or consumer left unconfigured: `NAMESRV_ADDR`, else
/// `127.0.0.1:9876`.
pub(crate) fn default_addr() -> String {
    std::env::var("NAMESRV_ADDR").unwrap_or_else(|_| "127.0.0.1:9876".into())
}

/// RocketMQ's `ip:port;ip:port` name-server list, blanks dropped.
pub(crate) fn parse_list(addrs: &str) -> Vec<String> {
    addrs
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Sends `request` to the name servers in turn until one gives a response that `settles`
/// accepts; a name server that fails, or answers otherwise, is passed over. The error names
/// what the last one did.
pub(crate) async fn ask_in_turn(
    remoting: &RemotingClient,
    namesrv: &[String],
    request: &RemotingCommand,
    timeout: Duration,
    settles: impl Fn(&RemotingCommand) -> bool,
) -> Result<RemotingCommand, ClientError> {
    let mut last = None;
    for ns in namesrv {
        match remoting.invoke(ns, request.clone(), timeout).await {
            Ok(response) if settles(&response) => return Ok(response),
            Ok(response) => last = Some(refusal(ns, &response)),
            Err(e) => last = Some(e),
        }
    }
    Err(last.map_or(
        ClientError::NoNameServer,
        ClientError::NameServerUnreachable,
    ))
}

/// The route of `topic` from the first name server that knows it, or `None` when the topic
/// has no route (TOPIC_NOT_EXIST).
pub(crate) async fn fetch_route(
    remoting: &RemotingClient,
    namesrv: &[String],
    topic: &str,
    timeout: Duration,
) -> Result<Option<TopicRouteData>, ClientError> {
    let header = GetRouteInfoRequestHeader {
        topic: topic.to_owned(),
        accept_standard_json_only: None,
    };
    let known = |r: &RemotingCommand| {
        r.code == ResponseCode::SUCCESS.as_i32() || r.code == ResponseCode::TOPIC_NOT_EXIST.as_i32()
    };
    let request = request(RequestCode::GET_ROUTEINFO_BY_TOPIC, &header);
    let response = ask_in_turn(remoting, namesrv, &request, timeout, known).await?;
    if response.code == ResponseCode::TOPIC_NOT_EXIST.as_i32() {
        return Ok(None);
    }
    Ok(Some(fastjson::decode(&response.body)?))
}
