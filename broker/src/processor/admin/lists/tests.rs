//! UPDATE_AND_CREATE_TOPIC_LIST and UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST as mqadmin's
//! updateTopicList and updateSubGroupList send them, over an in-memory connection to a real
//! broker.

use stellmq_remoting::protocol::body::{
    fastjson, CreateTopicListRequestBody, SubscriptionGroupConfig, SubscriptionGroupList,
    TopicConfig,
};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};

use crate::testing::{assert_success, request, Fixture};

fn topic_list(configs: Vec<TopicConfig>) -> RemotingCommand {
    let body = CreateTopicListRequestBody {
        topic_config_list: configs,
    };
    request(RequestCode::UPDATE_AND_CREATE_TOPIC_LIST, &[]).with_body(fastjson::encode(&body))
}

fn group_list(configs: Vec<SubscriptionGroupConfig>) -> RemotingCommand {
    let body = SubscriptionGroupList {
        group_config_list: configs,
    };
    request(RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, &[])
        .with_body(fastjson::encode(&body))
}

fn fifo(name: &str) -> TopicConfig {
    let mut config = TopicConfig::with_queues(name, 8, 8, 6);
    config
        .attributes
        .insert("+message.type".into(), "FIFO".into());
    config
}

#[tokio::test]
async fn a_topic_list_creates_every_topic_with_its_attributes_and_commits_them() {
    let broker = Fixture::start().await;
    let names: Vec<String> = (0..50).map(|i| format!("Listed{i}")).collect();
    let answer = broker
        .call(topic_list(names.iter().map(|n| fifo(n)).collect()))
        .await;
    assert_success(&answer);
    for name in &names {
        let config = broker.state.topics.get(name).expect("created");
        assert_eq!((config.read_queue_nums, config.write_queue_nums), (8, 8));
        assert_eq!(
            config.attributes.get("message.type").map(String::as_str),
            Some("FIFO")
        );
    }
    let committed = broker.state.topics.committed();
    assert!(names.iter().all(|n| committed.contains_key(n)));

    // Again, with one changed: applied; the unchanged ones are left as they are.
    let mut again: Vec<TopicConfig> = names.iter().map(|n| fifo(n)).collect();
    again[49].write_queue_nums = 4;
    assert_success(&broker.call(topic_list(again)).await);
    assert_eq!(
        broker
            .state
            .topics
            .get("Listed49")
            .map(|c| c.write_queue_nums),
        Some(4)
    );
    assert_eq!(
        broker
            .state
            .topics
            .get("Listed0")
            .map(|c| c.attributes.len()),
        Some(1)
    );
}

#[tokio::test]
async fn one_bad_entry_refuses_the_whole_list_and_changes_nothing() {
    let broker = Fixture::start().await;
    let mut too_many = TopicConfig::with_queues("TooMany", 4096, 4, 6);
    too_many.topic_filter_type = "SINGLE_TAG".into();
    let mut bad_attribute = TopicConfig::with_queues("BadAttr", 4, 4, 6);
    bad_attribute
        .attributes
        .insert("+message.type".into(), "SOMETIMES".into());
    for (bad, says) in [
        (too_many, "1..1024"),
        (bad_attribute, "message.type"),
        (TopicConfig::with_queues("bad/name", 4, 4, 6), "bad/name"),
        (TopicConfig::with_queues("TBW102", 4, 4, 6), "system topic"),
    ] {
        let answer = broker.call(topic_list(vec![fifo("Fine"), bad])).await;
        assert_eq!(
            answer.code,
            ResponseCode::INVALID_PARAMETER.as_i32(),
            "{:?}",
            answer.remark
        );
        assert!(
            answer.remark.as_deref().is_some_and(|r| r.contains(says)),
            "{:?} should say {says}",
            answer.remark
        );
        assert!(broker.state.topics.get("Fine").is_none(), "nothing applied");
    }
    let garbled = request(RequestCode::UPDATE_AND_CREATE_TOPIC_LIST, &[]).with_body(&b"{"[..]);
    assert_ne!(
        broker.call(garbled).await.code,
        ResponseCode::SUCCESS.as_i32()
    );
}

#[tokio::test]
async fn a_group_list_creates_every_group_and_refuses_a_bad_name_whole() {
    let broker = Fixture::start().await;
    let mut orderly = SubscriptionGroupConfig::new("ListedOrderly");
    orderly.consume_message_orderly = true;
    orderly.retry_max_times = 3;
    let answer = broker
        .call(group_list(vec![
            SubscriptionGroupConfig::new("ListedPlain"),
            orderly,
        ]))
        .await;
    assert_success(&answer);
    let got = broker.state.groups.get("ListedOrderly").expect("created");
    assert!(got.consume_message_orderly);
    assert_eq!(got.retry_max_times, 3);
    assert!(broker.state.groups.get("ListedPlain").is_some());

    let refused = broker
        .call(group_list(vec![
            SubscriptionGroupConfig::new("NotYet"),
            SubscriptionGroupConfig::new("bad group"),
        ]))
        .await;
    assert_eq!(refused.code, ResponseCode::INVALID_PARAMETER.as_i32());
    assert!(broker.state.groups.get("NotYet").is_none());
}

#[tokio::test]
async fn a_slave_refuses_lists() {
    let slave = Fixture::start_slave_with(|_| {}).await;
    for list in [
        topic_list(vec![fifo("OnSlave")]),
        group_list(vec![SubscriptionGroupConfig::new("OnSlave")]),
    ] {
        let refused = slave.call(list).await;
        assert_ne!(refused.code, ResponseCode::SUCCESS.as_i32());
        assert!(refused.remark.is_some_and(|r| r.contains("slave")));
    }
}
