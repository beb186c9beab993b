//! JSON bodies in fastjson's dialect, and the compressed registration body.
//!
//! `json_body` tries every body type that a server decodes from a client, a peer or its
//! own files: whichever types accept the input must re-encode, in all three styles, to text
//! that decodes to the same value.

use std::fmt::Debug;

use serde::de::DeserializeOwned;
use serde::Serialize;
use stellmq_remoting::protocol::body::fastjson::{self, Style};
use stellmq_remoting::protocol::body::{
    BrokerReplicasInfo, ElectMasterResponseBody, EpochEntryCache, SyncStateSet,
};
use stellmq_remoting::protocol::body::{
    ConsumeStats, ConsumerOffsetSerializeWrapper, DataVersion, DelayOffsetSerializeWrapper,
    HeartbeatData, KvTable, LockBatchRequestBody, LockBatchResponseBody, RegisterBrokerBody,
    ResetOffsetBody, SubscriptionData, SubscriptionGroupConfig, SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper, TopicRouteData,
};

/// A body as any of the types servers decode.
pub fn json_body(data: &[u8]) -> bool {
    let _ = fastjson::to_standard(&String::from_utf8_lossy(data));
    // Client requests: HEART_BEAT, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, LOCK/UNLOCK_BATCH_MQ,
    // CHECK_CLIENT_CONFIG (its subscription), REGISTER_BROKER and its DataVersion query.
    let requests = [
        round_trip::<HeartbeatData>(data),
        round_trip::<SubscriptionGroupConfig>(data),
        round_trip::<LockBatchRequestBody>(data),
        round_trip::<SubscriptionData>(data),
        round_trip::<RegisterBrokerBody>(data),
        round_trip::<DataVersion>(data),
    ];
    // Responses read from peers, and the broker's own config files.
    let others = [
        round_trip::<ConsumeStats>(data),
        round_trip::<ResetOffsetBody>(data),
        round_trip::<LockBatchResponseBody>(data),
        round_trip::<TopicRouteData>(data),
        round_trip::<KvTable>(data),
        round_trip::<TopicConfigSerializeWrapper>(data),
        round_trip::<SubscriptionGroupWrapper>(data),
        round_trip::<ConsumerOffsetSerializeWrapper>(data),
        round_trip::<DelayOffsetSerializeWrapper>(data),
    ];
    // Controller mode (RocketMQ 5): bodies from brokers, controllers and tools.
    let controller = [
        round_trip::<SyncStateSet>(data),
        round_trip::<ElectMasterResponseBody>(data),
        round_trip::<BrokerReplicasInfo>(data),
        round_trip::<EpochEntryCache>(data),
    ];
    requests
        .into_iter()
        .chain(others)
        .chain(controller)
        .any(|ok| ok)
}

fn round_trip<T>(data: &[u8]) -> bool
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let Ok(value) = fastjson::decode::<T>(data) else {
        return false;
    };
    for style in [Style::Fastjson, Style::FastjsonPretty, Style::Standard] {
        let text = fastjson::encode_with(&value, style);
        match fastjson::decode::<T>(text.as_bytes()) {
            Ok(back) => assert_eq!(back, value, "{style:?}: {text}"),
            Err(e) => panic!(
                "{} re-encoded as {style:?} does not decode: {e}\n{text}",
                std::any::type_name::<T>()
            ),
        }
    }
    true
}

/// REGISTER_BROKER's compressed body (zlib over length-prefixed sections).
pub fn register_compressed(data: &[u8]) -> bool {
    let Ok(body) = RegisterBrokerBody::decode_compressed(data) else {
        return false;
    };
    // The compact topic form carries neither attributes, sysFlag nor order.
    let mut expected = body;
    for config in expected
        .topic_config_serialize_wrapper
        .topic_config_table
        .values_mut()
    {
        config.attributes.clear();
        config.topic_sys_flag = 0;
        config.order = false;
    }
    match RegisterBrokerBody::decode_compressed(&expected.encode_compressed()) {
        Ok(back) => assert_eq!(back, expected),
        Err(e) => panic!("re-encoded registration does not decode: {e}"),
    }
    true
}
