//! `mqadmin`'s help screens as RocketMQ 4.9.8 prints them: the command list without
//! arguments or with `help`, one command's options by RocketMQ's letters with `help <cmd>`,
//! and command names in any case.

use stellmq_testkit::process::command;

fn mqadmin(args: &[&str]) -> (bool, String, String) {
    let out = command("mqadmin")
        .args(args)
        .env_remove("NAMESRV_ADDR")
        .output()
        .expect("runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every command registered in RocketMQ 4.9.8's MQAdminStartup that StellMQ carries.
const ROCKETMQ_COMMANDS: &[&str] = &[
    "updateTopic",
    "deleteTopic",
    "updateSubGroup",
    "deleteSubGroup",
    "updateBrokerConfig",
    "updateTopicPerm",
    "topicRoute",
    "topicStatus",
    "topicClusterList",
    "brokerStatus",
    "queryMsgById",
    "queryMsgByKey",
    "queryMsgByUniqueKey",
    "queryMsgByOffset",
    "printMsg",
    "printMsgByQueue",
    "sendMsgStatus",
    "brokerConsumeStats",
    "producerConnection",
    "consumerConnection",
    "consumerProgress",
    "consumerStatus",
    "cloneGroupOffset",
    "producer",
    "clusterList",
    "topicList",
    "updateKvConfig",
    "deleteKvConfig",
    "wipeWritePerm",
    "addWritePerm",
    "resetOffsetByTime",
    "skipAccumulatedMessage",
    "updateOrderConf",
    "cleanExpiredCQ",
    "deleteExpiredCommitLog",
    "cleanUnusedTopic",
    "startMonitoring",
    "statsAll",
    "allocateMQ",
    "checkMsgSendRT",
    "clusterRT",
    "getNamesrvConfig",
    "updateNamesrvConfig",
    "getBrokerConfig",
    "getConsumerConfig",
    "exportMetadata",
    "exportConfigs",
    "exportMetrics",
    "queryCq",
    "sendMessage",
    "consumeMessage",
    "updateAclConfig",
    "deleteAclConfig",
    "clusterAclConfigVersion",
    "updateGlobalWhiteAddr",
];

#[test]
fn no_arguments_and_help_list_every_command() {
    for args in [&[][..], &["help"][..]] {
        let (ok, out, err) = mqadmin(args);
        assert!(ok, "mqadmin {args:?}: {err}");
        assert!(
            out.starts_with("The most commonly used mqadmin commands are:\n"),
            "{out}"
        );
        assert!(out.contains("See 'mqadmin help <command>'"), "{out}");
        for name in ROCKETMQ_COMMANDS {
            let line = out
                .lines()
                .find(|l| l.split_whitespace().next() == Some(name))
                .unwrap_or_else(|| panic!("{name} missing from:\n{out}"));
            assert!(
                line.split_whitespace().count() > 1,
                "{name} has no description"
            );
        }
    }
}

#[test]
fn help_of_a_command_prints_rocketmq_option_letters() {
    let (ok, out, _) = mqadmin(&["help", "updateTopic"]);
    assert!(ok);
    assert!(out.starts_with("usage: mqadmin updateTopic "), "{out}");
    assert!(
        out.contains(" -t <arg> ") || out.contains(" -t <arg>\n"),
        "{out}"
    );
    for opt in [
        " -b,--brokerAddr <arg>",
        " -c,--clusterName <arg>",
        " -t,--topic <arg>",
        " -r,--readQueueNums <arg>",
        " -w,--writeQueueNums <arg>",
        " -p,--perm <arg>",
        " -o,--order <arg>",
        " -n,--namesrvAddr <arg>",
        " -h,--help",
    ] {
        assert!(out.contains(opt), "{opt} missing:\n{out}");
    }
    // Any case, as RocketMQ's findSubCommand.
    let (ok, lower, _) = mqadmin(&["help", "updatetopic"]);
    assert!(ok && lower == out);
}

#[test]
fn unknown_commands_are_named() {
    let (ok, _, err) = mqadmin(&["help", "noSuchCommand"]);
    assert!(!ok);
    assert!(
        err.contains("The sub command noSuchCommand not exist."),
        "{err}"
    );
    let (ok, _, err) = mqadmin(&["noSuchCommand", "-n", "127.0.0.1:1"]);
    assert!(!ok);
    assert!(
        err.contains("The sub command noSuchCommand not exist."),
        "{err}"
    );
}

#[test]
fn command_names_run_in_any_case() {
    // The name resolves; the run then fails on the unreachable name server, not on parsing.
    let (ok, _, err) = mqadmin(&["CLUSTERLIST", "-n", "127.0.0.1:1"]);
    assert!(!ok);
    assert!(
        !err.contains("not exist") && !err.contains("unrecognized"),
        "{err}"
    );
}

/// Each command's option letters in RocketMQ 4.9.8 (`buildCommandlineOptions` of its
/// SubCommand; `-h` and `-n` come with every command).
const ROCKETMQ_LETTERS: &[(&str, &str)] = &[
    ("addWritePerm", "b"),
    ("allocateMQ", "ti"),
    ("brokerConsumeStats", "btlo"),
    ("brokerStatus", "bc"),
    ("checkMsgSendRT", "tas"),
    ("cleanExpiredCQ", "bc"),
    ("cleanUnusedTopic", "bc"),
    ("cloneGroupOffset", "sdto"),
    ("clusterAclConfigVersion", "bc"),
    ("clusterList", "mi"),
    ("clusterRT", "ascpmi"),
    ("consumeMessage", "tbiogsec"),
    ("consumerConnection", "gb"),
    ("consumerProgress", "gs"),
    ("consumerStatus", "gibs"),
    ("deleteAclConfig", "bca"),
    ("deleteExpiredCommitLog", "nbc"),
    ("deleteKvConfig", "sk"),
    ("deleteSubGroup", "bcgr"),
    ("deleteTopic", "tc"),
    ("exportConfigs", "cf"),
    ("exportMetadata", "cbftgs"),
    ("exportMetrics", "cf"),
    ("getBrokerConfig", "bc"),
    ("getConsumerConfig", "g"),
    ("getNamesrvConfig", ""),
    ("printMsg", "tcsbed"),
    ("printMsgByQueue", "taicsbepdf"),
    ("producer", "b"),
    ("producerConnection", "gt"),
    ("queryCq", "tqicbg"),
    ("queryMsgById", "igdsu"),
    ("queryMsgByKey", "tk"),
    ("queryMsgByOffset", "tbio"),
    ("queryMsgByUniqueKey", "igdta"),
    ("resetOffsetByTime", "gtsfc"),
    ("sendMessage", "tpkcbim"),
    ("sendMsgStatus", "bsc"),
    ("skipAccumulatedMessage", "gtf"),
    ("startMonitoring", ""),
    ("statsAll", "at"),
    ("topicClusterList", "t"),
    ("topicList", "c"),
    ("topicRoute", "tl"),
    ("topicStatus", "t"),
    ("updateAclConfig", "bcaswiutgm"),
    ("updateBrokerConfig", "bckv"),
    ("updateGlobalWhiteAddr", "bcgp"),
    ("updateKvConfig", "skv"),
    ("updateNamesrvConfig", "kv"),
    ("updateOrderConf", "tvm"),
    ("updateSubGroup", "bcgsmdqriwa"),
    ("updateTopic", "bctrwpous"),
    ("updateTopicPerm", "bctp"),
    ("wipeWritePerm", "b"),
    // RocketMQ 5's controller commands (their `-bn` is `--brokerName` here).
    ("cleanBrokerMetadata", "abcl"),
    ("electMaster", "abc"),
    ("getBrokerEpoch", "cbi"),
    ("getControllerConfig", "a"),
    ("getControllerMetaData", "a"),
    ("getSyncStateSet", "acbi"),
    ("updateControllerConfig", "akv"),
    // RocketMQ 5's batch commands and its metadata export.
    ("updateTopicList", "bcf"),
    ("updateSubGroupList", "bcf"),
    ("exportMetadataInRocksDB", "ptj"),
];

#[test]
fn every_command_takes_rocketmq_option_letters() {
    for (name, letters) in ROCKETMQ_LETTERS {
        let (ok, out, err) = mqadmin(&["help", name]);
        assert!(ok, "help {name}: {err}");
        for letter in letters.chars().chain("hn".chars()) {
            // `-a` of the ACL commands has no long form: `--accessKey` signs requests.
            let short_only = format!(" -{letter} <arg>");
            assert!(
                out.contains(&format!(" -{letter},--")) || out.contains(&short_only),
                "{name} lacks -{letter}:\n{out}"
            );
        }
    }
}

/// RocketMQ 5.x commands StellMQ does not serve are known by name: each says why and fails,
/// and the command list names them apart.
#[test]
fn a_command_not_served_says_why_and_fails() {
    for (args, says) in [
        (&["dumpCompactionLog", "-f", "x"][..], "compaction"),
        (&["updatestatictopic", "-t", "T"][..], "static topics"),
        (&["help", "addBroker"][..], "BrokerContainer"),
    ] {
        let (ok, out, err) = mqadmin(args);
        assert!(!ok, "{args:?} succeeded: {out}");
        assert!(
            err.contains("is not available in StellMQ") && err.contains(says),
            "{args:?}: {err}"
        );
    }
    let (_, list, _) = mqadmin(&[]);
    assert!(
        list.contains("RocketMQ commands not available in StellMQ"),
        "{list}"
    );
    assert!(list.contains("addBroker"), "{list}");
}
