//! Broker commands.
#![allow(clippy::print_stdout, clippy::print_literal)] // CLI output; header rows are literals

use stellmq_client::{AdminClient, ClientError};

use super::Target;

pub async fn cluster_list(admin: &AdminClient) -> Result<(), ClientError> {
    let info = admin.cluster_info().await?;
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
    for (cluster, names) in &info.cluster_addr_table {
        for name in names {
            let Some(broker) = info.broker_addr_table.get(name) else {
                continue;
            };
            for (id, addr) in &broker.broker_addrs.0 {
                let rt = admin.broker_runtime_info(addr).await.unwrap_or_default();
                let first = |k: &str| {
                    rt.get(k)
                        .and_then(|v| v.split_whitespace().next())
                        .unwrap_or("0")
                        .to_owned()
                };
                let earliest: i64 = rt
                    .get("earliestMessageTimeStamp")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                let hours = if earliest > 0 {
                    (stellmq_client::admin::now_ms() - earliest) as f64 / 3_600_000.0
                } else {
                    0.0
                };
                crate::outln!(
                    "{:<22}  {:<22}  {:<4}  {:<22}  {:<11}  {:<20}  {:<19}  {:<16}  {:<12.2}  {}",
                    cluster,
                    name,
                    id,
                    addr,
                    rt.get("brokerVersionDesc").cloned().unwrap_or_default(),
                    format!("{}(0,0ms)", first("putTps")),
                    format!("{}(0,0ms)", first("getTransferedTps")),
                    rt.get("pageCacheLockTimeMills")
                        .cloned()
                        .unwrap_or_default(),
                    hours,
                    rt.get("commitLogDiskRatio").cloned().unwrap_or_default()
                );
            }
        }
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
