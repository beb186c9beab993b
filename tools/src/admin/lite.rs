//! RocketMQ 5.5's lite topic commands: `getBrokerLiteInfo`, `getParentTopicInfo`,
//! `getLiteTopicInfo`, `getLiteClientInfo`, `getLiteGroupInfo`, `triggerLiteDispatch`, with
//! RocketMQ's option letters and output. All but the first ask every broker of the parent
//! topic's route; a broker that fails prints `[name] error.` and the others go on.
#![allow(clippy::print_stdout)] // CLI output

use stellmq_client::{AdminClient, ClientError};
use stellmq_remoting::protocol::body::lite::LiteLagInfo;
use stellmq_remoting::protocol::lite::lmq_name;

use super::format_time;

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["broker", "cluster"])))]
pub struct BrokerLiteInfo {
    /// Broker address
    #[arg(short = 'b', long = "brokerAddr")]
    broker: Option<String>,
    /// Cluster name
    #[arg(short = 'c', long = "cluster")]
    cluster: Option<String>,
    /// Show topic and group detail info
    #[arg(short = 'd', long = "showDetail")]
    detail: bool,
}

#[derive(clap::Args, Debug)]
pub struct ParentTopicInfo {
    /// Parent topic name
    #[arg(short = 'p', long = "parentTopic")]
    parent: String,
}

#[derive(clap::Args, Debug)]
pub struct LiteTopicInfo {
    /// Parent topic name
    #[arg(short = 'p', long = "parentTopic")]
    parent: String,
    /// Lite topic name
    #[arg(short = 'l', long = "liteTopic")]
    lite: String,
    /// Show all clientId
    #[arg(short = 's', long = "showClientId")]
    show_clients: bool,
}

#[derive(clap::Args, Debug)]
pub struct LiteClientInfo {
    /// Parent topic name
    #[arg(short = 'p', long = "parentTopic")]
    parent: String,
    /// Consumer group
    #[arg(short = 'g', long = "group")]
    group: String,
    /// Client id
    #[arg(short = 'c', long = "clientId")]
    client_id: String,
    /// Show details
    #[arg(short = 's', long = "showDetail")]
    detail: bool,
}

#[derive(clap::Args, Debug)]
pub struct LiteGroupInfo {
    /// Parent topic name
    #[arg(short = 'p', long = "parentTopic")]
    parent: String,
    /// Consumer group
    #[arg(short = 'g', long = "group")]
    group: String,
    /// query lite topic detail
    #[arg(short = 'l', long = "liteTopic")]
    lite: Option<String>,
    /// topK value of each broker
    #[arg(short = 'k', long = "topK", default_value_t = 20)]
    top_k: i32,
}

#[derive(clap::Args, Debug)]
pub struct TriggerLiteDispatch {
    /// Parent topic name
    #[arg(short = 'p', long = "parentTopic")]
    parent: String,
    /// Consumer group
    #[arg(short = 'g', long = "group")]
    group: String,
    /// clientId (optional)
    #[arg(short = 'c', long = "clientId")]
    client_id: Option<String>,
    /// brokerName (optional)
    #[arg(short = 'b', long = "brokerName")]
    broker_name: Option<String>,
}

/// (broker name, address) of every broker of `topic`'s route: its master, else a slave.
async fn route_brokers(
    admin: &AdminClient,
    topic: &str,
) -> Result<Vec<(String, String)>, ClientError> {
    let route = admin.topic_route(topic).await?;
    Ok(route
        .broker_datas
        .iter()
        .filter_map(|b| {
            let addr = b
                .master_addr()
                .map(str::to_owned)
                .or_else(|| b.broker_addrs.0.values().next().cloned())?;
            Some((b.broker_name.clone(), addr))
        })
        .collect())
}

/// At most `n` characters of `text` (RocketMQ's `frontStringAtLeast`).
fn front(text: &str, n: usize) -> String {
    text.chars().take(n).collect()
}

fn set_text<'a>(items: impl IntoIterator<Item = &'a String>) -> String {
    let items: Vec<&str> = items.into_iter().map(String::as_str).collect();
    format!("[{}]", items.join(", "))
}

pub async fn broker_lite_info(admin: &AdminClient, a: BrokerLiteInfo) -> Result<(), ClientError> {
    let row = |cols: [&str; 9]| {
        crate::outln!(
            "{:<30} {:<17} {:<10} {:<14} {:<20} {:<17} {:<15} {:<18} {:<15}",
            cols[0],
            cols[1],
            cols[2],
            cols[3],
            cols[4],
            cols[5],
            cols[6],
            cols[7],
            cols[8]
        )
    };
    row([
        "#Broker",
        "#Store Type",
        "#Max LMQ",
        "#Current LMQ",
        "#SubscriptionCount",
        "#OrderInfoCount",
        "#CQTableSize",
        "#OffsetTableSize",
        "#eventMapSize",
    ]);
    let addrs = match (&a.broker, &a.cluster) {
        (Some(b), _) => vec![b.clone()],
        (None, Some(cluster)) => {
            let masters = admin.master_addrs(Some(cluster)).await?;
            if masters.is_empty() {
                print!("[error] Make sure the specified clusterName exists or the name server connected to is correct.");
            }
            masters.into_iter().map(|(_, addr)| addr).collect()
        }
        (None, None) => Vec::new(),
    };
    let single = a.broker.is_some();
    for addr in addrs {
        let info = match admin.broker_lite_info(&addr).await {
            Ok(info) => info,
            Err(e) if single => return Err(e),
            Err(_) => {
                crate::outln!("[{addr}] error.");
                continue;
            }
        };
        row([
            &addr,
            &info.store_type,
            &info.max_lmq_num.to_string(),
            &info.current_lmq_num.to_string(),
            &info.lite_subscription_count.to_string(),
            &info.order_info_count.to_string(),
            &info.cq_table_size.to_string(),
            &info.offset_table_size.to_string(),
            &info.event_map_size.to_string(),
        ]);
        if a.detail {
            crate::outln!(
                "Topic Meta: {}",
                serde_json::to_string(&info.topic_meta).unwrap_or_default()
            );
            crate::outln!(
                "Group Meta: {}\n",
                serde_json::to_string(&info.group_meta).unwrap_or_default()
            );
        }
    }
    Ok(())
}

pub async fn parent_topic_info(admin: &AdminClient, a: ParentTopicInfo) -> Result<(), ClientError> {
    crate::outln!("Parent Topic Info: [{}]", a.parent);
    let row = |name: &str, ttl: &str, count: &str, lmqs: &str, groups: &str| {
        crate::outln!("{name:<50} {ttl:<8} {count:<14} {lmqs:<14} {groups:<100} ")
    };
    row("#Broker Name", "#TTL", "#Lite Count", "#LMQ NUM", "#GROUPS");
    for (name, addr) in route_brokers(admin, &a.parent).await? {
        match admin.parent_topic_info(&addr, &a.parent).await {
            Ok(info) => row(
                &front(&name, 40),
                &info.ttl.to_string(),
                &info.lite_topic_count.to_string(),
                &info.lmq_num.to_string(),
                &info
                    .groups
                    .as_ref()
                    .map_or_else(|| "null".to_owned(), set_text),
            ),
            Err(_) => crate::outln!("[{name}] error."),
        }
    }
    Ok(())
}

pub async fn lite_topic_info(admin: &AdminClient, a: LiteTopicInfo) -> Result<(), ClientError> {
    crate::outln!(
        "Lite Topic Info: [{}] [{}] [{}]",
        a.parent,
        a.lite,
        lmq_name(&a.parent, &a.lite)
    );
    let row = |cols: [&str; 6]| {
        crate::outln!(
            "{:<50} {:<14} {:<14} {:<30} {:<12} {:<18} ",
            cols[0],
            cols[1],
            cols[2],
            cols[3],
            cols[4],
            cols[5]
        )
    };
    row([
        "#Broker Name",
        "#MinOffset",
        "#MaxOffset",
        "#LastUpdate",
        "#Sharding",
        "#SubClientCount",
    ]);
    for (name, addr) in route_brokers(admin, &a.parent).await? {
        let info = match admin.lite_topic_info(&addr, &a.parent, &a.lite).await {
            Ok(info) => info,
            Err(_) => {
                crate::outln!("[{name}] error.");
                continue;
            }
        };
        row([
            &front(&name, 40),
            &info.topic_offset.min_offset.to_string(),
            &info.topic_offset.max_offset.to_string(),
            &format_time(info.topic_offset.last_update_timestamp),
            &info.sharding_to_broker.to_string(),
            &info.subscriber.len().to_string(),
        ]);
        if a.show_clients {
            let clients: Vec<String> = info
                .subscriber
                .iter()
                .map(|c| format!("{}@{}", c.client_id, c.group))
                .collect();
            crate::outln!("{}", set_text(&clients));
        }
    }
    Ok(())
}

pub async fn lite_client_info(admin: &AdminClient, a: LiteClientInfo) -> Result<(), ClientError> {
    crate::outln!(
        "Lite Client Info: [{}] [{}] [{}]",
        a.parent,
        a.group,
        a.client_id
    );
    let row = |cols: [&str; 4]| {
        crate::outln!(
            "{:<30} {:<20} {:<30} {:<30} ",
            cols[0],
            cols[1],
            cols[2],
            cols[3]
        )
    };
    row([
        "#Broker",
        "#LiteTopicCount",
        "#LastAccessTime",
        "#LastConsumeTime",
    ]);
    let or_na = |ms: i64| {
        if ms > 0 {
            format_time(ms)
        } else {
            "N/A".to_owned()
        }
    };
    for (name, addr) in route_brokers(admin, &a.parent).await? {
        let info = match admin
            .lite_client_info(&addr, &a.parent, &a.group, &a.client_id)
            .await
        {
            Ok(info) => info,
            Err(_) => {
                crate::outln!("[{name}] error.");
                continue;
            }
        };
        let count = if info.lite_topic_count > 0 {
            info.lite_topic_count.to_string()
        } else {
            "N/A".to_owned()
        };
        row([
            &name,
            &count,
            &or_na(info.last_access_time),
            &or_na(info.last_consume_time),
        ]);
        if let (true, Some(set)) = (a.detail, &info.lite_topic_set) {
            crate::outln!("Lite Topics: {}\n", set_text(set));
        }
    }
    Ok(())
}

fn lag_table(lags: &[LiteLagInfo]) {
    let row = |no: &str, lite: &str, lag: &str, ts: &str| {
        crate::outln!("{no:<6} {lite:<40} {lag:<12} {ts:<30}")
    };
    row("NO", "Lite Topic", "Lag Count", "UnconsumedTimestamp");
    for (i, l) in lags.iter().enumerate() {
        row(
            &(i + 1).to_string(),
            &l.lite_topic,
            &l.lag_count.to_string(),
            &format_time(l.earliest_unconsumed_timestamp),
        );
    }
}

pub async fn lite_group_info(admin: &AdminClient, a: LiteGroupInfo) -> Result<(), ClientError> {
    crate::outln!("Lite Group Info: [{}] [{}]", a.group, a.parent);
    let lite = a.lite.as_deref().filter(|l| !l.is_empty());
    let row = |cols: [&str; 5]| {
        crate::outln!(
            "{:<50} {:<16} {:<16} {:<16} {:<30}",
            cols[0],
            cols[1],
            cols[2],
            cols[3],
            cols[4]
        )
    };
    if lite.is_some() {
        row([
            "#Broker Name",
            "#BrokerOffset",
            "#ConsumeOffset",
            "#LagCount",
            "#LastUpdate",
        ]);
    }
    let mut total = 0i64;
    let mut earliest = -1i64;
    let mut by_count = Vec::new();
    let mut by_time = Vec::new();
    for (name, addr) in route_brokers(admin, &a.parent).await? {
        let info = match admin.lite_group_info(&addr, &a.group, lite, a.top_k).await {
            Ok(info) => info,
            Err(_) => {
                crate::outln!("[{name}] error.");
                continue;
            }
        };
        total += info.total_lag_count.max(0);
        let ts = info.earliest_unconsumed_timestamp;
        if ts > 0 && (earliest < 0 || ts < earliest) {
            earliest = ts;
        }
        by_count.extend(info.lag_count_top_k);
        by_time.extend(info.lag_timestamp_top_k);
        if lite.is_some() {
            match &info.lite_topic_offset_wrapper {
                Some(w) => row([
                    &name,
                    &w.broker_offset.to_string(),
                    &w.consumer_offset.to_string(),
                    &(w.broker_offset - w.consumer_offset).to_string(),
                    &format_time(w.last_timestamp),
                ]),
                None => row([&name, "-", "-", "-", "-"]),
            }
        }
    }
    if lite.is_some() {
        crate::outln!("Total Lag Count: {total}");
        return Ok(());
    }
    by_count.sort_by_key(|l| std::cmp::Reverse(l.lag_count));
    crate::outln!("------TopK by lag count-----");
    crate::outln!("Total Lag Count: {total}");
    lag_table(&by_count);
    by_time.sort_by_key(|l| l.earliest_unconsumed_timestamp);
    crate::outln!("\n------TopK by lag time------");
    if earliest > 0 {
        let ago = (stellmq_remoting::protocol::message::now_ms() - earliest) / 1000;
        crate::outln!("Min Unconsumed Timestamp: {earliest} ({ago} s ago)");
    } else {
        crate::outln!("Min Unconsumed Timestamp: -1 (lag time topK may not enabled)");
    }
    lag_table(&by_time);
    Ok(())
}

pub async fn trigger_lite_dispatch(
    admin: &AdminClient,
    a: TriggerLiteDispatch,
) -> Result<(), ClientError> {
    crate::outln!("Group And Topic Info: [{}] [{}]\n", a.group, a.parent);
    for (name, addr) in route_brokers(admin, &a.parent).await? {
        if a.broker_name.as_ref().is_some_and(|b| *b != name) {
            continue;
        }
        let outcome = admin
            .trigger_lite_dispatch(&addr, &a.group, a.client_id.as_deref())
            .await;
        let status = if outcome.is_ok() {
            "dispatched"
        } else {
            "error"
        };
        crate::outln!("{name:<30} {status:<12}");
    }
    Ok(())
}
