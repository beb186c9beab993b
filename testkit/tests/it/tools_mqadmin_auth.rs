//! ACL 2.0 as a RocketMQ 5.3+ user runs it: a broker with authenticationEnabled and
//! authorizationEnabled, an initial super user, and mqadmin's createUser / createAcl /
//! getUser / listAcl / deleteUser managing users and policies that are enforced at once
//! and survive a restart.

use std::path::Path;

use stellmq_testkit::process::command;
use stellmq_testkit::Stack;

const ROOT: [&str; 4] = ["--accessKey", "root", "--secretKey", "r00t-pass"];
const APP: [&str; 4] = ["--accessKey", "app", "--secretKey", "app-pass"];

async fn mqadmin(ns: &str, home: &Path, args: &[&str], credentials: [&str; 4]) -> (bool, String) {
    let mut all: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    all.extend(credentials.iter().map(|s| (*s).to_owned()));
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_and_policies_made_with_mqadmin_are_enforced_and_survive_a_restart() {
    let home = tempfile::tempdir().expect("home");
    let mut s = Stack::start_with(|c| {
        c.broker.authentication_enabled = true;
        c.broker.authorization_enabled = true;
        c.broker.init_authentication_user = r#"{"username":"root","password":"r00t-pass"}"#.into();
    })
    .await;
    s.broker().register_now().await;
    let (ns, h) = (s.ns_addr().to_owned(), home.path());
    let cluster = ["-c", "DefaultCluster"];
    let run = |args: Vec<&'static str>, who| {
        let ns = ns.clone();
        async move { mqadmin(&ns, h, &args, who).await }
    };
    let with = |base: &[&'static str]| [base, &cluster[..]].concat();

    let (ok, out) = run(with(&["updateTopic", "-t", "AuthOrders"]), ROOT).await;
    assert!(ok, "{out}");
    let (ok, out) = run(with(&["createUser", "-u", "app", "-p", "app-pass"]), ROOT).await;
    assert!(
        ok && out.contains("create user to ") && out.contains(" success."),
        "{out}"
    );
    let (ok, out) = run(
        with(&[
            "createAcl",
            "-s",
            "User:app",
            "-r",
            "Topic:AuthOrders",
            "-a",
            "Pub,Sub",
            "-d",
            "Allow",
        ]),
        ROOT,
    )
    .await;
    assert!(ok && out.contains("create acl to "), "{out}");

    let (ok, out) = run(with(&["getUser", "-u", "app"]), ROOT).await;
    assert!(ok, "{out}");
    let rows: Vec<&str> = out.lines().collect();
    assert!(
        rows[0].starts_with("#UserName") && rows[0].contains("#UserStatus"),
        "{out}"
    );
    let row: Vec<&str> = rows[1].split_whitespace().collect();
    assert_eq!(row, ["app", "app-pass", "Normal", "enable"], "{out}");
    let (ok, out) = run(with(&["listAcl", "-s", "User:app"]), ROOT).await;
    assert!(
        ok && out.contains("User:app")
            && out.contains("Topic:AuthOrders")
            && out.contains("[Pub, Sub]"),
        "{out}"
    );

    // The user may send to its topic, and nothing else.
    let send = |topic: &'static str| with_topic(topic);
    let (ok, out) = run(send("AuthOrders"), APP).await;
    assert!(ok && out.contains("SEND_OK"), "{out}");
    let (ok, out) = run(with(&["updateTopic", "-t", "AuthOther"]), APP).await;
    assert!(
        !ok && out.contains("User:app has no permission to access"),
        "{out}"
    );
    let (ok, out) = run(with(&["createUser", "-u", "eve", "-p", "x"]), APP).await;
    assert!(!ok && out.contains("Cluster:DefaultCluster"), "{out}");
    let (ok, out) = run(
        send("AuthOrders"),
        ["--accessKey", "app", "--secretKey", "wrong"],
    )
    .await;
    assert!(!ok && out.contains("check signature failed"), "{out}");

    // Committed before answered: a restart keeps them.
    s.restart_broker(|_| {}).await;
    s.broker().register_now().await;
    let (ok, out) = run(send("AuthOrders"), APP).await;
    assert!(ok && out.contains("SEND_OK"), "after the restart: {out}");

    let (ok, out) = run(with(&["deleteUser", "-u", "app"]), ROOT).await;
    assert!(ok, "{out}");
    let (ok, out) = run(send("AuthOrders"), APP).await;
    assert!(!ok && out.contains("User:app is not found"), "{out}");
    s.stop().await;
}

fn with_topic(topic: &'static str) -> Vec<&'static str> {
    vec!["sendMessage", "-t", topic, "-p", "hello"]
}
