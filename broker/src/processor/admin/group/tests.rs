//! Subscription group administration as mqadmin sees it, over an in-memory connection to a
//! real broker.

use stellmq_remoting::protocol::body::{
    fastjson, SubscriptionGroupConfig, SubscriptionGroupWrapper,
};
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};

use crate::testing::{assert_success, request, Fixture};

fn update(config: &SubscriptionGroupConfig) -> RemotingCommand {
    RemotingCommand::request(
        RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        ExtFields::default(),
    )
    .with_body(fastjson::encode(config))
}

async fn get(broker: &Fixture, group: &str) -> RemotingCommand {
    broker
        .call(request(
            RequestCode::GET_SUBSCRIPTIONGROUP_CONFIG,
            &[("group", group)],
        ))
        .await
}

#[tokio::test]
async fn a_group_is_created_changed_listed_and_deleted() {
    let broker = Fixture::start().await;
    let mut config = SubscriptionGroupConfig {
        retry_max_times: 3,
        ..SubscriptionGroupConfig::new("orders")
    };
    assert_success(&broker.call(update(&config)).await);
    config.retry_max_times = 5;
    assert_success(&broker.call(update(&config)).await);
    let one = get(&broker, "orders").await;
    assert_success(&one);
    let read: SubscriptionGroupConfig = fastjson::decode(&one.body).expect("a group");
    assert_eq!(read.retry_max_times, 5);

    let all = broker
        .call(request(RequestCode::GET_ALL_SUBSCRIPTIONGROUP_CONFIG, &[]))
        .await;
    let all: SubscriptionGroupWrapper = fastjson::decode(&all.body).expect("a wrapper");
    assert!(all.subscription_group_table.contains_key("orders"));
    // Committed before the answer: a restart finds it.
    assert_eq!(broker.state.groups.committed()["orders"].retry_max_times, 5);

    let delete = request(
        RequestCode::DELETE_SUBSCRIPTIONGROUP,
        &[("groupName", "orders"), ("cleanOffset", "true")],
    );
    assert_success(&broker.call(delete).await);
    let gone = get(&broker, "orders").await;
    assert_eq!(
        gone.code,
        ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST.as_i32()
    );
}

#[tokio::test]
async fn system_groups_bad_names_and_broken_bodies_are_refused_without_a_change() {
    let broker = Fixture::start().await;
    let delete = request(
        RequestCode::DELETE_SUBSCRIPTIONGROUP,
        &[("groupName", "TOOLS_CONSUMER")],
    );
    let refused = broker.call(delete).await;
    assert_eq!(refused.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert!(refused.remark.unwrap_or_default().contains("system group"));

    let bad = broker
        .call(update(&SubscriptionGroupConfig::new("no/slashes")))
        .await;
    assert_ne!(bad.code, ResponseCode::SUCCESS.as_i32());
    assert!(
        broker.state.groups.get("no/slashes").is_none(),
        "nothing created"
    );

    let broken = broker
        .call(
            RemotingCommand::request(
                RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                ExtFields::default(),
            )
            .with_body(&b"{\"groupName\":"[..]),
        )
        .await;
    assert_ne!(broken.code, ResponseCode::SUCCESS.as_i32());
    assert!(broken.remark.is_some_and(|r| !r.is_empty()));
}

#[tokio::test]
async fn a_slave_refuses_group_changes() {
    let slave = Fixture::start_slave_with(|_| {}).await;
    let refused = slave
        .call(update(&SubscriptionGroupConfig::new("orders")))
        .await;
    assert_eq!(refused.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert!(refused.remark.unwrap_or_default().contains("slave"));
}
