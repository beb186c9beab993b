use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use stellmq_protocol::signature::{sign, SessionCredentials};
use stellmq_protocol::{ExtFields, RemotingCommand};

use super::info::AclInfoExt;
use super::*;
use crate::file::PlainAclFile;

fn ip(text: &str) -> IpAddr {
    text.parse().expect("ip")
}

fn registry() -> Arc<AuthRegistry> {
    Arc::new(AuthRegistry::new(
        Vec::new(),
        Vec::new(),
        Box::new(InMemory),
    ))
}

fn user_info(password: &str, user_type: Option<&str>) -> UserInfo {
    UserInfo {
        password: Some(password.to_owned()),
        user_type: user_type.map(str::to_owned),
        ..UserInfo::default()
    }
}

fn entry(resource: &str, actions: &[&str], decision: &str, ips: &[&str]) -> PolicyEntryInfo {
    PolicyEntryInfo {
        resource: Some(resource.to_owned()),
        actions: Some(actions.iter().map(|a| (*a).to_owned()).collect()),
        source_ips: (!ips.is_empty()).then(|| ips.iter().map(|i| (*i).to_owned()).collect()),
        decision: Some(decision.to_owned()),
    }
}

fn acl(policy_type: Option<&str>, entries: Vec<PolicyEntryInfo>) -> AclInfo {
    AclInfo {
        subject: None,
        policies: Some(vec![PolicyInfo {
            policy_type: policy_type.map(str::to_owned),
            entries: Some(entries),
        }]),
    }
}

fn request(code: i32, fields: &[(&str, &str)]) -> RemotingCommand {
    RemotingCommand::request_code(code, fields.iter().copied().collect::<ExtFields>())
}

#[test]
fn resource_keys_parse_and_print_as_rocketmq_writes_them() {
    for key in [
        "Topic:orders",
        "Group:app-*",
        "Topic:*",
        "*",
        "Cluster:DefaultCluster",
    ] {
        let resource = Resource::parse(key).expect(key);
        assert_eq!(resource.key(), key);
    }
    assert_eq!(
        Resource::parse("topic:a").map(|r| r.key()),
        Some("Topic:a".to_owned())
    );
    assert_eq!(Resource::parse("Queue:a"), None);
    assert_eq!(Resource::group("%RETRY%g1"), Resource::group("g1"));
    let prefix = Resource::parse("Topic:ord*").expect("prefix");
    assert!(prefix.covers(&Resource::topic("orders")));
    assert!(!prefix.covers(&Resource::topic("xorders")));
    assert!(!prefix.covers(&Resource::group("orders")));
}

#[test]
fn the_most_specific_entry_decides_and_deny_wins_a_tie() {
    let reg = registry();
    reg.create_user("alice", &user_info("pw", None))
        .expect("user");
    let entries = vec![
        entry("Topic:*", &["Pub"], "Allow", &[]),
        entry("Topic:secret*", &["Pub"], "Deny", &[]),
        entry("Topic:secret-open*", &["Pub"], "Allow", &[]),
        entry("Topic:secret-open-but-not-this", &["All"], "Deny", &[]),
    ];
    reg.put_acl("User:alice", &acl(None, entries)).expect("acl");
    let user = reg.user("alice").expect("alice");
    let policies = reg.acl("User:alice");
    let may_pub = |topic: &str| {
        authorize(
            &user,
            policies.as_deref(),
            &[Need::new(Resource::topic(topic), &[Action::Pub])],
            Some(ip("10.0.0.1")),
        )
    };
    assert_eq!(may_pub("orders"), Ok(()));
    let refused = may_pub("secret-x").expect_err("denied");
    assert_eq!(
        refused,
        "User:alice has no permission to access Topic:secret-x from 10.0.0.1, the decision is deny."
    );
    assert_eq!(may_pub("secret-open-1"), Ok(()));
    assert!(may_pub("secret-open-but-not-this").is_err());
    // An action no entry speaks of.
    let sub = authorize(
        &user,
        policies.as_deref(),
        &[Need::new(Resource::topic("orders"), &[Action::Sub])],
        None,
    );
    assert!(sub.expect_err("no entry").ends_with("no matched policies."));

    // Same resource and rank: Deny before Allow.
    let tie = Acl {
        subject: "User:alice".to_owned(),
        policies: vec![model::Policy {
            policy_type: PolicyType::Custom,
            entries: vec![
                parse_entry("Topic:t", "Allow"),
                parse_entry("Topic:t", "Deny"),
            ],
        }],
    };
    assert!(authorize(
        &user,
        Some(&tie),
        &[Need::new(Resource::topic("t"), &[Action::Pub])],
        None
    )
    .is_err());
}

fn parse_entry(resource: &str, decision: &str) -> model::PolicyEntry {
    let info = acl(None, vec![entry(resource, &["Pub"], decision, &[])]);
    info.to_acl("User:x")
        .expect("acl")
        .policies
        .remove(0)
        .entries
        .remove(0)
}

#[test]
fn default_policies_apply_only_when_no_custom_entry_matches() {
    let reg = registry();
    reg.create_user("bob", &user_info("pw", None))
        .expect("user");
    reg.put_acl(
        "User:bob",
        &acl(
            Some("Default"),
            vec![entry("Topic:*", &["Pub", "Sub"], "Allow", &[])],
        ),
    )
    .expect("default");
    reg.put_acl(
        "User:bob",
        &acl(None, vec![entry("Topic:locked", &["Pub"], "Deny", &[])]),
    )
    .expect("custom");
    let user = reg.user("bob").expect("bob");
    let policies = reg.acl("User:bob");
    let check = |topic: &str| {
        authorize(
            &user,
            policies.as_deref(),
            &[Need::new(Resource::topic(topic), &[Action::Pub])],
            None,
        )
    };
    assert_eq!(check("any"), Ok(()));
    assert!(check("locked").is_err());
}

#[test]
fn source_addresses_narrow_an_entry() {
    let reg = registry();
    reg.create_user("carol", &user_info("pw", None))
        .expect("user");
    reg.put_acl(
        "User:carol",
        &acl(
            None,
            vec![entry(
                "Group:g",
                &["Sub"],
                "Allow",
                &["10.1.0.0/16", "192.168.1.7"],
            )],
        ),
    )
    .expect("acl");
    let user = reg.user("carol").expect("carol");
    let policies = reg.acl("User:carol");
    let from = |addr: &str| {
        authorize(
            &user,
            policies.as_deref(),
            &[Need::new(Resource::group("g"), &[Action::Sub])],
            Some(ip(addr)),
        )
    };
    assert_eq!(from("10.1.200.3"), Ok(()));
    assert_eq!(from("192.168.1.7"), Ok(()));
    assert_eq!(from("::ffff:10.1.0.9"), Ok(()));
    assert!(from("10.2.0.1").is_err());
    assert!(from("192.168.1.8").is_err());
}

#[test]
fn super_users_pass_and_validation_speaks_rocketmqs_words() {
    let reg = registry();
    reg.create_user("root", &user_info("pw", Some("Super")))
        .expect("super");
    let root = reg.user("root").expect("root");
    assert_eq!(root.user_type, UserType::Super);
    assert_eq!(root.user_status, UserStatus::Enable);
    assert_eq!(
        authorize(
            &root,
            None,
            &[Need::new(Resource::cluster("c"), &[Action::Update])],
            None
        ),
        Ok(())
    );

    assert_eq!(
        reg.create_user("root", &user_info("x", None)),
        Err(AuthError::UserExists)
    );
    assert_eq!(
        reg.create_user("nopw", &UserInfo::default()),
        Err(AuthError::Invalid("password can not be blank".to_owned()))
    );
    assert_eq!(
        reg.create_user(" ", &user_info("x", None)),
        Err(AuthError::Invalid("username can not be blank".to_owned()))
    );
    let bad = |entries| {
        reg.put_acl("User:root", &acl(None, entries))
            .expect_err("invalid")
            .to_string()
    };
    assert_eq!(
        bad(vec![entry("Topic:a", &[], "Allow", &[])]),
        "The actions is empty."
    );
    assert_eq!(
        bad(vec![entry("Topic:a", &["Any"], "Allow", &[])]),
        "The actions can not be Any."
    );
    assert_eq!(
        bad(vec![entry("Queue:a", &["Pub"], "Allow", &[])]),
        "The resource is null."
    );
    assert_eq!(
        bad(vec![entry("Topic:a", &["Pub"], "Maybe", &[])]),
        "The decision is null or illegal."
    );
    assert_eq!(
        bad(vec![entry("Topic:a", &["Pub"], "Allow", &["10.0.0.300"])]),
        "The source ip is invalid."
    );
    assert_eq!(bad(vec![]), "The policy entries is empty.");
    let long = format!("Topic:{}", "t".repeat(2000));
    assert!(bad(vec![entry(&long, &["Pub"], "Allow", &[])]).contains("at most 1024 bytes"));
    let ips: Vec<String> = (0..65).map(|i| format!("10.0.0.{i}")).collect();
    let ips: Vec<&str> = ips.iter().map(String::as_str).collect();
    assert!(bad(vec![entry("Topic:a", &["Pub"], "Allow", &ips)]).contains("at most 64 source"));
    let huge = user_info(&"p".repeat(2000), None);
    assert!(reg.create_user("huge", &huge).is_err());
    assert_eq!(
        reg.put_acl(
            "User:ghost",
            &acl(None, vec![entry("Topic:a", &["Pub"], "Allow", &[])])
        ),
        Err(AuthError::SubjectNotFound("User:ghost".to_owned()))
    );
}

#[test]
fn acls_merge_by_resource_and_delete_by_entry_or_whole() {
    let reg = registry();
    reg.create_user("dave", &user_info("pw", None))
        .expect("user");
    reg.put_acl(
        "User:dave",
        &acl(
            None,
            vec![
                entry("Topic:a", &["Pub"], "Allow", &[]),
                entry("Topic:b", &["Sub"], "Allow", &[]),
            ],
        ),
    )
    .expect("create");
    reg.put_acl(
        "User:dave",
        &acl(None, vec![entry("Topic:a", &["Sub"], "Deny", &[])]),
    )
    .expect("update");
    let stored = reg.get_acl("User:dave").expect("get").expect("acl");
    let custom = stored.policy(PolicyType::Custom).expect("custom");
    assert_eq!(custom.entries.len(), 2);
    assert_eq!(custom.entries[0].actions, vec![Action::Sub]);
    assert_eq!(custom.entries[0].decision, Decision::Deny);

    assert_eq!(reg.list_acls("", "Topic:b").len(), 1);
    assert_eq!(reg.list_acls("", "Topic:b")[0].policies[0].entries.len(), 1);
    assert!(reg.list_acls("User:nobody", "").is_empty());

    let b = Resource::parse("Topic:b").expect("b");
    reg.delete_acl("User:dave", None, Some(&b)).expect("entry");
    assert_eq!(
        reg.acl("User:dave").expect("left").policies[0]
            .entries
            .len(),
        1
    );
    reg.delete_acl("User:dave", None, None).expect("whole");
    assert!(reg.acl("User:dave").is_none());
    assert_eq!(
        reg.delete_acl("User:dave", None, None),
        Err(AuthError::AclNotFound("User:dave".to_owned()))
    );
    // Deleting a user takes its policies.
    reg.put_acl(
        "User:dave",
        &acl(None, vec![entry("Topic:a", &["Pub"], "Allow", &[])]),
    )
    .expect("again");
    reg.delete_user("dave").expect("delete");
    assert!(reg.user("dave").is_none() && reg.acl("User:dave").is_none());
    assert_eq!(reg.list_users("").len(), 0);
}

#[test]
fn requests_need_what_rocketmq_says() {
    let needs = |req: &RemotingCommand| request::needs(req, "C1").expect("needs");
    let keys = |req: &RemotingCommand| {
        needs(req)
            .into_iter()
            .map(|n| format!("{} {:?}", n.resource, n.actions))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        keys(&request(310, &[("a", "pg"), ("b", "orders")])),
        ["Topic:orders [Pub]"]
    );
    assert_eq!(
        keys(&request(310, &[("a", "cg"), ("b", "%RETRY%cg")])),
        ["Group:cg [Sub]"]
    );
    assert_eq!(
        keys(&request(
            11,
            &[("consumerGroup", "cg"), ("topic", "orders")]
        )),
        ["Topic:orders [Sub]", "Group:cg [Sub]"]
    );
    assert_eq!(
        keys(&request(
            15,
            &[("consumerGroup", "cg"), ("topic", "%RETRY%cg")]
        )),
        ["Group:cg [Sub, Update]"]
    );
    assert_eq!(
        keys(&request(17, &[("topic", "new")])),
        ["Topic:new [Create]"]
    );
    assert_eq!(
        keys(&request(3001, &[("username", "x")])),
        ["Cluster:C1 [Update]"]
    );
    assert_eq!(keys(&request(3005, &[])), ["Cluster:C1 [Get]"]);
    // Stricter than RocketMQ: the broker's config and group creation are cluster changes.
    assert_eq!(keys(&request(25, &[])), ["Cluster:C1 [Update]"]);
    assert_eq!(keys(&request(200, &[])), ["Cluster:C1 [Update]"]);
    // Reads RocketMQ leaves open stay open.
    assert!(keys(&request(21, &[])).is_empty());

    let mut heartbeat = request(34, &[]);
    heartbeat.body = br#"{"clientID":"c","producerDataSet":[{"groupName":"pg"}],"consumerDataSet":[{"groupName":"cg","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[{"topic":"orders","subString":"*"},{"topic":"%RETRY%cg","subString":"*"}],"unitMode":false}]}"#.to_vec().into();
    assert_eq!(keys(&heartbeat), ["Group:cg [Sub]", "Topic:orders [Sub]"]);
    let mut broken = request(34, &[]);
    broken.body = b"{".to_vec().into();
    assert!(request::needs(&broken, "C1").is_err());
}

#[test]
fn the_checker_authenticates_then_authorizes() {
    let reg = registry();
    reg.create_user("app", &user_info("s3cret", None))
        .expect("user");
    reg.put_acl(
        "User:app",
        &acl(None, vec![entry("Topic:orders", &["Pub"], "Allow", &[])]),
    )
    .expect("acl");
    let checker = AuthChecker::new(
        AuthSettings {
            authentication: true,
            authorization: true,
            cluster: "C1".to_owned(),
            ..AuthSettings::default()
        },
        reg.clone(),
    );
    let peer = ip("127.0.0.1");
    let signed = |user: &str, password: &str, topic: &str| {
        let mut req = request(310, &[("a", "pg"), ("b", topic)]);
        sign(&mut req, &SessionCredentials::new(user, password));
        req
    };
    assert_eq!(
        checker.check(peer, &signed("app", "s3cret", "orders")),
        Ok(())
    );
    assert_eq!(
        checker.check(peer, &signed("app", "wrong", "orders")),
        Err("check signature failed.".to_owned())
    );
    assert_eq!(
        checker.check(peer, &signed("eve", "x", "orders")),
        Err("User:eve is not found.".to_owned())
    );
    assert_eq!(
        checker.check(peer, &request(310, &[("b", "orders")])),
        Err("username cannot be null.".to_owned())
    );
    assert!(checker
        .check(peer, &signed("app", "s3cret", "payments"))
        .expect_err("not allowed")
        .contains("has no permission to access Topic:payments"));
    reg.update_user(
        "app",
        &UserInfo {
            user_status: Some("disable".to_owned()),
            ..UserInfo::default()
        },
    )
    .expect("disable");
    assert_eq!(
        checker.check(peer, &signed("app", "s3cret", "orders")),
        Err("User:app is disabled.".to_owned())
    );

    let open = AuthChecker::new(
        AuthSettings {
            authentication: true,
            authentication_whitelist: parse_whitelist(" 310 , 11"),
            ..AuthSettings::default()
        },
        reg,
    );
    assert_eq!(open.check(peer, &request(310, &[("b", "orders")])), Ok(()));
}

#[test]
fn plain_acl_accounts_migrate_to_users_and_policies() {
    let yaml = r#"
accounts:
  - accessKey: RocketMQ
    secretKey: "12345678"
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
    groupPerms:
      - groupA=DENY
  - accessKey: rocketmq2
    secretKey: "12345678"
    admin: true
"#;
    let file = PlainAclFile::parse(yaml, Path::new("plain_acl.yml")).expect("yaml");
    let reg = registry();
    let done = migrate::migrate(&reg, std::slice::from_ref(&file));
    assert_eq!(
        done,
        migrate::Migrated {
            users: 2,
            skipped: 0,
            failed: 0
        }
    );
    assert_eq!(
        reg.user("rocketmq2").expect("admin").user_type,
        UserType::Super
    );
    let user = reg.user("RocketMQ").expect("user");
    let policies = reg.acl("User:RocketMQ").expect("acl");
    let may = |resource: Resource, action| {
        authorize(
            &user,
            Some(&policies),
            &[Need::new(resource, &[action])],
            None,
        )
    };
    assert!(may(Resource::topic("topicA"), Action::Pub).is_err());
    assert_eq!(may(Resource::topic("topicB"), Action::Sub), Ok(()));
    assert!(may(Resource::topic("other"), Action::Pub).is_err());
    assert_eq!(may(Resource::group("other"), Action::Sub), Ok(()));
    assert!(may(Resource::group("groupA"), Action::Sub).is_err());
    // Again: users that exist are left alone.
    assert_eq!(migrate::migrate(&reg, &[file]).skipped, 2);
}

/// A broker that knows one user, counting what it is asked.
struct FakeBroker {
    asked: std::sync::atomic::AtomicUsize,
}

impl AskBroker for FakeBroker {
    async fn ask(&self, _addr: &str, request: RemotingCommand) -> Result<RemotingCommand, String> {
        self.asked
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut answer = RemotingCommand::request_code(0, ExtFields::new());
        answer.code = 0;
        let body = match (
            request.code,
            request.ext_fields.get("username"),
            request.ext_fields.get("subject"),
        ) {
            (3004, Some("alice"), _) => {
                r#"{"username":"alice","password":"pw","userType":"Normal","userStatus":"enable"}"#
            }
            (3009, _, Some("User:alice")) => {
                r#"{"subject":"User:alice","policies":[{"policyType":"Custom","entries":[{"resource":"Topic:t","actions":["Pub"],"decision":"Allow"}]}]}"#
            }
            _ => "",
        };
        answer.body = body.as_bytes().to_vec().into();
        Ok(answer)
    }
}

#[tokio::test]
async fn remote_subjects_are_read_once_per_period_unknown_ones_too() {
    let broker = FakeBroker {
        asked: Default::default(),
    };
    let subjects = RemoteSubjects::new(std::time::Duration::from_secs(60));
    let masters = vec!["m:1".to_owned()];
    let alice = subjects
        .load(&broker, &masters, "alice")
        .await
        .expect("read")
        .expect("alice");
    assert_eq!(alice.user.password, "pw");
    assert_eq!(alice.acl.as_ref().map(|a| a.policies.len()), Some(1));
    assert!(subjects.cached("alice").is_some());
    assert_eq!(subjects.load(&broker, &masters, "ghost").await, Ok(None));
    assert_eq!(
        subjects.cached("ghost"),
        Some(None),
        "unknown users are remembered"
    );
    assert_eq!(broker.asked.load(std::sync::atomic::Ordering::Relaxed), 3);
    assert_eq!(
        subjects.load(&broker, &[], "bob").await,
        Ok(None),
        "no master: no such user"
    );
}
