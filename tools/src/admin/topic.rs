//! Topic commands.
#![allow(clippy::print_stdout, clippy::print_literal)] // CLI output; header rows are literals

use stellmq_client::{AdminClient, ClientError};
use stellmq_remoting::protocol::body::{fastjson, perm, TopicConfig};

use super::Target;

#[derive(clap::Args, Debug)]
pub struct TopicArg {
    #[arg(short = 't', long = "topic")]
    pub topic: String,
}

#[derive(clap::Args, Debug)]
pub struct UpdateTopic {
    #[arg(short = 't', long = "topic")]
    topic: String,
    #[command(flatten)]
    target: Target,
    #[arg(short = 'r', long = "readQueueNums", default_value_t = 8)]
    read: i32,
    #[arg(short = 'w', long = "writeQueueNums", default_value_t = 8)]
    write: i32,
    #[arg(short = 'p', long = "perm", default_value_t = 6)]
    perm: i32,
    #[arg(short = 'o', long = "order", default_value_t = false, action = clap::ArgAction::Set)]
    order: bool,
    /// Attribute changes, e.g. `+message.type=FIFO` (RocketMQ 5: NORMAL, FIFO, DELAY,
    /// TRANSACTION, MIXED); `-key` removes one; comma separated.
    #[arg(short = 'a', long = "attributes", allow_hyphen_values = true)]
    attributes: Option<String>,
    /// Is unit topic (true|false): sets topicSysFlag's unit bit.
    #[arg(short = 'u', long = "unit", action = clap::ArgAction::Set)]
    unit: Option<bool>,
    /// Has unit sub (true|false): sets topicSysFlag's unit-sub bit.
    #[arg(short = 's', long = "hasUnitSub", action = clap::ArgAction::Set)]
    has_unit_sub: Option<bool>,
}

/// RocketMQ's `TopicSysFlag`: bit 0 unit topic, bit 1 has unit subscriptions.
fn topic_sys_flag(unit: bool, has_unit_sub: bool) -> i32 {
    i32::from(unit) | (i32::from(has_unit_sub) << 1)
}

pub async fn update_topic(admin: &AdminClient, a: UpdateTopic) -> Result<(), ClientError> {
    let mut config = TopicConfig::with_queues(&a.topic, a.read, a.write, a.perm);
    config.order = a.order;
    config.topic_sys_flag =
        topic_sys_flag(a.unit.unwrap_or(false), a.has_unit_sub.unwrap_or(false));
    let mut order_conf = Vec::new();
    for addr in a.target.addrs(admin).await? {
        admin
            .create_topic_with_attribute_changes(&addr, &config, a.attributes.as_deref())
            .await?;
        crate::outln!("create topic to {addr} success.");
        if a.order {
            if let Some(name) = broker_name_of(admin, &addr).await? {
                order_conf.push(format!("{name}:{}", a.write));
            }
        }
    }
    if a.order && !order_conf.is_empty() {
        let value = order_conf.join(";");
        admin.put_kv("ORDER_TOPIC_CONFIG", &a.topic, &value).await?;
        crate::outln!(
            "set cluster orderConf. isOrder={}, orderConf=[{value}]",
            a.order
        );
    }
    crate::outln!(
        "TopicConfig [topicName={}, readQueueNums={}, writeQueueNums={}, perm={}, topicFilterType=SINGLE_TAG, topicSysFlag={}, order={}]",
        a.topic,
        a.read,
        a.write,
        perm::to_display(a.perm),
        config.topic_sys_flag,
        a.order
    );
    Ok(())
}

async fn broker_name_of(admin: &AdminClient, addr: &str) -> Result<Option<String>, ClientError> {
    let info = admin.cluster_info().await?;
    Ok(info
        .broker_addr_table
        .values()
        .find(|b| b.broker_addrs.0.values().any(|a| a == addr))
        .map(|b| b.broker_name.clone()))
}

#[derive(clap::Args, Debug)]
pub struct DeleteTopic {
    #[arg(short = 't', long = "topic")]
    topic: String,
    #[arg(short = 'c', long = "clusterName")]
    cluster: String,
}

pub async fn delete_topic(admin: &AdminClient, a: DeleteTopic) -> Result<(), ClientError> {
    for (_, addr) in admin.master_addrs(Some(&a.cluster)).await? {
        admin.delete_topic_in_broker(&addr, &a.topic).await?;
    }
    crate::outln!(
        "delete topic [{}] from cluster [{}] success.",
        a.topic,
        a.cluster
    );
    admin.delete_topic_in_namesrv(&a.topic, None).await?;
    crate::outln!("delete topic [{}] from NameServer success.", a.topic);
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct TopicListArgs {
    /// Print cluster, topic and consumer groups.
    #[arg(short = 'c', long = "clusterModel")]
    cluster_model: bool,
}

/// Topics `topicList` asks the name server for at a time.
const TOPIC_PAGE: usize = 5_000;

pub async fn topic_list(admin: &AdminClient, a: TopicListArgs) -> Result<(), ClientError> {
    if !a.cluster_model {
        // A page at a time, printed as it comes: 100,000 topics never sit in one answer.
        let mut after: Option<String> = None;
        loop {
            let (page, more) = admin.topic_page(after.as_deref(), TOPIC_PAGE).await?;
            for t in &page {
                crate::outln!("{t}");
            }
            match page.last() {
                Some(last) if more => after = Some(last.clone()),
                _ => return Ok(()),
            }
        }
    }
    let topics = admin.topic_list().await?;
    crate::outln!(
        "{:<20}  {:<48}  {:<48}",
        "#Cluster Name",
        "#Topic",
        "#Consumer Group"
    );
    for t in topics {
        let cluster = match admin.topic_route(&t).await {
            Ok(route) => route
                .broker_datas
                .first()
                .map(|b| b.cluster.clone())
                .unwrap_or_default(),
            Err(_) => String::new(),
        };
        crate::outln!("{cluster:<20}  {t:<48}  {:<48}", "");
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct TopicRouteArgs {
    #[arg(short = 't', long = "topic")]
    topic: String,
    /// Use list format to print data.
    #[arg(short = 'l', long = "list")]
    list: bool,
}

pub async fn topic_route(admin: &AdminClient, a: TopicRouteArgs) -> Result<(), ClientError> {
    let route = admin.topic_route(&a.topic).await?;
    if !a.list {
        crate::outln!(
            "{}",
            fastjson::encode_with(&route, fastjson::Style::FastjsonPretty)
        );
        return Ok(());
    }
    print_route_list(&route);
    Ok(())
}

/// `topicRoute -l`: one row per broker (sorted by name) and the totals.
fn print_route_list(route: &stellmq_remoting::protocol::body::TopicRouteData) {
    let row = |a: &str, b: &str, c: &str, d: &str, e: &str, f: &str| {
        crate::outln!("{a:<45} {b:<32} {c:<50} {d:<10} {e:<11} {f:<5}");
    };
    row(
        "#ClusterName",
        "#BrokerName",
        "#BrokerAddrs",
        "#ReadQueue",
        "#WriteQueue",
        "#Perm",
    );
    let mut brokers: Vec<_> = route.broker_datas.iter().collect();
    brokers.sort_by(|x, y| x.broker_name.cmp(&y.broker_name));
    let (mut read, mut write, mut count) = (0, 0, 0);
    for b in brokers {
        let Some(q) = route
            .queue_datas
            .iter()
            .find(|q| q.broker_name == b.broker_name)
        else {
            continue;
        };
        read += q.read_queue_nums;
        write += q.write_queue_nums;
        count += 1;
        let addrs: Vec<String> = b
            .broker_addrs
            .0
            .iter()
            .map(|(id, a)| format!("{id}={a}"))
            .collect();
        let addrs = format!("{{{}}}", addrs.join(", "));
        let (r, w, p) = (
            q.read_queue_nums.to_string(),
            q.write_queue_nums.to_string(),
            q.perm.to_string(),
        );
        row(&b.cluster, &b.broker_name, &addrs, &r, &w, &p);
    }
    crate::outln!("{}", "-".repeat(158));
    row(
        "Total:",
        &count.to_string(),
        "",
        &read.to_string(),
        &write.to_string(),
        "",
    );
}

pub async fn topic_status(admin: &AdminClient, a: TopicArg) -> Result<(), ClientError> {
    let route = admin.topic_route(&a.topic).await?;
    crate::outln!(
        "{:<32}  {:<4}  {:<20}  {:<20}  {}",
        "#Broker Name",
        "#QID",
        "#Min Offset",
        "#Max Offset",
        "#Last Updated"
    );
    for broker in &route.broker_datas {
        let Some(addr) = broker.master_addr() else {
            continue;
        };
        let stats = admin.topic_stats(addr, &a.topic).await?;
        for (mq, offsets) in &stats.offset_table.0 {
            crate::outln!(
                "{:<32}  {:<4}  {:<20}  {:<20}  {}",
                mq.broker_name,
                mq.queue_id,
                offsets.min_offset,
                offsets.max_offset,
                super::format_time(offsets.last_update_timestamp)
            );
        }
    }
    Ok(())
}

pub async fn topic_cluster_list(admin: &AdminClient, a: TopicArg) -> Result<(), ClientError> {
    let route = admin.topic_route(&a.topic).await?;
    let mut clusters: Vec<String> = route
        .broker_datas
        .iter()
        .map(|b| b.cluster.clone())
        .collect();
    clusters.sort();
    clusters.dedup();
    for c in clusters {
        crate::outln!("{c}");
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct UpdateTopicPerm {
    #[arg(short = 't', long = "topic")]
    topic: String,
    #[command(flatten)]
    target: Target,
    #[arg(short = 'p', long = "perm")]
    perm: i32,
}

pub async fn update_topic_perm(admin: &AdminClient, a: UpdateTopicPerm) -> Result<(), ClientError> {
    if ![2, 4, 6].contains(&a.perm) {
        return Err(ClientError::Invalid(
            "perm must be 2 (W), 4 (R) or 6 (RW)".into(),
        ));
    }
    for addr in a.target.addrs(admin).await? {
        let all = admin.all_topic_config(&addr).await?;
        let mut config = all
            .topic_config_table
            .get(&a.topic)
            .cloned()
            .ok_or_else(|| ClientError::TopicNotExist(a.topic.clone()))?;
        let old = config.perm;
        config.perm = a.perm;
        admin.create_topic(&addr, &config).await?;
        crate::outln!(
            "update topic perm from {old} to {} in {addr} success.",
            a.perm
        );
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct UpdateOrderConf {
    #[arg(short = 't', long = "topic")]
    topic: String,
    /// Order conf value, e.g. broker-a:4;broker-b:4.
    #[arg(short = 'v', long = "orderConf")]
    value: Option<String>,
    /// put, get or delete.
    #[arg(short = 'm', long = "method")]
    method: String,
}

pub async fn update_order_conf(admin: &AdminClient, a: UpdateOrderConf) -> Result<(), ClientError> {
    match a.method.as_str() {
        "get" => match admin.get_kv("ORDER_TOPIC_CONFIG", &a.topic).await? {
            Some(v) => crate::outln!(
                "get orderConf success. topic=[{}], orderConf=[{v}] ",
                a.topic
            ),
            None => crate::outln!("get orderConf success. topic=[{}], orderConf=[] ", a.topic),
        },
        "put" => {
            let value = a
                .value
                .ok_or_else(|| ClientError::Invalid("put needs -v orderConf".into()))?;
            admin.put_kv("ORDER_TOPIC_CONFIG", &a.topic, &value).await?;
            crate::outln!(
                "update orderConf success. topic=[{}], orderConf=[{value}]",
                a.topic
            );
        }
        "delete" => {
            admin.delete_kv("ORDER_TOPIC_CONFIG", &a.topic).await?;
            crate::outln!("delete orderConf success. topic=[{}]", a.topic);
        }
        other => {
            return Err(ClientError::Invalid(format!(
                "unknown method {other}: use put, get or delete"
            )))
        }
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct QueryCq {
    #[arg(short = 't', long = "topic")]
    topic: String,
    #[arg(short = 'q', long = "queue")]
    queue_id: i32,
    #[arg(short = 'i', long = "index")]
    index: i64,
    #[arg(short = 'c', long = "count", default_value_t = 10)]
    count: i32,
    /// Broker address (default: every master of the topic).
    #[arg(short = 'b', long = "broker")]
    broker: Option<String>,
    /// Consumer group whose subscription evaluates each entry.
    #[arg(short = 'g', long = "consumer")]
    group: Option<String>,
}

/// `queryCq`: raw ConsumeQueue entries of one queue.
pub async fn query_cq(admin: &AdminClient, a: QueryCq) -> Result<(), ClientError> {
    let brokers = match a.broker {
        Some(broker) => vec![broker],
        None => super::masters_of(admin, &a.topic).await?,
    };
    for broker in brokers {
        let body = admin
            .query_consume_queue(
                &broker,
                (&a.topic, a.queue_id),
                a.index,
                a.count,
                a.group.as_deref(),
            )
            .await?;
        crate::outln!(
            "queue: {}@{}, broker: {}, minQueueIndex: {}, maxQueueIndex: {}",
            a.topic,
            a.queue_id,
            broker,
            body.min_queue_index,
            body.max_queue_index
        );
        if let Some(sub) = &body.subscription_data {
            crate::outln!(
                "subscription: {} ({})",
                sub.sub_string,
                sub.expression_type.as_deref().unwrap_or("TAG")
            );
        }
        for (i, entry) in body.queue_data.iter().enumerate() {
            crate::outln!(
                "idx: {}, physicOffset: {}, physicSize: {}, tagsCode: {}, eval: {}",
                a.index + i as i64,
                entry.physic_offset,
                entry.physic_size,
                entry.tags_code,
                entry.eval
            );
        }
    }
    Ok(())
}
