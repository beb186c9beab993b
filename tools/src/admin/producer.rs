//! `producer`: every producer instance connected to a broker, by group
//! (GET_ALL_PRODUCER_INFO).
#![allow(clippy::print_stdout)] // CLI output

use stellmq_client::{AdminClient, ClientError};

#[derive(clap::Args, Debug)]
pub struct ProducerArgs {
    /// Broker address ip:port.
    #[arg(short = 'b', long = "broker")]
    broker: String,
}

pub async fn producer(admin: &AdminClient, a: ProducerArgs) -> Result<(), ClientError> {
    let table = admin.all_producer_info(&a.broker).await?;
    for (group, instances) in &table.data {
        if instances.is_empty() {
            crate::outln!("producer group ({group}) instances are empty");
            continue;
        }
        for p in instances {
            crate::outln!(
                "producer group ({group}) instance : clientId={},remoteIP={}, language={}, version={}, lastUpdateTimestamp={}",
                p.client_id,
                p.remote_ip,
                p.language,
                p.version,
                p.last_update_timestamp
            );
        }
    }
    Ok(())
}
