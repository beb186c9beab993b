//! Consumer and producer group commands.
#![allow(clippy::print_stdout, clippy::print_literal)] // CLI output; header rows are literals

use stellmq_client::{AdminClient, ClientError};
use stellmq_remoting::protocol::body::{attribute_changes_as_map, SubscriptionGroupConfig};

use super::Target;

#[derive(clap::Args, Debug)]
pub struct GroupArg {
    #[arg(short = 'g', long = "consumerGroup")]
    group: String,
    /// Broker address to ask (default: a master hosting the group's retry topic).
    #[arg(short = 'b', long = "brokerAddr")]
    broker: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct UpdateSubGroup {
    #[arg(short = 'g', long = "groupName")]
    group: String,
    #[command(flatten)]
    target: Target,
    #[arg(short = 's', long = "consumeEnable", action = clap::ArgAction::Set)]
    consume_enable: Option<bool>,
    #[arg(short = 'm', long = "consumeFromMinEnable", action = clap::ArgAction::Set)]
    consume_from_min_enable: Option<bool>,
    #[arg(short = 'd', long = "consumeBroadcastEnable", action = clap::ArgAction::Set)]
    consume_broadcast_enable: Option<bool>,
    #[arg(short = 'q', long = "retryQueueNums")]
    retry_queue_nums: Option<i32>,
    #[arg(short = 'r', long = "retryMaxTimes")]
    retry_max_times: Option<i32>,
    #[arg(short = 'i', long = "brokerId")]
    broker_id: Option<i64>,
    #[arg(short = 'w', long = "whichBrokerWhenConsumeSlowly")]
    which_broker: Option<i64>,
    #[arg(short = 'a', long = "notifyConsumerIdsChanged", action = clap::ArgAction::Set)]
    notify: Option<bool>,
    /// RocketMQ 5: the group consumes orderly (FIFO POP through the proxy).
    #[arg(short = 'o', long = "consumeMessageOrderly", action = clap::ArgAction::Set)]
    consume_message_orderly: Option<bool>,
    /// RocketMQ 5 group attributes to change: `+priority.factor=50,-key` (long form only,
    /// as in RocketMQ: `-a` is notifyConsumerIdsChanged).
    #[arg(long = "attributes", allow_hyphen_values = true)]
    attributes: Option<String>,
}

pub async fn update_sub_group(admin: &AdminClient, a: UpdateSubGroup) -> Result<(), ClientError> {
    let mut config = SubscriptionGroupConfig::new(&a.group);
    config.consume_enable = a.consume_enable.unwrap_or(config.consume_enable);
    config.consume_from_min_enable = a
        .consume_from_min_enable
        .unwrap_or(config.consume_from_min_enable);
    config.consume_broadcast_enable = a
        .consume_broadcast_enable
        .unwrap_or(config.consume_broadcast_enable);
    config.retry_queue_nums = a.retry_queue_nums.unwrap_or(config.retry_queue_nums);
    config.retry_max_times = a.retry_max_times.unwrap_or(config.retry_max_times);
    config.broker_id = a.broker_id.unwrap_or(config.broker_id);
    config.which_broker_when_consume_slowly = a
        .which_broker
        .unwrap_or(config.which_broker_when_consume_slowly);
    config.notify_consumer_ids_changed_enable = a
        .notify
        .unwrap_or(config.notify_consumer_ids_changed_enable);
    config.consume_message_orderly = a
        .consume_message_orderly
        .unwrap_or(config.consume_message_orderly);
    if let Some(changes) = &a.attributes {
        config.attributes = attribute_changes_as_map(changes).map_err(ClientError::Invalid)?;
    }
    for addr in a.target.addrs(admin).await? {
        admin.create_group(&addr, &config).await?;
        crate::outln!("create subscription group to {addr} success.");
    }
    crate::outln!("{config:?}");
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct DeleteSubGroup {
    #[arg(short = 'g', long = "groupName")]
    group: String,
    #[command(flatten)]
    target: Target,
    /// Remove the group's consumer offsets too (true|false; default false).
    #[arg(short = 'r', long = "removeOffset", default_value_t = false, action = clap::ArgAction::Set)]
    remove_offset: bool,
}

pub async fn delete_sub_group(admin: &AdminClient, a: DeleteSubGroup) -> Result<(), ClientError> {
    for addr in a.target.addrs(admin).await? {
        admin
            .delete_group_with(&addr, &a.group, a.remove_offset)
            .await?;
        crate::outln!(
            "delete subscription group [{}] from broker [{addr}] success.",
            a.group
        );
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct CloneGroupOffset {
    #[arg(short = 's', long = "srcGroup")]
    src: String,
    #[arg(short = 'd', long = "destGroup")]
    dest: String,
    #[arg(short = 't', long = "topic")]
    topic: String,
    /// The source group is offline (do not require it to subscribe to the topic).
    #[arg(short = 'o', long = "offline", default_value_t = false, action = clap::ArgAction::Set)]
    offline: bool,
}

/// Copies a group's offsets of a topic to another group on every master of the topic.
pub async fn clone_group_offset(
    admin: &AdminClient,
    a: CloneGroupOffset,
) -> Result<(), ClientError> {
    for broker in super::masters_of(admin, &a.topic).await? {
        admin
            .clone_group_offset(&broker, &a.src, &a.dest, &a.topic, a.offline)
            .await?;
    }
    crate::outln!(
        "clone group offset success. srcGroup[{}], destGroup=[{}], topic[{}]",
        a.src,
        a.dest,
        a.topic
    );
    Ok(())
}

pub async fn consumer_connection(admin: &AdminClient, a: GroupArg) -> Result<(), ClientError> {
    let addr = match a.broker {
        Some(b) => b,
        None => super::consumer::group_broker(admin, &a.group).await?,
    };
    let c = admin.consumer_connection(&addr, &a.group).await?;
    crate::outln!(
        "{:<4}  {:<40}  {:<24}  {:<12}  {}",
        "#",
        "#ClientId",
        "#ClientAddr",
        "#Language",
        "#Version"
    );
    for (i, conn) in c.connection_set.iter().enumerate() {
        crate::outln!(
            "{:03}   {:<40}  {:<24}  {:<12}  {}",
            i + 1,
            conn.client_id,
            conn.client_addr,
            conn.language,
            conn.version
        );
    }
    crate::outln!("\nBelow is subscription:");
    crate::outln!("{:<4}  {:<48}  {}", "#", "#Topic", "#SubExpression");
    for (i, (topic, sub)) in c.subscription_table.iter().enumerate() {
        crate::outln!("{:03}   {topic:<48}  {}", i + 1, sub.sub_string);
    }
    crate::outln!();
    crate::outln!("ConsumeType: {}", c.consume_type.name());
    crate::outln!("MessageModel: {}", c.message_model.name());
    crate::outln!("ConsumeFromWhere: {}", c.consume_from_where.name());
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct ProducerConnection {
    #[arg(short = 'g', long = "producerGroup")]
    group: String,
    #[arg(short = 't', long = "topic")]
    topic: String,
}

pub async fn producer_connection(
    admin: &AdminClient,
    a: ProducerConnection,
) -> Result<(), ClientError> {
    for addr in super::masters_of(admin, &a.topic).await? {
        let p = admin.producer_connection(&addr, &a.group).await?;
        for (i, conn) in p.connection_set.iter().enumerate() {
            crate::outln!(
                "{:04} {:<32} {:<22} {:<8} {}",
                i + 1,
                conn.client_id,
                conn.client_addr,
                conn.language,
                conn.version
            );
        }
    }
    Ok(())
}
