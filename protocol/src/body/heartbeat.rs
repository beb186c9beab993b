//! HeartbeatData (protocol.md 3.8), read leniently: enums as names or ordinals (the C++ SDK sends
//! ordinals), `subVersion` as a number or a string, absent arrays as empty.

use std::collections::BTreeSet;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ext_fields::Lenient;

/// Declares an enum written by name and read by name or ordinal; unknown values read as the
/// default (fastjson would read them as null).
macro_rules! lenient_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $wire:literal),+ $(,)? } default $default:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($variant),+
        }

        impl Default for $name {
            fn default() -> Self {
                $name::$default
            }
        }

        impl $name {
            const TABLE: &'static [($name, &'static str)] = &[$(($name::$variant, $wire)),+];

            /// Java's enum constant name.
            pub fn name(self) -> &'static str {
                Self::TABLE.iter().find(|(v, _)| *v == self).map_or("", |(_, n)| n)
            }

            /// Java's ordinal.
            pub fn ordinal(self) -> usize {
                Self::TABLE.iter().position(|(v, _)| *v == self).unwrap_or(0)
            }

            /// Reads a name or a decimal ordinal.
            pub fn parse(text: &str) -> Option<Self> {
                let text = text.trim();
                if let Ok(ordinal) = text.parse::<usize>() {
                    return Self::TABLE.get(ordinal).map(|(v, _)| *v);
                }
                Self::TABLE.iter().find(|(_, n)| n.eq_ignore_ascii_case(text)).map(|(v, _)| *v)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.name())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let raw = Lenient::deserialize(deserializer)?.0;
                Ok(raw.as_deref().and_then($name::parse).unwrap_or_default())
            }
        }
    };
}

pub(crate) use lenient_enum;

lenient_enum! {
    /// Push (passive) or pull (active) consumer.
    ConsumeType {
        ConsumeActively = "CONSUME_ACTIVELY",
        ConsumePassively = "CONSUME_PASSIVELY",
        ConsumePop = "CONSUME_POP",
    } default ConsumePassively
}

lenient_enum! {
    /// Clustering (queues shared) or broadcasting (every instance gets everything).
    MessageModel {
        Broadcasting = "BROADCASTING",
        Clustering = "CLUSTERING",
    } default Clustering
}

lenient_enum! {
    /// Where a consumer starts when its group has no stored offset.
    ConsumeFromWhere {
        ConsumeFromLastOffset = "CONSUME_FROM_LAST_OFFSET",
        ConsumeFromLastOffsetAndFromMinWhenBootFirst = "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
        ConsumeFromMinOffset = "CONSUME_FROM_MIN_OFFSET",
        ConsumeFromMaxOffset = "CONSUME_FROM_MAX_OFFSET",
        ConsumeFromFirstOffset = "CONSUME_FROM_FIRST_OFFSET",
        ConsumeFromTimestamp = "CONSUME_FROM_TIMESTAMP",
    } default ConsumeFromLastOffset
}

fn lenient_i64<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    Ok(Lenient::deserialize(d)?
        .0
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0))
}

fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Lenient::deserialize(d)?
        .0
        .is_some_and(|s| s.trim().eq_ignore_ascii_case("true") || s.trim() == "1"))
}

/// `HeartbeatData`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatData {
    #[serde(rename = "clientID", default)]
    pub client_id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub producer_data_set: Vec<ProducerData>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub consumer_data_set: Vec<ConsumerData>,
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// `ProducerData`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProducerData {
    pub group_name: String,
}

/// `ConsumerData`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerData {
    pub group_name: String,
    #[serde(default)]
    pub consume_type: ConsumeType,
    #[serde(default)]
    pub message_model: MessageModel,
    #[serde(default)]
    pub consume_from_where: ConsumeFromWhere,
    #[serde(default, deserialize_with = "null_as_default")]
    pub subscription_data_set: Vec<SubscriptionData>,
    #[serde(default, deserialize_with = "lenient_bool")]
    pub unit_mode: bool,
}

/// `SubscriptionData`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionData {
    #[serde(default, deserialize_with = "lenient_bool")]
    pub class_filter_mode: bool,
    pub topic: String,
    #[serde(default)]
    pub sub_string: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub tags_set: BTreeSet<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub code_set: BTreeSet<i32>,
    #[serde(default, deserialize_with = "lenient_i64")]
    pub sub_version: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression_type: Option<String>,
}

/// The tag expression that selects every message.
pub const SUB_ALL: &str = "*";

impl SubscriptionData {
    /// A tag subscription as brokers read it: `TagA || TagB` (blank means `*`), each tag
    /// with its hash code (protocol.md 4.10).
    pub fn tags(topic: &str, expression: &str, sub_version: i64) -> Self {
        let expression = expression.trim();
        let mut data = Self {
            topic: topic.to_owned(),
            sub_string: if expression.is_empty() {
                SUB_ALL.to_owned()
            } else {
                expression.to_owned()
            },
            sub_version,
            expression_type: Some("TAG".to_owned()),
            ..Self::default()
        };
        if data.sub_string != SUB_ALL {
            for tag in data
                .sub_string
                .split("||")
                .map(str::trim)
                .filter(|t| !t.is_empty())
            {
                data.tags_set.insert(tag.to_owned());
                data.code_set.insert(crate::message::java_string_hash(tag));
            }
        }
        data
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::fastjson;

    #[test]
    fn reads_cpp_heartbeat_with_ordinals() {
        let cpp = r#"{"clientID":"10.0.0.6@4243","consumerDataSet":[{"consumeFromWhere":0,"consumeType":1,"groupName":"g1","messageModel":1,"subscriptionDataSet":[{"subString":"*","subVersion":"1700000000000","topic":"T"}]}]}"#;
        let hb: HeartbeatData = fastjson::decode(cpp.as_bytes()).expect("decodes");
        assert_eq!(hb.client_id, "10.0.0.6@4243");
        assert!(hb.producer_data_set.is_empty());
        let c = &hb.consumer_data_set[0];
        assert_eq!(c.consume_type, ConsumeType::ConsumePassively);
        assert_eq!(c.message_model, MessageModel::Clustering);
        assert_eq!(
            c.consume_from_where,
            ConsumeFromWhere::ConsumeFromLastOffset
        );
        assert_eq!(c.subscription_data_set[0].sub_version, 1_700_000_000_000);
    }

    #[test]
    fn reads_java_heartbeat_with_names() {
        let java = r#"{"clientID":"10.0.0.5@4242","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"g1","messageModel":"BROADCASTING","subscriptionDataSet":[{"classFilterMode":false,"codeSet":[2598919],"expressionType":"TAG","subString":"TagA","subVersion":1700000000000,"tagsSet":["TagA"],"topic":"T"}],"unitMode":false}],"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"}]}"#;
        let hb: HeartbeatData = fastjson::decode(java.as_bytes()).expect("decodes");
        let c = &hb.consumer_data_set[0];
        assert_eq!(c.message_model, MessageModel::Broadcasting);
        assert_eq!(
            c.consume_from_where,
            ConsumeFromWhere::ConsumeFromFirstOffset
        );
        assert!(c.subscription_data_set[0].code_set.contains(&2598919));
        assert_eq!(hb.producer_data_set[0].group_name, "CLIENT_INNER_PRODUCER");
    }

    #[test]
    fn unknown_enum_values_fall_back() {
        assert_eq!(ConsumeFromWhere::parse("UNKNOWN"), None);
        let c: ConsumerData = serde_json::from_str(
            r#"{"groupName":"g","consumeFromWhere":"UNKNOWN","consumeType":7,"messageModel":null}"#,
        )
        .expect("decodes");
        assert_eq!(
            c.consume_from_where,
            ConsumeFromWhere::ConsumeFromLastOffset
        );
        assert_eq!(c.consume_type, ConsumeType::ConsumePassively);
    }
}
