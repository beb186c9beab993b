//! `mqcontroller`'s command line alone: RocketMQ's keys read from a conf file, refusals.
//! (Building this test also makes cargo build the binary the testkit's process tests run.)

use std::process::Command;

fn mqcontroller(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mqcontroller"))
        .args(args)
        .output()
        .expect("mqcontroller runs")
}

fn conf(text: &str) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().expect("a temp file");
    std::fs::write(file.path(), text).expect("written");
    file
}

#[test]
fn prints_the_config_it_read() {
    let file = conf(
        "controllerDLegerGroup=g1\ncontrollerDLegerPeers=n0-127.0.0.1:19878;n1-127.0.0.1:19868\n\
         controllerDLegerSelfId=n1\nenableElectUncleanMaster=true\n",
    );
    let out = mqcontroller(&["-c", file.path().to_str().expect("utf-8"), "-p"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8_lossy(&out.stdout);
    for line in [
        "controllerDLegerGroup=g1",
        "controllerDLegerSelfId=n1",
        "enableElectUncleanMaster=true",
    ] {
        assert!(printed.contains(line), "{line} missing in:\n{printed}");
    }
}

#[test]
fn refuses_a_config_it_cannot_run() {
    // The self id names no peer.
    let file = conf("controllerDLegerPeers=n0-127.0.0.1:19878\ncontrollerDLegerSelfId=n7\n");
    let out = mqcontroller(&["-c", file.path().to_str().expect("utf-8"), "-p"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!out.stderr.is_empty());
    let missing = mqcontroller(&["-c", "/nonexistent/controller.conf"]);
    assert_eq!(missing.status.code(), Some(2));
}
