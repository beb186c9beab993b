//! SQL92 subscriptions (`enablePropertyFilter=true`): pulls return only messages whose
//! properties satisfy the selector, whether the selector comes with the pull or with the
//! consumer's heartbeat; bad selectors and brokers without property filtering give clear
//! errors, also to CHECK_CLIENT_CONFIG.

use stellmq_remoting::protocol::body::{
    fastjson, ConsumeFromWhere, ConsumeType, ConsumerData, HeartbeatData, MessageModel,
    SubscriptionData,
};
use stellmq_remoting::protocol::message::MessageRecord;
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};
use stellmq_testkit::raw::next_begin_offset;
use stellmq_testkit::{Pull, Stack};

fn sql_pull(group: &str, offset: i64, selector: Option<&str>) -> RemotingCommand {
    let pull = Pull::new(group, "SqlTopic", 0, offset)
        .sub_version(1)
        .expression_type("SQL92");
    // FLAG_SUBSCRIPTION only when the selector comes with the pull.
    match selector {
        Some(selector) => pull.subscribe(selector),
        None => pull,
    }
    .to_request()
}

/// Every body the selector lets through, following nextBeginOffset to the end.
async fn selected(stack: &Stack, group: &str, selector: Option<&str>) -> Vec<String> {
    let mut bodies = Vec::new();
    let mut offset = 0;
    for _ in 0..20 {
        let r = stack.call(sql_pull(group, offset, selector)).await;
        if r.code == 0 {
            for record in MessageRecord::decode_all(r.body.clone(), true).expect("records") {
                bodies.push(String::from_utf8_lossy(&record.body).into_owned());
            }
        } else {
            assert!(
                r.code == ResponseCode::PULL_NOT_FOUND.as_i32()
                    || r.code == ResponseCode::PULL_RETRY_IMMEDIATELY.as_i32(),
                "{} {}",
                r.code,
                r.remark_str()
            );
        }
        let next = next_begin_offset(&r);
        if next == offset {
            break;
        }
        offset = next;
    }
    bodies
}

async fn send_numbered(stack: &Stack) {
    for i in 0..10 {
        let (a, tag) = (i.to_string(), if i % 2 == 0 { "TagA" } else { "TagB" });
        let r = stack
            .send("SqlTopic", 0, &format!("m{i}"), &[("a", &a), ("TAGS", tag)])
            .await;
        assert_eq!(r.code, 0, "{}", r.remark_str());
    }
    assert!(stack
        .broker()
        .store()
        .wait_dispatched(std::time::Duration::from_secs(5)));
}

fn sql_subscription(selector: &str) -> SubscriptionData {
    SubscriptionData {
        topic: "SqlTopic".into(),
        sub_string: selector.into(),
        sub_version: 1,
        expression_type: Some("SQL92".into()),
        ..Default::default()
    }
}

fn check_client_config(selector: &str) -> RemotingCommand {
    let body = serde_json::json!({
        "clientId": "127.0.0.1@sql",
        "group": "sql-group",
        "subscriptionData": sql_subscription(selector),
    });
    RemotingCommand::request(RequestCode::CHECK_CLIENT_CONFIG, ExtFields::new())
        .with_body(body.to_string().into_bytes())
}

#[tokio::test]
async fn sql92_pulls_return_only_selected_messages() {
    let stack = Stack::start_with(|c| c.broker.enable_property_filter = true).await;
    send_numbered(&stack).await;

    let got = selected(&stack, "sql-pull", Some("a >= 5 AND TAGS = 'TagA'")).await;
    assert_eq!(got, ["m6", "m8"]);
    let got = selected(
        &stack,
        "sql-pull",
        Some("a IN ('1', '3') OR a BETWEEN 8 AND 9"),
    )
    .await;
    assert_eq!(got, ["m1", "m3", "m8", "m9"]);
    assert!(selected(&stack, "sql-pull", Some("missing = 1"))
        .await
        .is_empty());

    let bad = stack.call(sql_pull("sql-pull", 0, Some("a >"))).await;
    assert_eq!(bad.code, ResponseCode::SUBSCRIPTION_PARSE_FAILED.as_i32());
    assert!(bad.remark_str().contains("SQL92"), "{}", bad.remark_str());

    // The selector registered by the heartbeat serves pulls without FLAG_SUBSCRIPTION.
    let heartbeat = HeartbeatData {
        client_id: "127.0.0.1@sql".into(),
        producer_data_set: Vec::new(),
        consumer_data_set: vec![ConsumerData {
            group_name: "sql-heartbeat".into(),
            consume_type: ConsumeType::ConsumePassively,
            message_model: MessageModel::Clustering,
            consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
            subscription_data_set: vec![sql_subscription("a < 2 OR TAGS = 'TagB' AND a > 7")],
            unit_mode: false,
        }],
    };
    let r = stack
        .call(
            RemotingCommand::request(RequestCode::HEART_BEAT, ExtFields::new())
                .with_body(fastjson::encode(&heartbeat)),
        )
        .await;
    assert_eq!(r.code, 0);
    assert_eq!(
        selected(&stack, "sql-heartbeat", None).await,
        ["m0", "m1", "m9"]
    );

    assert_eq!(stack.call(check_client_config("a > 1")).await.code, 0);
    let refused = stack.call(check_client_config("a > 'x")).await;
    assert_eq!(
        refused.code,
        ResponseCode::SUBSCRIPTION_PARSE_FAILED.as_i32()
    );
    stack.stop().await;
}

#[tokio::test]
async fn without_property_filtering_sql92_is_refused_clearly() {
    let stack = Stack::start().await;
    send_numbered(&stack).await;
    let r = stack.call(sql_pull("sql-off", 0, Some("a > 1"))).await;
    assert_eq!(r.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert_eq!(
        r.remark_str(),
        "The broker does not support consumer to filter message by SQL92"
    );
    let r = stack.call(check_client_config("a > 1")).await;
    assert_eq!(r.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert!(r.remark_str().contains("does not support"));
    // Tag subscriptions are unaffected.
    assert_eq!(stack.pull_until("tags", "SqlTopic", 0, 10).await.len(), 10);
    stack.stop().await;
}
