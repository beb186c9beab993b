//! `exportMetadata`, `exportConfigs`, `exportMetrics`: RocketMQ's JSON exports of a
//! cluster, written under `-f` (default `/tmp/rocketmq/export`): `metadata.json` (or
//! `topic.json` with `-t`, `subscriptionGroup.json` with `-g`), `configs.json`,
//! `metrics.json`. System topics and groups are left out, retry and DLQ topics unless `-s`.
#![allow(clippy::print_stdout)] // CLI output

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use stellmq_client::{AdminClient, ClientError};
use stellmq_remoting::protocol::body::{SubscriptionGroupConfig, TopicConfig};

const DEFAULT_DIR: &str = "/tmp/rocketmq/export";

#[derive(clap::Args, Debug)]
pub struct ExportMetadata {
    /// choose a cluster to export.
    #[arg(short = 'c', long = "clusterName")]
    cluster: Option<String>,
    /// choose a broker to export.
    #[arg(short = 'b', long = "brokerAddr")]
    broker: Option<String>,
    /// export metadata.json path | default /tmp/rocketmq/export.
    #[arg(short = 'f', long = "filePath", default_value = DEFAULT_DIR)]
    dir: PathBuf,
    /// only export topic metadata.
    #[arg(short = 't', long = "topic")]
    topic_only: bool,
    /// only export subscriptionGroup metadata.
    #[arg(short = 'g', long = "subscriptionGroup")]
    group_only: bool,
    /// need retryTopic and dlqTopic.
    #[arg(short = 's', long = "specialTopic")]
    special_topic: bool,
}

#[derive(clap::Args, Debug)]
pub struct ExportCluster {
    /// choose a cluster to export.
    #[arg(short = 'c', long = "clusterName")]
    cluster: String,
    /// export path | default /tmp/rocketmq/export.
    #[arg(short = 'f', long = "filePath", default_value = DEFAULT_DIR)]
    dir: PathBuf,
}

/// RocketMQ's `TopicValidator.isSystemTopic` and the broker's own topics.
fn is_system_topic(topic: &str) -> bool {
    const FIXED: &[&str] = &[
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "BenchmarkTest",
        "OFFSET_MOVED_EVENT",
        "SELF_TEST_TOPIC",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRACE_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
    ];
    FIXED.contains(&topic) || topic.starts_with("rmq_sys_")
}

fn is_system_group(group: &str) -> bool {
    group.starts_with("CID_RMQ_SYS_")
        || group.starts_with("CID_ONSAPI_")
        || [
            "TOOLS_CONSUMER",
            "FILTERSRV_CONSUMER",
            "__MONITOR_CONSUMER",
            "CLIENT_INNER_PRODUCER",
            "SELF_TEST_P_GROUP",
            "SELF_TEST_C_GROUP",
        ]
        .contains(&group)
}

/// The user topics of a broker (not named after a broker or cluster).
async fn user_topics(
    admin: &AdminClient,
    addr: &str,
    special: bool,
    names: &[String],
) -> Result<BTreeMap<String, TopicConfig>, ClientError> {
    let all = admin.all_topic_config(addr).await?.topic_config_table;
    Ok(all
        .into_iter()
        .filter(|(t, _)| !is_system_topic(t) && !names.contains(t))
        .filter(|(t, _)| special || !(t.starts_with("%RETRY%") || t.starts_with("%DLQ%")))
        .collect())
}

async fn user_groups(
    admin: &AdminClient,
    addr: &str,
) -> Result<BTreeMap<String, SubscriptionGroupConfig>, ClientError> {
    let all = admin.all_subscription_groups(addr).await?;
    Ok(all
        .subscription_group_table
        .into_iter()
        .filter(|(g, _)| !is_system_group(g))
        .collect())
}

/// Cluster and broker names: brokers serve topics named after them.
async fn server_names(admin: &AdminClient) -> Result<Vec<String>, ClientError> {
    let info = admin.cluster_info().await?;
    Ok(info
        .cluster_addr_table
        .keys()
        .cloned()
        .chain(info.broker_addr_table.keys().cloned())
        .collect())
}

fn write_json(dir: &Path, file: &str, value: &Value) -> Result<(), ClientError> {
    let path = dir.join(file);
    let io =
        |e: std::io::Error| ClientError::Invalid(format!("cannot write {}: {e}", path.display()));
    std::fs::create_dir_all(dir).map_err(io)?;
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| ClientError::Invalid(format!("cannot encode {file}: {e}")))?;
    std::fs::write(&path, text).map_err(io)?;
    crate::outln!("export {} success", path.display());
    Ok(())
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<Value, ClientError> {
    serde_json::to_value(v).map_err(|e| ClientError::Invalid(format!("cannot encode: {e}")))
}

pub async fn export_metadata(admin: &AdminClient, a: ExportMetadata) -> Result<(), ClientError> {
    let addrs = match (&a.broker, &a.cluster) {
        (Some(b), _) => vec![b.clone()],
        (None, Some(c)) => admin
            .master_addrs(Some(c))
            .await?
            .into_iter()
            .map(|(_, addr)| addr)
            .collect(),
        (None, None) => {
            return Err(ClientError::Invalid(
                "give -c clusterName or -b brokerAddr".into(),
            ))
        }
    };
    let names = server_names(admin).await?;
    let mut topics: BTreeMap<String, TopicConfig> = BTreeMap::new();
    let mut groups: BTreeMap<String, SubscriptionGroupConfig> = BTreeMap::new();
    for addr in &addrs {
        // Across brokers queue counts add up, as RocketMQ sums them.
        for (name, mut t) in user_topics(admin, addr, a.special_topic, &names).await? {
            if let Some(seen) = topics.get(&name) {
                t.read_queue_nums += seen.read_queue_nums;
                t.write_queue_nums += seen.write_queue_nums;
            }
            topics.insert(name, t);
        }
        for (name, mut g) in user_groups(admin, addr).await? {
            if let Some(seen) = groups.get(&name) {
                g.retry_queue_nums += seen.retry_queue_nums;
            }
            groups.insert(name, g);
        }
    }
    let mut result = serde_json::Map::new();
    let file = if a.topic_only {
        result.insert("topicConfigTable".into(), to_value(&topics)?);
        "topic.json"
    } else if a.group_only {
        result.insert("subscriptionGroupTable".into(), to_value(&groups)?);
        "subscriptionGroup.json"
    } else {
        result.insert("topicConfigTable".into(), to_value(&topics)?);
        result.insert("subscriptionGroupTable".into(), to_value(&groups)?);
        "metadata.json"
    };
    result.insert("exportTime".into(), json!(stellmq_client::admin::now_ms()));
    write_json(&a.dir, file, &Value::Object(result))
}

/// The broker properties RocketMQ's exportConfigs keeps.
const CONFIG_KEYS: &[&str] = &[
    "brokerClusterName",
    "brokerId",
    "brokerName",
    "brokerRole",
    "fileReservedTime",
    "filterServerNums",
    "flushDiskType",
    "maxMessageSize",
    "messageDelayLevel",
    "msgTraceTopicName",
    "slaveReadEnable",
    "traceOn",
    "traceTopicEnable",
    "useTLS",
    "autoCreateTopicEnable",
    "autoCreateSubscriptionGroup",
];

fn properties(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

pub async fn export_configs(
    admin: &AdminClient,
    namesrv: &str,
    a: ExportCluster,
) -> Result<(), ClientError> {
    let info = admin.cluster_info().await?;
    let names = info
        .cluster_addr_table
        .get(&a.cluster)
        .ok_or_else(|| ClientError::Invalid(format!("cluster {} not found", a.cluster)))?;
    let (mut masters, mut slaves) = (0, 0);
    let mut configs = serde_json::Map::new();
    for name in names {
        let Some(broker) = info.broker_addr_table.get(name) else {
            continue;
        };
        let Some(master) = broker.master_addr() else {
            continue;
        };
        masters += 1;
        slaves += broker.broker_addrs.0.len() - 1;
        let props = properties(&admin.broker_config(master).await?);
        let kept: BTreeMap<&str, &str> = CONFIG_KEYS
            .iter()
            .filter_map(|k| props.get(*k).map(|v| (*k, v.as_str())))
            .collect();
        configs.insert(name.clone(), to_value(&kept)?);
    }
    let namesrv_size = namesrv.split(';').filter(|s| !s.trim().is_empty()).count();
    let result = json!({
        "brokerConfigs": configs,
        "clusterScale": {
            "namesrvSize": namesrv_size,
            "masterBrokerSize": masters,
            "slaveBrokerSize": slaves,
        },
    });
    write_json(&a.dir, "configs.json", &result)
}

fn first_number(rt: &BTreeMap<String, String>, key: &str) -> f64 {
    rt.get(key)
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// One broker's part of metrics.json and its (in, out) TPS and (in, out) messages today.
async fn broker_metrics(
    admin: &AdminClient,
    addr: &str,
    names: &[String],
) -> Result<(Value, [f64; 2], [i64; 2]), ClientError> {
    let rt = admin.broker_runtime_info(addr).await?;
    let props = properties(&admin.broker_config(addr).await?);
    let topics = user_topics(admin, addr, false, names).await?;
    let groups = user_groups(admin, addr).await?;
    let tps = [
        first_number(&rt, "putTps"),
        first_number(&rt, "getTransferedTps"),
    ];
    let n = |k: &str| rt.get(k).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
    let day = [
        n("msgPutTotalTodayNow") - n("msgPutTotalTodayMorning"),
        n("msgGetTotalTodayNow") - n("msgGetTotalTodayMorning"),
    ];
    let value = json!({
        "runtimeEnv": {
            "cpuNum": props.get("clientCallbackExecutorThreads"),
            "totalMemKBytes": rt.get("totalMemKBytes"),
        },
        "runtimeQuota": {
            "diskRatio": {
                "commitLogDiskRatio": rt.get("commitLogDiskRatio"),
                "consumeQueueDiskRatio": rt.get("consumeQueueDiskRatio"),
            },
            "tps": {"normalInTps": tps[0], "normalOutTps": tps[1], "transInTps": 0.0, "scheduleInTps": 0.0},
            "oneDayNum": {"normalOneDayInNum": day[0], "normalOneDayOutNum": day[1], "transOneDayInNum": 0, "scheduleOneDayInNum": 0},
            "messageAverageSize": rt.get("putMessageAverageSize"),
            "topicSize": topics.len(),
            "groupSize": groups.len(),
        },
        "runtimeVersion": {"rocketmqVersion": rt.get("brokerVersionDesc")},
    });
    Ok((value, tps, day))
}

pub async fn export_metrics(admin: &AdminClient, a: ExportCluster) -> Result<(), ClientError> {
    let info = admin.cluster_info().await?;
    let brokers = info
        .cluster_addr_table
        .get(&a.cluster)
        .ok_or_else(|| ClientError::Invalid(format!("cluster {} not found", a.cluster)))?;
    let names = server_names(admin).await?;
    let mut report = serde_json::Map::new();
    let (mut tps, mut day) = ([0.0; 2], [0i64; 2]);
    for name in brokers {
        let Some(addr) = info
            .broker_addr_table
            .get(name)
            .and_then(|b| b.master_addr())
        else {
            continue;
        };
        let (value, t, d) = broker_metrics(admin, addr, &names).await?;
        report.insert(name.clone(), value);
        tps = [tps[0] + t[0], tps[1] + t[1]];
        day = [day[0] + d[0], day[1] + d[1]];
    }
    let result = json!({
        "evaluateReport": report,
        "totalData": {
            "totalTps": {"totalNormalInTps": tps[0], "totalNormalOutTps": tps[1], "totalTransInTps": 0.0, "totalScheduleInTps": 0.0},
            "totalOneDayNum": {"normalOneDayInNum": day[0], "normalOneDayOutNum": day[1], "transOneDayInNum": 0, "scheduleOneDayInNum": 0},
        },
    });
    write_json(&a.dir, "metrics.json", &result)
}
