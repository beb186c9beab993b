//! The admin API's plain-ACL calls (request codes 50-54): the request headers they send,
//! the answers they read, and a refusal kept with its code and remark.

mod fake_cluster;

use fake_cluster::{assert_all_signed, credentials, start};
use stellmq_client::admin::AdminClient;
use stellmq_remoting::protocol::body::PlainAccessConfig;
use stellmq_remoting::protocol::{RequestCode, ResponseCode};

#[tokio::test]
async fn acl_admin_calls_send_rocketmqs_headers_and_read_the_answers() {
    let (server, fake) = start().await;
    let broker = fake.addr();
    let admin = AdminClient::with_credentials(&broker, credentials()).expect("admin client");

    let account = PlainAccessConfig {
        access_key: Some("newUser".into()),
        secret_key: Some("87654321".into()),
        admin: false,
        default_topic_perm: Some("DENY".into()),
        topic_perms: Some(vec!["topicA=PUB".into(), "topicB=SUB".into()]),
        ..PlainAccessConfig::default()
    };
    admin
        .create_and_update_plain_access_config(&broker, &account)
        .await
        .expect("create");
    admin
        .delete_plain_access_config(&broker, "newUser")
        .await
        .expect("delete");
    admin
        .update_global_white_addr_config(&broker, "10.10.103.*,192.168.0.*", None)
        .await
        .expect("white list");
    let versions = admin
        .examine_broker_cluster_acl_version_info(&broker)
        .await
        .expect("versions");
    assert_eq!(versions.cluster_name, "c");
    assert_eq!(versions.acl_config_data_version.counter, 2);
    assert_eq!(versions.all_acl_config_data_version.len(), 1);
    let config = admin
        .examine_broker_cluster_acl_config(&broker)
        .await
        .expect("config");
    assert_eq!(config.global_white_addrs, ["10.10.103.*"]);
    assert!(config.plain_access_configs[0].admin);

    let refused = admin
        .delete_plain_access_config(&broker, "unknown")
        .await
        .expect_err("refused");
    assert_eq!(
        refused.remote_code(),
        Some(ResponseCode::DELETE_ACL_CONFIG_FAILED.as_i32())
    );
    assert!(refused.to_string().contains("no such account"), "{refused}");

    let missing_key = admin
        .create_and_update_plain_access_config(&broker, &PlainAccessConfig::default())
        .await;
    assert!(missing_key.is_err(), "no accessKey, nothing sent");

    let masters_and_slaves = admin.master_and_slave_addrs("c").await.expect("addrs");
    assert_eq!(masters_and_slaves, [broker.clone(), "127.0.0.1:1".into()]);
    admin.shutdown().await;

    let seen = fake.seen.lock().clone();
    let with_code = |code: RequestCode| {
        seen.iter()
            .find(|r| r.code == code.as_i32())
            .unwrap_or_else(|| panic!("a {code:?} request"))
            .ext_fields
            .clone()
    };
    let create = with_code(RequestCode::UPDATE_AND_CREATE_ACL_CONFIG);
    assert_eq!(create.get("accessKey"), Some("newUser"));
    assert_eq!(create.get("secretKey"), Some("87654321"));
    assert_eq!(create.get("admin"), Some("false"));
    assert_eq!(create.get("defaultTopicPerm"), Some("DENY"));
    assert_eq!(create.get("topicPerms"), Some("topicA=PUB,topicB=SUB"));
    assert_eq!(create.get("groupPerms"), None);
    let delete = with_code(RequestCode::DELETE_ACL_CONFIG);
    assert_eq!(delete.get("accessKey"), Some("newUser"));
    let white = with_code(RequestCode::UPDATE_GLOBAL_WHITE_ADDRS_CONFIG);
    assert_eq!(
        white.get("globalWhiteAddrs"),
        Some("10.10.103.*,192.168.0.*")
    );
    assert_eq!(white.get("aclFileFullPath"), None);
    assert_all_signed(&fake);
    server.shutdown().await;
}
