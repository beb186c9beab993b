//! Store housekeeping on brokers: `deleteExpiredCommitLog`, `cleanExpiredCQ` and
//! `cleanUnusedTopic`, on one broker (`-b`), a cluster's masters (`-c`) or every master.
#![allow(clippy::print_stdout)] // CLI output

use stellmq_client::{AdminClient, ClientError};

#[derive(clap::Args, Debug)]
pub struct HousekeepingTarget {
    /// Broker address ip:port.
    #[arg(short = 'b', long = "brokerAddr")]
    broker: Option<String>,
    /// Cluster name (default: every cluster).
    #[arg(short = 'c', long = "cluster")]
    cluster: Option<String>,
}

impl HousekeepingTarget {
    async fn addrs(&self, admin: &AdminClient) -> Result<Vec<String>, ClientError> {
        if let Some(b) = &self.broker {
            return Ok(vec![b.clone()]);
        }
        let masters = admin.master_addrs(self.cluster.as_deref()).await?;
        Ok(masters.into_iter().map(|(_, addr)| addr).collect())
    }
}

/// Which housekeeping a command runs.
#[derive(Debug, Clone, Copy)]
pub enum Housekeeping {
    DeleteExpiredCommitLog,
    CleanExpiredConsumeQueue,
    CleanUnusedTopic,
}

/// Runs `what` on each target broker; prints `success` as RocketMQ's tools do (`false`
/// when there was no broker to ask).
pub async fn run(
    admin: &AdminClient,
    what: Housekeeping,
    target: HousekeepingTarget,
) -> Result<(), ClientError> {
    let addrs = target.addrs(admin).await?;
    for addr in &addrs {
        match what {
            Housekeeping::DeleteExpiredCommitLog => admin.delete_expired_commit_log(addr).await?,
            Housekeeping::CleanExpiredConsumeQueue => {
                admin.clean_expired_consume_queue(addr).await?
            }
            Housekeeping::CleanUnusedTopic => admin.clean_unused_topic(addr).await?,
        }
    }
    crate::outln!("{}", if addrs.is_empty() { "false" } else { "success" });
    Ok(())
}
