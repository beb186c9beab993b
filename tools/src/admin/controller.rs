//! Controller commands (RocketMQ 5): getControllerMetaData, getSyncStateSet, electMaster,
//! cleanBrokerMetadata, getControllerConfig and updateControllerConfig. They talk to the
//! controllers named by `-a` (`;`-separated) and need a name server only for `-c` of
//! getSyncStateSet.
#![allow(clippy::print_stdout)] // CLI output

use std::sync::Arc;
use std::time::Duration;

use stellmq_client::{AdminClient, ClientError};
use stellmq_controller_client::{parse_controller_addrs, ControllerClient, ControllerClientError};
use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_remoting::protocol::body::{
    fastjson, ElectMasterResponseBody, EpochEntryCache, ReplicaIdentity,
};
use stellmq_remoting::protocol::headers::*;
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};

use super::Session;

#[derive(clap::Args, Debug)]
pub struct ControllerAddr {
    /// Controller address list, eg: 192.168.0.1:9878;192.168.0.2:9878
    #[arg(short = 'a', long = "controllerAddress")]
    controller: String,
}

#[derive(clap::Args, Debug)]
pub struct GetSyncStateSet {
    /// the address of controller
    #[arg(short = 'a', long = "controllerAddress")]
    controller: String,
    /// which cluster
    #[arg(short = 'c', long = "clusterName")]
    cluster: Option<String>,
    /// which broker to fetch
    #[arg(short = 'b', long = "brokerName")]
    broker_name: Option<String>,
    /// the interval(second) of get info
    #[arg(short = 'i', long = "interval")]
    interval: Option<u64>,
}

#[derive(clap::Args, Debug)]
pub struct ElectMaster {
    /// The address of controller
    #[arg(short = 'a', long = "controllerAddress")]
    controller: String,
    /// The id of the broker which requires to become master
    #[arg(short = 'b', long = "brokerId", short_alias = 'i')]
    broker_id: i64,
    /// The broker name of the replicas that require to be manipulated (RocketMQ's -bn)
    #[arg(long = "brokerName")]
    broker_name: String,
    /// the clusterName of broker
    #[arg(short = 'c', long = "clusterName")]
    cluster: String,
}

#[derive(clap::Args, Debug)]
pub struct CleanBrokerMetadata {
    /// The address of controller
    #[arg(short = 'a', long = "controllerAddress")]
    controller: String,
    /// The brokerController id list which requires to clean metadata. eg: 1;2;3
    #[arg(short = 'b', long = "brokerControllerIdsToClean")]
    ids: Option<String>,
    /// The broker name of the replicas that require to be manipulated (RocketMQ's -bn)
    #[arg(long = "brokerName")]
    broker_name: String,
    /// The clusterName of broker
    #[arg(short = 'c', long = "clusterName")]
    cluster: Option<String>,
    /// Whether clean up living brokers,default value is false
    #[arg(short = 'l', long = "cleanLivingBroker")]
    clean_living: bool,
}

#[derive(clap::Args, Debug)]
pub struct UpdateControllerConfig {
    /// Controller address list, eg: 192.168.0.1:9878;192.168.0.2:9878
    #[arg(short = 'a', long = "controllerAddress")]
    controller: String,
    /// config key
    #[arg(short = 'k', long = "key")]
    key: String,
    /// config value
    #[arg(short = 'v', long = "value")]
    value: String,
}

fn error(e: ControllerClientError) -> ClientError {
    ClientError::Invalid(e.to_string())
}

fn client(addrs: &str) -> Result<ControllerClient, ClientError> {
    let remoting = Arc::new(RemotingClient::new(ClientConfig::default()));
    ControllerClient::new(remoting, addrs, Duration::from_secs(5)).map_err(error)
}

pub async fn get_controller_metadata(a: ControllerAddr) -> Result<(), ClientError> {
    let client = client(&a.controller)?;
    let mut last = None;
    for addr in client.addrs() {
        match client.metadata_of(addr).await {
            Ok(meta) => {
                let show = |v: Option<String>| v.unwrap_or_else(|| "null".into());
                print!("\n#ControllerGroup\t{}", show(meta.group));
                print!("\n#ControllerLeaderId\t{}", show(meta.controller_leader_id));
                print!(
                    "\n#ControllerLeaderAddress\t{}",
                    show(meta.controller_leader_address)
                );
                for peer in meta
                    .peers
                    .unwrap_or_default()
                    .split(';')
                    .filter(|p| !p.is_empty())
                {
                    print!("\n#Peer:\t{peer}");
                }
                println!();
                return Ok(());
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.map_or_else(
        || ClientError::Invalid("no controller address".into()),
        error,
    ))
}

fn replica_text(r: &ReplicaIdentity) -> String {
    format!(
        "ReplicaIdentity{{brokerName='{}', brokerId={}, brokerAddress='{}', alive={}}}",
        r.broker_name, r.broker_id, r.broker_address, r.alive
    )
}

async fn broker_names(a: &GetSyncStateSet, session: &Session) -> Result<Vec<String>, ClientError> {
    if let Some(name) = &a.broker_name {
        return Ok(vec![name.clone()]);
    }
    let Some(cluster) = &a.cluster else {
        return Err(ClientError::Invalid(
            "give -b brokerName or -c clusterName".into(),
        ));
    };
    if session.namesrv.is_empty() {
        return Err(ClientError::NoNameServer);
    }
    let admin = AdminClient::connect(&session.namesrv, &session.tls, session.credentials.clone())?;
    let info = admin.cluster_info().await;
    admin.shutdown().await;
    Ok(info?
        .cluster_addr_table
        .get(cluster)
        .map(|s| s.iter().cloned().collect())
        .unwrap_or_default())
}

pub async fn get_sync_state_set(a: GetSyncStateSet, session: &Session) -> Result<(), ClientError> {
    let names = broker_names(&a, session).await?;
    let client = client(&a.controller)?;
    loop {
        let data = client.get_sync_state_data(&names).await.map_err(error)?;
        for (name, info) in &data.replicas_info_table {
            print!(
                "\n#brokerName\t{name}\n#MasterBrokerId\t{}\n#MasterAddr\t{}\n#MasterEpoch\t{}\n#SyncStateSetEpoch\t{}\n#SyncStateSetNums\t{}\n",
                info.master_broker_id.map_or("null".into(), |m| m.to_string()),
                info.master_address.as_deref().unwrap_or("null"),
                info.master_epoch,
                info.sync_state_set_epoch,
                info.in_sync_replicas.len()
            );
            for r in &info.in_sync_replicas {
                print!("\nInSyncReplica:\t{}\n", replica_text(r));
            }
            for r in &info.not_in_sync_replicas {
                print!("\nNotInSyncReplica:\t{}\n", replica_text(r));
            }
        }
        match a.interval {
            Some(secs) if secs > 0 => tokio::time::sleep(Duration::from_secs(secs)).await,
            _ => return Ok(()),
        }
    }
}

pub async fn elect_master(a: ElectMaster) -> Result<(), ClientError> {
    let client = client(&a.controller)?;
    let header = ElectMasterRequestHeader {
        cluster_name: Some(a.cluster.clone()),
        broker_name: a.broker_name.clone(),
        broker_id: Some(a.broker_id),
        designate_elect: Some(true),
        invoke_time: None,
    };
    let response = client.elect_master(&header).await.map_err(error)?;
    if response.command.code != ResponseCode::SUCCESS.as_i32() {
        return Err(ClientError::Invalid(format!(
            "elect master failed: {} ({})",
            response.command.remark_str(),
            response.code().map_or("UNKNOWN", |c| c.name())
        )));
    }
    let meta: ElectMasterResponseHeader = response.header()?;
    let show = |v: Option<String>| v.unwrap_or_else(|| "null".into());
    print!("\n#ClusterName\t{}", a.cluster);
    print!("\n#BrokerName\t{}", a.broker_name);
    print!("\n#BrokerMasterAddr\t{}", show(meta.master_address));
    print!(
        "\n#MasterEpoch\t{}",
        show(meta.master_epoch.map(|e| e.to_string()))
    );
    println!(
        "\n#SyncStateSetEpoch\t{}",
        show(meta.sync_state_set_epoch.map(|e| e.to_string()))
    );
    let body: ElectMasterResponseBody = fastjson::decode(&response.command.body)?;
    if let Some(group) = body.broker_member_group {
        for (id, addr) in &group.broker_addrs.0 {
            println!("\t#Broker\t{id}\t{addr}");
        }
    }
    Ok(())
}

pub async fn clean_broker_metadata(a: CleanBrokerMetadata) -> Result<(), ClientError> {
    let client = client(&a.controller)?;
    let header = CleanControllerBrokerDataRequestHeader {
        cluster_name: a.cluster,
        broker_name: a.broker_name.clone(),
        broker_controller_ids_to_clean: a.ids,
        is_clean_living_broker: Some(a.clean_living),
        invoke_time: None,
    };
    client.clean_broker_data(&header).await.map_err(error)?;
    println!(
        "clear broker {} metadata from controller success! ",
        a.broker_name
    );
    Ok(())
}

/// Each controller's own configuration (not replicated: RocketMQ keeps it per controller).
pub async fn get_controller_config(a: ControllerAddr) -> Result<(), ClientError> {
    let remoting = RemotingClient::new(ClientConfig::default());
    for addr in parse_controller_addrs(&a.controller) {
        let request =
            RemotingCommand::request(RequestCode::GET_CONTROLLER_CONFIG, ExtFields::new());
        let response = remoting
            .invoke_ok(&addr, request, Duration::from_secs(5))
            .await?;
        println!("============{addr}============");
        for line in String::from_utf8_lossy(&response.body).lines() {
            if let Some((k, v)) = line.split_once('=') {
                println!("{k:<50}=  {v}");
            }
        }
    }
    remoting.shutdown().await;
    Ok(())
}

pub async fn update_controller_config(a: UpdateControllerConfig) -> Result<(), ClientError> {
    let remoting = RemotingClient::new(ClientConfig::default());
    let addrs = parse_controller_addrs(&a.controller);
    for addr in &addrs {
        let request =
            RemotingCommand::request(RequestCode::UPDATE_CONTROLLER_CONFIG, ExtFields::new())
                .with_body(format!("{}={}", a.key, a.value).into_bytes());
        remoting
            .invoke_ok(addr, request, Duration::from_secs(5))
            .await?;
    }
    remoting.shutdown().await;
    println!(
        "update controller config success!{addrs:?}\n{} : {}",
        a.key, a.value
    );
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct GetBrokerEpoch {
    /// which cluster
    #[arg(short = 'c', long = "clusterName")]
    cluster: Option<String>,
    /// which broker to fetch
    #[arg(short = 'b', long = "brokerName")]
    broker_name: Option<String>,
    /// the interval(second) of get info
    #[arg(short = 'i', long = "interval")]
    interval: Option<u64>,
}

/// The addresses (every broker id) of `-b brokerName` or of every broker set of `-c`.
async fn epoch_broker_addrs(
    admin: &AdminClient,
    a: &GetBrokerEpoch,
) -> Result<Vec<String>, ClientError> {
    let info = admin.cluster_info().await?;
    let names: Vec<String> = match (&a.broker_name, &a.cluster) {
        (Some(name), _) => vec![name.clone()],
        (None, Some(cluster)) => info
            .cluster_addr_table
            .get(cluster)
            .map(|names| names.iter().cloned().collect())
            .unwrap_or_default(),
        (None, None) => {
            return Err(ClientError::Invalid(
                "give -b brokerName or -c clusterName".into(),
            ))
        }
    };
    Ok(names
        .iter()
        .filter_map(|name| info.broker_addr_table.get(name))
        .flat_map(|data| data.broker_addrs.0.values().cloned())
        .collect())
}

/// GET_BROKER_EPOCH_CACHE of every broker named, printed as RocketMQ 5 prints it (the last
/// entry ends at the broker's max offset).
pub async fn get_broker_epoch(admin: &AdminClient, a: GetBrokerEpoch) -> Result<(), ClientError> {
    loop {
        for addr in epoch_broker_addrs(admin, &a).await? {
            let request =
                RemotingCommand::request(RequestCode::GET_BROKER_EPOCH_CACHE, ExtFields::new());
            let response = admin.call(&addr, request).await?;
            let cache: EpochEntryCache = fastjson::decode(&response.body)?;
            print!(
                "\n#clusterName\t{}\n#brokerName\t{}\n#brokerAddr\t{addr}\n#brokerId\t{}",
                cache.cluster_name, cache.broker_name, cache.broker_id
            );
            let last = cache.epoch_list.len().saturating_sub(1);
            for (i, entry) in cache.epoch_list.iter().enumerate() {
                let end = if i == last {
                    cache.max_offset
                } else {
                    entry.end_offset
                };
                print!(
                    "\n#Epoch: EpochEntry{{epoch={}, startOffset={}, endOffset={end}}}",
                    entry.epoch, entry.start_offset
                );
            }
            println!();
        }
        match a.interval {
            Some(secs) if secs > 0 => tokio::time::sleep(Duration::from_secs(secs)).await,
            _ => return Ok(()),
        }
    }
}
