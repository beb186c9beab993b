//! `clusterList -m`: messages in and out per broker yesterday and today, from each
//! broker's runtime counters; `-i` repeats either view every that many seconds.
#![allow(clippy::print_stdout, clippy::print_literal)] // CLI output; header rows are literals

use std::collections::BTreeMap;

use stellmq_client::{AdminClient, ClientError};

#[derive(clap::Args, Debug)]
pub struct ClusterListArgs {
    /// Print more stats.
    #[arg(short = 'm', long = "moreStats")]
    pub more_stats: bool,
    /// specify intervals numbers, it is in seconds: print again every so often until stopped.
    #[arg(short = 'i', long = "interval")]
    pub interval: Option<u64>,
}

/// (in yesterday, out yesterday, in today, out today), 0 where a counter is missing.
fn day_totals(rt: &BTreeMap<String, String>) -> [i64; 4] {
    let n = |k: &str| rt.get(k).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
    [
        n("msgPutTotalTodayMorning") - n("msgPutTotalYesterdayMorning"),
        n("msgGetTotalTodayMorning") - n("msgGetTotalYesterdayMorning"),
        n("msgPutTotalTodayNow") - n("msgPutTotalTodayMorning"),
        n("msgGetTotalTodayNow") - n("msgGetTotalTodayMorning"),
    ]
}

pub async fn print_more_stats(admin: &AdminClient) -> Result<(), ClientError> {
    let info = admin.cluster_info().await?;
    crate::outln!(
        "{:<16}  {:<32} {:>14} {:>14} {:>14} {:>14}",
        "#Cluster Name",
        "#Broker Name",
        "#InTotalYest",
        "#OutTotalYest",
        "#InTotalToday",
        "#OutTotalToday"
    );
    for (cluster, names) in &info.cluster_addr_table {
        for name in names {
            let Some(broker) = info.broker_addr_table.get(name) else {
                continue;
            };
            for addr in broker.broker_addrs.0.values() {
                let rt = admin.broker_runtime_info(addr).await.unwrap_or_default();
                let [iy, oy, it, ot] = day_totals(&rt);
                crate::outln!("{cluster:<16}  {name:<32} {iy:>14} {oy:>14} {it:>14} {ot:>14}");
            }
        }
    }
    Ok(())
}

/// `clusterList`: once, or every `-i` seconds until the process is stopped.
pub async fn cluster_list(admin: &AdminClient, a: ClusterListArgs) -> Result<(), ClientError> {
    loop {
        if a.more_stats {
            print_more_stats(admin).await?;
        } else {
            super::broker::cluster_list(admin).await?;
        }
        match a.interval {
            Some(secs) if secs > 0 => {
                tokio::time::sleep(std::time::Duration::from_secs(secs)).await;
            }
            _ => return Ok(()),
        }
    }
}
