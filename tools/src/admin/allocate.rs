//! `allocateMQ`: how a topic's queues would be split, averagely, among the given client ids
//! (RocketMQ prints the `RebalanceResult` as JSON).
#![allow(clippy::print_stdout)] // CLI output

use std::collections::BTreeMap;

use stellmq_client::consumer::allocate::AllocateStrategy;
use stellmq_client::{AdminClient, ClientError};
use stellmq_remoting::protocol::body::{fastjson, perm, MessageQueue};

#[derive(clap::Args, Debug)]
pub struct AllocateMq {
    #[arg(short = 't', long = "topic")]
    topic: String,
    /// Client ids (or IPs), comma separated.
    #[arg(short = 'i', long = "ipList")]
    ips: String,
}

#[derive(serde::Serialize)]
struct RebalanceResult {
    result: BTreeMap<String, Vec<MessageQueue>>,
}

pub async fn allocate_mq(admin: &AdminClient, a: AllocateMq) -> Result<(), ClientError> {
    let route = admin.topic_route(&a.topic).await?;
    let mut queues: Vec<MessageQueue> = route
        .queue_datas
        .iter()
        .filter(|q| q.perm & perm::READ != 0)
        .flat_map(|q| {
            (0..q.read_queue_nums).map(|queue_id| MessageQueue {
                topic: a.topic.clone(),
                broker_name: q.broker_name.clone(),
                queue_id,
            })
        })
        .collect();
    queues.sort();
    let ips: Vec<String> = a.ips.split(',').map(str::to_owned).collect();
    let result = ips
        .iter()
        .map(|ip| {
            let mine = AllocateStrategy::Averagely
                .allocate(ip, &queues, &ips)
                .map_err(|e| ClientError::Invalid(e.to_string()))?;
            Ok((ip.clone(), mine))
        })
        .collect::<Result<_, ClientError>>()?;
    let text = String::from_utf8_lossy(&fastjson::encode(&RebalanceResult { result })).into_owned();
    crate::outln!("{text}");
    Ok(())
}
