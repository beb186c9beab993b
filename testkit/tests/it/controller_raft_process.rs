//! The `mqcontroller` binary as users run it: three processes from conf files (on free
//! loopback ports), the leader killed with SIGKILL; and a controller embedded in `mqnamesrv`
//! with `enableControllerInNamesrv=true`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use stellmq_controller_client::ControllerClient;
use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_remoting::protocol::headers::ApplyBrokerIdRequestHeader;
use stellmq_testkit::eventually_some;
use stellmq_testkit::process::{command, namesrv_boot_line, Process};

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

fn client_of(addrs: &str) -> ControllerClient {
    let remoting = Arc::new(RemotingClient::new(ClientConfig::default()));
    ControllerClient::new(remoting, addrs, Duration::from_secs(3)).expect("addresses")
}

/// The address in a boot line ending `... boot success. ... address <addr>`.
fn boot_address(line: &str) -> Option<String> {
    line.contains("ControllerManager")
        .then(|| namesrv_boot_line(line))
        .flatten()
}

async fn spawn(mut cmd: std::process::Command, boot: fn(&str) -> Option<String>) -> Process {
    cmd.env("RUST_LOG", "info");
    tokio::task::spawn_blocking(move || Process::spawn_until(cmd, boot).0)
        .await
        .expect("spawned")
}

fn write_conf(dir: &Path, name: &str, lines: &[String]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n")).expect("conf written");
    path
}

async fn apply_next_id(client: &ControllerClient, tag: &str) -> i64 {
    let id = client.get_next_broker_id("c", "b").await.expect("next id");
    client
        .apply_broker_id(&ApplyBrokerIdRequestHeader {
            cluster_name: Some("c".into()),
            broker_name: "b".into(),
            applied_broker_id: id,
            register_check_code: format!("127.0.0.1:{};{tag}", 10000 + id),
        })
        .await
        .expect("id applied");
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_controller_processes_survive_a_killed_leader() {
    let dir = tempfile::tempdir().expect("tempdir");
    let addrs: Vec<String> = (0..3)
        .map(|_| format!("127.0.0.1:{}", free_port()))
        .collect();
    let peers = addrs
        .iter()
        .enumerate()
        .map(|(i, a)| format!("n{i}-{a}"))
        .collect::<Vec<_>>()
        .join(";");
    let mut processes = Vec::new();
    for i in 0..3 {
        let conf = write_conf(
            dir.path(),
            &format!("controller-n{i}.conf"),
            &[
                "controllerDLegerGroup=proc-group".into(),
                format!("controllerDLegerPeers={peers}"),
                format!("controllerDLegerSelfId=n{i}"),
                format!(
                    "controllerStorePath={}",
                    dir.path().join(format!("n{i}")).display()
                ),
            ],
        );
        let mut cmd = command("mqcontroller");
        cmd.arg("-c").arg(conf);
        processes.push(spawn(cmd, boot_address).await);
    }
    let client = client_of(&addrs.join(";"));
    assert_eq!(apply_next_id(&client, "first").await, 1);
    let leader = client.discover_leader().await.expect("a leader");
    let index = addrs
        .iter()
        .position(|a| *a == leader)
        .expect("a peer leads");
    processes[index].kill();

    let survivors: Vec<String> = addrs.iter().filter(|a| **a != leader).cloned().collect();
    let client = client_of(&survivors.join(";"));
    let id = eventually_some(
        "the survivors elect a leader and take writes",
        Duration::from_secs(20),
        async || client.get_next_broker_id("c", "b").await.ok(),
    )
    .await;
    assert_eq!(id, 2, "the applied id survived the leader");
    assert_eq!(apply_next_id(&client, "second").await, 2);
    for mut p in processes {
        p.kill();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn name_server_embeds_a_controller() {
    let dir = tempfile::tempdir().expect("tempdir");
    let controller_addr = format!("127.0.0.1:{}", free_port());
    let conf = write_conf(
        dir.path(),
        "namesrv.conf",
        &[
            "listenPort=0".into(),
            format!("kvConfigPath={}", dir.path().join("kv.json").display()),
            "enableControllerInNamesrv=true".into(),
            format!("controllerDLegerPeers=n0-{controller_addr}"),
            "controllerDLegerSelfId=n0".into(),
            format!("controllerStorePath={}", dir.path().join("ctl").display()),
        ],
    );
    let mut cmd = command("mqnamesrv");
    cmd.arg("-c").arg(conf);
    let mut namesrv = spawn(cmd, namesrv_boot_line).await;
    let client = client_of(&controller_addr);
    let meta = client
        .metadata_of(&controller_addr)
        .await
        .expect("controller answers");
    assert_eq!(meta.peers, Some(format!("n0-{controller_addr}")));
    assert_eq!(apply_next_id(&client, "embedded").await, 1);
    namesrv.kill();
}
