//! TLS as operators turn it on: `tlsMode=enforcing` with certificate paths in
//! `namesrv.conf` and `broker.conf` (the broker registering with `tls.enable`), and
//! `mqadmin` / `mqbench` with `--tlsTrustCertPath`.

use std::path::Path;

use stellmq_testkit::process::{command, spawn_mqbroker, spawn_mqnamesrv};
use stellmq_testkit::tls::LOOPBACK_NAMES;
use stellmq_testkit::TestCa;

/// The `tls.*` lines of a server that enforces TLS with a new certificate of `ca`.
fn enforcing_tls(ca: &TestCa) -> String {
    let (cert, key) = ca.issue(LOOPBACK_NAMES);
    format!(
        "tlsMode=enforcing\ntls.server.certPath={}\ntls.server.keyPath={}\n",
        cert.display(),
        key.display()
    )
}

/// Runs a tool; returns (success, stdout + stderr).
async fn run(tool: &'static str, args: Vec<String>) -> (bool, String) {
    let out = tokio::task::spawn_blocking(move || {
        command(tool)
            .args(&args)
            .env_remove("NAMESRV_ADDR")
            .output()
    })
    .await
    .expect("join")
    .expect("the tool runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn args(list: &[&str], ns: &str, ca: Option<&Path>) -> Vec<String> {
    let mut all: Vec<String> = list.iter().map(|s| (*s).to_owned()).collect();
    all.extend(["-n".to_owned(), ns.to_owned()]);
    if let Some(ca) = ca {
        all.extend(["--tlsTrustCertPath".to_owned(), ca.display().to_string()]);
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_enforce_tls_from_their_config_files_and_the_tools_use_it() {
    let ca = TestCa::new("StellMQ test CA");
    let dir = tempfile::tempdir().expect("tempdir");
    let namesrv_conf = dir.path().join("namesrv.conf");
    std::fs::write(
        &namesrv_conf,
        format!(
            "listenPort=0\nbindAddress=127.0.0.1\nkvConfigPath={}\n{}",
            dir.path().join("kv.json").display(),
            enforcing_tls(&ca)
        ),
    )
    .expect("write namesrv.conf");
    let (mut namesrv, ns) = tokio::task::spawn_blocking(move || spawn_mqnamesrv(&namesrv_conf))
        .await
        .expect("the name server starts");

    let broker_conf = dir.path().join("broker.conf");
    std::fs::write(
        &broker_conf,
        format!(
            "listenPort=0\nbindAddress=127.0.0.1\nbrokerIP1=127.0.0.1\nstorePathRootDir={}\nmappedFileSizeCommitLog=8388608\nmaxMessageSize=1048576\n{}tls.enable=true\ntls.client.trustCertPath={}\n",
            dir.path().join("store").display(),
            enforcing_tls(&ca),
            ca.ca_path().display()
        ),
    )
    .expect("write broker.conf");
    let (mut broker, broker_addr) = spawn_mqbroker(&broker_conf, &ns).await;

    let ca_path = ca.ca_path();
    let (ok, out) = run("mqadmin", args(&["clusterList"], &ns, Some(&ca_path))).await;
    assert!(
        ok && out.contains(&broker_addr),
        "the broker registered over TLS and mqadmin reads it over TLS:\n{out}"
    );
    let (ok, out) = run("mqadmin", args(&["clusterList"], &ns, None)).await;
    assert!(
        !ok,
        "mqadmin without TLS was answered by an enforcing name server:\n{out}"
    );

    let bench = &[
        "producer",
        "-t",
        "TlsBench",
        "-w",
        "1",
        "-s",
        "64",
        "-q",
        "20",
        "--duration",
        "0",
    ];
    let (ok, out) = run("mqbench", args(bench, &ns, Some(&ca_path))).await;
    assert!(
        ok && out.contains("[Complete] Send Total: 20 ") && out.contains("Send Failed: 0"),
        "mqbench sends over TLS:\n{out}"
    );

    assert!(broker
        .terminate(std::time::Duration::from_secs(15))
        .success());
    assert!(namesrv
        .terminate(std::time::Duration::from_secs(15))
        .success());
}
