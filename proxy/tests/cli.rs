//! `mqproxy`'s command line alone: RocketMQ's options, the JSON config file, refusals.

use std::process::Command;

fn mqproxy(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mqproxy"))
        .args(args)
        .output()
        .expect("mqproxy runs")
}

fn config_file(text: &str) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().expect("a temp file");
    std::fs::write(file.path(), text).expect("written");
    file
}

#[test]
fn reads_rocketmq_options_and_json_keys() {
    let file = config_file(r#"{"rocketMQClusterName": "C9", "grpcServerPort": 18081}"#);
    let path = file.path().to_str().expect("a utf-8 path");
    let out = mqproxy(&["-pc", path, "-pm", "cluster", "-n", "10.0.0.1:9876", "-p"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.contains("rocketMQClusterName=C9"), "{printed}");
    assert!(printed.contains("grpcServerPort=18081"), "{printed}");
    assert!(printed.contains("namesrvAddr=10.0.0.1:9876"), "{printed}");
}

#[test]
fn refuses_what_it_cannot_run() {
    let local = mqproxy(&["-pm", "local", "-p"]);
    assert_eq!(local.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&local.stderr).contains("cluster mode"));
    let file = config_file("{not json");
    let bad = mqproxy(&["-pc", file.path().to_str().expect("a utf-8 path"), "-p"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not JSON"));
    let missing = mqproxy(&["-pc", "/nonexistent/rmq-proxy.json"]);
    assert_eq!(missing.status.code(), Some(2));
}
