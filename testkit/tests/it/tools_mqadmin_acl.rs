//! `mqadmin` against a broker with aclEnable, as users run it: signing with --accessKey /
//! --secretKey or conf/tools.yml, admin commands refused to other accounts, and the ACL
//! commands editing the broker's plain_acl.yml.

use std::path::Path;

use stellmq_testkit::process::command;
use stellmq_testkit::Stack;

const ACL: &str = "accounts:\n  - accessKey: RocketMQ\n    secretKey: 12345678\n    defaultTopicPerm: PUB|SUB\n    defaultGroupPerm: SUB\n  - accessKey: rocketmq2\n    secretKey: 87654321\n    admin: true\n";

async fn acl_stack(home: &Path) -> Stack {
    std::fs::create_dir_all(home.join("conf")).expect("conf");
    std::fs::write(home.join("conf/plain_acl.yml"), ACL).expect("acl");
    let home = home.display().to_string();
    let stack = Stack::start_with(move |c| {
        c.broker.acl_enable = true;
        c.broker.rocketmq_home = home;
    })
    .await;
    stack.broker().register_now().await;
    stack
}

/// Runs mqadmin with `-n ns` and `ROCKETMQ_HOME=home`; returns (success, stdout + stderr).
async fn mqadmin(ns: &str, home: &Path, args: &[&str]) -> (bool, String) {
    let mut all: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    all.extend(["-n".to_owned(), ns.to_owned()]);
    let home = home.to_owned();
    let out = tokio::task::spawn_blocking(move || {
        command("mqadmin")
            .args(&all)
            .env_remove("NAMESRV_ADDR")
            .env_remove("STELLMQ_HOME")
            .env("ROCKETMQ_HOME", home)
            .output()
    })
    .await
    .expect("join")
    .expect("runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

const USER: [&str; 4] = ["--accessKey", "RocketMQ", "--secretKey", "12345678"];
const ADMIN: [&str; 4] = ["--accessKey", "rocketmq2", "--secretKey", "87654321"];

fn with<'a>(args: &[&'a str], credentials: [&'static str; 4]) -> Vec<&'a str> {
    let mut all = args.to_vec();
    all.extend(credentials);
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_admin_accounts_create_delete_and_reset() {
    let home = tempfile::tempdir().expect("home");
    let s = acl_stack(home.path()).await;
    let (ns, h) = (s.ns_addr(), home.path());
    let create = ["updateTopic", "-t", "AclAdminTopic", "-c", "DefaultCluster"];
    let delete = ["deleteTopic", "-t", "AclAdminTopic", "-c", "DefaultCluster"];
    let reset = [
        "resetOffsetByTime",
        "-g",
        "groupB",
        "-t",
        "AclAdminTopic",
        "-s",
        "now",
    ];

    let (ok, out) = mqadmin(ns, h, &create).await;
    assert!(
        !ok && out.contains("No accessKey is configured"),
        "unsigned: {out}"
    );
    let (ok, out) = mqadmin(ns, h, &with(&create, USER)).await;
    assert!(
        !ok && out.contains("Need admin permission"),
        "non-admin: {out}"
    );
    let (ok, out) = mqadmin(ns, h, &with(&create, ADMIN)).await;
    assert!(ok, "admin creates: {out}");

    let (ok, out) = mqadmin(ns, h, &with(&reset, USER)).await;
    assert!(
        !ok && out.contains("Need admin permission"),
        "non-admin reset: {out}"
    );
    let (ok, out) = mqadmin(ns, h, &with(&delete, USER)).await;
    assert!(
        !ok && out.contains("Need admin permission"),
        "non-admin delete: {out}"
    );
    let (ok, out) = mqadmin(ns, h, &with(&delete, ADMIN)).await;
    assert!(ok, "admin deletes: {out}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_commands_edit_the_broker_acl_and_tools_yml_signs() {
    let home = tempfile::tempdir().expect("home");
    let s = acl_stack(home.path()).await;
    let (ns, h, b) = (s.ns_addr(), home.path(), s.addr());

    let add = [
        "updateAclConfig",
        "-b",
        b,
        "-a",
        "newcomer1",
        "-s",
        "newSecret1",
        "-i",
        "PUB",
        "-t",
        "topicX=DENY",
    ];
    let (ok, out) = mqadmin(ns, h, &with(&add, USER)).await;
    assert!(
        !ok && out.contains("Need admin permission"),
        "non-admin: {out}"
    );
    let (ok, out) = mqadmin(ns, h, &with(&add, ADMIN)).await;
    assert!(ok, "{out}");
    let file = std::fs::read_to_string(h.join("conf/plain_acl.yml")).expect("acl file");
    assert!(
        file.contains("newcomer1") && file.contains("topicX=DENY"),
        "{file}"
    );

    let (ok, out) = mqadmin(ns, h, &with(&["getAclConfig", "-b", b], ADMIN)).await;
    assert!(ok && out.contains("newcomer1"), "{out}");
    let (ok, out) = mqadmin(
        ns,
        h,
        &with(&["clusterAclConfigVersion", "-c", "DefaultCluster"], ADMIN),
    )
    .await;
    assert!(ok && out.contains("broker-a"), "{out}");
    let (ok, out) = mqadmin(
        ns,
        h,
        &with(&["updateGlobalWhiteAddr", "-b", b, "-g", "10.9.8.*"], ADMIN),
    )
    .await;
    assert!(ok, "{out}");
    let file = std::fs::read_to_string(h.join("conf/plain_acl.yml")).expect("acl file");
    assert!(file.contains("10.9.8.*"), "{file}");
    let (ok, out) = mqadmin(
        ns,
        h,
        &with(&["deleteAclConfig", "-b", b, "-a", "newcomer1"], ADMIN),
    )
    .await;
    assert!(ok, "{out}");
    let file = std::fs::read_to_string(h.join("conf/plain_acl.yml")).expect("acl file");
    assert!(!file.contains("newcomer1"), "{file}");

    // No flags: conf/tools.yml under ROCKETMQ_HOME signs.
    std::fs::write(
        h.join("conf/tools.yml"),
        "accessKey: rocketmq2\nsecretKey: 87654321\n",
    )
    .expect("tools.yml");
    let (ok, out) = mqadmin(ns, h, &["getAclConfig", "-b", b]).await;
    assert!(ok && out.contains("rocketmq2"), "{out}");
    s.stop().await;
}
