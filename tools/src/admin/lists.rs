//! `updateTopicList` and `updateSubGroupList` (RocketMQ 5): many topics or groups from a
//! JSON file (a list of TopicConfig or SubscriptionGroupConfig) in one request per broker.

use std::path::PathBuf;

use stellmq_client::{AdminClient, ClientError};
use stellmq_remoting::protocol::body::{fastjson, SubscriptionGroupConfig, TopicConfig};

use super::Target;

#[derive(clap::Args, Debug)]
pub struct UpdateList {
    #[command(flatten)]
    target: Target,
    /// Path to a file with a JSON list of configs.
    #[arg(short = 'f', long = "filename")]
    file: PathBuf,
}

/// The file's list; `None` (after saying so) when the file is missing, as RocketMQ does.
fn read_list<T: serde::de::DeserializeOwned>(
    file: &PathBuf,
) -> Result<Option<Vec<T>>, ClientError> {
    if !file.exists() {
        crate::outln!("the file path {} does not exists", file.display());
        return Ok(None);
    }
    let bytes = std::fs::read(file)
        .map_err(|e| ClientError::Invalid(format!("cannot read {}: {e}", file.display())))?;
    let list = fastjson::decode(&bytes)
        .map_err(|e| ClientError::Invalid(format!("{} is not a JSON list: {e}", file.display())))?;
    Ok(Some(list))
}

pub async fn update_topic_list(admin: &AdminClient, a: UpdateList) -> Result<(), ClientError> {
    submit::<TopicConfig, _>(admin, a, "topic", |addr, configs| async move {
        admin.create_topic_list(&addr, &configs).await
    })
    .await
}

pub async fn update_sub_group_list(admin: &AdminClient, a: UpdateList) -> Result<(), ClientError> {
    submit::<SubscriptionGroupConfig, _>(admin, a, "group", |addr, configs| async move {
        admin.create_group_list(&addr, &configs).await
    })
    .await
}

/// Reads the file's list and sends it, with `send`, to every broker of the target.
async fn submit<T, F>(
    admin: &AdminClient,
    a: UpdateList,
    what: &str,
    send: impl Fn(String, Vec<T>) -> F,
) -> Result<(), ClientError>
where
    T: serde::de::DeserializeOwned + Clone,
    F: std::future::Future<Output = Result<(), ClientError>>,
{
    let Some(configs) = read_list::<T>(&a.file)? else {
        return Ok(());
    };
    if configs.is_empty() {
        return Ok(());
    }
    for addr in a.target.addrs(admin).await? {
        send(addr.clone(), configs.clone()).await?;
        crate::outln!(
            "submit batch of {what} config to {addr} success, please check the result later."
        );
    }
    Ok(())
}
