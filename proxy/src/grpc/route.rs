//! QueryRoute and QueryAssignment. Every broker of a route is advertised at the proxy's own
//! endpoint (the address the client dialled, with the gRPC port), so clients keep talking
//! to the proxy, as with RocketMQ's proxy in cluster mode.

use stellmq_remoting::protocol::body::{QueueData, TopicRouteData};

use super::status::{ok, Refusal};
use super::{group_name, topic_name, Caller, Proxy};
use crate::cluster::TopicMessageType;
use crate::pb::{
    Address, Assignment, Broker, Code, Endpoints, MessageQueue, MessageType, Permission,
    QueryAssignmentRequest, QueryAssignmentResponse, QueryRouteRequest, QueryRouteResponse,
    Resource,
};

const PERM_READ: i32 = 4;
const PERM_WRITE: i32 = 2;

pub async fn query_route(
    proxy: &Proxy,
    _caller: Caller,
    request: QueryRouteRequest,
) -> Result<QueryRouteResponse, Refusal> {
    let topic = topic_name(request.topic.as_ref())?;
    let route = proxy.cluster.route(&topic).await?;
    let kind = proxy
        .cluster
        .topic_message_type(&topic)
        .await
        .unwrap_or(TopicMessageType::Unspecified);
    let endpoints = advertised(proxy, request.endpoints.as_ref());
    let resource = request.topic.clone().unwrap_or_default();
    let mut message_queues = Vec::new();
    for queue_data in sorted_queue_datas(&route) {
        for (_, broker) in brokers_of(&route, &queue_data.broker_name, &endpoints) {
            message_queues.extend(queues_of(queue_data, &resource, &broker, kind));
        }
    }
    Ok(QueryRouteResponse {
        status: Some(ok()),
        message_queues,
    })
}

pub async fn query_assignment(
    proxy: &Proxy,
    _caller: Caller,
    request: QueryAssignmentRequest,
) -> Result<QueryAssignmentResponse, Refusal> {
    let topic = topic_name(request.topic.as_ref())?;
    let group = group_name(request.group.as_ref())?;
    let route = proxy.cluster.route(&topic).await?;
    let fifo = proxy
        .cluster
        .group_is_fifo(&topic, &group)
        .await
        .unwrap_or(false);
    let endpoints = advertised(proxy, request.endpoints.as_ref());
    let resource = request.topic.clone().unwrap_or_default();
    let mut assignments = Vec::new();
    for queue_data in sorted_queue_datas(&route) {
        if queue_data.perm & PERM_READ == 0 || queue_data.read_queue_nums <= 0 {
            continue;
        }
        let Some((_, broker)) = brokers_of(&route, &queue_data.broker_name, &endpoints)
            .into_iter()
            .find(|(id, _)| *id == 0)
        else {
            continue;
        };
        let queue = |id: i32| Assignment {
            message_queue: Some(MessageQueue {
                topic: Some(resource.clone()),
                id,
                permission: permission(queue_data.perm) as i32,
                broker: Some(broker.clone()),
                accept_message_types: Vec::new(),
            }),
        };
        if fifo {
            assignments.extend((0..queue_data.read_queue_nums).map(queue));
        } else {
            // POP reads any queue of the broker: one assignment per broker.
            assignments.push(queue(-1));
        }
    }
    if assignments.is_empty() {
        return Err(Refusal::new(Code::Forbidden, "no readable queue"));
    }
    Ok(QueryAssignmentResponse {
        status: Some(ok()),
        assignments,
    })
}

/// Where clients reach the proxy: the endpoints they dialled, with the gRPC port (unless
/// `useEndpointPortFromRequest`).
fn advertised(proxy: &Proxy, requested: Option<&Endpoints>) -> Endpoints {
    let port = i32::from(proxy.grpc_port());
    let mut endpoints = requested.cloned().unwrap_or_default();
    if !proxy.config.use_endpoint_port_from_request {
        for address in &mut endpoints.addresses {
            address.port = port;
        }
    }
    if endpoints.addresses.is_empty() {
        endpoints.addresses.push(Address {
            host: "127.0.0.1".into(),
            port,
        });
    }
    endpoints
}

fn sorted_queue_datas(route: &TopicRouteData) -> Vec<&QueueData> {
    let mut queue_datas: Vec<&QueueData> = route.queue_datas.iter().collect();
    queue_datas.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
    queue_datas
}

/// Every broker (master and slaves) of `broker_name`, at the proxy's endpoints.
fn brokers_of(
    route: &TopicRouteData,
    broker_name: &str,
    endpoints: &Endpoints,
) -> Vec<(i64, Broker)> {
    route
        .broker_datas
        .iter()
        .filter(|b| b.broker_name == broker_name)
        .flat_map(|b| b.broker_addrs.0.keys())
        .map(|id| {
            (
                *id,
                Broker {
                    name: broker_name.to_owned(),
                    id: i32::try_from(*id).unwrap_or(i32::MAX),
                    endpoints: Some(endpoints.clone()),
                },
            )
        })
        .collect()
}

/// The queues of one broker as RocketMQ's proxy numbers them: read-only, then write-only,
/// then read-write, then none.
fn queues_of(
    queue_data: &QueueData,
    topic: &Resource,
    broker: &Broker,
    kind: TopicMessageType,
) -> Vec<MessageQueue> {
    let (read, write) = (
        queue_data.read_queue_nums.max(0),
        queue_data.write_queue_nums.max(0),
    );
    let readable = queue_data.perm & PERM_READ != 0;
    let writable = queue_data.perm & PERM_WRITE != 0;
    let (r, w, rw, n) = match (readable, writable) {
        (true, true) => {
            let rw = read.min(write);
            (read - rw, write - rw, rw, 0)
        }
        (true, false) => (read, 0, 0, 0),
        (false, true) => (0, write, 0, 0),
        (false, false) => (0, 0, 0, read.max(write).max(1)),
    };
    let accept = accepted_types(kind);
    let mut queues = Vec::new();
    let mut id = 0;
    for (count, perm) in [
        (r, Permission::Read),
        (w, Permission::Write),
        (rw, Permission::ReadWrite),
        (n, Permission::None),
    ] {
        for _ in 0..count {
            queues.push(MessageQueue {
                topic: Some(topic.clone()),
                id,
                permission: perm as i32,
                broker: Some(broker.clone()),
                accept_message_types: accept.clone(),
            });
            id += 1;
        }
    }
    queues
}

fn permission(perm: i32) -> Permission {
    match (perm & PERM_READ != 0, perm & PERM_WRITE != 0) {
        (true, true) => Permission::ReadWrite,
        (true, false) => Permission::Read,
        (false, true) => Permission::Write,
        (false, false) => Permission::None,
    }
}

fn accepted_types(kind: TopicMessageType) -> Vec<i32> {
    let types: &[MessageType] = match kind {
        TopicMessageType::Normal => &[MessageType::Normal],
        TopicMessageType::Fifo => &[MessageType::Fifo],
        TopicMessageType::Delay => &[MessageType::Delay],
        TopicMessageType::Transaction => &[MessageType::Transaction],
        TopicMessageType::Priority => &[MessageType::Priority],
        TopicMessageType::Lite => &[MessageType::Lite],
        TopicMessageType::Mixed => &[
            MessageType::Normal,
            MessageType::Fifo,
            MessageType::Delay,
            MessageType::Transaction,
        ],
        TopicMessageType::Unspecified => &[MessageType::Unspecified],
    };
    types.iter().map(|t| *t as i32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue_data(read: i32, write: i32, perm: i32) -> QueueData {
        QueueData {
            broker_name: "b".into(),
            read_queue_nums: read,
            write_queue_nums: write,
            perm,
            topic_sys_flag: 0,
        }
    }

    #[test]
    fn queues_are_numbered_as_rocketmq_proxy_numbers_them() {
        let broker = Broker::default();
        let topic = Resource::default();
        let perms = |q: QueueData| -> Vec<i32> {
            queues_of(&q, &topic, &broker, TopicMessageType::Normal)
                .iter()
                .map(|m| m.permission)
                .collect()
        };
        assert_eq!(
            perms(queue_data(4, 4, 6)),
            vec![Permission::ReadWrite as i32; 4]
        );
        let mixed = perms(queue_data(4, 2, 6));
        assert_eq!(
            mixed,
            [
                Permission::Read,
                Permission::Read,
                Permission::ReadWrite,
                Permission::ReadWrite
            ]
            .map(|p| p as i32)
        );
        assert_eq!(perms(queue_data(0, 0, 0)), vec![Permission::None as i32]);
        let fifo = queues_of(
            &queue_data(1, 1, 6),
            &topic,
            &broker,
            TopicMessageType::Fifo,
        );
        assert_eq!(fifo[0].accept_message_types, vec![MessageType::Fifo as i32]);
    }
}
