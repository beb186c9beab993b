//! Topic administration as mqadmin sees it, over an in-memory connection to a real broker.

use stellmq_remoting::protocol::body::{
    fastjson, MessageQueue, TopicConfig, TopicConfigSerializeWrapper, TopicStatsTable,
};
use stellmq_remoting::protocol::headers::{
    CommandHeader, CreateTopicRequestHeader, DeleteTopicRequestHeader, GetTopicConfigRequestHeader,
    GetTopicStatsInfoRequestHeader,
};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};

use crate::testing::{assert_success, send_request, Fixture};

fn create(topic: &str, queues: i32) -> RemotingCommand {
    let header = CreateTopicRequestHeader {
        topic: topic.into(),
        default_topic: "TBW102".into(),
        read_queue_nums: queues,
        write_queue_nums: queues,
        perm: 6,
        topic_filter_type: "SINGLE_TAG".into(),
        ..Default::default()
    };
    RemotingCommand::request(RequestCode::UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())
}

fn delete(topic: &str) -> RemotingCommand {
    let header = DeleteTopicRequestHeader {
        topic: topic.into(),
    };
    RemotingCommand::request(RequestCode::DELETE_TOPIC_IN_BROKER, header.to_ext_fields())
}

fn get(topic: &str) -> RemotingCommand {
    let header = GetTopicConfigRequestHeader {
        topic: topic.into(),
        lo: None,
    };
    RemotingCommand::request(RequestCode::GET_TOPIC_CONFIG, header.to_ext_fields())
}

#[tokio::test]
async fn a_created_topic_is_served_and_committed() {
    let broker = Fixture::start().await;
    assert_success(&broker.call(create("Created", 6)).await);
    let response = broker.call(get("Created")).await;
    assert_success(&response);
    let config: TopicConfig = fastjson::decode(&response.body).expect("a topic config");
    assert_eq!((config.read_queue_nums, config.write_queue_nums), (6, 6));
    // The answer came after the change was committed: a restart would find the topic.
    assert!(broker.state.topics.committed().contains_key("Created"));
}

#[tokio::test]
async fn a_deleted_topic_is_gone_with_its_messages() {
    let broker = Fixture::start().await;
    assert_success(&broker.call(create("Doomed", 1)).await);
    assert_success(&broker.call(send_request("Doomed", 0, b"x", "")).await);
    broker.dispatched().await;
    assert_success(&broker.call(delete("Doomed")).await);
    let response = broker.call(get("Doomed")).await;
    assert_eq!(response.code, ResponseCode::TOPIC_NOT_EXIST.as_i32());
    assert_eq!(broker.state.store.max_offset_in_queue("Doomed", 0), 0);
}

#[tokio::test]
async fn bad_queue_counts_names_and_system_topics_are_refused_without_a_change() {
    let broker = Fixture::start().await;
    for (request, expected) in [
        (create("Zero", 0), "within 1..1024"),
        (create("TooMany", 1025), "within 1..1024"),
        (
            create("SCHEDULE_TOPIC_XXXX", 4),
            "conflict with system topic",
        ),
    ] {
        let response = broker.call(request).await;
        assert_eq!(response.code, ResponseCode::SYSTEM_ERROR.as_i32());
        let remark = response.remark.unwrap_or_default();
        assert!(remark.contains(expected), "{remark}");
    }
    let response = broker.call(create("no/slashes", 4)).await;
    assert_ne!(response.code, ResponseCode::SUCCESS.as_i32());
    for topic in ["Zero", "TooMany", "no/slashes"] {
        assert!(
            broker.state.topics.get(topic).is_none(),
            "{topic} was created"
        );
    }
}

#[tokio::test]
async fn a_request_without_its_required_fields_is_refused_clearly() {
    let broker = Fixture::start().await;
    let response = broker
        .call(RemotingCommand::request(
            RequestCode::UPDATE_AND_CREATE_TOPIC,
            ExtFields::default(),
        ))
        .await;
    assert_ne!(response.code, ResponseCode::SUCCESS.as_i32());
    let remark = response.remark.unwrap_or_default();
    assert!(
        remark.contains("topic"),
        "the remark names the missing field: {remark}"
    );
}

#[tokio::test]
async fn a_slave_refuses_topic_changes() {
    let broker = Fixture::start_slave_with(|_| {}).await;
    let response = broker.call(create("OnSlave", 4)).await;
    assert_eq!(response.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert!(response.remark.unwrap_or_default().contains("slave"));
}

fn stats(topic: &str) -> RemotingCommand {
    let header = GetTopicStatsInfoRequestHeader {
        topic: topic.into(),
    };
    RemotingCommand::request(RequestCode::GET_TOPIC_STATS_INFO, header.to_ext_fields())
}

#[tokio::test]
async fn all_configs_and_stats_show_a_topic_until_it_is_deleted() {
    let broker = Fixture::start().await;
    assert_success(&broker.call(create("Admin", 3)).await);
    let all = broker
        .call(RemotingCommand::request(
            RequestCode::GET_ALL_TOPIC_CONFIG,
            ExtFields::default(),
        ))
        .await;
    let all: TopicConfigSerializeWrapper = fastjson::decode(&all.body).expect("a wrapper");
    assert_eq!(all.topic_config_table["Admin"].read_queue_nums, 3);
    // The broker's own topics: the auto-creation template, the cluster and the broker name.
    for own in ["TBW102", "DefaultCluster", "broker-fixture"] {
        assert!(all.topic_config_table.contains_key(own), "{own}");
    }

    assert_success(&broker.call(send_request("Admin", 2, b"m", "")).await);
    broker.dispatched().await;
    let response = broker.call(stats("Admin")).await;
    assert_success(&response);
    let table: TopicStatsTable = fastjson::decode(&response.body).expect("stats");
    let q2 = MessageQueue {
        broker_name: "broker-fixture".into(),
        queue_id: 2,
        topic: "Admin".into(),
    };
    assert_eq!(table.offset_table.0[&q2].max_offset, 1);
    assert!(table.offset_table.0[&q2].last_update_timestamp > 0);
    // Java's fastjson writes a map keyed by MessageQueue with the key as a JSON object.
    assert!(String::from_utf8_lossy(&fastjson::encode(&table))
        .contains(r#"{"brokerName":"broker-fixture","queueId":2,"topic":"Admin"}:"#));

    assert_success(&broker.call(delete("Admin")).await);
    let missing = broker.call(stats("Admin")).await;
    assert_eq!(missing.code, ResponseCode::TOPIC_NOT_EXIST.as_i32());
}

fn all_topics(seq: Option<i32>, max: Option<i32>, version: Option<&str>) -> RemotingCommand {
    let header = stellmq_remoting::protocol::headers::GetAllTopicConfigRequestHeader {
        topic_seq: seq,
        data_version: version.map(str::to_owned),
        max_topic_num: max,
    };
    RemotingCommand::request(RequestCode::GET_ALL_TOPIC_CONFIG, header.to_ext_fields())
}

fn names_and_total(response: &RemotingCommand) -> (Vec<String>, usize) {
    assert_success(response);
    let body: TopicConfigSerializeWrapper = fastjson::decode(&response.body).expect("a wrapper");
    let total = response.ext_fields.get("totalTopicNum").expect("the total");
    (
        body.topic_config_table.into_keys().collect(),
        total.parse().expect("a number"),
    )
}

#[tokio::test]
async fn the_topic_table_is_served_whole_or_a_page_at_a_time_in_name_order() {
    let broker = Fixture::start().await;
    for topic in ["PageE", "PageA", "PageC", "PageD", "PageB"] {
        assert_success(&broker.call(create(topic, 1)).await);
    }
    let (all, total) = names_and_total(&broker.call(all_topics(None, None, None)).await);
    assert_eq!(all.len(), total, "without paging headers: everything");

    let version = fastjson::encode(&broker.state.topics.data_version());
    let version = std::str::from_utf8(&version).expect("utf8");
    let (first, _) = names_and_total(
        &broker
            .call(all_topics(Some(0), Some(2), Some(version)))
            .await,
    );
    let start = all.iter().position(|t| t == "PageA").expect("PageA") as i32;
    let (page, total_again) = names_and_total(
        &broker
            .call(all_topics(Some(start), Some(2), Some(version)))
            .await,
    );
    assert_eq!(page, ["PageA", "PageB"]);
    assert_eq!(total_again, total);
    assert_eq!(first, all[..2]);

    // A stale version starts over from the first entry.
    let (stale, _) = names_and_total(
        &broker
            .call(all_topics(Some(start), Some(2), Some("{\"counter\":0}")))
            .await,
    );
    assert_eq!(stale, all[..2]);
}
