//! Admin requests and consumer coordination, over TCP against in-process servers (topic
//! administration, broker config and runtime info, orderly queue locks and offsets are tested
//! next to their processors: broker/src/processor/admin/*/tests.rs, consumer_manage/tests.rs).

use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use stellmq_remoting::net::{Channel, ClientConfig, InboundHandler, RemotingClient};
use stellmq_remoting::protocol::body::{
    fastjson, ConsumerConnection, ConsumerIdList, MessageModel, ProducerConnection,
    TopicConfigSerializeWrapper,
};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};
use stellmq_testkit::{eventually, heartbeat, request, Stack, TIMEOUT as T};

/// Records server-to-client requests and answers running-info calls.
#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<(i32, RemotingCommand)>>,
}

impl InboundHandler for Recorder {
    fn on_request(&self, channel: Channel, request: RemotingCommand, _at: Instant) {
        if request.code == RequestCode::GET_CONSUMER_RUNNING_INFO.as_i32() {
            channel.try_send(request.success_to().with_body(&b"{\"properties\":{}}"[..]));
        }
        self.seen.lock().push((request.code, request));
    }
}

impl Recorder {
    fn count(&self, code: RequestCode) -> usize {
        self.seen
            .lock()
            .iter()
            .filter(|(c, _)| *c == code.as_i32())
            .count()
    }
}

fn consumer(recorder: &Arc<Recorder>) -> RemotingClient {
    RemotingClient::with_handler(ClientConfig::default(), recorder.clone())
}

#[tokio::test]
async fn consumer_groups_are_tracked_and_members_told_of_changes() {
    let stack = Stack::start().await;
    let r1 = Arc::new(Recorder::default());
    let c1 = consumer(&r1);
    let hb = |id: &str| heartbeat(id, "cg", &[("Group", "*")], MessageModel::Clustering);
    assert_eq!(
        c1.invoke(stack.addr(), hb("127.0.1.1@1"), T)
            .await
            .expect("hb")
            .code,
        0
    );
    let r2 = Arc::new(Recorder::default());
    let c2 = consumer(&r2);
    assert_eq!(
        c2.invoke(stack.addr(), hb("127.0.1.2@2"), T)
            .await
            .expect("hb")
            .code,
        0
    );
    eventually("the first member is told the group changed", || async {
        r1.count(RequestCode::NOTIFY_CONSUMER_IDS_CHANGED) > 0
    })
    .await;

    let list = stack
        .call(request(
            RequestCode::GET_CONSUMER_LIST_BY_GROUP,
            &[("consumerGroup", "cg")],
        ))
        .await;
    let ids: ConsumerIdList = fastjson::decode(&list.body).expect("ids");
    assert_eq!(ids.consumer_id_list, ["127.0.1.1@1", "127.0.1.2@2"]);

    let conn = stack
        .call(request(
            RequestCode::GET_CONSUMER_CONNECTION_LIST,
            &[("consumerGroup", "cg")],
        ))
        .await;
    let conn: ConsumerConnection = fastjson::decode(&conn.body).expect("connection");
    assert_eq!(conn.connection_set.len(), 2);
    assert!(conn.subscription_table.contains_key("Group"));
    let producers = stack
        .call(request(
            RequestCode::GET_PRODUCER_CONNECTION_LIST,
            &[("producerGroup", "pg")],
        ))
        .await;
    let producers: ProducerConnection = fastjson::decode(&producers.body).expect("producers");
    assert_eq!(producers.connection_set.len(), 2);

    // Running info is relayed to the client and back.
    let info = stack
        .call(request(
            RequestCode::GET_CONSUMER_RUNNING_INFO,
            &[("consumerGroup", "cg"), ("clientId", "127.0.1.2@2")],
        ))
        .await;
    assert_eq!(info.code, 0, "{}", info.remark_str());
    assert_eq!(&info.body[..], b"{\"properties\":{}}");

    // The retry topic was created for the group.
    let all = stack
        .call(request(RequestCode::GET_ALL_TOPIC_CONFIG, &[]))
        .await;
    let all: TopicConfigSerializeWrapper = fastjson::decode(&all.body).expect("wrapper");
    assert!(all.topic_config_table.contains_key("%RETRY%cg"));

    // A member that disconnects leaves the group, and the others are told.
    let before = r1.count(RequestCode::NOTIFY_CONSUMER_IDS_CHANGED);
    c2.shutdown().await;
    eventually("the group shrinks", || async {
        let list = stack
            .call(request(
                RequestCode::GET_CONSUMER_LIST_BY_GROUP,
                &[("consumerGroup", "cg")],
            ))
            .await;
        fastjson::decode::<ConsumerIdList>(&list.body)
            .map(|l| l.consumer_id_list.len() == 1)
            .unwrap_or(false)
    })
    .await;
    eventually("the remaining member is told", || async {
        r1.count(RequestCode::NOTIFY_CONSUMER_IDS_CHANGED) > before
    })
    .await;

    let unregister = request(
        RequestCode::UNREGISTER_CLIENT,
        &[
            ("clientID", "127.0.1.1@1"),
            ("consumerGroup", "cg"),
            ("producerGroup", ""),
        ],
    );
    assert_eq!(
        c1.invoke(stack.addr(), unregister, T)
            .await
            .expect("answer")
            .code,
        0
    );
    let none = stack
        .call(request(
            RequestCode::GET_CONSUMER_LIST_BY_GROUP,
            &[("consumerGroup", "cg")],
        ))
        .await;
    assert_eq!(none.code, 1);
    assert!(none.remark_str().contains("no consumer for this group"));
    let offline = stack
        .call(request(
            RequestCode::GET_CONSUMER_CONNECTION_LIST,
            &[("consumerGroup", "cg")],
        ))
        .await;
    assert_eq!(offline.code, ResponseCode::CONSUMER_NOT_ONLINE.as_i32());
    stack.stop().await;
}

/// VIEW_BROKER_STATS_DATA: put and get counters by topic and topic@group, with windows.
#[tokio::test]
async fn broker_stats_count_puts_and_gets() {
    use stellmq_remoting::protocol::body::{fastjson, BrokerStatsData};
    use stellmq_remoting::protocol::{RequestCode, ResponseCode};
    let stack = Stack::start().await;
    for i in 0..5 {
        assert_eq!(
            stack
                .send("StatsTopic", 0, &format!("s{i}"), &[])
                .await
                .code,
            0
        );
    }
    assert_eq!(stack.pull_until("sg", "StatsTopic", 0, 5).await.len(), 5);
    let stats = |name: &str, key: &str| {
        request(
            RequestCode::VIEW_BROKER_STATS_DATA,
            &[("statsName", name), ("statsKey", key)],
        )
    };
    let puts = stack.call(stats("TOPIC_PUT_NUMS", "StatsTopic")).await;
    assert_eq!(puts.code, 0, "{}", puts.remark_str());
    let puts: BrokerStatsData = fastjson::decode(&puts.body).expect("stats body");
    assert_eq!(puts.stats_minute.sum, 5);
    assert_eq!(puts.stats_day.sum, 5);
    assert!(puts.stats_minute.tps > 0.0);
    assert_eq!(puts.stats_minute.avgpt, 1.0, "one message per send");
    let gets = stack.call(stats("GROUP_GET_NUMS", "StatsTopic@sg")).await;
    let gets: BrokerStatsData = fastjson::decode(&gets.body).expect("stats body");
    assert_eq!(gets.stats_hour.sum, 5);
    let unknown_key = stack.call(stats("TOPIC_PUT_NUMS", "NoSuchTopic")).await;
    assert_eq!(unknown_key.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert!(unknown_key.remark_str().contains("not exist"));
    let unknown_name = stack.call(stats("NO_SUCH_STATS", "StatsTopic")).await;
    assert_eq!(unknown_name.code, ResponseCode::SYSTEM_ERROR.as_i32());
    stack.stop().await;
}
