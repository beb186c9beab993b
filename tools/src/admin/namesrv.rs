//! Name server commands.
#![allow(clippy::print_stdout, clippy::print_literal)] // CLI output; header rows are literals

use stellmq_client::{AdminClient, ClientError};

#[derive(clap::Args, Debug)]
pub struct BrokerNameArg {
    #[arg(short = 'b', long = "brokerName")]
    broker_name: String,
}

pub async fn wipe_write_perm(admin: &AdminClient, a: BrokerNameArg) -> Result<(), ClientError> {
    for ns in admin.name_servers().to_vec() {
        let count = admin.wipe_write_perm(&ns, &a.broker_name).await?;
        crate::outln!(
            "wipe write perm of broker[{}] in name server[{ns}] OK, {count}",
            a.broker_name
        );
    }
    Ok(())
}

pub async fn add_write_perm(admin: &AdminClient, a: BrokerNameArg) -> Result<(), ClientError> {
    for ns in admin.name_servers().to_vec() {
        let count = admin.add_write_perm(&ns, &a.broker_name).await?;
        crate::outln!(
            "add write perm of broker[{}] in name server[{ns}] OK, {count}",
            a.broker_name
        );
    }
    Ok(())
}

pub async fn get_namesrv_config(admin: &AdminClient) -> Result<(), ClientError> {
    for ns in admin.name_servers().to_vec() {
        crate::outln!("============{ns}============");
        for line in admin.namesrv_config(&ns).await?.lines() {
            if let Some((k, v)) = line.split_once('=') {
                crate::outln!("{k:<50}=  {v}");
            }
        }
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct KeyValue {
    #[arg(short = 'k', long = "key")]
    key: String,
    #[arg(short = 'v', long = "value")]
    value: String,
}

pub async fn update_namesrv_config(admin: &AdminClient, a: KeyValue) -> Result<(), ClientError> {
    for ns in admin.name_servers().to_vec() {
        admin.update_namesrv_config(&ns, &a.key, &a.value).await?;
    }
    crate::outln!(
        "update name server config success!{:?}",
        admin.name_servers()
    );
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct KvArgs {
    #[arg(short = 's', long = "namespace")]
    namespace: String,
    #[arg(short = 'k', long = "key")]
    key: String,
    #[arg(short = 'v', long = "value")]
    value: String,
}

pub async fn update_kv_config(admin: &AdminClient, a: KvArgs) -> Result<(), ClientError> {
    admin.put_kv(&a.namespace, &a.key, &a.value).await?;
    crate::outln!("create or update kv config to namespace success.");
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct KvKey {
    #[arg(short = 's', long = "namespace")]
    namespace: String,
    #[arg(short = 'k', long = "key")]
    key: String,
}

pub async fn delete_kv_config(admin: &AdminClient, a: KvKey) -> Result<(), ClientError> {
    admin.delete_kv(&a.namespace, &a.key).await?;
    crate::outln!("delete kv config from namespace success.");
    Ok(())
}
