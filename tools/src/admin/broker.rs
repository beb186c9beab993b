//! Broker commands.
#![allow(clippy::print_stdout, clippy::print_literal)] // CLI output; header rows are literals

use stellmq_client::{AdminClient, ClientError};

use super::Target;

/// `clusterList [-m] [-c cluster]`.
#[derive(clap::Args, Debug, Clone)]
pub struct ClusterListArgs {
    /// Print more stats: messages in and out yesterday and today.
    #[arg(short = 'm', long = "moreStats")]
    pub more_stats: bool,
    /// Only this cluster.
    #[arg(short = 'c', long = "clusterName")]
    pub cluster: Option<String>,
    /// Print again every this many seconds, until stopped.
    #[arg(short = 'i', long = "interval")]
    pub interval: Option<u64>,
}

/// (cluster, broker name, broker id, address) of every broker, clusters and names sorted.
async fn brokers(
    admin: &AdminClient,
    only: Option<&str>,
) -> Result<Vec<(String, String, i64, String)>, ClientError> {
    let info = admin.cluster_info().await?;
    let mut all = Vec::new();
    for (cluster, names) in &info.cluster_addr_table {
        if only.is_some_and(|c| c != cluster) {
            continue;
        }
        let mut names: Vec<&String> = names.iter().collect();
        names.sort();
        for name in names {
            let Some(broker) = info.broker_addr_table.get(name) else {
                continue;
            };
            for (id, addr) in &broker.broker_addrs.0 {
                all.push((cluster.clone(), name.clone(), *id, addr.clone()));
            }
        }
    }
    Ok(all)
}

/// `clusterList`: once, or every `-i` seconds until the process is stopped.
pub async fn cluster_list(admin: &AdminClient, a: ClusterListArgs) -> Result<(), ClientError> {
    loop {
        cluster_list_once(admin, &a).await?;
        match a.interval {
            Some(secs) if secs > 0 => {
                tokio::time::sleep(std::time::Duration::from_secs(secs)).await
            }
            _ => return Ok(()),
        }
    }
}

async fn cluster_list_once(admin: &AdminClient, a: &ClusterListArgs) -> Result<(), ClientError> {
    let brokers = brokers(admin, a.cluster.as_deref()).await?;
    if a.more_stats {
        return cluster_more_stats(admin, &brokers).await;
    }
    crate::outln!(
        "{:<22}  {:<22}  {:<4}  {:<22}  {:<11}  {:<20}  {:<19}  {:<16}  {:<12}  {}",
        "#Cluster Name",
        "#Broker Name",
        "#BID",
        "#Addr",
        "#Version",
        "#InTPS(LOAD)",
        "#OutTPS(LOAD)",
        "#PCWait(ms)",
        "#Hour",
        "#SPACE"
    );
    for (cluster, name, id, addr) in &brokers {
        let rt = admin.broker_runtime_info(addr).await.unwrap_or_default();
        let get = |k: &str| rt.get(k).cloned().unwrap_or_else(|| "0".to_owned());
        let first = |k: &str| -> f64 {
            rt.get(k)
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0)
        };
        let earliest: i64 = get("earliestMessageTimeStamp").parse().unwrap_or(0);
        let hours = if earliest > 0 {
            (stellmq_client::admin::now_ms() - earliest) as f64 / 3_600_000.0
        } else {
            0.0
        };
        let load = |lane: &str| {
            format!(
                "({},{}ms)",
                get(&format!("{lane}ThreadPoolQueueSize")),
                get(&format!("{lane}ThreadPoolQueueHeadWaitTimeMills"))
            )
        };
        crate::outln!(
            "{:<22}  {:<22}  {:<4}  {:<22}  {:<11}  {:<20}  {:<19}  {:<16}  {:<12.2}  {}",
            cluster,
            name,
            id,
            addr,
            get("brokerVersionDesc"),
            format!("{:9.2}{}", first("putTps"), load("send")),
            format!("{:9.2}{}", first("getTransferredTps"), load("pull")),
            get("pageCacheLockTimeMills"),
            hours,
            get("commitLogDiskRatio")
        );
    }
    Ok(())
}

/// `clusterList -m`: messages in and out yesterday and so far today, as RocketMQ computes
/// them from the runtime info's morning totals.
async fn cluster_more_stats(
    admin: &AdminClient,
    brokers: &[(String, String, i64, String)],
) -> Result<(), ClientError> {
    crate::outln!(
        "{:<16}  {:<32} {:>14} {:>14} {:>14} {:>14}",
        "#Cluster Name",
        "#Broker Name",
        "#InTotalYest",
        "#OutTotalYest",
        "#InTotalToday",
        "#OutTotalToday"
    );
    for (cluster, name, _, addr) in brokers {
        let rt = admin.broker_runtime_info(addr).await.unwrap_or_default();
        let n = |k: &str| -> i64 { rt.get(k).and_then(|v| v.parse().ok()).unwrap_or(0) };
        crate::outln!(
            "{:<16}  {:<32} {:>14} {:>14} {:>14} {:>14}",
            cluster,
            name,
            n("msgPutTotalTodayMorning") - n("msgPutTotalYesterdayMorning"),
            n("msgGetTotalTodayMorning") - n("msgGetTotalYesterdayMorning"),
            n("msgPutTotalTodayNow") - n("msgPutTotalTodayMorning"),
            n("msgGetTotalTodayNow") - n("msgGetTotalTodayMorning")
        );
    }
    Ok(())
}

pub async fn broker_status(admin: &AdminClient, t: Target) -> Result<(), ClientError> {
    for addr in t.addrs(admin).await? {
        for (k, v) in admin.broker_runtime_info(&addr).await? {
            crate::outln!("{k:<32}: {v}");
        }
    }
    Ok(())
}

/// One line per slave on a master (acknowledged offset, lag), or the master a slave follows.
pub async fn ha_status(admin: &AdminClient, t: Target) -> Result<(), ClientError> {
    for addr in t.addrs(admin).await? {
        let info = admin.broker_runtime_info(&addr).await?;
        let get = |k: &str| info.get(k).cloned().unwrap_or_default();
        let max: i64 = get("commitLogMaxOffset").parse().unwrap_or(0);
        crate::outln!("============{addr}============");
        if let Some(master) = info.get("haMasterAddr") {
            crate::outln!("#Role SLAVE  #MasterHaAddr {master}");
            crate::outln!(
                "#MasterOffset {}  #LocalMaxOffset {max}  #FallBehindBytes {}",
                get("haMasterOffset"),
                get("haSlaveFallBehindBytes")
            );
            continue;
        }
        crate::outln!(
            "#Role MASTER  #CommitLogMaxOffset {max}  #Slaves {}",
            get("haSlaveCount")
        );
        crate::outln!("{:<24} {:>20} {:>16}", "#SlaveAddr", "#AckOffset", "#Diff");
        for entry in get("haSlaves").split(';').filter(|e| !e.is_empty()) {
            let (slave, acked) = entry.split_once('=').unwrap_or((entry, "0"));
            let acked: i64 = acked.parse().unwrap_or(0);
            crate::outln!("{slave:<24} {acked:>20} {:>16}", max - acked);
        }
    }
    Ok(())
}

pub async fn get_broker_config(admin: &AdminClient, t: Target) -> Result<(), ClientError> {
    for addr in t.addrs(admin).await? {
        crate::outln!("============{addr}============");
        for line in admin.broker_config(&addr).await?.lines() {
            if let Some((k, v)) = line.split_once('=') {
                crate::outln!("{k:<50}=  {v}");
            }
        }
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct UpdateBrokerConfig {
    #[arg(short = 'k', long = "key")]
    key: String,
    #[arg(short = 'v', long = "value")]
    value: String,
    #[command(flatten)]
    target: Target,
}

pub async fn update_broker_config(
    admin: &AdminClient,
    a: UpdateBrokerConfig,
) -> Result<(), ClientError> {
    for addr in a.target.addrs(admin).await? {
        admin.update_broker_config(&addr, &a.key, &a.value).await?;
        crate::outln!("update broker config success, {addr}");
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct ClusterRt {
    /// Messages per broker per round.
    #[arg(short = 'a', long = "amount", default_value_t = 100)]
    amount: u32,
    /// Body size in bytes.
    #[arg(short = 's', long = "size", default_value_t = 128)]
    size: usize,
    #[arg(short = 'c', long = "cluster")]
    cluster: Option<String>,
    /// Seconds between rounds.
    #[arg(short = 'i', long = "interval", default_value_t = 10)]
    interval: u64,
    /// print as tlog (`time|machineRoom|cluster|broker|rt`) | default false.
    #[arg(short = 'p', long = "printLog", default_value_t = false, action = clap::ArgAction::Set)]
    print_log: bool,
    /// machine room name | default noname.
    #[arg(short = 'm', long = "machineRoom", default_value = "noname")]
    machine_room: String,
    /// Rounds to run (RocketMQ runs until stopped; 0 does the same here).
    #[arg(long = "rounds", default_value_t = 1)]
    rounds: u64,
}

/// Send round trip per broker, through the topic named like the broker (a system topic).
pub async fn cluster_rt(admin: &AdminClient, a: ClusterRt) -> Result<(), ClientError> {
    let info = admin.cluster_info().await?;
    let body = bytes::Bytes::from(vec![b'x'; a.size]);
    if !a.print_log {
        crate::outln!(
            "{:<24}  {:<24}  {:<8}  {:<16}  {}",
            "#Cluster Name",
            "#Broker Name",
            "#RT",
            "#successCount",
            "#failCount"
        );
    }
    let mut round = 0;
    while a.rounds == 0 || round < a.rounds {
        for (cluster, names) in &info.cluster_addr_table {
            if a.cluster.as_ref().is_some_and(|c| c != cluster) {
                continue;
            }
            for name in names {
                let Some(addr) = info
                    .broker_addr_table
                    .get(name)
                    .and_then(|b| b.master_addr())
                else {
                    continue;
                };
                let (mut ok, mut failed, mut total) = (0u32, 0u32, std::time::Duration::ZERO);
                for _ in 0..a.amount {
                    let started = std::time::Instant::now();
                    match admin.send(addr, name, 0, body.clone(), String::new()).await {
                        Ok(_) => {
                            ok += 1;
                            total += started.elapsed();
                        }
                        Err(_) => failed += 1,
                    }
                }
                let rt = if ok > 0 {
                    total.as_secs_f64() * 1000.0 / f64::from(ok)
                } else {
                    0.0
                };
                if a.print_log {
                    let now = super::format_time(stellmq_client::admin::now_ms());
                    let room = &a.machine_room;
                    crate::outln!("{now}|{room}|{cluster}|{name}|{rt:.0}");
                } else {
                    crate::outln!("{cluster:<24}  {name:<24}  {rt:<8.2}  {ok:<16}  {failed}");
                }
            }
        }
        round += 1;
        if a.rounds == 0 || round < a.rounds {
            tokio::time::sleep(std::time::Duration::from_secs(a.interval)).await;
        }
    }
    Ok(())
}
