//! `rocksDBConfigToJson`: a stopped broker's metadata store as RocketMQ's JSON, offline
//! (RocketMQ 5's command for its RocksDB config store; StellMQ's store is
//! `storePathRootDir/config/metadata.redb`). A running broker holds the store's lock: use
//! `exportMetadata` against it instead.
#![allow(clippy::print_stdout)] // CLI output

use std::path::PathBuf;

use stellmq_client::ClientError;
use stellmq_metadata::MetadataStore;
use stellmq_remoting::protocol::body::{
    fastjson, ConsumerOffsetSerializeWrapper, IntKeyMap, SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper,
};

#[derive(clap::Args, Debug)]
pub struct ConfigToJson {
    /// Path of the broker's config directory (storePathRootDir/config) or of its
    /// metadata.redb.
    #[arg(short = 'p', long = "configPath")]
    path: PathBuf,
    /// What to print: topics, subscriptionGroups or consumerOffsets.
    #[arg(short = 't', long = "configType")]
    config_type: String,
    /// RocketMQ's exportMetadataInRocksDB -j (print as JSON): the output is JSON always.
    #[arg(short = 'j', long = "jsonEnable", action = clap::ArgAction::Set)]
    json_enable: Option<bool>,
}

pub fn config_to_json(a: ConfigToJson) -> Result<(), ClientError> {
    let store = MetadataStore::open_existing(&a.path)
        .map_err(|e| ClientError::Invalid(format!("{e} (is the broker stopped?)")))?;
    let failed = |e: stellmq_metadata::MetadataError| ClientError::Invalid(e.to_string());
    let text = match a.config_type.as_str() {
        "topics" => {
            let (table, version) = store.topics().map_err(failed)?;
            fastjson::encode_with(
                &TopicConfigSerializeWrapper {
                    data_version: version.unwrap_or_default(),
                    topic_config_table: table,
                },
                fastjson::Style::FastjsonPretty,
            )
        }
        "subscriptionGroups" => {
            let (table, version) = store.groups().map_err(failed)?;
            fastjson::encode_with(
                &SubscriptionGroupWrapper {
                    data_version: version.unwrap_or_default(),
                    subscription_group_table: table,
                },
                fastjson::Style::FastjsonPretty,
            )
        }
        "consumerOffsets" => {
            let offsets = store.offsets().map_err(failed)?;
            let offset_table = offsets
                .into_iter()
                .map(|(key, queues)| {
                    let queues = queues.into_iter().map(|(q, o)| (i64::from(q), o));
                    (key, IntKeyMap(queues.collect()))
                })
                .collect();
            fastjson::encode_with(
                &ConsumerOffsetSerializeWrapper {
                    offset_table,
                    data_version: None,
                    removed_keys: Vec::new(),
                },
                fastjson::Style::FastjsonPretty,
            )
        }
        other => {
            return Err(ClientError::Invalid(format!(
                "unknown configType {other}: topics, subscriptionGroups or consumerOffsets"
            )))
        }
    };
    println!("{text}");
    Ok(())
}
